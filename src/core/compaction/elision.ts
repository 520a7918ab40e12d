// Sandbox-safe: observation aging — call identity, eligibility, stubs (docs/design.md#elision).
import type { ResolvedOptions } from './options.js';
import type { Regions } from './regions.js';
import { imagePartInfo, imagePartTokens, imageStub } from '../counting/parts.js';
import { contentText, messageChars } from '../counting/tokens.js';
import type { ChatMessage, ContentPart, Elision } from '../types.js';

/** Canonical JSON: sorted keys, no whitespace. Arguments that are not JSON stay as they are. */
export function canonicalArguments(args: string): string {
  // Models nearly always write compact JSON with keys in order: a scan finds that faster than a parse.
  if (isCanonicalJson(args)) return args;
  try {
    return JSON.stringify(sortKeys(JSON.parse(args)));
  } catch {
    return args.trim();
  }
}

/** True only for text a parse and stringify would give back as it is; false says only that the parse must decide. */
export function isCanonicalJson(text: string): boolean {
  return canonicalValueEnd(text, 0, 0) === text.length;
}

const CANONICAL_SCAN_DEPTH = 32;

function canonicalValueEnd(text: string, at: number, depth: number): number {
  const code = text.charCodeAt(at);
  if (code === 0x22 /* " */) return canonicalStringEnd(text, at, true);
  if (code === 0x7b /* { */ || code === 0x5b /* [ */) {
    const object = code === 0x7b;
    const close = object ? 0x7d : 0x5d;
    if (depth >= CANONICAL_SCAN_DEPTH) return -1;
    let next = at + 1;
    if (text.charCodeAt(next) === close) return next + 1;
    let previousKey: string | undefined;
    for (;;) {
      if (object) {
        const first = text.charCodeAt(next + 1);
        if (first >= 0x30 && first <= 0x39) return -1;
        const keyEnd = canonicalStringEnd(text, next, false);
        if (keyEnd < 0 || text.charCodeAt(keyEnd) !== 0x3a /* : */) return -1;
        const key = text.slice(next + 1, keyEnd - 1);
        if (key === '__proto__' || (previousKey !== undefined && !(previousKey < key))) return -1;
        previousKey = key;
        next = keyEnd + 1;
      }
      next = canonicalValueEnd(text, next, depth + 1);
      if (next < 0) return -1;
      const after = text.charCodeAt(next);
      if (after === close) return next + 1;
      if (after !== 0x2c /* , */) return -1;
      next += 1;
    }
  }
  if (code === 0x74 /* t */) return text.startsWith('true', at) ? at + 4 : -1;
  if (code === 0x66 /* f */) return text.startsWith('false', at) ? at + 5 : -1;
  if (code === 0x6e /* n */) return text.startsWith('null', at) ? at + 4 : -1;
  // An integer: `0`, or an optional minus and 1 to 15 digits with no leading zero (exact as a double).
  if (code === 0x30) return at + 1;
  const start = code === 0x2d /* - */ ? at + 1 : at;
  const lead = text.charCodeAt(start);
  if (!(lead >= 0x31 && lead <= 0x39)) return -1;
  let end = start + 1;
  while (end < text.length && text.charCodeAt(end) >= 0x30 && text.charCodeAt(end) <= 0x39) end += 1;
  return end - start <= 15 ? end : -1;
}

function canonicalStringEnd(text: string, at: number, escapes: boolean): number {
  if (text.charCodeAt(at) !== 0x22) return -1;
  for (let index = at + 1; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code === 0x22) return index + 1;
    if (code < 0x20 || (code >= 0xd800 && code <= 0xdfff)) return -1;
    if (code !== 0x5c /* \ */) continue;
    if (!escapes) return -1;
    index += 1;
    if (!STRINGIFY_ESCAPES.has(text.charCodeAt(index))) return -1;
  }
  return -1;
}

const STRINGIFY_ESCAPES = new Set([0x22, 0x5c, 0x62, 0x66, 0x6e, 0x72, 0x74]);

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  const sorted: Record<string, unknown> = {};
  const entries = Object.entries(value).sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
  for (const [key, entry] of entries) sorted[key] = sortKeys(entry);
  return sorted;
}

/** The stub that replaces an elided result: a pure function of the content length and the tool name. */
export function elisionStub(contentLength: number, toolName: string): string {
  return `${STUB_START}${contentLength}${stubEnd(toolName)}`;
}

const STUB_START = '[elided by the harness: ';

function stubEnd(toolName: string): string {
  return `-char ${toolName} result; re-run the call if you need it again]`;
}

/** A stub, ending with the id of what it replaced in runs with recall on. */
const stubPattern =
  /^\[elided by the harness: \d+-char .+ result; re-run the call if you need it again\](?: \[recall id: m\d+\])?$/;

export function isStub(message: ChatMessage): boolean {
  const { content } = message;
  return typeof content === 'string' && content.charCodeAt(0) === 0x5b && stubPattern.test(content);
}

/** The call identity (same tool name and canonical arguments) of each answered tool result, by index (-1: none). */
interface CallInfo {
  /** The tool name of each identity, by its number. */
  names: string[];
  identities: Int32Array;
}

function callInfoByResult(messages: readonly ChatMessage[], regions: Regions): CallInfo {
  const names: string[] = [];
  const identities = new Int32Array(messages.length).fill(-1);
  // Agents repeat the same arguments many times: canonicalise each distinct string once.
  const byArguments = new Map<string, Map<string, number>>();
  const byCanonical = new Map<string, Map<string, number>>();
  const { askedBy } = regions.groups;
  for (let resultIndex = 0; resultIndex < askedBy.length; resultIndex += 1) {
    const askerIndex = askedBy[resultIndex] ?? -1;
    if (askerIndex < 0) continue;
    const callId = messages[resultIndex]?.tool_call_id;
    const call = messages[askerIndex]?.tool_calls?.find(({ id }) => id === callId);
    if (call === undefined) continue;
    const args = call.function.arguments;
    let byName = byArguments.get(args);
    if (byName === undefined) {
      const canonicalArgs = canonicalArguments(args);
      byName = byCanonical.get(canonicalArgs) ?? new Map<string, number>();
      byCanonical.set(canonicalArgs, byName);
      byArguments.set(args, byName);
    }
    const name = call.function.name;
    const identity = byName.get(name) ?? names.push(name) - 1;
    byName.set(name, identity);
    identities[resultIndex] = identity;
  }
  return { names, identities };
}

export interface ElisionPlan {
  elisions: Elision[];
  /** Characters of content in the eligible results (the epoch floor's pool). */
  poolChars: number;
}

/**
 * Every tool result eligible for elision (docs/design.md#elision): in the middle, not a stub, and an older copy
 * of a repeated call, or long with enough content after it; with `stubsShorterOnly`, only those a stub shortens.
 */
export function planElisions(
  messages: readonly ChatMessage[],
  regions: Regions,
  {
    ageMinChars,
    ageReclaimMin,
    stubsShorterOnly = false,
  }: { ageMinChars: number; ageReclaimMin: number; stubsShorterOnly?: boolean },
): ElisionPlan {
  const { names, identities } = callInfoByResult(messages, regions);
  const copies = new Int32Array(names.length);
  const newest = new Int32Array(names.length).fill(-1);
  for (let index = 0; index < identities.length; index += 1) {
    const identity = identities[index] ?? -1;
    if (identity < 0) continue;
    copies[identity] = (copies[identity] ?? 0) + 1;
    newest[identity] = index;
  }

  // Each stub's end, made once per tool name: a pass may make thousands of stubs.
  const ends = new Map<string, string>();
  const endFor = (message: ChatMessage, identity: number): string => {
    const toolName = (identity >= 0 ? names[identity] : undefined) ?? message.name ?? 'tool';
    let end = ends.get(toolName);
    if (end === undefined) ends.set(toolName, (end = stubEnd(toolName)));
    return end;
  };

  // Found from the end: the characters after a result decide.
  let poolChars = 0;
  let charsAfter = 0;
  const fromEnd: Elision[] = [];
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message === undefined) continue;
    if (regions.inMiddle[index] === 1 && message.role === 'tool' && !isStub(message)) {
      const identity = identities[index] ?? -1;
      const length = contentText(message.content).length;
      const repeated = identity >= 0 && (copies[identity] ?? 0) > 1;
      const eligible = repeated ? newest[identity] !== index : length > ageMinChars && charsAfter >= ageReclaimMin;
      const stub = eligible ? `${STUB_START}${length}${endFor(message, identity)}` : undefined;
      if (stub !== undefined && (!stubsShorterOnly || stub.length < length)) {
        fromEnd.push({ index, stub });
        poolChars += length;
      }
    }
    if (charsAfter < ageReclaimMin) charsAfter += messageChars(message);
  }
  return { elisions: fromEnd.reverse(), poolChars };
}

const IMAGE_CHARS_PER_TOKEN = 4;

/**
 * docs/design.md#image-elision: every image in the middle older than the last `keepImages`, in a message
 * no observation elision replaces (`skip`); one elision per message.
 */
export function planImageElisions(
  messages: readonly ChatMessage[],
  regions: Regions,
  keepImages: number,
  skip: ReadonlySet<number> = new Set(),
): ElisionPlan {
  let seen = 0;
  let poolChars = 0;
  const fromEnd: Elision[] = [];
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const content = messages[index]?.content;
    if (!Array.isArray(content)) continue;
    const eligible = regions.inMiddle[index] === 1 && !skip.has(index);
    let parts: ContentPart[] | undefined;
    const stubs: string[] = [];
    for (let part = content.length - 1; part >= 0; part -= 1) {
      const original = content[part];
      const image = original === undefined ? undefined : imagePartInfo(original);
      if (image === undefined) continue;
      seen += 1;
      if (seen <= keepImages || !eligible) continue;
      const stub = imageStub(image);
      parts ??= [...content];
      parts[part] = { type: 'text', text: stub };
      stubs.unshift(stub);
      poolChars += Math.max(0, imagePartTokens(image) * IMAGE_CHARS_PER_TOKEN - stub.length);
    }
    if (parts !== undefined) fromEnd.push({ index, stub: stubs.join('\n'), content: parts });
  }
  return { elisions: fromEnd.reverse(), poolChars };
}

/** The elisions of one pass (tool output, images), in conversation order, and their pool together. */
export function planPassElisions(
  messages: readonly ChatMessage[],
  regions: Regions,
  options: ResolvedOptions,
): ElisionPlan {
  const observations = options.ageObservations
    ? planElisions(messages, regions, options)
    : { elisions: [], poolChars: 0 };
  if (options.keepImages === undefined) return observations;
  const skip = new Set(observations.elisions.map(({ index }) => index));
  const images = planImageElisions(messages, regions, options.keepImages, skip);
  if (images.elisions.length === 0) return observations;
  return {
    elisions: [...observations.elisions, ...images.elisions].sort((left, right) => left.index - right.index),
    poolChars: observations.poolChars + images.poolChars,
  };
}

export function elides(options: Pick<ResolvedOptions, 'ageObservations' | 'keepImages'>): boolean {
  return options.ageObservations || options.keepImages !== undefined;
}

/** What `applyElisions` would set at each of `indices`, read instead of a copy of each elided message. */
export function elidedContents(
  indices: readonly number[],
  elisions: readonly Elision[],
): (string | ContentPart[] | undefined)[] | undefined {
  if (elisions.length === 0) return undefined;
  const contents = new Array<string | ContentPart[] | undefined>(indices.length);
  let next = 0;
  for (let position = 0; position < indices.length && next < elisions.length; position += 1) {
    const index = indices[position] as number;
    while (next < elisions.length && (elisions[next] as Elision).index < index) next += 1;
    const elision = elisions[next];
    if (elision?.index === index) contents[position] = elision.content ?? elision.stub;
  }
  return contents;
}

/** Applies elisions: only `content` changes; every other field and every position stays. */
export function applyElisions(messages: readonly ChatMessage[], elisions: readonly Elision[]): ChatMessage[] {
  const applied = messages.slice();
  for (let position = 0; position < elisions.length; position += 1) {
    const elision = elisions[position] as Elision;
    const message = applied[elision.index];
    if (message !== undefined) applied[elision.index] = { ...message, content: elision.content ?? elision.stub };
  }
  return applied;
}
