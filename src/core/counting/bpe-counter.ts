// Sandbox-safe: a BPE token counter on gpt-tokenizer's pure-JS encoders, framed the way OpenAI's cookbook counts chat messages.
import { InvalidInputError } from '../errors.js';
import { bpeEncoder, type BpeEncodingName } from './bpe-encoders.js';
import { isTextPart, nonTextPartTokens } from './parts.js';
import { assertTokenAmount } from './tokens.js';
import type { ChatMessage, TokenCounter } from '../types.js';

export type { BpeEncodingName };

export const BPE_ENCODING_NAMES: readonly BpeEncodingName[] = ['o200k_base', 'cl100k_base'];

export interface BpeCounterOptions {
  /** The BPE vocabulary. @default 'o200k_base' */
  encoding?: BpeEncodingName;
  /** Framing tokens per message (start, separator and end markers). @default 3 */
  perMessage?: number;
  /** Framing tokens per request (the primed reply). @default 3 */
  perRequest?: number;
  /** Extra tokens for a message with a `name`, besides the name's own. @default 1 */
  perName?: number;
  /** Framing tokens per tool call, besides its name and arguments. @default 3 */
  perToolCall?: number;
  /** Tokens for each non-text part, whatever it holds. @default by what it is (docs/compaction.md#counting) */
  perNonTextPart?: number;
  /** Counts looked up before tokenizing, and recording what it tokenizes. @default none */
  known?: TextTokenCounts;
}

export interface TextTokenCounts {
  get(text: string): number | undefined;
  set(text: string, tokens: number): unknown;
}

/** A longer run is cut: gpt-tokenizer's merge loop is quadratic in the piece length; natural words are far shorter. */
export const BPE_RUN_SLICE = 500;

const LONG_RUN = new RegExp(
  `[\\p{L}\\p{M}]{${BPE_RUN_SLICE + 1},}|[^\\s\\p{L}\\p{N}]{${BPE_RUN_SLICE + 1},}|\\s{${BPE_RUN_SLICE + 1},}|[\\r\\n/]{${BPE_RUN_SLICE + 1},}`,
  'gu',
);

/** Special-token strings (`<|endoftext|>`, ...) in conversation text are ordinary text, never an error. */
const ORDINARY_TEXT = { disallowedSpecial: new Set<string>() };

/** Characters per token of a part neither text nor an image. */
const PART_CHARS_PER_TOKEN = 4;

/** Shorter texts are tokenized every time: a lookup would cost about as much. */
const CACHE_MIN_CHARS = 32;
/** Characters of text whose counts are remembered per encoding (first in, first out). */
export const BPE_CACHE_CHARS = 8_000_000;

/** Counts per encoding, keyed by the (immutable) text: a compaction counts mostly unchanged strings several times. */
interface CountCache {
  counts: Map<string, number>;
  chars: number;
}
const countCaches: Record<BpeEncodingName, CountCache> = {
  o200k_base: { counts: new Map(), chars: 0 },
  cl100k_base: { counts: new Map(), chars: 0 },
};

function remember(cache: CountCache, text: string, tokens: number): void {
  if (text.length > BPE_CACHE_CHARS) return;
  cache.counts.set(text, tokens);
  cache.chars += text.length;
  for (const oldest of cache.counts.keys()) {
    if (cache.chars <= BPE_CACHE_CHARS) break;
    cache.counts.delete(oldest);
    cache.chars -= oldest.length;
  }
}

/** The BPE tokens of one text; a run longer than {@link BPE_RUN_SLICE} is encoded in slices. */
export function countTextTokens(text: string, encoding: BpeEncodingName = 'o200k_base'): number {
  if (text.length < CACHE_MIN_CHARS) return tokenize(text, encoding);
  const cache = countCaches[encoding];
  const remembered = cache.counts.get(text);
  if (remembered !== undefined) return remembered;
  const tokens = tokenize(text, encoding);
  remember(cache, text, tokens);
  return tokens;
}

function tokenize(text: string, encoding: BpeEncodingName): number {
  const encoder = bpeEncoder(encoding);
  if (text.length <= BPE_RUN_SLICE) return encoder.countTokens(text, ORDINARY_TEXT);
  let tokens = 0;
  let segmentStart = 0;
  for (const run of text.matchAll(LONG_RUN)) {
    const runEnd = run.index + run[0].length;
    for (let cut = run.index + BPE_RUN_SLICE; cut < runEnd; cut += BPE_RUN_SLICE) {
      tokens += encoder.countTokens(text.slice(segmentStart, cut), ORDINARY_TEXT);
      segmentStart = cut;
    }
  }
  return tokens + encoder.countTokens(segmentStart === 0 ? text : text.slice(segmentStart), ORDINARY_TEXT);
}

/** Counts as OpenAI's cookbook (`num_tokens_from_messages`): ids, harness flags and extras not counted; additive. */
export function createBpeCounter(options: BpeCounterOptions = {}): TokenCounter {
  const {
    encoding = 'o200k_base',
    perMessage = 3,
    perRequest = 3,
    perName = 1,
    perToolCall = 3,
    perNonTextPart,
    known,
  } = options;
  if (!BPE_ENCODING_NAMES.includes(encoding))
    throw new InvalidInputError('options.encoding', `must be one of ${BPE_ENCODING_NAMES.join(', ')}`);
  for (const [name, value] of Object.entries({ perMessage, perRequest, perName, perToolCall, perNonTextPart }))
    assertTokenAmount(name, value);

  const roleTokens = new Map<string, number>();
  const textTokens = (text: string): number => {
    if (text.length === 0) return 0;
    const remembered = known?.get(text);
    if (remembered !== undefined) return remembered;
    const tokens = countTextTokens(text, encoding);
    known?.set(text, tokens);
    return tokens;
  };
  const contentTokens = (content: ChatMessage['content']): number => {
    if (content === null) return 0;
    if (typeof content === 'string') return textTokens(content);
    let tokens = 0;
    for (const part of content) {
      if (isTextPart(part)) tokens += textTokens(part.text);
      else tokens += perNonTextPart ?? nonTextPartTokens(part, PART_CHARS_PER_TOKEN);
    }
    return tokens;
  };
  const messageTokens = (message: ChatMessage): number => {
    let role = roleTokens.get(message.role);
    // Set on a miss only: this runs once per counted message.
    if (role === undefined) {
      role = textTokens(message.role);
      roleTokens.set(message.role, role);
    }
    let tokens = perMessage + role + contentTokens(message.content);
    if (typeof message.name === 'string') tokens += textTokens(message.name) + perName;
    for (const call of message.tool_calls ?? [])
      tokens += perToolCall + textTokens(call.function.name) + textTokens(call.function.arguments);
    return tokens;
  };
  return {
    count(messages) {
      let tokens = perRequest;
      for (let index = 0; index < messages.length; index += 1) tokens += messageTokens(messages[index] as ChatMessage);
      return tokens;
    },
  };
}

/** The non-empty texts a BPE count of `message` tokenizes besides its role. */
export function messageTexts(message: ChatMessage): string[] {
  const texts: string[] = [];
  const add = (text: unknown): void => {
    if (typeof text === 'string' && text.length > 0) texts.push(text);
  };
  if (typeof message.content === 'string') add(message.content);
  else if (Array.isArray(message.content)) for (const part of message.content) if (part.type === 'text') add(part.text);
  add(message.name);
  for (const call of message.tool_calls ?? []) {
    add(call.function.name);
    add(call.function.arguments);
  }
  return texts;
}
