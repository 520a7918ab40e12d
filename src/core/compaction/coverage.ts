// Sandbox-safe and pure: which identifiers the middle shares with the rest a summary keeps (docs/design.md#coverage).
import { contentText } from '../counting/tokens.js';
import { CAP_MARKER, seenMessage } from './transcript.js';
import type { ChatMessage, Coverage, ToolCall } from '../types.js';

/** At most this many identifiers are named in a retry or carried in one summary. */
export const MAX_CARRIED_IDENTIFIERS = 40;

/** At most this many identifiers, the first the middle uses, are required of one summary (the first request names them all). */
export const MAX_REQUIRED_IDENTIFIERS = 100;

export const KEEP_IDENTIFIERS_PREFIX = 'Keep these identifiers:';

export const CARRIED_FACTS_PREFIX = 'Carried facts (identifiers the conversation still uses):';

const URL = /\bhttps?:\/\/[^\s"'`<>()[\]{}]+[^\s"'`<>()[\]{}.,;:!?]/g;
/** Tool-call ids: the transcript's bookkeeping, not facts of the run. */
const CALL_ID = /^(?:call|toolu|tool|fc)_[A-Za-z0-9]+$/;

/** Code-like tokens of at least three characters with a letter (paths, dotted, snake or camel case, digits), and URLs. */
export function isIdentifier(token: string): boolean {
  if (token.length < 3 || !/[A-Za-z]/.test(token) || CALL_ID.test(token)) return false;
  return (
    token.includes('/') || /\w\.\w/.test(token) || token.includes('_') || /[a-z][A-Z]/.test(token) || /\d/.test(token)
  );
}

export function identifiersIn(text: string, into: Set<string> = new Set()): Set<string> {
  return tokensIn(withoutUrls(text, into, isIdentifier), into, isIdentifier);
}

/** Adds to `into` the URLs of `text` that `keep` takes; returns the text with its URLs blanked out. */
function withoutUrls(text: string, into: Set<string>, keep: (token: string) => boolean): string {
  if (!text.includes('://')) return text;
  const urls = text.match(URL) ?? [];
  for (const url of urls) if (keep(url)) into.add(url);
  return urls.length === 0 ? text : text.replace(URL, ' ');
}

function tokensIn(text: string, into: Set<string>, keep: (token: string) => boolean): Set<string> {
  forEachToken(text, (start, end, marks) => {
    // Without any of the marks an identifier needs, a token is a plain word or number: not looked at.
    if (marks === 0 || end - start < 3) return;
    const token = text.slice(start, end);
    if (keep(token)) into.add(token);
  });
  return into;
}

/** The identifiers of the capped middle that `kept` (but its system and developer messages) uses too, in first-use order. */
export function requiredIdentifiers(
  middle: readonly ChatMessage[],
  kept: readonly ChatMessage[],
  toolResultCap = Number.POSITIVE_INFINITY,
  contents?: readonly (ChatMessage['content'] | undefined)[],
): string[] {
  const used = new Set<string>();
  for (const message of kept)
    if (message.role !== 'system' && message.role !== 'developer') identifiersIn(textsOf(message).join('\n'), used);
  if (used.size === 0) return [];
  const contentAt = (index: number): ChatMessage['content'] =>
    contents?.[index] ?? (middle[index] as ChatMessage).content;
  if (used.size > SEARCHED_ONE_BY_ONE) return scannedIdentifiers(middle, used, toolResultCap, contentAt);
  // A native substring search per identifier is many times faster than reading a long middle token by token.
  const firstIn = new Map<number, Set<string>>();
  for (const identifier of used) {
    const key = searchKey(identifier);
    const only = new Set([identifier]);
    for (let index = 0; index < middle.length; index += 1) {
      const message = middle[index] as ChatMessage;
      const content = contentAt(index);
      if (!mentions(message, key, toolResultCap, content)) continue;
      if (usedIn(seenMessage(message, toolResultCap, content), only, new Set()).size === 0) continue;
      firstIn.set(index, (firstIn.get(index) ?? new Set()).add(identifier));
      break;
    }
  }
  const ordered = new Set<string>();
  for (const [index, identifiers] of [...firstIn].sort(([left], [right]) => left - right))
    usedIn(seenMessage(middle[index] as ChatMessage, toolResultCap, contentAt(index)), identifiers, ordered);
  return [...ordered];
}

const SEARCHED_ONE_BY_ONE = 16;

function textsOf(message: ChatMessage): string[] {
  const args = (message.tool_calls ?? []).flatMap((call) => argumentValues(call.function.arguments));
  return [contentText(message.content), ...args];
}

/** The decoded string values (not keys) of a call's arguments; cut arguments as far as their literals go; non-JSON whole. */
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
    if (text.charCodeAt(after) !== 0x3a) values.push(decodedString(body));
    open = text.indexOf('"', close + 1);
  }
  return values;
}

const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** A JSON string literal's body decoded; a cut escape is dropped; one not valid stays as it is. */
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

function mentions(message: ChatMessage, key: string, toolResultCap: number, content: ChatMessage['content']): boolean {
  if (typeof content === 'string') {
    if (within(content, message.role === 'tool' ? toolResultCap : Number.POSITIVE_INFINITY).includes(key)) return true;
  } else if (content !== null && contentText(seenMessage(message, toolResultCap, content).content).includes(key))
    return true;
  const calls = message.tool_calls;
  if (calls === undefined) return false;
  // JSON escapes none of the characters an identifier is made of but `/`, which it may write `\/`.
  const slash = key.includes('/');
  for (let position = 0; position < calls.length; position += 1) {
    const args = within((calls[position] as ToolCall).function.arguments, toolResultCap);
    if (args.includes(key) || (slash && args.includes('\\/'))) return true;
  }
  return false;
}

function within(text: string, cap: number): string {
  return text.length > cap ? text.slice(0, cap) : text;
}

function usedIn(message: ChatMessage, used: ReadonlySet<string>, into: Set<string>): Set<string> {
  const keep = (token: string): boolean => used.has(token);
  const rests = textsOf(message).map((text) => withoutUrls(text, into, keep));
  for (const rest of rests) tokensIn(rest, into, keep);
  return into;
}

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

const SEARCHED_AT_MOST = 8;

/** An identifier from its first character that is not a lowercase letter: a search skips fastest to a rare one. */
function searchKey(identifier: string): string {
  const start = identifier.search(/[^a-z]/);
  return start <= 0 ? identifier : identifier.slice(start);
}

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

/** Character classes of a token (`/[A-Za-z0-9_][A-Za-z0-9_./#@-]*[A-Za-z0-9_/]/`): 1 may start it, 2 end it, 4 stand inside. */
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
const STRIPPED = new Set(['.', '/', '#', '@', '-'].map((char) => char.charCodeAt(0)));

/** Calls `visit` with each token of `text` as `[start, end)`, trailing punctuation cut, and whether it holds a mark. */
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
    for (let cls = classOf(text, next); next < length && (cls & 4) !== 0; cls = classOf(text, ++next))
      if ((cls & 2) !== 0) end = next;
    if (end !== -1) {
      let last = end;
      while (last > index && STRIPPED.has(text.charCodeAt(last))) last -= 1;
      visit(index, last + 1, marksOf(text, index, last + 1));
    }
    index = next;
  }
}

/** Non-zero when the text holds a digit, `_`, `/`, `.` or a lower-case letter followed by an upper-case one. */
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

export function missingFrom(summary: string, required: readonly string[]): string[] {
  return required.filter((identifier) => !summary.includes(identifier));
}

export function coverageRetryText(missing: readonly string[], maxChars?: number): string {
  const named = missing.slice(0, MAX_CARRIED_IDENTIFIERS);
  const length = maxChars === undefined ? '' : `, at most ${maxChars} characters`;
  return [
    `Your last attempt left out identifiers that the rest of the conversation still uses: ${named.map((id) => `\`${id}\``).join(', ')}.`,
    `Write the summary again${length}, and say what each of them is, copied exactly.`,
  ].join('\n');
}

export function withCarriedFacts(summary: string, missing: readonly string[]): string {
  if (missing.length === 0) return summary;
  const carried = missing.slice(0, MAX_CARRIED_IDENTIFIERS).map((id) => `\`${id}\``);
  return `${summary.trimEnd()}\n\n${CARRIED_FACTS_PREFIX} ${carried.join(', ')}`;
}

export function coverageOf(required: readonly string[], written: string, final: string): Coverage {
  const missing = missingFrom(final, required);
  const carried = missingFrom(written, required).length - missing.length;
  return { required: required.length, kept: required.length - missing.length, carried, missing };
}
