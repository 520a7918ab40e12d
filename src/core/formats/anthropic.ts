// Sandbox-safe: the Anthropic Messages format — a conversation mapped to the engine's chat messages
// with where each came from, and a compaction of those mapped back to Anthropic messages.
//
// One Anthropic message becomes one engine message, except a user message holding `tool_result`
// blocks: each result becomes a `tool` message (the engine pairs it with the assistant turn that
// asked, and never separates the two), and the user's other blocks, if any, one `user` message
// placed *before* the results. Placed there, it lies inside the asking turn's group (the turn, then
// its results), so no cut of the engine can fall between the pieces of one source message: a
// window never starts at a tool result, nor inside a group (src/core/compaction/regions.ts), and
// the hard trim drops whole groups. The mapping back checks it all the same and fails loudly.
import type { ChatMessage, CompactionResult, ContentPart, TokenCounter, ToolCall } from '../types.js';
import {
  validateAnthropic,
  type AnthropicBlock,
  type AnthropicMessage,
  type AnthropicRequest,
  type AnthropicToolResultBlock,
  type AnthropicToolUseBlock,
} from './anthropic-schema.js';

/** A tool result replaced by a stub: the message, the block of its `tool_result`, the stub now its content. */
export interface AnthropicElision {
  /** Position of the message in the input's `messages`. */
  index: number;
  /** Position of the `tool_result` block in that message's content. */
  block: number;
  /** The whole new content of the `tool_result`. */
  stub: string;
}

/**
 * A compaction of an Anthropic conversation: a `CompactionResult` whose messages are Anthropic
 * messages and whose positions (`elisions`, `cutIndex`, `dropped`) count the input's messages.
 * The token counts are the engine's (docs/compaction.md#formats).
 */
export interface AnthropicCompactionResult extends Omit<CompactionResult, 'messages' | 'elisions'> {
  /** The compacted conversation: the input's own message objects, rebuilt ones holding stubs, and at most one summary message. */
  messages: AnthropicMessage[];
  elisions: AnthropicElision[];
  /** When the input was a request body: that body with `messages` replaced, every other field as it came (the same values). */
  request?: AnthropicRequest;
}

/** What {@link anthropicView} hands a driver: the engine's messages and the way back. */
export interface FormatView<Result> {
  /** The conversation as engine messages (validated: the engine's own check never fails on them). */
  messages: ChatMessage[];
  /** `inner`, plus the size of the blocks it does not count (docs/compaction.md#formats). */
  counter(inner: TokenCounter): TokenCounter;
  /** The engine's result in the format's terms. */
  result(engine: CompactionResult): Result;
  /** The input message an engine message came from (-1: the system prompt). */
  sourceOf(engineIndex: number): number | undefined;
}

/** Characters per token for the size of a block the counters do not read (the character estimator's ratio). */
export const BLOCK_CHARS_PER_TOKEN = 4;

interface Origin {
  /** Index in the input's messages; -1 for the system prompt. */
  message: number;
  /** For a tool result: the position of its block. */
  block?: number;
}

function isToolUse(block: AnthropicBlock): block is AnthropicToolUseBlock {
  return block.type === 'tool_use';
}

function isToolResult(block: AnthropicBlock): block is AnthropicToolResultBlock {
  return block.type === 'tool_result';
}

/** Characters of the blocks a counter reads nothing of (all but text): their JSON size. */
function blockChars(parts: string | null | readonly ContentPart[]): number {
  if (parts === null || typeof parts === 'string') return 0;
  let chars = 0;
  for (const part of parts) if (part.type !== 'text') chars += JSON.stringify(part).length;
  return chars;
}

/** A compaction split one input message: a bug, never bad input. */
export class SplitMessageError extends Error {
  override readonly name = 'SplitMessageError';
}

/**
 * Validates an Anthropic conversation (a message array or a request body) and maps it to engine
 * messages. Throws `InvalidInputError` naming the path of a fault (`messages[3].content[1].tool_use_id`).
 */
export function anthropicView(conversation: unknown): FormatView<AnthropicCompactionResult> {
  const { messages, system, body } = validateAnthropic(conversation);
  const engine: ChatMessage[] = [];
  const origins: Origin[] = [];
  const extra = new Map<ChatMessage, number>();
  const push = (message: ChatMessage, origin: Origin): void => {
    engine.push(message);
    origins.push(origin);
    const chars = blockChars(message.content);
    if (chars > 0) extra.set(message, chars);
  };
  if (system !== undefined) push({ role: 'system', content: system }, { message: -1 });
  messages.forEach((message, index) => {
    const origin = { message: index };
    if (typeof message.content === 'string') return push({ role: message.role, content: message.content }, origin);
    if (message.role === 'assistant') {
      const calls: ToolCall[] = [];
      const parts: ContentPart[] = [];
      for (const block of message.content) {
        if (isToolUse(block))
          calls.push({
            id: block.id,
            type: 'function',
            function: { name: block.name, arguments: JSON.stringify(block.input) },
          });
        else parts.push(block);
      }
      if (calls.length === 0) return push({ role: 'assistant', content: parts }, origin);
      return push({ role: 'assistant', content: parts.length === 0 ? null : parts, tool_calls: calls }, origin);
    }
    const parts: ContentPart[] = [];
    const results: Array<{ block: AnthropicToolResultBlock; position: number }> = [];
    message.content.forEach((block, position) => {
      if (isToolResult(block)) results.push({ block, position });
      else parts.push(block);
    });
    // The user's own blocks before the results: inside the asking turn's group (see the top of this file).
    if (results.length === 0 || parts.length > 0) push({ role: 'user', content: parts }, origin);
    for (const { block, position } of results)
      push(
        { role: 'tool', tool_call_id: block.tool_use_id, content: block.content ?? '' },
        { message: index, block: position },
      );
  });

  return {
    messages: engine,
    counter: (inner) => ({
      count(counted) {
        let chars = 0;
        for (const message of counted) chars += extra.get(message) ?? 0;
        return inner.count(counted) + Math.ceil(chars / BLOCK_CHARS_PER_TOKEN);
      },
    }),
    sourceOf: (engineIndex) => origins[engineIndex]?.message,
    result: (result) => backToAnthropic(result, { messages, body, engine, origins }),
  };
}

interface Mapping {
  messages: readonly AnthropicMessage[];
  body: Record<string, unknown> | undefined;
  engine: readonly ChatMessage[];
  origins: readonly Origin[];
}

/** What became of each engine message: kept as it was, kept with a stub, or dropped (undefined). */
type Fate = 'kept' | { stub: string } | undefined;

function backToAnthropic(
  result: CompactionResult,
  { messages, body, engine, origins }: Mapping,
): AnthropicCompactionResult {
  const engineIndex = new Map<ChatMessage, number>();
  engine.forEach((message, index) => engineIndex.set(message, index));
  const fates: Fate[] = engine.map(() => undefined);
  // The result, in order: engine indices, and 'summary' where the summary stands.
  const order: Array<number | 'summary'> = [];
  const elisions = result.elisions.filter(({ index }) => index > result.cutIndex);
  let last = -1;
  for (const message of result.messages) {
    const index = engineIndex.get(message);
    if (index !== undefined) {
      fates[index] = 'kept';
      order.push((last = index));
      continue;
    }
    if (result.summary !== null && message.role === 'user' && message.content === result.summary) {
      order.push('summary');
      continue;
    }
    // An elided tool result: the next elision after the last placed message, naming the same call.
    const elision = elisions.find(
      ({ index: at, stub }) =>
        at > last && engine[at]?.tool_call_id === message.tool_call_id && message.content === stub,
    );
    if (elision === undefined) throw new SplitMessageError('a compacted message matches no input message');
    fates[elision.index] = { stub: elision.stub };
    order.push((last = elision.index));
  }

  // Per input message: its pieces' fates (a message is kept whole, rebuilt with stubs, or dropped whole).
  const pieces = new Map<number, number[]>();
  origins.forEach(({ message }, index) => pieces.set(message, [...(pieces.get(message) ?? []), index]));
  const output: AnthropicMessage[] = [];
  const emitted = new Set<number>();
  for (const entry of order) {
    if (entry === 'summary') {
      output.push({ role: 'user', content: result.summary ?? '' });
      continue;
    }
    const source = origins[entry]?.message ?? -1;
    if (source < 0 || emitted.has(source)) continue;
    emitted.add(source);
    const own = pieces.get(source) ?? [];
    if (own.some((index) => fates[index] === undefined))
      throw new SplitMessageError(`the compaction kept part of messages[${source}] and dropped the rest`);
    const message = messages[source];
    if (message === undefined) continue;
    const stubs = new Map<number, string>();
    for (const index of own) {
      const fate = fates[index];
      const block = origins[index]?.block;
      if (typeof fate === 'object' && block !== undefined) stubs.set(block, fate.stub);
    }
    output.push(stubs.size === 0 ? message : withStubs(message, stubs));
  }

  let dropped = 0;
  messages.forEach((_, index) => {
    if (!emitted.has(index)) dropped += 1;
  });
  const { messages: _engineMessages, elisions: engineElisions, cutIndex, ...counts } = result;
  const mapped: AnthropicCompactionResult = {
    ...counts,
    messages: output,
    dropped,
    cutIndex: cutIndex < 0 ? -1 : (origins[cutIndex]?.message ?? -1),
    elisions: engineElisions.map(({ index, stub }) => ({
      index: origins[index]?.message ?? -1,
      block: origins[index]?.block ?? -1,
      stub,
    })),
  };
  if (body !== undefined) mapped.request = { ...body, messages: output };
  return mapped;
}

/** The message with the `tool_result` blocks at `stubs`' positions holding their stub as content (every other field kept). */
function withStubs(message: AnthropicMessage, stubs: ReadonlyMap<number, string>): AnthropicMessage {
  if (typeof message.content === 'string') return message;
  return {
    ...message,
    content: message.content.map((block, position) => {
      const stub = stubs.get(position);
      return stub === undefined ? block : { ...block, content: stub };
    }),
  };
}
