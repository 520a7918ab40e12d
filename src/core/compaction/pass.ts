// Sandbox-safe: one pass's validated input and what every rule of a pass reads of it (docs/design.md#pass).
import { applyElisions, planPassElisions } from './elision.js';
import type { Aim, CallOverrides, ResolvedOptions } from './options.js';
import { findRegions, type Regions } from './regions.js';
import { keptTask, type InstructionText } from './transcript.js';
import { defaultCounter } from '../counting/tokens.js';
import { InvalidInputError } from '../errors.js';
import { validateMessages } from '../schema.js';
import type { ChatMessage, CompactionResult, Elision, TokenCounter } from '../types.js';

/** docs/design.md#recall: the text a stub, a summary or a trim marker ends with to name the messages at `indices`. */
export type NameReplaced = (kind: 'stub' | 'summary' | 'trim', indices: readonly number[]) => string;

export interface Pass {
  input: ChatMessage[];
  options: ResolvedOptions;
  aim: Aim;
  regions: Regions;
  tokensBefore: number;
  text: InstructionText;
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
  const { target } = overrides;
  if (target !== undefined && !(Number.isFinite(target) && target >= 0))
    throw new InvalidInputError('target', `must be a non-negative number of tokens, got ${target}`);
  const { contextBudget, targetRatio } = options;
  const aim: Aim = {
    counter: overrides.counter ?? counter ?? defaultCounter,
    target,
    trigger: options.triggerRatio * contextBudget,
    trimTo: target ?? targetRatio * contextBudget,
    limit: target ?? contextBudget,
    mark: Math.min(targetRatio * contextBudget, target ?? Number.POSITIVE_INFINITY),
  };
  const regions = findRegions(input, options.keepRecent, options.keepTask);
  const instructions = (overrides.summaryInstructions ?? options.summaryInstructions)?.trim();
  return {
    input,
    options,
    aim,
    regions,
    tokensBefore: aim.counter.count(input),
    text: {
      summaryInstructions: instructions === '' ? undefined : instructions,
      summaryPrompt: overrides.summaryPrompt ?? options.summaryPrompt,
      task: keptTask(input, regions.removable, options.toolResultCap),
    },
    keepUserMessages: overrides.keepUserMessages ?? options.keepUserMessages,
  };
}

export function unchanged(): Pick<CompactionResult, 'dropped' | 'fallback' | 'elisions' | 'summary' | 'cutIndex'> {
  return { dropped: 0, fallback: false, elisions: [], summary: null, cutIndex: -1 };
}

export function finish(
  pass: Pass,
  fields: Omit<CompactionResult, 'tokensBefore' | 'tokensAfter' | 'exhausted'>,
): CompactionResult {
  const tokensAfter = pass.aim.counter.count(fields.messages);
  return { ...fields, tokensBefore: pass.tokensBefore, tokensAfter, exhausted: tokensAfter > pass.aim.limit };
}

/**
 * A pass's elisions, and the conversation with them applied, made only when something reads it whole: a
 * summary reads only the middle (through `elidedContents`) and the messages around it, which no elision touches.
 */
export interface Elided {
  elisions: Elision[];
  /** The same array at every call (never change it). */
  messages(): ChatMessage[];
}

function elidedOf(pass: Pass, elisions: Elision[]): Elided {
  let applied: ChatMessage[] | undefined;
  return { elisions, messages: () => (applied ??= applyElisions(pass.input, elisions)) };
}

export function elide(pass: Pass, nameReplaced?: NameReplaced): Elided {
  // docs/design.md#recall A tool result's stub names what it replaced.
  const named = (elision: Elision): Elision =>
    nameReplaced === undefined || elision.content !== undefined
      ? elision
      : { ...elision, stub: `${elision.stub}${nameReplaced('stub', [elision.index])}` };
  return elidedOf(pass, planPassElisions(pass.input, pass.regions, pass.options).elisions.map(named));
}

/** `elided` without the elisions at `positions` (a user message kept verbatim keeps its images too). */
export function elidedExcept(pass: Pass, elided: Elided, positions: readonly number[]): Elided {
  const spared = new Set(positions);
  const kept = elided.elisions.filter((elision) => !spared.has(elision.index));
  return kept.length === elided.elisions.length ? elided : elidedOf(pass, kept);
}

/** Over this, a pass is over the trigger; at or below it, a pass that elides is an elision-only epoch. */
export function triggerOf(aim: Aim): number {
  return aim.target ?? aim.trigger;
}

/** Over the trigger, elision alone ends the pass when the stubbed conversation is at or below this (docs/design.md#elision-that-pays). */
function elisionStop({ options, aim }: Pass): number {
  if (options.elisionEndsPass === 'never') return Number.NEGATIVE_INFINITY;
  return options.elisionEndsPass === 'at-mark' ? aim.mark : triggerOf(aim);
}

/**
 * Whether elision alone ends the pass: an epoch (docs/design.md#epochs), or stubbed to `elisionEndsPass`'s
 * stop. An epoch is decided on the count the pass was entered with: a calibrated counter recounting a
 * changed conversation with its estimator may say "over the trigger" of one that just shrank.
 */
export function elisionEnds(pass: Pass, elided: Elided): boolean {
  if (elided.elisions.length === 0) return false;
  if (pass.tokensBefore <= triggerOf(pass.aim)) return true;
  const stop = elisionStop(pass);
  return stop >= 0 && pass.aim.counter.count(elided.messages()) <= stop;
}

export function messagesAt(messages: readonly ChatMessage[], indices: readonly number[]): ChatMessage[] {
  return indices.map((index) => messages[index] as ChatMessage);
}
