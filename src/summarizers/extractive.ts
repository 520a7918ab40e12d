// Sandbox-safe and pure: the built-in offline summarizer. No model, no I/O, no clock: it copies
// lines out of the middle's messages into the four sections (./extractive/).
import { describedAs } from '../described.js';
import type { SummarizeRequest, SummarizeResponse, Summarizer } from '../core/types.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import { KEEP_IDENTIFIERS_PREFIX } from '../core/compaction/coverage.js';
import { transcriptLength } from '../core/compaction/transcript.js';
import { renderSummary } from './extractive/layout.js';
import { buildSections } from './extractive/sections.js';
import { honourInstructions, instructionTerms } from './extractive/instructions.js';
import { readTurns } from './extractive/turns.js';
import {
  identifiersLine,
  lineLength,
  namedFirst,
  namedIdentifiers,
  rankedIdentifiers,
  SECTIONS_FLOOR,
} from './extractive/identifiers.js';

export interface ExtractiveSummarizerOptions {
  /** Bound on the summary in characters. @default 6000 (about 1,500 tokens, a typical model-written summary's size) */
  maxChars?: number;
  /**
   * Bound as a fraction of the transcript's length, so it always compacts; never below
   * MIN_EXTRACTIVE_SUMMARY_CHARS plus the line of the identifiers the instructions name. `Infinity`
   * leaves `maxChars` alone. @default 0.15
   */
  maxRatio?: number;
  /**
   * The budget's share for the line of the middle's identifiers the sections did not copy
   * (docs/design.md#coverage); never the sections' first 1,000 characters but for named ones. `0`
   * leaves the line out. @default 0.6
   */
  identifierShare?: number;
}

export const DEFAULT_EXTRACTIVE_MAX_CHARS = 6000;
const DEFAULT_EXTRACTIVE_MAX_RATIO = 0.15;
const DEFAULT_IDENTIFIER_SHARE = 0.6;
/** The smallest budget the ratio may produce: the notice, four headings and a line or two each. */
export const MIN_EXTRACTIVE_SUMMARY_CHARS = 400;

/**
 * A {@link Summarizer} that needs no model, deterministic: the four sections filled from the
 * request's `middle` with copied lines only (user requests, decision sentences, files and commands
 * with how they went, open errors), then a line of the identifiers they did not copy; lines matching
 * `request.instructions` first (docs/design.md#summary-instructions). An earlier summary in the
 * middle is merged, not nested. Bounded by `maxChars`, `maxRatio` and a limit the instruction
 * states; rejects only when `signal` is already aborted (with its reason).
 * @example
 * const compactor = new Compactor({ summarizer: createExtractiveSummarizer(), contextBudget: 128_000 });
 */
export function createExtractiveSummarizer(options: ExtractiveSummarizerOptions = {}): Summarizer {
  assertKnownKeys(
    options,
    keysOf<ExtractiveSummarizerOptions>({ maxChars: true, maxRatio: true, identifierShare: true }),
    'options',
  );
  // Kept as checked: a caller's later change to `options` does not reach the summaries.
  const resolved = resolveExtractiveOptions(options);
  const summarizer: Summarizer = {
    async summarize(request: SummarizeRequest, callOptions?: { signal?: AbortSignal }): Promise<SummarizeResponse> {
      if (callOptions?.signal?.aborted) throw callOptions.signal.reason;
      return { text: extractiveSummary(request, resolved) };
    },
  };
  return describedAs(summarizer, 'built-in offline extractive summarizer');
}

function resolveExtractiveOptions({
  maxChars = DEFAULT_EXTRACTIVE_MAX_CHARS,
  maxRatio = DEFAULT_EXTRACTIVE_MAX_RATIO,
  identifierShare = DEFAULT_IDENTIFIER_SHARE,
}: ExtractiveSummarizerOptions): Required<ExtractiveSummarizerOptions> {
  if (!Number.isInteger(maxChars) || maxChars < MIN_EXTRACTIVE_SUMMARY_CHARS)
    throw new RangeError(
      `createExtractiveSummarizer: maxChars must be an integer of at least ${MIN_EXTRACTIVE_SUMMARY_CHARS}, got ${maxChars}`,
    );
  if (Number.isNaN(maxRatio) || maxRatio <= 0)
    throw new RangeError(`createExtractiveSummarizer: maxRatio must be a positive number, got ${maxRatio}`);
  if (!(identifierShare >= 0 && identifierShare < 1))
    throw new RangeError(
      `createExtractiveSummarizer: identifierShare must be a number from 0 up to (not including) 1, got ${identifierShare}`,
    );
  return { maxChars, maxRatio, identifierShare };
}

/**
 * The summary `createExtractiveSummarizer` writes, pure: at most `min(maxChars,
 * max(MIN_EXTRACTIVE_SUMMARY_CHARS + the named identifiers' line, maxRatio × transcript))`
 * characters and under a limit the instruction states, for the hundredth summary of a run as the first.
 *
 * Earlier summaries in the middle are merged as the older part of the run: Goals keep the run's
 * first request first and the latest second; earlier Decisions, files and commands rank below new
 * ones of the same strength, oldest first; a file or command used again sums its counts and keeps
 * its latest outcome; Unresolved carries the latest request, the last words and open failures until
 * newer ones replace them; `(N more not shown)` adds up. Their headers and notices are never copied.
 */
export function extractiveSummary(request: SummarizeRequest, options: ExtractiveSummarizerOptions = {}): string {
  const { maxChars, maxRatio, identifierShare } = resolveExtractiveOptions(options);
  const { middle } = request;
  // The kept task is the user's text: a length it states is no limit of the summary.
  const statedLimit = statedCharLimit(
    request.task === undefined ? request.instruction : request.instruction.replace(request.task, ''),
  );
  // The engine's `Keep these identifiers` line goes to the identifiers line (named first), not to the sections.
  const terms = instructionTerms(callerInstructions(request.instructions));
  const turns = readTurns(middle);
  const ranked = rankedIdentifiers(middle, turns, request.task);
  const named = namedIdentifiers(ranked, request.instructions);
  const namedLength = named.length === 0 ? 0 : lineLength(named);
  // The ratio gives way to the named identifiers: left out, the coverage check would ask for them again.
  const byRatio = Math.max(
    MIN_EXTRACTIVE_SUMMARY_CHARS + namedLength,
    Math.floor(transcriptLength(middle, Number.POSITIVE_INFINITY) * maxRatio),
  );
  const budget = Math.min(maxChars, byRatio, statedLimit ?? Number.POSITIVE_INFINITY);
  // The identifiers line never takes the sections' first SECTIONS_FLOOR characters, but for named
  // identifiers (down to the bare minimum); without a line, the sections get the whole budget.
  const share = Math.min(Math.floor(budget * identifierShare), Math.max(0, budget - SECTIONS_FLOOR));
  const forNamed = Math.min(namedLength, budget - MIN_EXTRACTIVE_SUMMARY_CHARS);
  const reserve = identifierShare === 0 ? 0 : Math.max(share, forNamed, 0);
  const sections = honourInstructions(buildSections(turns), terms, middle);
  const body = renderSummary(sections, budget - reserve, turns.earlier.omitted);
  const line =
    reserve === 0 ? '' : identifiersLine(namedFirst(ranked, named), body, Math.min(reserve, budget - body.length - 2));
  return line === '' ? renderSummary(sections, budget, turns.earlier.omitted) : `${body}\n\n${line}`;
}

/** A length the instruction states: the too-long retry's "under N characters" (N - 1), or "at most N characters". */
const STATED_LIMIT = /\b(under|fewer than|less than|at most|no more than)\s+([\d,_]+)\s+characters\b/gi;

function statedCharLimit(instruction: string): number | undefined {
  const limits = [...instruction.matchAll(STATED_LIMIT)]
    .map(([, bound = '', n = '']) => Number(n.replace(/[,_]/g, '')) - (/^(under|fewer|less)/i.test(bound) ? 1 : 0))
    .filter(Number.isFinite);
  return limits.length === 0 ? undefined : Math.max(0, Math.min(...limits));
}

/** `instructions` without the engine's `Keep these identifiers: …` line; undefined when nothing is left. */
function callerInstructions(instructions: string | undefined): string | undefined {
  const rest = instructions
    ?.split('\n')
    .filter((line) => !line.startsWith(KEEP_IDENTIFIERS_PREFIX))
    .join('\n');
  return rest === undefined || rest.trim() === '' ? undefined : rest;
}
