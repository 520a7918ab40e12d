// Sandbox-safe and pure: the coverage check of a summary (docs/design.md#coverage). The identifiers
// a summary must keep are those the middle it replaces shares with what the conversation keeps —
// the task, pinned and sticky messages, the recent window — since the agent still refers to them.
import { contentText } from '../counting/tokens.js';
import { CAP_MARKER, seenMessage } from './transcript.js';
import type { ChatMessage, Coverage, ToolCall } from '../types.js';

export type { Coverage };

/** At most this many identifiers are named in a retry or carried in one summary. */
export const MAX_CARRIED_IDENTIFIERS = 40;

/**
 * At most this many identifiers are required of one summary, the first the middle uses: the first
 * request names every one of them, so the check asks for nothing the summarizer was not told about.
 */
export const MAX_REQUIRED_IDENTIFIERS = 100;

/** The start of the line of a request's instructions that names the identifiers its summary must keep. */
export const KEEP_IDENTIFIERS_PREFIX = 'Keep these identifiers:';

/** The start of the line that carries identifiers a summary left out. */
export const CARRIED_FACTS_PREFIX = 'Carried facts (identifiers the conversation still uses):';

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
  forEachToken(rest, (start, end, marks) => {
    // Without any of the marks an identifier needs, a token is a plain word or number: not looked at.
    if (marks === 0 || end - start < 3) return;
    const token = rest.slice(start, end);
    if (isIdentifier(token)) into.add(token);
  });
  return into;
}

/** Content and tool-call argument values: not ids, tool names or argument keys (the model has those at every request). */
function factText(message: ChatMessage): string {
  return textsOf(message).join('\n');
}

/**
 * The identifiers of the middle as the summarizer saw it (`capMiddle`) that `kept` uses too (not its
 * system and developer messages, read at every request), in the order the middle first used them.
 */
export function requiredIdentifiers(
  middle: readonly ChatMessage[],
  kept: readonly ChatMessage[],
  toolResultCap = Number.POSITIVE_INFINITY,
  contents?: readonly (ChatMessage['content'] | undefined)[],
): string[] {
  const used = new Set<string>();
  for (const message of kept) {
    if (message.role !== 'system' && message.role !== 'developer') identifiersIn(factText(message), used);
  }
  if (used.size === 0) return [];
  const contentAt = (index: number): ChatMessage['content'] =>
    contents?.[index] ?? (middle[index] as ChatMessage).content;
  if (used.size > SEARCHED_ONE_BY_ONE) return scannedIdentifiers(middle, used, toolResultCap, contentAt);
  // The middle runs to megabytes and `used` to a few identifiers: a native substring search for each
  // is many times faster than reading the text token by token; a hit is confirmed as a token.
  const firstIn = new Map<number, Set<string>>();
  for (const identifier of used) {
    const key = searchKey(identifier);
    const only = new Set([identifier]);
    for (let index = 0; index < middle.length; index += 1) {
      const message = middle[index] as ChatMessage;
      const content = contentAt(index);
      if (!mentions(message, key, toolResultCap, content)) continue;
      if (usedIn(seenMessage(message, toolResultCap, content), only, new Set()).size === 0) continue;
      const found = firstIn.get(index);
      if (found === undefined) firstIn.set(index, only);
      else found.add(identifier);
      break;
    }
  }
  // In the order the middle first used them: by message, and within one as `usedIn` meets them.
  const ordered = new Set<string>();
  for (const index of [...firstIn.keys()].sort((left, right) => left - right)) {
    const message = middle[index];
    const identifiers = firstIn.get(index);
    if (message !== undefined && identifiers !== undefined)
      usedIn(seenMessage(message, toolResultCap, contentAt(index)), identifiers, ordered);
  }
  return [...ordered];
}

/** Up to this many identifiers, each is searched for on its own; over it, the middle is read token by token. */
const SEARCHED_ONE_BY_ONE = 16;

/** The texts of a message a summary's identifiers are looked for in: its content and its calls' argument values. */
function textsOf(message: ChatMessage): string[] {
  const texts = [contentText(message.content)];
  for (const call of message.tool_calls ?? []) texts.push(...argumentValues(call.function.arguments));
  return texts;
}

/**
 * The string values of a call's arguments, decoded (not its keys, the tool's vocabulary). Arguments
 * cut by the cap are read as far as their literals go; arguments that are not JSON are read whole.
 */
export function argumentValues(args: string): string[] {
  const text = args.replace(CAP_MARKER, '');
  const start = text.trimStart().charCodeAt(0);
  if (start !== 0x7b && start !== 0x5b) return [text];
  const values: string[] = [];
  const length = text.length;
  for (let open = text.indexOf('"'); open >= 0;) {
    let close = open + 1;
    while (close < length && text.charCodeAt(close) !== 0x22) close += text.charCodeAt(close) === 0x5c ? 2 : 1;
    const body = text.slice(open + 1, Math.min(close, length));
    if (close >= length) {
      values.push(decodedString(body));
      break;
    }
    let after = close + 1;
    while (after < length && WHITESPACE.has(text.charCodeAt(after))) after += 1;
    // A string followed by a colon is a key.
    if (text.charCodeAt(after) !== 0x3a) values.push(decodedString(body));
    open = text.indexOf('"', close + 1);
  }
  return values;
}

const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** A JSON string literal's body decoded; one cut short within an escape loses that escape; one not valid stays as it is. */
function decodedString(body: string): string {
  if (!body.includes('\\')) return body;
  for (const literal of [body, body.replace(/\\(?:u[0-9A-Fa-f]{0,3})?$/, '')]) {
    try {
      const parsed: unknown = JSON.parse(`"${literal}"`);
      if (typeof parsed === 'string') return parsed;
    } catch {
      // not valid as it is: tried again without a cut escape, then read as it is
    }
  }
  return body;
}

/** Whether `key` stands as a substring in the message's texts as the summarizer sees them (within the cap). */
function mentions(
  message: ChatMessage,
  key: string,
  toolResultCap: number,
  content: ChatMessage['content'] = message.content,
): boolean {
  if (typeof content === 'string') {
    if (within(content, message.role === 'tool' ? toolResultCap : Number.POSITIVE_INFINITY).includes(key)) return true;
  } else if (content !== null && contentText(seenMessage(message, toolResultCap, content).content).includes(key))
    return true;
  const calls = message.tool_calls;
  if (calls === undefined) return false;
  // An index loop, as in CallOwners.of. The values are searched for in the JSON text (a key found
  // there is confirmed by nothing: usedIn reads the values). JSON escapes none of the characters an
  // identifier is made of but `/`, which it may write `\/`.
  const slash = key.includes('/');
  for (let position = 0; position < calls.length; position += 1) {
    const args = within((calls[position] as ToolCall).function.arguments, toolResultCap);
    if (args.includes(key) || (slash && args.includes('\\/'))) return true;
  }
  return false;
}

/** The first `cap` characters of `text` (a slice shares the text's characters rather than copying them). */
function within(text: string, cap: number): string {
  return text.length > cap ? text.slice(0, cap) : text;
}

/** Adds to `into` the identifiers of `used` the message holds, in the order {@link identifiersIn} meets them. */
function usedIn(message: ChatMessage, used: ReadonlySet<string>, into: Set<string>): Set<string> {
  const rests = textsOf(message).map((text) => {
    if (!text.includes('://')) return text;
    const urls = text.match(URL) ?? [];
    for (const url of urls) if (used.has(url)) into.add(url);
    return urls.length === 0 ? text : text.replace(URL, ' ');
  });
  for (const rest of rests) usedTokensIn(rest, used, into);
  return into;
}

/** {@link requiredIdentifiers} for many identifiers: the middle read message by message, stopping once every one was found. */
function scannedIdentifiers(
  middle: readonly ChatMessage[],
  used: ReadonlySet<string>,
  toolResultCap: number,
  contentAt: (index: number) => ChatMessage['content'],
): string[] {
  const fromMiddle = new Set<string>();
  const searched = new Map([...used].map((identifier) => [identifier, searchKey(identifier)]));
  for (let index = 0; index < middle.length; index += 1) {
    const message = middle[index] as ChatMessage;
    const content = contentAt(index);
    if (mayHold(message, searched, fromMiddle, toolResultCap, content))
      usedIn(seenMessage(message, toolResultCap, content), used, fromMiddle);
    if (fromMiddle.size === used.size) break;
  }
  return [...fromMiddle];
}

/** Over this many identifiers still to find, a text is scanned rather than searched for each. */
const SEARCHED_AT_MOST = 8;

/** An identifier's end from its first character that is not a lowercase letter: a search skips fastest to a rare one. */
function searchKey(identifier: string): string {
  const start = identifier.search(/[^a-z]/);
  return start <= 0 ? identifier : identifier.slice(start);
}

/** False only when none of `searched` not yet in `found` is even a substring of `message`. */
function mayHold(
  message: ChatMessage,
  searched: ReadonlyMap<string, string>,
  found: ReadonlySet<string>,
  toolResultCap: number,
  content: ChatMessage['content'],
): boolean {
  if (searched.size - found.size > SEARCHED_AT_MOST) return true;
  for (const [identifier, key] of searched)
    if (!found.has(identifier) && mentions(message, key, toolResultCap, content)) return true;
  return false;
}

/**
 * A token is a match of `/[A-Za-z0-9_][A-Za-z0-9_./#@-]*[A-Za-z0-9_/]/g` (read by {@link forEachToken}).
 * Character classes of that pattern, by char code: 1 may start it (and end it), 2 may end it, 4 may
 * stand inside.
 */
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
 * Calls `visit` with each token of `text` as `[start, end)`, trailing punctuation cut, and `marks`
 * (non-zero when it holds a character an identifier needs: a cheap filter before {@link isIdentifier}).
 * A scanner rather than the regular expression: no match object per word of a long text.
 */
function forEachToken(text: string, visit: (start: number, end: number, marks: number) => void): void {
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
      visit(index, last + 1, marksOf(text, index, last + 1));
    }
    index = next;
  }
}

/** Non-zero when `text[start, end)` holds a digit, `_`, `/`, `.` or a lower-case letter followed by an upper-case one. */
function marksOf(text: string, start: number, end: number): number {
  let lower = false;
  for (let index = start; index < end; index += 1) {
    const code = text.charCodeAt(index);
    if (code >= 0x61 && code <= 0x7a) lower = true;
    else if (code >= 0x41 && code <= 0x5a) {
      if (lower) return 1;
    } else if ((code >= 0x30 && code <= 0x39) || code === 0x5f || code === 0x2f || code === 0x2e) return 1;
    else lower = false;
  }
  return 0;
}

/** Adds to `into` the tokens of `text` that `used` holds, in order. */
function usedTokensIn(text: string, used: ReadonlySet<string>, into: Set<string>): void {
  forEachToken(text, (start, end, marks) => {
    if (marks === 0 || end - start < 3) return;
    const token = text.slice(start, end);
    if (used.has(token)) into.add(token);
  });
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
