// Sandbox-safe: one pass's validated input and what every rule of a pass reads of it
// (docs/design.md#pass) — its aim and regions, its elisions, the trigger and where elision alone
// ends it, and its result's figures.
import { applyElisions, elides, planPassElisions } from './elision.js';
import { aimFor, instructionTextOf, type Aim, type CallOverrides, type ResolvedOptions } from './options.js';
import { findRegions, type Regions } from './regions.js';
import { keptTask, type InstructionText } from './transcript.js';
import { validateMessages } from '../schema.js';
import type { ChatMessage, CompactionResult, Elision, TokenCounter } from '../types.js';

/**
 * docs/design.md#recall: the text a stub (`'stub'`), a summary (`'summary'`) or a hard trim's
 * marker (`'trim'`) ends with to name the messages at `indices` it replaced; '' names nothing.
 */
export type NameReplaced = (kind: 'stub' | 'summary' | 'trim', indices: readonly number[]) => string;

/** Validated input of one compaction. */
export interface Pass {
  input: ChatMessage[];
  options: ResolvedOptions;
  aim: Aim;
  regions: Regions;
  tokensBefore: number;
  /** The call's `summaryInstructions` and `summaryPrompt` (docs/design.md#summary-instructions), and the task kept in place. */
  text: InstructionText;
  /** Whether the middle's user messages are kept verbatim (docs/design.md#user-words): the call's choice, else the options'. */
  keepUserMessages: boolean;
}

/** Checks the messages and the call's overrides (throws `InvalidInputError`), and counts the conversation once. */
export function startPass(
  messages: unknown,
  options: ResolvedOptions,
  overrides: CallOverrides,
  counter: TokenCounter | undefined,
): Pass {
  const input = validateMessages(messages);
  const aim = aimFor(options, overrides, counter);
  const regions = findRegions(input, options.keepRecent, options.keepTask);
  // docs/design.md#task-survives: a task kept in place is not in the middle; the summarizer is told it apart.
  const task = keptTask(input, regions.removable, options.toolResultCap);
  return {
    input,
    options,
    aim,
    regions,
    tokensBefore: aim.counter.count(input),
    text: { ...instructionTextOf(options, overrides), task },
    keepUserMessages: overrides.keepUserMessages ?? options.keepUserMessages,
  };
}

/** The fields of a result that drops, elides and summarizes nothing (each result its own `elisions` array). */
export function unchanged(): Pick<CompactionResult, 'dropped' | 'fallback' | 'elisions' | 'summary' | 'cutIndex'> {
  return { dropped: 0, fallback: false, elisions: [], summary: null, cutIndex: -1 };
}

/** A pass's result: `fields`, with the count before and after and whether it is over the limit. */
export function finish(
  pass: Pass,
  fields: Omit<CompactionResult, 'tokensBefore' | 'tokensAfter' | 'exhausted'>,
): CompactionResult {
  const tokensAfter = pass.aim.counter.count(fields.messages);
  return { ...fields, tokensBefore: pass.tokensBefore, tokensAfter, exhausted: tokensAfter > pass.aim.limit };
}

/**
 * A pass's elisions, and the conversation with them applied. The conversation is made only when
 * something reads it whole (a count, an elision-only result, the hard trim): a summary reads only
 * the middle, which it reads from the input and `elidedContents`, and the messages around it,
 * which no elision touches (every elision stands in the standard middle). At 100k messages that
 * is 60k copied messages fewer.
 */
export interface Elided {
  elisions: Elision[];
  /** The input with the elisions applied; the same array at every call (never change it). */
  messages(): ChatMessage[];
}

export function elide(pass: Pass, nameReplaced?: NameReplaced): Elided {
  let applied: ChatMessage[] | undefined;
  if (!elides(pass.options)) return { elisions: [], messages: () => (applied ??= [...pass.input]) };
  const planned = planPassElisions(pass.input, pass.regions, pass.options).elisions;
  // docs/design.md#recall A tool result's stub names what it replaced (an image elision keeps the rest of its message).
  const elisions =
    nameReplaced === undefined
      ? planned
      : planned.map((elision) =>
          elision.content === undefined
            ? { ...elision, stub: `${elision.stub}${nameReplaced('stub', [elision.index])}` }
            : elision,
        );
  return { elisions, messages: () => (applied ??= applyElisions(pass.input, elisions)) };
}

/**
 * `elided` without the elisions at `positions` (docs/design.md#user-words: a user message kept
 * verbatim keeps its images too); `elided` itself when none is there.
 */
export function elidedExcept(pass: Pass, elided: Elided, positions: readonly number[]): Elided {
  if (positions.length === 0) return elided;
  const spared = new Set(positions);
  if (!elided.elisions.some((elision) => spared.has(elision.index))) return elided;
  const elisions = elided.elisions.filter((elision) => !spared.has(elision.index));
  let applied: ChatMessage[] | undefined;
  return { elisions, messages: () => (applied ??= applyElisions(pass.input, elisions)) };
}

/** Over this, a pass is over the trigger; at or below it, a pass with something to elide is an elision-only epoch. */
export function triggerOf(aim: Aim): number {
  return aim.target ?? aim.trigger;
}

/** Over the trigger, an elision-only pass ends the compaction when the stubbed conversation is at or below this (docs/design.md#over-trigger, docs/design.md#elision-that-pays). */
function elisionStop(pass: Pass): number {
  switch (pass.options.elisionEndsPass) {
    case 'under-trigger':
      return triggerOf(pass.aim);
    case 'at-mark':
      return pass.aim.mark;
    case 'never':
      return Number.NEGATIVE_INFINITY;
  }
}

/**
 * Whether elision alone ends the pass: it elides something and the pass is an epoch (at or below
 * the trigger, docs/design.md#epochs), or the stubbed conversation is at or below where
 * `elisionEndsPass` stops (docs/design.md#over-trigger). An epoch is decided on the count the pass
 * was entered with, not on a recount: a calibrated counter counts a changed conversation with its
 * estimator, which may say "over the trigger" of a conversation that just shrank.
 */
export function elisionEnds(pass: Pass, elided: Elided): boolean {
  if (elided.elisions.length === 0) return false;
  if (pass.tokensBefore <= triggerOf(pass.aim)) return true;
  const stop = elisionStop(pass);
  return stop >= 0 && pass.aim.counter.count(elided.messages()) <= stop;
}

/** The messages at `indices` (ascending, all present), in order. */
export function messagesAt(messages: readonly ChatMessage[], indices: readonly number[]): ChatMessage[] {
  const picked = new Array<ChatMessage>(indices.length);
  for (let position = 0; position < indices.length; position += 1)
    picked[position] = messages[indices[position] as number] as ChatMessage;
  return picked;
}
