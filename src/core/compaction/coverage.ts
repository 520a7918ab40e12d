// Sandbox-safe and pure: the coverage check of a summary (docs/design.md#coverage). The identifiers
// a summary must keep are those the middle it replaces shares with what the conversation keeps —
// the task, pinned and sticky messages, the recent window — since the agent still refers to them.
import { contentText } from '../counting/tokens.js';
import type { ChatMessage, Coverage } from '../types.js';

export type { Coverage };

/** At most this many identifiers are named in a retry or carried in one summary. */
export const MAX_CARRIED_IDENTIFIERS = 40;

/** The start of the line that carries identifiers a summary left out. */
export const CARRIED_FACTS_PREFIX = 'Carried facts (identifiers the conversation still uses):';

const TOKEN = /[A-Za-z0-9_][A-Za-z0-9_./#@-]*[A-Za-z0-9_/]/g;
const URL = /\bhttps?:\/\/[^\s"'`<>()[\]{}]+[^\s"'`<>()[\]{}.,;:!?]/g;
/** Tool-call ids: the transcript's bookkeeping, not facts of the run. */
const CALL_ID = /^(?:call|toolu|tool|fc)_[A-Za-z0-9]+$/;

/**
 * Code-like tokens of at least three characters with a letter: a path (`/`), a dotted name
 * (`models.py`, `np.array`), snake_case, camelCase and error names (`TypeError`), or letters mixed
 * with digits (`ZFA04Y`, `E2BIG`); and URLs whole. Plain words and plain numbers are not identifiers.
 */
export function isIdentifier(token: string): boolean {
  if (token.length < 3 || !/[A-Za-z]/.test(token) || CALL_ID.test(token)) return false;
  return (
    token.includes('/') || /\w\.\w/.test(token) || token.includes('_') || /[a-z][A-Z]/.test(token) || /\d/.test(token)
  );
}

/** The identifiers of a text, in order of first appearance. */
export function identifiersIn(text: string, into: Set<string> = new Set()): Set<string> {
  const urls = text.match(URL) ?? [];
  for (const url of urls) into.add(url);
  const rest = urls.length === 0 ? text : text.replace(URL, ' ');
  for (const match of rest.matchAll(TOKEN)) {
    const token = match[0].replace(/[.:/#@-]+$/, '');
    if (isIdentifier(token)) into.add(token);
  }
  return into;
}

/**
 * The text of a message where its facts are: its content and its tool calls' arguments — not the
 * calls' ids, nor the tools' names, which the model has from the tool definitions at every request.
 */
function factText(message: ChatMessage): string {
  const calls = (message.tool_calls ?? []).map((call) => call.function.arguments);
  return [contentText(message.content), ...calls].join('\n');
}

/**
 * The identifiers a summary of `middle` must keep: those of the middle (as the summarizer saw it)
 * that `kept` uses too, in the order the middle first used them. System and developer messages of
 * `kept` do not count: the model reads them at every request whatever the summary says.
 */
export function requiredIdentifiers(middle: readonly ChatMessage[], kept: readonly ChatMessage[]): string[] {
  const used = new Set<string>();
  for (const message of kept) {
    if (message.role !== 'system' && message.role !== 'developer') identifiersIn(factText(message), used);
  }
  if (used.size === 0) return [];
  // The middle runs to megabytes and `used` to a few identifiers: only tokens of `used` are looked
  // up (a token in it is an identifier), with a scanner of its own rather than a match object per
  // token, and the scan stops once every one of them was found (the order cannot change after).
  const fromMiddle = new Set<string>();
  const searched = new Map([...used].map((identifier) => [identifier, searchKey(identifier)]));
  for (const message of middle) {
    const texts = [contentText(message.content), ...(message.tool_calls ?? []).map((call) => call.function.arguments)];
    // As identifiersIn over the texts joined by newlines (neither a URL nor a token spans one): the URLs first, then the tokens of the rest.
    const rests = texts.map((text) => {
      if (!text.includes('://')) return text;
      const urls = text.match(URL) ?? [];
      for (const url of urls) if (used.has(url)) fromMiddle.add(url);
      return urls.length === 0 ? text : text.replace(URL, ' ');
    });
    for (const rest of rests) if (mayHold(rest, searched, fromMiddle)) usedTokensIn(rest, used, fromMiddle);
    if (fromMiddle.size === used.size) break;
  }
  return [...fromMiddle];
}

/** Over this many identifiers still to find, a text is scanned rather than searched for each. */
const SEARCHED_AT_MOST = 8;

/**
 * What is searched for an identifier: its end from its first character that is not a lowercase
 * letter (every identifier has one). Lowercase letters are the commonest characters of any text,
 * and a search skips fastest to a rarer first character; a text without that end cannot hold the
 * identifier.
 */
function searchKey(identifier: string): string {
  const start = identifier.search(/[^a-z]/);
  return start <= 0 ? identifier : identifier.slice(start);
}

/**
 * False only when `text` cannot hold a token of `searched` not yet in `found`: none of those is
 * even there as a substring (a search per identifier is much faster than the scan, while they are few).
 */
function mayHold(text: string, searched: ReadonlyMap<string, string>, found: ReadonlySet<string>): boolean {
  if (searched.size - found.size > SEARCHED_AT_MOST) return true;
  for (const [identifier, key] of searched) if (!found.has(identifier) && text.includes(key)) return true;
  return false;
}

/** Character classes of {@link TOKEN}, by char code: 1 may start it (and end it), 2 may end it, 4 may stand inside. */
const TOKEN_CLASS = new Uint8Array(128);
for (let code = 0; code < 128; code += 1) {
  const char = String.fromCharCode(code);
  if (/[A-Za-z0-9_]/.test(char)) TOKEN_CLASS[code] = 1 | 2 | 4;
  else if (char === '/') TOKEN_CLASS[code] = 2 | 4;
  else if (/[.#@-]/.test(char)) TOKEN_CLASS[code] = 4;
}
const classOf = (text: string, index: number): number => {
  const code = text.charCodeAt(index);
  return code < 128 ? (TOKEN_CLASS[code] ?? 0) : 0;
};
/** The characters `/[.:/#@-]+$/` strips from the end of a token (`:` cannot be in one). */
const STRIPPED = new Set(['.', '/', '#', '@', '-'].map((char) => char.charCodeAt(0)));

/**
 * Adds to `into` the tokens of `text` that `used` holds, as {@link identifiersIn} finds them (the
 * same matches of {@link TOKEN}, the same trailing punctuation stripped) in order. A match of
 * `[start][inside]*[end]` is greedy: from a start character, the longest run of inside characters
 * up to its last end character; a run with none after its start holds no match (every start
 * character is an end character).
 */
function usedTokensIn(text: string, used: ReadonlySet<string>, into: Set<string>): void {
  const length = text.length;
  let index = 0;
  while (index < length) {
    if ((classOf(text, index) & 1) === 0) {
      index += 1;
      continue;
    }
    let end = -1;
    let next = index + 1;
    for (let cls = classOf(text, next); next < length && (cls & 4) !== 0; cls = classOf(text, ++next)) {
      if ((cls & 2) !== 0) end = next;
    }
    if (end !== -1) {
      let last = end;
      while (last > index && STRIPPED.has(text.charCodeAt(last))) last -= 1;
      const token = text.slice(index, last + 1);
      if (used.has(token)) into.add(token);
    }
    index = next;
  }
}

/** The identifiers of `required` that `summary` does not hold. */
export function missingFrom(summary: string, required: readonly string[]): string[] {
  return required.filter((identifier) => !summary.includes(identifier));
}

/** The sentences the retry adds to its instruction: the identifiers the last attempt left out. */
export function coverageRetryText(missing: readonly string[], maxChars?: number): string {
  const named = missing.slice(0, MAX_CARRIED_IDENTIFIERS);
  const length = maxChars === undefined ? '' : `, at most ${maxChars} characters`;
  return [
    `Your last attempt left out identifiers that the rest of the conversation still uses: ${named.map((id) => `\`${id}\``).join(', ')}.`,
    `Write the summary again${length}, and say what each of them is, copied exactly.`,
  ].join('\n');
}

/** The summary text with the line that carries what it left out (at most {@link MAX_CARRIED_IDENTIFIERS}). */
export function withCarriedFacts(summary: string, missing: readonly string[]): string {
  if (missing.length === 0) return summary;
  const carried = missing.slice(0, MAX_CARRIED_IDENTIFIERS).map((id) => `\`${id}\``);
  return `${summary.trimEnd()}\n\n${CARRIED_FACTS_PREFIX} ${carried.join(', ')}`;
}

/** The coverage of a final summary text, given what its summarizer wrote alone. */
export function coverageOf(required: readonly string[], written: string, final: string): Coverage {
  const missing = missingFrom(final, required);
  const carried = missingFrom(written, required).length - missing.length;
  return { required: required.length, kept: required.length - missing.length, carried, missing };
}
