// Sandbox-safe: compaction options, their defaults (docs/design.md#options) and validation.
import { z } from 'zod';
import { InvalidInputError } from '../errors.js';
import { describeIssue } from '../schema.js';
import { assertKnownKeys, keysOf } from '../unknown-keys.js';
import { defaultCounter } from '../counting/tokens.js';
import type { TokenCounter } from '../types.js';
import { COMPACTION_DEFAULTS, LIBRARY_KEEP_TASK } from './defaults.js';

/** A duration: milliseconds, or a string such as `'2s'`, `'500ms'`, `'1.5m'`, `'1h'`, `'1d'`. */
export type Duration = number | string;

const DURATION_TEXT = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;
const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The milliseconds of a duration written with its unit (`'2s'`, `'500ms'`, `'1.5m'`, `'1h'`, `'3d'`), not rounded; undefined for other text. */
export function durationTextMs(text: string): number | undefined {
  const [, amount, unit] = DURATION_TEXT.exec(text) ?? [];
  return amount === undefined || unit === undefined ? undefined : Number(amount) * (units[unit] ?? 1);
}

/** Parses a `Duration` to whole milliseconds; throws `InvalidInputError` naming `field`. */
export function parseDuration(value: Duration, field: string): number {
  if (typeof value === 'number') {
    if (Number.isFinite(value) && value >= 0) return Math.round(value);
    throw new InvalidInputError(field, `must be a non-negative number of milliseconds, got ${value}`);
  }
  const milliseconds = durationTextMs(value);
  if (milliseconds === undefined) {
    throw new InvalidInputError(
      field,
      `must be milliseconds or a duration like "2s", "500ms", "1m", got ${JSON.stringify(value)}`,
    );
  }
  return Math.round(milliseconds);
}

/** Options shared by both drivers (docs/design.md#options). Every field but `contextBudget` has a default. */
export interface CompactionOptions {
  /** The context window this conversation must fit, in the counter's units. Required. */
  contextBudget: number;
  /** Compact when the conversation is over `triggerRatio × contextBudget`. @default 0.8 */
  triggerRatio?: number;
  /** The hard trim aims at `targetRatio × contextBudget`. @default 0.5 */
  targetRatio?: number;
  /** Messages at the end kept verbatim (the cut extends backwards over tool results). @default 8 */
  keepRecent?: number;
  /**
   * docs/design.md#task-survives Keep the task — the first user message — verbatim through every
   * compaction, as a sticky message is kept: neither the summary nor the hard trim removes it. Off:
   * it is part of the middle like any other message (the reference). agentRun and the CLI's `compact`
   * keep the task; here it is off unless asked, because a session transcript's replay knows only
   * `sticky` flags (docs/compaction.md#defaults).
   * @default false
   */
  keepTask?: boolean;
  /** Tool results and tool-call arguments are cut to this many characters in the summarizer's input. @default 2000 */
  toolResultCap?: number;
  /** Elide dead tool output before summarizing. Off means byte-identical behaviour to no elision. @default false */
  ageObservations?: boolean;
  /** A tool result must be longer than this to be elided. @default 2000 */
  ageMinChars?: number;
  /** The trailing grace and the floor of an elision-only epoch, in characters. @default 40000 */
  ageReclaimMin?: number;
  /**
   * Keep the last N images of the conversation; older ones in the middle are replaced by a text
   * stub saying what they were (`[image elided: 1280×800 png, ~1,105 tokens]`), in the same batches
   * as elided tool output (docs/design.md#image-elision). Unset: images are never elided.
   * @default undefined (off)
   */
  keepImages?: number;
  /** Summarizer attempts per request, in total. @default 3 */
  maxAttempts?: number;
  /** Wait before the second attempt; ×2 per attempt, capped at 30 s. @default '2s' */
  retryBackoff?: Duration;

  // docs/design.md#economics: the economic rules. Each one is on by default and turns off on its own; with all
  // of them off ({@link REFERENCE_EXACT}) the engine is docs/design.md#reference-exact — the reference — exactly.

  /**
   * docs/design.md#window-gives-way Depth: when the recent window (with the sticky messages and room for the summary) is
   * over the low-water mark, it gives way — down to the last complete turn — instead of the
   * compaction being accepted a few percent lighter; a summary that still ends over the mark says
   * why in `aboveMark`. Off: the window is always `keepRecent` messages (the reference).
   * Measured (bench:cost, 16 corpus trajectories): billed 0.559× of no compaction with it, 0.605×
   * without; 2 requests over the window instead of 9.
   * @default true
   */
  recentWindowGivesWay?: boolean;
  /**
   * docs/design.md#truncation When even the hard trim leaves the conversation over its limit, cut
   * the largest tool results and user messages that compaction may touch (never a sticky or
   * pinned one) middle-out, head and tail kept with a marker, until it fits; `result.truncations`
   * says which. Off: such a result is `exhausted` (the reference), and an agent run ends with
   * `ContextExhausted`.
   * @default true
   */
  truncateOversized?: boolean;
  /**
   * docs/design.md#elision-that-pays When elision alone ends a pass over the trigger (with `ageObservations`):
   * `'under-trigger'` when the stubbed conversation is back under the trigger or `target` (the
   * reference); `'at-mark'` only when it reaches the low-water mark; `'never'`: the pass always goes
   * on to the summary and elision only lightens the summarizer's transcript. Measured (bench:cost,
   * `ageObservations`, `ageReclaimMin` 10,000): 0.683× / 0.589× / 0.553× — a summary goes deeper
   * than the stubs, so it is the later compaction that pays less.
   * @default 'never'
   */
  elisionEndsPass?: ElisionEndsPass;
  /**
   * docs/design.md#elision-that-pays When `needsCompaction` starts an elision-only epoch below the trigger (with
   * `ageObservations`): `'batch'` whenever the eligible pool reaches `ageReclaimMin` (the
   * reference); `'paying'` only when, besides, the modelled saving beats the suffix it re-bills;
   * `'never'`: elision only rides on a pass over the trigger. Measured (bench:cost, `ageReclaimMin`
   * 10,000): `'batch'` 0.585× with 87.1% retention, `'paying'` 0.553× with 90.4% — it starts no
   * epoch there. At a cached price of 0.5 it starts none either, and `'batch'` is cheaper on those
   * short runs (0.397× against 0.412×): most of them end before the summary an epoch defers.
   * @default 'paying'
   */
  elisionEpochs?: ElisionEpochs;
  /**
   * docs/design.md#no-thrash No thrash: `needsCompaction` does not start a compaction over the trigger (but within
   * `contextBudget`, or the call's `target`) that cannot reclaim enough to be worth its cache
   * miss, nor one in the round after a summary. Off: over the trigger is always enough (the
   * reference). Measured (bench:cost): 0.559× and no compactions in consecutive rounds, against
   * 0.561× and 2.
   * @default true
   */
  deferShallowCompactions?: boolean;
  /** docs/design.md#never-worse A stub is written only when it is shorter than the result it replaces. Off: older duplicates are stubbed whatever their size (the reference). @default true */
  stubsShorterOnly?: boolean;
  /**
   * docs/design.md#never-worse Without a `target`, a summary that leaves the conversation over `contextBudget` is not an
   * answer when the hard trim fits (the tighter retry, then the trim). Off: any summary that
   * shrinks the conversation is accepted (the reference).
   * @default true
   */
  trimBeatsOverflow?: boolean;
  /** The price of a cached input token relative to an uncached one, for the `'paying'` epoch model. @default 0.1 */
  cachedInputPrice?: number;
  /**
   * docs/design.md#coverage Summaries checked for what they dropped: the identifiers (paths, symbols, error names,
   * URLs, ids) that the replaced middle shares with what the conversation keeps must be in the
   * summary. `'retry'`: a summary that leaves some out is asked once more, naming them (the tighter
   * retry names them when the summary was also too long), and what is still missing is appended as
   * a carried-facts line; `'carry'`: the line only, no retry; `'off'`: no check (the reference).
   * `result.coverage` says what was required, kept and missing.
   * @default 'retry'
   */
  summaryCoverage?: SummaryCoverage;

  /**
   * docs/design.md#summary-instructions Text added to the summarizer's instruction: what the summary must focus on or keep
   * (`'Keep the failing test names and the exact error messages.'`). The request carries it also
   * as `SummarizeRequest.instructions`, and the offline extractive summarizer keeps what matches it
   * first. At most 10,000 characters; blank adds nothing.
   * @default undefined (the fixed instruction alone)
   */
  summaryInstructions?: string;
  /**
   * docs/design.md#summary-instructions Replaces the fixed summarizer instruction (the system message) whole;
   * `summaryInstructions` is still added after it. At most 10,000 characters, not blank.
   * @default undefined (the fixed instruction, docs/design.md#summarizer-request)
   */
  summaryPrompt?: string;
  /**
   * docs/design.md#summarizer-window The summarizer's own context window, in the pass's counter's units. When the
   * request for the whole middle would not fit it (with {@link SUMMARY_OUTPUT_SHARE} of it left for
   * the summary), the middle is summarized in pieces, as a fold: each piece's request carries the
   * summary so far and the next messages, every request within the window; `result.summaryPieces`
   * says how many requests it took. An integer of at least 1,024.
   * @default undefined (one request, whatever its size)
   */
  summarizerContextWindow?: number;
}

/** The share of `summarizerContextWindow` a request leaves for the summary the summarizer writes. */
export const SUMMARY_OUTPUT_SHARE = 0.25;

/** The smallest `summarizerContextWindow`. */
export const MIN_SUMMARIZER_CONTEXT_WINDOW = 1024;

/** The longest `summaryInstructions` or `summaryPrompt`, in characters. */
export const MAX_SUMMARY_INSTRUCTION_CHARS = 10_000;

/** What a compaction does about identifiers a summary left out (see `CompactionOptions.summaryCoverage`). */
export type SummaryCoverage = 'retry' | 'carry' | 'off';

/** When `needsCompaction` starts an elision-only epoch below the trigger (see `CompactionOptions.elisionEpochs`). */
export type ElisionEpochs = 'batch' | 'paying' | 'never';

/** When elision alone ends a pass over the trigger (see `CompactionOptions.elisionEndsPass`). */
export type ElisionEndsPass = 'under-trigger' | 'at-mark' | 'never';

/**
 * The options that turn every economic rule of docs/design.md#economics off: spread them into the options to
 * get the reference's behaviour (docs/design.md#reference-exact) exactly, number for number and byte for byte.
 *
 * @example
 * new Compactor({ summarizer, contextBudget: 128_000, ...REFERENCE_EXACT });
 */
export const REFERENCE_EXACT = {
  keepTask: false,
  recentWindowGivesWay: false,
  truncateOversized: false,
  elisionEndsPass: 'under-trigger',
  elisionEpochs: 'batch',
  deferShallowCompactions: false,
  stubsShorterOnly: false,
  trimBeatsOverflow: false,
  summaryCoverage: 'off',
} as const satisfies Partial<CompactionOptions>;

/** Options with every default applied and validated. Plain JSON (durations in ms). */
export interface ResolvedOptions {
  contextBudget: number;
  triggerRatio: number;
  targetRatio: number;
  keepRecent: number;
  keepTask: boolean;
  toolResultCap: number;
  ageObservations: boolean;
  ageMinChars: number;
  ageReclaimMin: number;
  /** Undefined: images are never elided. */
  keepImages?: number | undefined;
  maxAttempts: number;
  retryBackoffMs: number;
  recentWindowGivesWay: boolean;
  truncateOversized: boolean;
  elisionEndsPass: ElisionEndsPass;
  elisionEpochs: ElisionEpochs;
  deferShallowCompactions: boolean;
  stubsShorterOnly: boolean;
  trimBeatsOverflow: boolean;
  cachedInputPrice: number;
  summaryCoverage: SummaryCoverage;
  /** Undefined: nothing added to the instruction. */
  summaryInstructions?: string | undefined;
  /** Undefined: the fixed instruction. */
  summaryPrompt?: string | undefined;
  /** Undefined: one summarizer request, whatever its size. */
  summarizerContextWindow?: number | undefined;
}

/** The backoff never grows past this (docs/design.md#failures). */
export const MAX_RETRY_BACKOFF_MS = 30_000;

const ratio = z.number().gt(0).lte(1);
const count = z.number().int().nonnegative();
/** The compaction options with their defaults: what {@link resolveOptions} parses, and the source of their JSON Schema (src/shared/json-schemas.ts). */
export const optionsSchema = z.object({
  contextBudget: z.number().int().positive(),
  triggerRatio: ratio.default(COMPACTION_DEFAULTS.triggerRatio),
  targetRatio: ratio.default(COMPACTION_DEFAULTS.targetRatio),
  keepRecent: count.default(COMPACTION_DEFAULTS.keepRecent),
  keepTask: z.boolean().default(LIBRARY_KEEP_TASK),
  toolResultCap: z.number().int().positive().default(COMPACTION_DEFAULTS.toolResultCap),
  ageObservations: z.boolean().default(COMPACTION_DEFAULTS.ageObservations),
  ageMinChars: count.default(2000),
  ageReclaimMin: count.default(40_000),
  keepImages: count.optional(),
  maxAttempts: z.number().int().min(1).max(100).default(3),
  retryBackoff: z.union([z.number(), z.string()]).default(2000),
  recentWindowGivesWay: z.boolean().default(true),
  truncateOversized: z.boolean().default(true),
  elisionEndsPass: z.enum(['under-trigger', 'at-mark', 'never']).default('never'),
  elisionEpochs: z.enum(['batch', 'paying', 'never']).default('paying'),
  deferShallowCompactions: z.boolean().default(true),
  stubsShorterOnly: z.boolean().default(true),
  trimBeatsOverflow: z.boolean().default(true),
  cachedInputPrice: ratio.default(0.1),
  summaryCoverage: z.enum(['retry', 'carry', 'off']).default('retry'),
  summaryInstructions: z
    .string()
    .max(MAX_SUMMARY_INSTRUCTION_CHARS, `must be at most ${MAX_SUMMARY_INSTRUCTION_CHARS} characters`)
    .optional(),
  summaryPrompt: z
    .string()
    .max(MAX_SUMMARY_INSTRUCTION_CHARS, `must be at most ${MAX_SUMMARY_INSTRUCTION_CHARS} characters`)
    .regex(/\S/, 'must not be blank: it replaces the whole instruction')
    .optional(),
  summarizerContextWindow: z.number().int().min(MIN_SUMMARIZER_CONTEXT_WINDOW).optional(),
});

/** The names of the compaction options ({@link CompactionOptions}), for the closest name to an unknown one. */
export const COMPACTION_OPTION_KEYS = keysOf<CompactionOptions>({
  contextBudget: true,
  triggerRatio: true,
  targetRatio: true,
  keepRecent: true,
  keepTask: true,
  toolResultCap: true,
  ageObservations: true,
  ageMinChars: true,
  ageReclaimMin: true,
  keepImages: true,
  maxAttempts: true,
  retryBackoff: true,
  recentWindowGivesWay: true,
  truncateOversized: true,
  elisionEndsPass: true,
  elisionEpochs: true,
  deferShallowCompactions: true,
  stubsShorterOnly: true,
  trimBeatsOverflow: true,
  cachedInputPrice: true,
  summaryCoverage: true,
  summaryInstructions: true,
  summaryPrompt: true,
  summarizerContextWindow: true,
});

/**
 * Applies defaults and validates; throws `InvalidInputError` naming the option, and for an unknown
 * option the closest known name (`options.keepRecnt: unknown option; did you mean keepRecent?`).
 * Callers whose options carry more than the compaction options check those keys first and pass
 * only the compaction options here.
 */
export function resolveOptions(options: unknown, field = 'options'): ResolvedOptions {
  if (typeof options !== 'object' || options === null)
    throw new InvalidInputError(field, 'must be an object with at least contextBudget');
  assertKnownKeys(options, COMPACTION_OPTION_KEYS, field);
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = issue?.path.map(String).join('.') ?? '';
    const reason = issue === undefined ? 'invalid' : describeIssue(issue, options);
    throw new InvalidInputError(`${field}.${key}`, reason);
  }
  const { retryBackoff, ...rest } = parsed.data;
  if (rest.targetRatio > rest.triggerRatio) {
    throw new InvalidInputError(
      `${field}.targetRatio`,
      `must not exceed triggerRatio (${rest.triggerRatio}), got ${rest.targetRatio}`,
    );
  }
  return { ...rest, retryBackoffMs: parseDuration(retryBackoff, `${field}.retryBackoff`) };
}

/** The wait before attempt `attempt + 1` after attempt `attempt` (1-based) failed. */
export function backoffDelayMs(attempt: number, retryBackoffMs: number): number {
  return Math.min(retryBackoffMs * 2 ** Math.max(0, attempt - 1), MAX_RETRY_BACKOFF_MS);
}

/** Per-call overrides (docs/design.md#overrides). */
export interface CallOverrides {
  /** Aim at this many tokens instead of `targetRatio × contextBudget`; also the exhaustion limit. */
  target?: number | undefined;
  /** Count with this counter for the one call, including the returned counts. */
  counter?: TokenCounter | undefined;
  /** For this call, instead of the options' `summaryInstructions`. */
  summaryInstructions?: string | undefined;
  /** For this call, instead of the options' `summaryPrompt`. */
  summaryPrompt?: string | undefined;
}

/**
 * Checks a per-call `summaryInstructions` or `summaryPrompt` as the options check them; throws
 * `InvalidInputError` naming `field`.
 */
export function checkInstructionText(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  const schema = field.endsWith('summaryPrompt')
    ? optionsSchema.shape.summaryPrompt
    : optionsSchema.shape.summaryInstructions;
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new InvalidInputError(field, issue === undefined ? 'invalid' : describeIssue(issue, value));
}

/** The instruction text of a call: its overrides over the options. */
export function instructionTextOf(
  options: ResolvedOptions,
  overrides: CallOverrides,
): { summaryInstructions: string | undefined; summaryPrompt: string | undefined } {
  const instructions = overrides.summaryInstructions ?? options.summaryInstructions;
  return {
    summaryInstructions: instructions === undefined || instructions.trim() === '' ? undefined : instructions.trim(),
    summaryPrompt: overrides.summaryPrompt ?? options.summaryPrompt,
  };
}

/** The numbers one compaction works with. */
export interface Aim {
  counter: TokenCounter;
  /** Caller's target, if any. */
  target: number | undefined;
  /** Over this, the conversation needs compaction (the trigger). */
  trigger: number;
  /** The hard trim aims here. */
  trimTo: number;
  /** Over this, the result is exhausted. */
  limit: number;
  /** The low-water mark (docs/design.md#window-gives-way): `targetRatio × contextBudget`, or the caller's target when that is lower. */
  mark: number;
}

export function aimFor(
  options: ResolvedOptions,
  overrides: CallOverrides,
  fallbackCounter: TokenCounter = defaultCounter,
): Aim {
  const { target, counter = fallbackCounter } = overrides;
  if (target !== undefined && !(Number.isFinite(target) && target >= 0)) {
    throw new InvalidInputError('target', `must be a non-negative number of tokens, got ${target}`);
  }
  return {
    counter,
    target,
    trigger: options.triggerRatio * options.contextBudget,
    trimTo: target ?? options.targetRatio * options.contextBudget,
    limit: target ?? options.contextBudget,
    mark: Math.min(options.targetRatio * options.contextBudget, target ?? Number.POSITIVE_INFINITY),
  };
}
