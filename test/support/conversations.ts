// Node (test support): fast-check arbitraries for conversations, the compaction invariants that
// the property tests and the corpus tests both assert, and (re-exported from corpus/, which the
// benchmarks share) the deterministic fake summarizer.
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import {
  toProviderMessages,
  validateMessages,
  type ChatMessage,
  type CompactionResult,
  type ContentPart,
  type SummarizeRequest,
  type TokenCounter,
  type ToolCall,
} from '../../src/index.js';
import { CARRIED_FACTS_PREFIX } from '../../src/core/compaction/coverage.js';
import { SUMMARY_ROOM_SHARE } from '../../src/core/compaction/economics.js';
import { TRUNCATION_MIN_KEEP, truncationMarker } from '../../src/core/compaction/truncation.js';
import type { ResolvedOptions } from '../../src/core/compaction/options.js';
import { transcriptOf } from './messages.js';
import { renderedText } from '../../corpus/fake-summarizer.js';

// ---------------------------------------------------------------------------------------------
// Conversations
// ---------------------------------------------------------------------------------------------

/** A small set of tool names and argument strings, so call identities repeat (docs/design.md#elision). */
export const TOOL_NAMES = ['fs_read', 'bash', 'grep', 'list_dir'] as const;
/** Pairs of spellings that are the same call identity once canonicalised, plus one non-JSON string. */
export const TOOL_ARGUMENTS = [
  '{"path":"src/app.ts"}',
  '{ "path": "src/app.ts" }',
  '{"path":"README.md"}',
  '{"command":"npm test","cwd":"."}',
  '{"cwd":".","command":"npm test"}',
  '{}',
  'not json at all',
] as const;

/** Harness flags a generated message may carry. `notSticky` is an explicit `sticky: false`. */
export type FlagSpec = 'none' | 'sticky' | 'notSticky' | { depth: number };

/** Content of a given size; `parts` makes it a ContentPart array instead of a string. */
export interface TextSpec {
  size: number;
  parts: 'string' | 'text-parts' | 'with-image';
}

export interface CallSpec {
  name: number;
  args: number;
  answered: boolean;
  /** Results are emitted in ascending `order` (ties by call position): parallel results arrive in any order. */
  order: number;
  /** A message inserted just before this result (ignored in tidy conversations). */
  before: 'none' | 'sticky' | 'depth' | 'user';
  result: TextSpec;
  flag: FlagSpec;
  /** The tool result carries a `name` field. */
  named: boolean;
}

export type BlockSpec =
  | { kind: 'user' | 'assistant'; text: TextSpec; flag: FlagSpec }
  | {
      kind: 'injection';
      role: 'system' | 'developer' | 'user' | 'assistant';
      text: TextSpec;
      flag: 'sticky' | { depth: number };
    }
  | { kind: 'turn'; text: TextSpec | null; calls: CallSpec[]; flag: FlagSpec; reasoning: boolean }
  | { kind: 'orphan'; text: TextSpec; flag: FlagSpec; answersNextCall: boolean };

export interface ConversationSpec {
  prefix: Array<{ role: 'system' | 'developer'; text: TextSpec }>;
  blocks: BlockSpec[];
  /** A last assistant turn whose calls are (mostly) unanswered: the agent loop was interrupted. */
  tail: { turn: Extract<BlockSpec, { kind: 'turn' }>; answerSome: boolean } | null;
  /**
   * Tidy conversations are what a provider accepts: every tool result directly follows the turn
   * that asked (only other results in between), no orphans. Untidy ones add interleaved messages
   * and orphan results.
   */
  tidy: boolean;
}

// Content sizes: mostly small, often over the 2000-char defaults (ageMinChars, toolResultCap),
// now and then a whole-file read.
const sizeArb: fc.Arbitrary<number> = fc.oneof(
  { weight: 10, arbitrary: fc.integer({ min: 0, max: 80 }) },
  { weight: 8, arbitrary: fc.integer({ min: 100, max: 1999 }) },
  { weight: 6, arbitrary: fc.integer({ min: 2001, max: 8000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 20_000, max: 40_000 }) },
);

export const textArb: fc.Arbitrary<TextSpec> = fc.record({
  size: sizeArb,
  parts: fc.oneof(
    { weight: 10, arbitrary: fc.constant('string' as const) },
    { weight: 1, arbitrary: fc.constant('text-parts' as const) },
    { weight: 1, arbitrary: fc.constant('with-image' as const) },
  ),
});

export const flagArb: fc.Arbitrary<FlagSpec> = fc.oneof(
  { weight: 14, arbitrary: fc.constant('none' as const) },
  { weight: 2, arbitrary: fc.constant('sticky' as const) },
  { weight: 1, arbitrary: fc.constant('notSticky' as const) },
  { weight: 1, arbitrary: fc.record({ depth: fc.integer({ min: 0, max: 4 }) }) },
);

const callArb: fc.Arbitrary<CallSpec> = fc.record({
  name: fc.integer({ min: 0, max: TOOL_NAMES.length - 1 }),
  args: fc.integer({ min: 0, max: TOOL_ARGUMENTS.length - 1 }),
  answered: fc.oneof({ weight: 8, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  order: fc.integer({ min: 0, max: 3 }),
  before: fc.oneof(
    { weight: 12, arbitrary: fc.constant('none' as const) },
    { weight: 1, arbitrary: fc.constant('sticky' as const) },
    { weight: 1, arbitrary: fc.constant('depth' as const) },
    { weight: 1, arbitrary: fc.constant('user' as const) },
  ),
  result: textArb,
  flag: flagArb,
  named: fc.boolean(),
});

const turnArb = (minCalls: number): fc.Arbitrary<Extract<BlockSpec, { kind: 'turn' }>> =>
  fc.record({
    kind: fc.constant('turn' as const),
    text: fc.option(textArb, { nil: null, freq: 3 }),
    calls: fc.array(callArb, { minLength: minCalls, maxLength: 4 }),
    flag: flagArb,
    reasoning: fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  });

export const blockArb: fc.Arbitrary<BlockSpec> = fc.oneof(
  { weight: 7, arbitrary: turnArb(0) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('user' as const), text: textArb, flag: flagArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('assistant' as const), text: textArb, flag: flagArb }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('injection' as const),
      role: fc.constantFrom('system' as const, 'developer' as const, 'user' as const, 'assistant' as const),
      text: textArb,
      flag: fc.oneof(fc.constant('sticky' as const), fc.record({ depth: fc.integer({ min: 0, max: 4 }) })),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('orphan' as const),
      text: textArb,
      flag: flagArb,
      answersNextCall: fc.boolean(),
    }),
  },
);

export interface ConversationArbOptions {
  /** @default 30 */
  maxBlocks?: number;
  /** Force tidy (true) or untidy (false) conversations; @default either */
  tidy?: boolean;
}

export function conversationSpecArb({
  maxBlocks = 30,
  tidy,
}: ConversationArbOptions = {}): fc.Arbitrary<ConversationSpec> {
  return fc.record({
    prefix: fc.array(fc.record({ role: fc.constantFrom('system' as const, 'developer' as const), text: textArb }), {
      maxLength: 2,
    }),
    blocks: fc.array(blockArb, { maxLength: maxBlocks, size: 'medium' }),
    tail: fc.option(fc.record({ turn: turnArb(1), answerSome: fc.boolean() }), { nil: null, freq: 2 }),
    tidy: tidy === undefined ? fc.boolean() : fc.constant(tidy),
  });
}

/** Random conversations (validated shape; see `ConversationSpec`). Printed compactly in counterexamples. */
export function conversationArb(options: ConversationArbOptions = {}): fc.Arbitrary<ChatMessage[]> {
  return conversationSpecArb(options).map(buildConversation);
}

const FILLER_UNIT = 'lorem ipsum dolor sit amet, consectetur adipiscing elit; ';
const FILLER = FILLER_UNIT.repeat(Math.ceil(8192 / FILLER_UNIT.length));

/** `size` characters of cheap repeated text (no `⟨`, so message tags stay unique). */
export function filler(size: number): string {
  if (size <= FILLER.length) return FILLER.slice(0, size);
  return FILLER.repeat(Math.ceil(size / FILLER.length)).slice(0, size);
}

/**
 * Text of exactly `size` characters that starts with a tag unique to the message (`⟨12⟩`), so
 * that a test can tell where any substring longer than the tag came from.
 */
export function taggedText(tag: number, size: number): string {
  const prefix = `⟨${tag}⟩`;
  return size <= prefix.length ? filler(size) : prefix + filler(size - prefix.length);
}

function content({ size, parts }: TextSpec, tag: number): string | ContentPart[] {
  const text = taggedText(tag, size);
  if (parts === 'string') return text;
  if (parts === 'text-parts') {
    const half = Math.floor(text.length / 2);
    return [
      { type: 'text', text: text.slice(0, half) },
      { type: 'text', text: text.slice(half) },
    ];
  }
  return [
    { type: 'text', text },
    { type: 'image_url', image_url: { url: `https://example.test/${tag}.png` } },
  ];
}

function withFlag(message: ChatMessage, flag: FlagSpec): ChatMessage {
  if (flag === 'none') return message;
  if (flag === 'sticky') return { ...message, sticky: true };
  if (flag === 'notSticky') return { ...message, sticky: false };
  return { ...message, depth: flag.depth };
}

/** Materialises a spec: unique call ids (`call_<n>`), unique content tags, fresh objects. */
export function buildConversation(spec: ConversationSpec): ChatMessage[] {
  const messages: ChatMessage[] = [];
  let nextCall = 0;
  let nextOrphan = 0;
  const tag = (): number => messages.length;

  const pushTurn = (
    turn: Extract<BlockSpec, { kind: 'turn' }>,
    answer: (call: CallSpec, position: number) => boolean,
  ): void => {
    const ids = turn.calls.map(() => `call_${nextCall++}`);
    const toolCalls: ToolCall[] = turn.calls.map((call, position) => ({
      id: ids[position] ?? '',
      type: 'function',
      function: { name: TOOL_NAMES[call.name] ?? 'bash', arguments: TOOL_ARGUMENTS[call.args] ?? '{}' },
    }));
    // An assistant message without calls must have content (schema); `tool_calls: []` is allowed.
    const text = turn.text ?? (toolCalls.length === 0 ? { size: 12, parts: 'string' as const } : null);
    let asked: ChatMessage = {
      role: 'assistant',
      content: text === null ? null : content(text, tag()),
      tool_calls: toolCalls,
    };
    if (turn.reasoning) asked = { ...asked, reasoning_content: `thinking ${tag()}` };
    messages.push(withFlag(asked, turn.flag));
    const answered = turn.calls
      .map((call, position) => ({ call, position }))
      .filter(({ call, position }) => answer(call, position))
      .sort((left, right) => left.call.order - right.call.order || left.position - right.position);
    for (const { call, position } of answered) {
      if (!spec.tidy && call.before !== 'none') {
        const between: ChatMessage = { role: 'user', content: content({ size: 40, parts: 'string' }, tag()) };
        if (call.before === 'sticky') messages.push({ ...between, sticky: true });
        else if (call.before === 'depth') messages.push({ ...between, depth: 1 });
        else messages.push(between);
      }
      const result: ChatMessage = {
        role: 'tool',
        tool_call_id: ids[position] ?? '',
        content: content(call.result, tag()),
      };
      messages.push(withFlag(call.named ? { ...result, name: TOOL_NAMES[call.name] ?? 'bash' } : result, call.flag));
    }
  };

  for (const { role, text } of spec.prefix) messages.push({ role, content: content(text, tag()) });
  for (const block of spec.blocks) {
    switch (block.kind) {
      case 'user':
      case 'assistant':
        messages.push(withFlag({ role: block.kind, content: content(block.text, tag()) }, block.flag));
        break;
      case 'injection':
        messages.push(withFlag({ role: block.role, content: content(block.text, tag()) }, block.flag));
        break;
      case 'turn':
        pushTurn(block, (call) => call.answered);
        break;
      case 'orphan':
        if (spec.tidy) break;
        // `answersNextCall`: a result that arrives before the call it names (an orphan all the same).
        messages.push(
          withFlag(
            {
              role: 'tool',
              tool_call_id: block.answersNextCall ? `call_${nextCall}` : `orphan_${nextOrphan++}`,
              content: content(block.text, tag()),
            },
            block.flag,
          ),
        );
        break;
    }
  }
  if (spec.tail !== null) {
    const { turn, answerSome } = spec.tail;
    pushTurn(turn, (call, position) => answerSome && call.answered && position % 2 === 0);
  }
  Object.defineProperty(messages, fc.toStringMethod, {
    value: () => describeConversation(messages),
    enumerable: false,
  });
  return messages;
}

function lengthOf(message: ChatMessage): number {
  return renderedText(message.content).length;
}

/** One line per message: index, role, flags, ids, content size. For counterexamples and reports. */
export function describeConversation(messages: readonly ChatMessage[]): string {
  const lines = messages.map((message, index) => {
    const flags = [
      message.sticky !== undefined ? `sticky=${String(message.sticky)}` : '',
      message.depth !== undefined ? `depth=${message.depth}` : '',
    ].filter((flag) => flag !== '');
    const calls = (message.tool_calls ?? []).map(
      (call) => `${call.id}:${call.function.name}(${call.function.arguments})`,
    );
    const shape =
      message.content === null ? 'null' : Array.isArray(message.content) ? `parts[${message.content.length}]` : 'str';
    return [
      `  ${index} ${message.role}`,
      flags.length > 0 ? `[${flags.join(',')}]` : '',
      message.tool_call_id !== undefined ? `→${message.tool_call_id}` : '',
      calls.length > 0 ? `calls=[${calls.join(' ')}]` : message.tool_calls !== undefined ? 'calls=[]' : '',
      `${shape}:${lengthOf(message)}`,
    ]
      .filter((part) => part !== '')
      .join(' ');
  });
  return `[\n${lines.join('\n')}\n]`;
}

// ---------------------------------------------------------------------------------------------
// Fake summarizer: in corpus/fake-summarizer.ts, which the benchmarks share
// ---------------------------------------------------------------------------------------------

export {
  createFakeSummarizer,
  fakeOutcome,
  fakeSummaryText,
  purposeOf,
  renderedText,
  requestChars,
  statusError,
  SUMMARIZER_BEHAVIOURS,
  type FakeSummarizer,
  type SummarizerBehaviour,
  type SummarizerPlan,
} from '../../corpus/fake-summarizer.js';

// ---------------------------------------------------------------------------------------------
// Invariants (docs/design.md#invariants), computed from the spec's definitions, not from the engine's helpers
// ---------------------------------------------------------------------------------------------

export class InvariantViolation extends Error {
  override readonly name = 'InvariantViolation';
}

function check(condition: boolean, invariant: string, detail: () => string = () => ''): asserts condition {
  if (!condition) {
    const more = detail();
    throw new InvariantViolation(more === '' ? invariant : `${invariant}: ${more}`);
  }
}

/** docs/design.md#sticky: `sticky: true`, a system or developer message, or a depth injection. */
export function isStickyBySpec(message: ChatMessage): boolean {
  return (
    message.sticky === true || message.role === 'system' || message.role === 'developer' || message.depth !== undefined
  );
}

/** Text of content as the elision rules measure it (non-text parts are not in it; the counters charge them apart). */
export function textOf(content: ChatMessage['content']): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
}

/** For every message: the index of the earlier assistant turn whose call it answers, or -1 (not a tool result, or an orphan). */
export function askers(messages: readonly ChatMessage[]): number[] {
  const owner = new Map<string, number>();
  return messages.map((message, index) => {
    const asker =
      message.role === 'tool' && message.tool_call_id !== undefined ? (owner.get(message.tool_call_id) ?? -1) : -1;
    for (const call of message.tool_calls ?? []) owner.set(call.id, index);
    return asker;
  });
}

/**
 * The start of the recent window by the spec: `keepRecent` from the end, back over tool results,
 * then the largest position at or before that which no answered pair straddles.
 */
export function referenceCut(
  messages: readonly ChatMessage[],
  keepRecent: number,
  asker: readonly number[] = askers(messages),
): number {
  const length = messages.length;
  let cut = Math.max(0, length - keepRecent);
  while (cut > 0 && cut < length && messages[cut]?.role === 'tool') cut -= 1;
  const suffixMinAsker: number[] = new Array<number>(length + 1).fill(Infinity);
  for (let index = length - 1; index >= 0; index -= 1) {
    const owner = asker[index] ?? -1;
    suffixMinAsker[index] = Math.min(suffixMinAsker[index + 1] ?? Infinity, owner >= 0 ? owner : Infinity);
  }
  while (cut > 0 && (suffixMinAsker[cut] ?? Infinity) < cut) cut -= 1;
  return cut;
}

export interface ReferenceRegions {
  asker: number[];
  /** First member of each message's pair group (the asking turn, or the message itself). */
  group: number[];
  sticky: boolean[];
  cut: number;
  /** Ascending input indices of the middle. */
  middle: number[];
  inMiddle: boolean[];
}

export function referenceRegions(
  messages: readonly ChatMessage[],
  keepRecent: number,
  keepTask = false,
): ReferenceRegions {
  const asker = askers(messages);
  const group = asker.map((owner, index) => (owner >= 0 ? owner : index));
  // keepTask: the first user message is kept as a sticky one is (docs/design.md#task-survives).
  const task = keepTask ? messages.findIndex((message) => message.role === 'user') : -1;
  const sticky = messages.map((message, index) => index === task || isStickyBySpec(message));
  const pinnedGroups = new Set<number>();
  sticky.forEach((isSticky, index) => {
    if (isSticky) pinnedGroups.add(group[index] ?? index);
  });
  const cut = referenceCut(messages, keepRecent, asker);
  const inMiddle = messages.map(
    (_, index) => index < cut && sticky[index] !== true && !pinnedGroups.has(group[index] ?? index),
  );
  const middle = inMiddle.flatMap((isMiddle, index) => (isMiddle ? [index] : []));
  return { asker, group, sticky, cut, middle, inMiddle };
}

/** Positions a recent window may start at by the spec: not a tool result, and no answered pair straddles it. */
function validStarts(messages: readonly ChatMessage[], group: readonly number[]): boolean[] {
  const valid: boolean[] = new Array<boolean>(messages.length + 1).fill(false);
  let smallestGroup = Infinity;
  valid[messages.length] = true;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    smallestGroup = Math.min(smallestGroup, group[index] ?? index);
    valid[index] = index === 0 || (messages[index]?.role !== 'tool' && smallestGroup >= index);
  }
  return valid;
}

/**
 * docs/design.md#window-gives-way by the spec: the recent window of a summarizing compaction. The reference window
 * when the messages it keeps (sticky ones and the window) leave `room` for a summary under `mark`;
 * otherwise the largest window, at a valid start no later than the last complete turn (the last
 * assistant message and what follows it), that does; otherwise that last complete turn.
 */
export function givenWayRegions(
  conversation: readonly ChatMessage[],
  standard: ReferenceRegions,
  counter: TokenCounter,
  mark: number,
): ReferenceRegions {
  const room = Math.ceil(SUMMARY_ROOM_SHARE * mark);
  const pinnedGroups = new Set(standard.group.filter((_, index) => standard.sticky[index] === true));
  const removable = conversation.map(
    (_, index) => standard.sticky[index] !== true && !pinnedGroups.has(standard.group[index] ?? index),
  );
  const fits = (cut: number): boolean =>
    counter.count(conversation.filter((_, index) => index >= cut || removable[index] !== true)) + room <= mark;
  if (fits(standard.cut)) return standard;
  const valid = validStarts(conversation, standard.group);
  let lastAssistant = conversation.length - 1;
  while (lastAssistant >= 0 && conversation[lastAssistant]?.role !== 'assistant') lastAssistant -= 1;
  let floor = lastAssistant >= 0 ? lastAssistant : Math.max(0, conversation.length - 1);
  while (floor > 0 && valid[floor] !== true) floor -= 1;
  let cut = standard.cut;
  for (let start = standard.cut + 1; start <= floor; start += 1) {
    if (valid[start] !== true) continue;
    cut = start;
    if (fits(start)) break;
  }
  const inMiddle = conversation.map((_, index) => index < cut && removable[index] === true);
  return { ...standard, cut, inMiddle, middle: inMiddle.flatMap((isMiddle, index) => (isMiddle ? [index] : [])) };
}

/** Every tool result directly follows (past other results only) the assistant turn whose call it answers. */
export function isProviderStrict(messages: readonly ChatMessage[]): boolean {
  let lastTurn: ChatMessage | undefined;
  for (const message of messages) {
    if (message.role !== 'tool') {
      lastTurn = message;
      continue;
    }
    if (lastTurn?.role !== 'assistant' || !(lastTurn.tool_calls ?? []).some((call) => call.id === message.tool_call_id))
      return false;
  }
  return true;
}

/** Canonical JSON (sorted keys, no whitespace); arguments that are not JSON stay as they are. */
function canonicalJson(args: string): string {
  const sortKeys = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(sortKeys);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortKeys(Reflect.get(value, key))]),
    );
  };
  try {
    return JSON.stringify(sortKeys(JSON.parse(args)));
  } catch {
    return args.trim();
  }
}

function contentChars(message: ChatMessage): number {
  let chars = textOf(message.content).length;
  for (const call of message.tool_calls ?? []) chars += call.function.name.length + call.function.arguments.length;
  return chars;
}

const STUB = /^\[elided by the harness: (\d+)-char (.+) result; re-run the call if you need it again\]$/;

export interface CompactionRun {
  input: readonly ChatMessage[];
  options: ResolvedOptions;
  /** The call's `target` override, if any. */
  target?: number | undefined;
  /** The counter every count must use (the call's override, else the driver's). */
  counter: TokenCounter;
  /** Every summarize request the engine made (one per step; the async driver may repeat them). */
  requests: readonly SummarizeRequest[];
  /** Every text the summarizer answered. */
  texts: readonly string[];
  result: CompactionResult;
  /** Content tags are unique (generated conversations): a substring longer than a tag identifies its message. */
  uniqueContent?: boolean;
}

/** Throws `InvariantViolation` naming the first invariant that does not hold. */
export function assertCompactionInvariants(run: CompactionRun): void {
  const { input, options, target, counter, requests, texts, result } = run;
  const output = result.messages;
  // Elision works on the reference regions; a summary or a trim on the window that gave way (docs/design.md#window-gives-way).
  const standard = referenceRegions(input, options.keepRecent, options.keepTask);
  const { asker, group, sticky } = standard;
  const limit = target ?? options.contextBudget;
  const trimTo = target ?? options.targetRatio * options.contextBudget;
  const trigger = options.triggerRatio * options.contextBudget;
  const mark = Math.min(options.targetRatio * options.contextBudget, target ?? Infinity);
  const below = result.tokensBefore <= (target ?? trigger);

  // A hard trim says why; nothing else carries a reason.
  check(
    (result.fallbackReason !== undefined) === result.fallback,
    'fallbackReason is present exactly when fallback is true',
    () => `fallback ${result.fallback}, fallbackReason ${JSON.stringify(result.fallbackReason)}`,
  );
  // Counts are honest: every count uses the call's counter.
  check(
    result.tokensBefore === counter.count(input),
    'tokensBefore is the count of the input',
    () => `${result.tokensBefore} vs ${counter.count(input)}`,
  );
  check(
    result.tokensAfter === counter.count(output),
    'tokensAfter is the count of the output',
    () => `${result.tokensAfter} vs ${counter.count(output)}`,
  );
  check(
    result.exhausted === result.tokensAfter > limit,
    'exhausted iff tokensAfter > contextBudget (or target)',
    () => `exhausted=${result.exhausted}, ${result.tokensAfter} vs ${limit}`,
  );
  check(validateMessages(output).length === output.length, 'the output validates');
  check(
    toProviderMessages(output).every((message) => !('sticky' in message) && !('depth' in message)),
    'toProviderMessages strips the harness flags',
  );

  // Truncations (docs/design.md#truncation): only with truncateOversized, only on a result that was over its limit,
  // only tool results and user messages that compaction may remove, head and tail kept around the marker.
  const truncated = new Map<number, ChatMessage>();
  for (const { index, chars, kept } of result.truncations ?? []) {
    const original = input[index];
    const elision = result.elisions.find((candidate) => candidate.index === index);
    check(options.truncateOversized, 'no truncations without truncateOversized', () => `truncated ${index}`);
    check(result.tokensBefore > limit, 'only a conversation over its limit is truncated', () => `truncated ${index}`);
    check(
      original !== undefined && elision !== undefined && (original.role === 'tool' || original.role === 'user'),
      'a truncation is an elision of a tool result or user message',
      () => `index ${index}`,
    );
    check(!isStickyBySpec(original), 'a sticky message is never truncated', () => `index ${index}`);
    check(
      kept >= TRUNCATION_MIN_KEEP && kept < chars,
      'a truncation keeps at least its minimum',
      () => `${kept} of ${chars}`,
    );
    const text = textOf(elision.content ?? elision.stub);
    // The text cut: the content string, or the longest text part.
    const whole =
      typeof original.content === 'string'
        ? original.content
        : (original.content ?? [])
            .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
            .reduce((longest, part) => (part.length > longest.length ? part : longest), '');
    const head = Math.ceil(kept / 2);
    check(
      text.includes(
        `${whole.slice(0, head)}${truncationMarker(chars - kept)}${whole.slice(whole.length - (kept - head))}`,
      ),
      'a truncation keeps the head and the tail around the marker',
      () => `index ${index}`,
    );
    truncated.set(index, { ...original, content: elision.content ?? elision.stub });
  }

  // Elisions: only with ageObservations, only in the middle, only tool results, only content, the stub format.
  const elided = new Map<number, string>();
  let previous = -1;
  for (const { index, stub } of result.elisions.filter((elision) => !truncated.has(elision.index))) {
    check(options.ageObservations, 'no elisions without ageObservations', () => `elided ${index}`);
    check(index > previous, 'elision indices ascend', () => `${previous} then ${index}`);
    previous = index;
    const original = input[index];
    check(
      original !== undefined && standard.inMiddle[index] === true,
      'elisions are in the middle',
      () => `index ${index}, cut ${standard.cut}`,
    );
    check(original.role === 'tool', 'only tool results are elided', () => `index ${index} is ${original.role}`);
    check(
      !(typeof original.content === 'string' && STUB.test(original.content)),
      'a stub is never elided again',
      () => `index ${index}`,
    );
    const owner = asker[index] ?? -1;
    const call =
      owner >= 0 ? input[owner]?.tool_calls?.find((candidate) => candidate.id === original.tool_call_id) : undefined;
    const toolName = call?.function.name ?? original.name ?? 'tool';
    const length = textOf(original.content).length;
    check(
      stub === `[elided by the harness: ${length}-char ${toolName} result; re-run the call if you need it again]`,
      'the stub is a pure function of (content length, tool name)',
      () => `index ${index}: ${JSON.stringify(stub)}`,
    );
    if (options.stubsShorterOnly)
      check(
        stub.length < length,
        'a stub is shorter than the result it replaces (docs/design.md#never-worse)',
        () => `index ${index}: ${length} chars`,
      );
    elided.set(index, stub);
  }
  checkElisionEligibility(input, standard, options, elided);

  const transformed = input.map((message, index) => {
    const stub = elided.get(index);
    return stub === undefined ? message : { ...message, content: stub };
  });
  const regions = options.recentWindowGivesWay ? givenWayRegions(transformed, standard, counter, mark) : standard;
  const { cut, middle, inMiddle } = regions;

  // Match the output against the (elided) input: a subsequence, plus at most one summary message.
  const removed: number[] = [];
  const kept: number[] = [];
  let summaryAt = -1;
  let position = 0;
  const isSummary = (message: ChatMessage | undefined): boolean =>
    result.summary !== null &&
    summaryAt === -1 &&
    message !== undefined &&
    message.role === 'user' &&
    message.content === result.summary &&
    isDeepStrictEqual(Object.keys(message).sort(), ['content', 'role']);
  const matches = (message: ChatMessage | undefined, index: number): boolean => {
    const original = input[index];
    if (message === undefined || original === undefined) return false;
    const cut = truncated.get(index);
    if (cut !== undefined) return isDeepStrictEqual(message, cut);
    if (!elided.has(index)) return message === original;
    return message !== original && isDeepStrictEqual(message, transformed[index]);
  };
  for (let index = 0; index < input.length; index += 1) {
    if (!matches(output[position], index) && isSummary(output[position])) {
      summaryAt = position;
      position += 1;
    }
    if (matches(output[position], index)) {
      kept.push(index);
      position += 1;
    } else {
      removed.push(index);
    }
  }
  // What the pass left before any truncation: the rules below judge that.
  const afterPass =
    truncated.size === 0
      ? result.tokensAfter
      : counter.count(
          output.map((message) => {
            const index = [...truncated].find(([, cut]) => isDeepStrictEqual(cut, message))?.[0];
            return index === undefined ? message : (transformed[index] ?? message);
          }),
        );
  if (isSummary(output[position])) {
    summaryAt = position;
    position += 1;
  }
  check(
    position === output.length,
    'the output is the input (same objects, elided copies) in order, with removals and at most one summary message',
    () => `unmatched output message ${position}: ${JSON.stringify(output[position])?.slice(0, 300)}`,
  );
  const removedSet = new Set(removed);

  // dropped / cutIndex / summary / fallback are consistent with what was removed.
  check(
    removed.length === result.dropped,
    'dropped is the number of messages removed',
    () => `dropped=${result.dropped}, removed ${removed.length}: ${removed.join(',')}`,
  );
  check(
    result.cutIndex === (removed.length === 0 ? -1 : Math.max(...removed)),
    'cutIndex is the input index of the last removed message (-1 when none)',
    () => `cutIndex=${result.cutIndex}, removed ${removed.join(',')}`,
  );
  for (const index of removed) {
    check(
      inMiddle[index] === true,
      'only middle messages are removed (never sticky, never pinned, never the recent window)',
      () => `removed ${index}, cut ${cut}`,
    );
  }
  for (const index of middle) {
    check(
      index <= result.cutIndex === removedSet.has(index),
      'removal is a prefix of the middle (oldest first)',
      () => `middle ${index}, cutIndex ${result.cutIndex}`,
    );
  }
  for (let index = 0; index < input.length; index += 1) {
    const first = group[index] ?? index;
    check(
      removedSet.has(index) === removedSet.has(first),
      'pairs are removed or kept whole',
      () => `message ${index} and its turn ${first}`,
    );
  }

  if (result.summary !== null) {
    check(!result.fallback, 'a summary is never a fallback');
    check(summaryAt >= 0, 'the summary message is in the output, role user, not sticky');
    check(
      result.dropped === middle.length && result.dropped > 0,
      'a summary replaces the whole middle',
      () => `dropped ${result.dropped} of ${middle.length}`,
    );
    const firstRemoved = removed[0] ?? -1;
    check(
      summaryAt === kept.filter((index) => index < firstRemoved).length,
      'the summary stands where the first removed message stood',
      () => `at ${summaryAt}, first removed ${firstRemoved}`,
    );
    check(
      result.tokensAfter < result.tokensBefore,
      'an accepted summary shrinks the conversation',
      () => `${result.tokensBefore} → ${result.tokensAfter}`,
    );
    check(
      target === undefined || result.tokensAfter <= target,
      'an accepted summary fits the target',
      () => `${result.tokensAfter} > ${target}`,
    );
    // docs/design.md#coverage: what the summarizer left out may follow on a carried-facts line.
    const carriedAt = result.summary?.lastIndexOf(`\n\n${CARRIED_FACTS_PREFIX} `) ?? -1;
    const written = carriedAt < 0 ? result.summary : result.summary?.slice(0, carriedAt);
    check(
      texts.some((text) => text.trim() !== '' && written?.endsWith(text.trim()) === true),
      'the summary holds a text the summarizer answered',
    );
    check(
      carriedAt >= 0 === (result.coverage !== undefined && result.coverage.carried > 0),
      'a carried-facts line is there exactly when the coverage says it carried identifiers',
    );
    check(
      options.summaryCoverage === 'off'
        ? result.coverage === undefined
        : result.coverage !== undefined &&
            result.coverage.kept + result.coverage.missing.length === result.coverage.required,
      'a summary checked for coverage says what was required, kept and missing (docs/design.md#coverage)',
      () => JSON.stringify(result.coverage),
    );
    check(requests.length >= 1, 'a summary needs a request');
    if (options.trimBeatsOverflow && target === undefined && afterPass > limit) {
      const trimmed = new Set(middle.slice(0, expectedTrim(transformed, regions, counter, trimTo)));
      check(
        counter.count(transformed.filter((_, index) => !trimmed.has(index))) > limit,
        'a summary left over contextBudget is accepted only when the hard trim would not fit either (docs/design.md#never-worse)',
      );
    }
    if (options.recentWindowGivesWay && afterPass > mark) {
      const keptTokens = counter.count(
        transformed.filter((_, index) => index >= cut || (!inMiddle[index] && index < cut)),
      );
      const reason = keptTokens + Math.ceil(SUMMARY_ROOM_SHARE * mark) > mark ? 'recent-window' : 'summary-length';
      check(
        isDeepStrictEqual(result.aboveMark, { mark, reason }),
        'a summary that ends over the low-water mark says why (docs/design.md#window-gives-way)',
        () => JSON.stringify(result.aboveMark),
      );
    } else {
      check(
        result.aboveMark === undefined,
        'aboveMark only when a summary ends over the low-water mark (docs/design.md#window-gives-way)',
        () => JSON.stringify(result.aboveMark),
      );
    }
  } else {
    check(summaryAt === -1, 'no summary message without a summary');
    check(result.aboveMark === undefined, 'aboveMark only on a summary', () => JSON.stringify(result.aboveMark));
  }

  if (result.fallback) {
    check(result.summary === null, 'a fallback has no summary');
    check(
      result.dropped === expectedTrim(transformed, regions, counter, trimTo),
      'the hard trim drops the shortest pair-aligned prefix of the middle that fits (or all of it)',
      () =>
        `dropped ${result.dropped}, expected ${expectedTrim(transformed, regions, counter, trimTo)}, trimTo ${trimTo}`,
    );
  } else if (result.summary === null) {
    check(
      result.dropped === 0 && requests.length === 0,
      'without a summary or a trim nothing is removed and no request is made',
      () => `dropped ${result.dropped}, ${requests.length} requests`,
    );
    // An epoch (entered at or below the trigger) is elision only (docs/design.md#epochs); over it, elision alone ends
    // the pass only under the trigger (the reference), at the mark, or never (docs/design.md#elision-that-pays).
    const stop = { 'under-trigger': target ?? trigger, 'at-mark': mark, never: -Infinity }[options.elisionEndsPass];
    check(
      middle.length === 0 || (result.elisions.length > 0 && (below || result.tokensAfter <= stop)),
      'a result without a summary or a trim is a no-op (empty middle), an epoch, or an elision pass that reached where elision may end a pass',
      () =>
        `middle ${middle.length}, elisions ${result.elisions.length}, tokensBefore ${result.tokensBefore}, tokensAfter ${result.tokensAfter}`,
    );
  }
  if (middle.length === 0) {
    check(
      result.cutIndex === -1 && result.elisions.length === truncated.size && !result.fallback && requests.length === 0,
      'an empty middle is a no-op (but for truncations)',
    );
  }

  // Sticky messages: all present, the same objects (so in their original relative order).
  sticky.forEach((isSticky, index) => {
    if (isSticky)
      check(!removedSet.has(index) && !elided.has(index), 'sticky messages stay unchanged', () => `message ${index}`);
  });

  // The recent window is verbatim at the end.
  const window = input.length - cut;
  for (let offset = 0; offset < window; offset += 1) {
    const kept = output[output.length - window + offset];
    const cutShort = truncated.get(cut + offset);
    check(
      cutShort === undefined ? kept === input[cut + offset] : isDeepStrictEqual(kept, cutShort),
      'the recent window is verbatim at the end',
      () => `input ${cut + offset}`,
    );
  }

  // Pairs never split: no new orphan, no turn left without the results it had.
  const outputAsker = askers(output);
  output.forEach((message, index) => {
    if (message.role !== 'tool' || index === summaryAt) return;
    const inputIndex = kept[index - (summaryAt >= 0 && index > summaryAt ? 1 : 0)] ?? -1;
    const wasAnswer = (asker[inputIndex] ?? -1) >= 0;
    check(
      wasAnswer === (outputAsker[index] ?? -1) >= 0,
      'no new orphan: a result answers an earlier turn in the output iff it did in the input',
      () => `output ${index} (input ${inputIndex})`,
    );
  });
  if (isProviderStrict(input)) check(isProviderStrict(output), 'a provider-strict conversation stays provider-strict');

  for (const request of requests)
    checkRequest(request, transformed, regions, options.toolResultCap, run.uniqueContent === true);
}

function checkElisionEligibility(
  input: readonly ChatMessage[],
  regions: ReferenceRegions,
  options: ResolvedOptions,
  elided: ReadonlyMap<number, string>,
): void {
  if (elided.size === 0) return;
  const identityOf = new Map<number, string>();
  const copies = new Map<string, number[]>();
  input.forEach((message, index) => {
    const owner = regions.asker[index] ?? -1;
    const call =
      owner >= 0 ? input[owner]?.tool_calls?.find((candidate) => candidate.id === message.tool_call_id) : undefined;
    if (call === undefined) return;
    const identity = `${call.function.name}\u0000${canonicalJson(call.function.arguments)}`;
    identityOf.set(index, identity);
    copies.set(identity, [...(copies.get(identity) ?? []), index]);
  });
  const charsAfter: number[] = new Array<number>(input.length).fill(0);
  for (let index = input.length - 2; index >= 0; index -= 1) {
    const next = input[index + 1];
    charsAfter[index] = (charsAfter[index + 1] ?? 0) + (next === undefined ? 0 : contentChars(next));
  }
  for (const index of elided.keys()) {
    const identity = identityOf.get(index);
    const same = identity === undefined ? [] : (copies.get(identity) ?? []);
    const message = input[index];
    if (same.length > 1) {
      check(
        same.at(-1) !== index,
        'the newest result of a repeated call identity is never elided',
        () => `index ${index}`,
      );
    } else {
      check(
        message !== undefined &&
          textOf(message.content).length > options.ageMinChars &&
          (charsAfter[index] ?? 0) >= options.ageReclaimMin,
        'an elided result that is not an older duplicate is longer than ageMinChars with ageReclaimMin characters after it',
        () => `index ${index}`,
      );
    }
  }
}

/** The hard trim by the spec: the shortest prefix of the middle that keeps pairs whole and fits `trimTo`, else all of it. */
export function expectedTrim(
  conversation: readonly ChatMessage[],
  regions: ReferenceRegions,
  counter: TokenCounter,
  trimTo: number,
): number {
  const { middle, group } = regions;
  const lastOfGroup = new Map<number, number>();
  conversation.forEach((_, index) => lastOfGroup.set(group[index] ?? index, index));
  let reach = -1;
  const fits = (prefix: number): boolean => {
    const removed = new Set(middle.slice(0, prefix));
    return counter.count(conversation.filter((_, index) => !removed.has(index))) <= trimTo;
  };
  if (fits(0)) return 0;
  for (let position = 0; position < middle.length; position += 1) {
    const index = middle[position] ?? 0;
    reach = Math.max(reach, lastOfGroup.get(group[index] ?? index) ?? index);
    if (reach === index && fits(position + 1)) return position + 1;
  }
  return middle.length;
}

const marker = (cutChars: number): string => `[truncated by the harness: ${cutChars} more characters]`;

/** The summarizer sees the middle only, with every tool result and call argument cut to `toolResultCap` plus a marker. */
function checkRequest(
  request: SummarizeRequest,
  conversation: readonly ChatMessage[],
  regions: ReferenceRegions,
  cap: number,
  uniqueContent: boolean,
): void {
  check(
    typeof request.instruction === 'string' && Array.isArray(request.middle),
    'a request is one instruction and the middle',
  );
  const transcript = transcriptOf(request);
  for (const index of regions.middle) {
    const message = conversation[index];
    if (message === undefined) continue;
    const texts = [
      ...(message.role === 'tool' ? [renderedText(message.content)] : []),
      ...(message.tool_calls ?? []).map((call) => call.function.arguments),
    ];
    for (const text of texts) {
      if (text.length <= cap) continue;
      check(
        transcript.includes(text.slice(0, cap)),
        'the transcript holds the first toolResultCap characters of a capped text',
        () => `message ${index}`,
      );
      check(
        transcript.includes(marker(text.length - cap)),
        'a capped text carries a marker saying how many characters were cut',
        () => `message ${index}`,
      );
      if (uniqueContent && cap >= 16) {
        check(
          !transcript.includes(text.slice(0, cap + 1)),
          'the transcript never holds more than toolResultCap characters of one tool result or argument string',
          () => `message ${index}`,
        );
      }
    }
  }
  // Sticky messages and the recent window are not summarized.
  if (uniqueContent) {
    conversation.forEach((message, index) => {
      if (regions.inMiddle[index] === true) return;
      const text = renderedText(message.content);
      if (text.length >= 16 && text.startsWith('⟨')) {
        check(
          !transcript.includes(text.slice(0, 16)),
          'the transcript holds only the middle',
          () => `message ${index}`,
        );
      }
    });
  }
}
