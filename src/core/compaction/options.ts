// Sandbox-safe: compaction options, their defaults (docs/design.md#options) and validation.
import { z } from 'zod';
import { InvalidInputError } from '../errors.js';
import { checkWith } from '../schema.js';
import { assertKnownKeys } from '../unknown-keys.js';
import type { TokenCounter } from '../types.js';
import { COMPACTION_DEFAULTS, LIBRARY_KEEP_TASK } from './defaults.js';

/** A duration: milliseconds, or a string such as `'2s'`, `'500ms'`, `'1.5m'`, `'1h'`, `'1d'`. */
export type Duration = number | string;

const DURATION_TEXT = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;
const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The milliseconds of a duration written with its unit, not rounded; undefined for other text. */
export function durationTextMs(text: string): number | undefined {
  const [, amount, unit] = DURATION_TEXT.exec(text) ?? [];
  return amount === undefined || unit === undefined ? undefined : Number(amount) * (units[unit] ?? 1);
}

export function parseDuration(value: Duration, field: string): number {
  const milliseconds = typeof value === 'number' ? value : (durationTextMs(value) ?? -1);
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return Math.round(milliseconds);
  throw new InvalidInputError(
    field,
    typeof value === 'number'
      ? `must be a non-negative number of milliseconds, got ${value}`
      : `must be milliseconds or a duration like "2s", "500ms", "1m", got ${JSON.stringify(value)}`,
  );
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
   * docs/design.md#task-survives Keep the first user message verbatim, as a sticky one. Off here because a
   * session transcript's replay knows only `sticky` flags. @default false
   */
  keepTask?: boolean;
  /** Tool results and tool-call arguments are cut to this many characters in the summarizer's input. @default 2000 */
  toolResultCap?: number;
  /** Elide dead tool output before summarizing. @default false */
  ageObservations?: boolean;
  /** A tool result must be longer than this to be elided. @default 2000 */
  ageMinChars?: number;
  /** The trailing grace and the floor of an elision-only epoch, in characters. @default 40000 */
  ageReclaimMin?: number;
  /** Keep the last N images; older ones in the middle become a stub (docs/design.md#image-elision). @default off */
  keepImages?: number;
  /** Summarizer attempts per request, in total. @default 3 */
  maxAttempts?: number;
  /** Wait before the second attempt; ×2 per attempt, capped at 30 s. @default '2s' */
  retryBackoff?: Duration;

  // docs/design.md#economics: each economic rule is on by default; all off ({@link REFERENCE_EXACT}) is the reference.

  /** docs/design.md#window-gives-way: a recent window over the low-water mark gives way, down to the last complete turn. @default true */
  recentWindowGivesWay?: boolean;
  /** docs/design.md#truncation: when the hard trim does not fit, cut the largest removable messages middle-out. @default true */
  truncateOversized?: boolean;
  /** docs/design.md#elision-that-pays: when elision alone ends a pass over the trigger. @default 'never' */
  elisionEndsPass?: ElisionEndsPass;
  /** docs/design.md#elision-that-pays: when an elision-only epoch below the trigger starts. @default 'paying' */
  elisionEpochs?: ElisionEpochs;
  /** docs/design.md#no-thrash: no compaction within the limit that cannot pay for its cache miss. @default true */
  deferShallowCompactions?: boolean;
  /** docs/design.md#never-worse: a stub is written only when it is shorter than the result it replaces. @default true */
  stubsShorterOnly?: boolean;
  /** docs/design.md#never-worse: without a `target`, a summary over `contextBudget` loses to a hard trim that fits. @default true */
  trimBeatsOverflow?: boolean;
  /** docs/design.md#summary-length: each summarize request carries max tokens from the summary's room. @default true */
  summaryTokenCap?: boolean;
  /** The price of a cached input token relative to an uncached one, for the `'paying'` epoch model. @default 0.1 */
  cachedInputPrice?: number;
  /** docs/design.md#coverage: what to do about identifiers of the middle the kept messages share. @default 'retry' */
  summaryCoverage?: SummaryCoverage;

  /** docs/design.md#summary-instructions: added to the summarizer's instruction (at most 10,000 characters). @default none */
  summaryInstructions?: string;
  /** Replaces the fixed summarizer instruction whole; `summaryInstructions` still follows it. @default the fixed one */
  summaryPrompt?: string;
  /**
   * docs/design.md#summarizer-window The summarizer's window (≥ 1,024), in its tokens: a larger middle is
   * summarized in pieces, as a fold. @default one request, whatever its size
   */
  summarizerContextWindow?: number;
  /** docs/design.md#user-words Keep the middle's newest user messages verbatim, within `keepUserMessagesShare`. Also a per-call option. @default false */
  keepUserMessages?: boolean;
  /** docs/design.md#user-words The share of the budget the kept user messages may take together. @default 0.15 */
  keepUserMessagesShare?: number;
}

/** The share of `summarizerContextWindow` a request leaves for the summary the summarizer writes. */
export const SUMMARY_OUTPUT_SHARE = 0.25;

export const MIN_SUMMARIZER_CONTEXT_WINDOW = 1024;

const MAX_INSTRUCTION_CHARS = 10_000;

export type SummaryCoverage = 'retry' | 'carry' | 'off';
export type ElisionEpochs = 'batch' | 'paying' | 'never';
export type ElisionEndsPass = 'under-trigger' | 'at-mark' | 'never';

/** Every economic rule off: spread into the options for the reference's behaviour exactly (docs/design.md#reference-exact). */
export const REFERENCE_EXACT = {
  keepTask: false,
  recentWindowGivesWay: false,
  truncateOversized: false,
  elisionEndsPass: 'under-trigger',
  elisionEpochs: 'batch',
  deferShallowCompactions: false,
  stubsShorterOnly: false,
  trimBeatsOverflow: false,
  summaryTokenCap: false,
  summaryCoverage: 'off',
} as const satisfies Partial<CompactionOptions>;

/** The backoff never grows past this (docs/design.md#failures). */
export const MAX_RETRY_BACKOFF_MS = 30_000;

const ratio = z.number().gt(0).lte(1);
const count = z.number().int().nonnegative();
const instructionText = z.string().max(MAX_INSTRUCTION_CHARS, `must be at most ${MAX_INSTRUCTION_CHARS} characters`);
/** The compaction options with their defaults, and the source of their JSON Schema (scripts/compact-conversation-schemas.ts). */
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
  summaryTokenCap: z.boolean().default(true),
  cachedInputPrice: ratio.default(0.1),
  summaryCoverage: z.enum(['retry', 'carry', 'off']).default('retry'),
  summaryInstructions: instructionText.optional(),
  summaryPrompt: instructionText.regex(/\S/, 'must not be blank: it replaces the whole instruction').optional(),
  summarizerContextWindow: z.number().int().min(MIN_SUMMARIZER_CONTEXT_WINDOW).optional(),
  keepUserMessages: z.boolean().default(false),
  keepUserMessagesShare: ratio.default(0.15),
});

/** Options with every default applied and validated. Plain JSON (durations in ms). */
export type ResolvedOptions = Omit<z.output<typeof optionsSchema>, 'retryBackoff'> & { retryBackoffMs: number };

type SameKeys<A, B> = [Exclude<keyof A, keyof B> | Exclude<keyof B, keyof A>] extends [never] ? true : false;
export const COMPACTION_OPTION_KEYS: readonly string[] = Object.keys(optionsSchema.shape);
// The schema parses exactly the options CompactionOptions declares.
true satisfies SameKeys<CompactionOptions, typeof optionsSchema.shape>;

/** Applies defaults and validates, naming the option at fault (and the closest name to an unknown one). */
export function resolveOptions(options: unknown, field = 'options'): ResolvedOptions {
  assertKnownKeys(options, COMPACTION_OPTION_KEYS, field);
  const { retryBackoff, ...rest } = checkWith(optionsSchema, options, field);
  if (rest.targetRatio > rest.triggerRatio)
    throw new InvalidInputError(
      `${field}.targetRatio`,
      `must not exceed triggerRatio (${rest.triggerRatio}), got ${rest.targetRatio}`,
    );
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
  /** For this call, instead of the options' `keepUserMessages` (docs/design.md#user-words). */
  keepUserMessages?: boolean | undefined;
}

/** The per-call overrides the options have too, checked as the options check them (without their defaults). */
export const callOverridesSchema = optionsSchema
  .pick({ summaryInstructions: true, summaryPrompt: true })
  .extend({ keepUserMessages: z.boolean().optional() });

/** The numbers one compaction works with: over `trigger` it compacts, the hard trim aims at `trimTo`, over `limit` it is exhausted. */
export interface Aim {
  counter: TokenCounter;
  target: number | undefined;
  trigger: number;
  trimTo: number;
  limit: number;
  /** The low-water mark (docs/design.md#window-gives-way): `targetRatio × contextBudget`, or the caller's target when that is lower. */
  mark: number;
}
