// Sandbox-safe: what every non-OpenAI format shares: its conversation as engine messages that remember
// where they came from, and the result mapped back (docs/compaction.md#formats). A message holding tool
// results becomes one `user` message of its other parts, then one `tool` message per result, all in
// the asking turn's group, so no cut falls between them; the mapping back checks it all the same.
import { markUncuttable } from '../compaction/truncation.js';
import type { ChatMessage, CompactionResult, ContentPart, ToolCall } from '../types.js';

/** A tool result replaced by a stub: its message, the position of its part, the stub now its content. */
export interface PartElision {
  index: number;
  block: number;
  stub: string;
}

/** A compaction in a format's own messages; positions count the input's messages. */
export interface MappedCompactionResult<Message> extends Omit<CompactionResult, 'messages' | 'elisions'> {
  /** The input's own message objects, rebuilt ones holding stubs, and at most one summary message. */
  messages: Message[];
  elisions: PartElision[];
}

export interface FormatView<Result> {
  /** Validated: the engine's own check never fails on them. The counters read every part themselves (docs/design.md#count-parts). */
  messages: ChatMessage[];
  result(engine: CompactionResult): Result;
  /** The input message an engine message came from (-1: one outside the messages, a system prompt). */
  sourceOf(engineIndex: number): number | undefined;
}

export interface Origin {
  /** Index in the input's messages; -1 for an Anthropic request's system prompt. */
  message: number;
  /** For a tool result: the position of its part. */
  block?: number;
}

/** A compaction split one input message: a bug, never bad input. */
export class SplitMessageError extends Error {
  override readonly name = 'SplitMessageError';
}

export class EngineMessages {
  readonly messages: ChatMessage[] = [];
  readonly origins: Origin[] = [];

  push(message: ChatMessage, origin: Origin): void {
    this.messages.push(message);
    this.origins.push(origin);
  }

  /** An assistant message of parts: those `callOf` reads as a tool call become its `tool_calls`. */
  pushAssistant<Part extends ContentPart>(
    content: readonly Part[],
    callOf: (part: Part) => ToolCall | undefined,
    origin: Origin,
  ): void {
    const calls = content.flatMap((part) => callOf(part) ?? []);
    const parts: ContentPart[] = content.filter((part) => callOf(part) === undefined);
    if (calls.length === 0) this.push({ role: 'assistant', content: parts }, origin);
    else this.push({ role: 'assistant', content: parts.length === 0 ? null : parts, tool_calls: calls }, origin);
  }

  /** A user message of parts: one `user` message, or its other parts then one `tool` message per result (see the top). */
  pushUserParts<Part extends ContentPart>(
    index: number,
    parts: readonly Part[],
    toolMessage: (part: Part) => ChatMessage | undefined,
  ): void {
    const results = parts.map((part) => toolMessage(part));
    const others: ContentPart[] = parts.filter((_, block) => results[block] === undefined);
    if (others.length > 0 || others.length === parts.length)
      this.push({ role: 'user', content: others }, { message: index });
    for (const [block, message] of results.entries())
      if (message !== undefined) this.push(message, { message: index, block });
  }
}

export interface Rebuild<Message> {
  sources: readonly Message[];
  withStubs(message: Message, stubs: ReadonlyMap<number, string>): Message;
  summary(content: string): Message;
}

/** `message` with the parts at `stubs`' positions replaced by `stubbed(part, stub)`. */
export function withPartStubs<Part, Message extends { content: string | Part[] }>(
  message: Message,
  stubs: ReadonlyMap<number, string>,
  stubbed: (part: Part, stub: string) => Part,
): Message {
  if (typeof message.content === 'string') return message;
  const content = message.content.map((part, at) => {
    const stub = stubs.get(at);
    return stub === undefined ? part : stubbed(part, stub);
  });
  return { ...message, content };
}

export function formatView<Message, Result>(
  collected: EngineMessages,
  rebuild: Rebuild<Message>,
  finish: (mapped: MappedCompactionResult<Message>) => Result,
): FormatView<Result> {
  const { messages, origins } = collected;
  // The mapping back carries a cut only as a tool result's stub: truncation leaves the rest whole.
  for (const message of messages)
    if (message.role !== 'tool' || typeof message.content !== 'string') markUncuttable(message);
  return {
    messages,
    sourceOf: (engineIndex) => origins[engineIndex]?.message,
    result: (result) => finish(mapBack(result, collected, rebuild)),
  };
}

/** What became of each engine message: kept, kept with a stub, or dropped (undefined). */
type Fate = 'kept' | { stub: string } | undefined;

function mapBack<Message>(
  result: CompactionResult,
  { messages: engine, origins }: EngineMessages,
  { sources, withStubs, summary }: Rebuild<Message>,
): MappedCompactionResult<Message> {
  const engineIndex = new Map(engine.map((message, index) => [message, index]));
  const sourceOf = (index: number): number => origins[index]?.message ?? -1;
  const fates: Fate[] = engine.map(() => undefined);
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
    // An elided tool result: the next elision after the last placed message, for the same call.
    const elision = elisions.find(
      ({ index: at, stub }) =>
        at > last && engine[at]?.tool_call_id === message.tool_call_id && message.content === stub,
    );
    if (elision === undefined) throw new SplitMessageError('a compacted message matches no input message');
    fates[elision.index] = { stub: elision.stub };
    order.push((last = elision.index));
  }

  const pieces = new Map<number, number[]>();
  origins.forEach(({ message }, index) => pieces.set(message, [...(pieces.get(message) ?? []), index]));
  const output: Message[] = [];
  const emitted = new Set<number>();
  for (const entry of order) {
    if (entry === 'summary') {
      output.push(summary(result.summary ?? ''));
      continue;
    }
    const source = sourceOf(entry);
    if (source < 0 || emitted.has(source)) continue;
    emitted.add(source);
    const own = pieces.get(source) ?? [];
    if (own.some((index) => fates[index] === undefined))
      throw new SplitMessageError(`the compaction kept part of messages[${source}] and dropped the rest`);
    const message = sources[source];
    if (message === undefined) continue;
    const stubs = new Map<number, string>();
    for (const index of own) {
      const fate = fates[index];
      const block = origins[index]?.block;
      if (typeof fate === 'object' && block !== undefined) stubs.set(block, fate.stub);
    }
    output.push(stubs.size === 0 ? message : withStubs(message, stubs));
  }

  const { messages: _engineMessages, elisions: engineElisions, cutIndex, userMessages, ...counts } = result;
  return {
    ...counts,
    // docs/design.md#user-words A kept user message is one input message of its own.
    ...(userMessages === undefined
      ? {}
      : { userMessages: { ...userMessages, keptAt: userMessages.keptAt.map(sourceOf) } }),
    messages: output,
    dropped: sources.length - emitted.size,
    cutIndex: cutIndex < 0 ? -1 : sourceOf(cutIndex),
    elisions: engineElisions.map(({ index, stub }) => ({
      index: sourceOf(index),
      block: origins[index]?.block ?? -1,
      stub,
    })),
  };
}
