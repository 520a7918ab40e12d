// Sandbox-safe and pure: the built-in offline summarizer. No model, no I/O, no clock: it copies
// lines out of the middle's messages into the four sections. Its parts, in ./extractive/: turns.ts
// reads the messages into turns, earlier.ts reads earlier summaries back, files.ts and sections.ts
// rank the candidate lines, calls.ts writes a tool call as a line, layout.ts fits them into the
// budget.
import { describedAs } from '../described.js';
import type { SummarizeRequest, SummarizeResponse, Summarizer } from '../core/types.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import { KEEP_IDENTIFIERS_PREFIX } from '../core/compaction/coverage.js';
import { EXTRACTIVE_SUMMARY_NOTICE } from './extractive/format.js';
import { renderSummary } from './extractive/layout.js';
import { statedCharLimit, transcriptChars } from './extractive/request.js';
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

export { EXTRACTIVE_SUMMARY_NOTICE };

/** Options of {@link createExtractiveSummarizer}. */
export interface ExtractiveSummarizerOptions {
  /**
   * Upper bound on the summary's length in characters.
   * @default 6000 (about 1,500 tokens: the size of a typical model-written summary)
   */
  maxChars?: number;
  /**
   * The summary is at most this fraction of the transcript's length, so it always compacts;
   * never below {@link MIN_EXTRACTIVE_SUMMARY_CHARS}, the room the four headings need, plus the
   * line of the identifiers the request's instructions name (the coverage check's, which it
   * would otherwise ask for again and carry).
   * `Infinity` bounds the summary by `maxChars` alone.
   * @default 0.15
   */
  maxRatio?: number;
  /**
   * The share of the summary's budget given to the line after the sections that lists the
   * identifiers (paths, symbols, ids) of the middle the sections did not copy, those the request's
   * instructions name first, then the likeliest to be named again (docs/design.md#coverage); never
   * the sections' first 1,000 characters but for named ones, and the sections get the whole budget
   * when there is no line. `0` leaves the line out.
   * @default 0.6
   */
  identifierShare?: number;
}

/** @default 6000 characters */
export const DEFAULT_EXTRACTIVE_MAX_CHARS = 6000;
/** @default 0.15 of the transcript */
export const DEFAULT_EXTRACTIVE_MAX_RATIO = 0.15;
/** @default 0.6 of the summary’s budget */
export const DEFAULT_IDENTIFIER_SHARE = 0.6;
/** The smallest budget the ratio may produce: the notice, four headings and a line or two each. */
export const MIN_EXTRACTIVE_SUMMARY_CHARS = 400;

/**
 * A {@link Summarizer} that needs no model: deterministic and extractive. It reads the middle the
 * request carries (`request.middle`) and fills the four sections the instruction asks for
 * with copied material only — the first lines of user turns (Goals), sentences of assistant
 * turns that carry decision words or open a turn (Decisions), file paths and commands found in
 * tool-call arguments and results, with the tool and whether the result looked like an error
 * (Files and commands), and the latest user request plus errors in the latest tool results
 * (Unresolved), then a line of the identifiers (paths, symbols, ids) of the middle that the
 * sections did not copy, ranked by use, recency and the files the user named, within
 * `identifierShare` of the budget. Its first line says it is an offline extractive summary.
 *
 * A summary of a summary merges: an earlier summary in the transcript (the engine's synthetic
 * message, `isSummaryMessage`) is not a user turn but the older part of the run, and its sections
 * are read back into the new ones — see {@link extractiveSummary} for what a merge keeps.
 *
 * With `request.instructions` (the caller's `summaryInstructions`), the lines that match them are
 * kept before every other line, and lines of the middle that match them and no section copied are
 * added under Decisions (docs/design.md#summary-instructions).
 *
 * The output is bounded by `maxChars` and `maxRatio` of the transcript, and by the limit the
 * too-long retry states (`under N characters`), so it is much shorter than its input. Never fails except when `signal` is
 * already aborted (it then rejects with the signal's reason).
 *
 * @example
 * const compactor = new Compactor({ summarizer: createExtractiveSummarizer(), contextBudget: 128_000 });
 */
export function createExtractiveSummarizer(options: ExtractiveSummarizerOptions = {}): Summarizer {
  assertKnownKeys(
    options,
    keysOf<ExtractiveSummarizerOptions>({ maxChars: true, maxRatio: true, identifierShare: true }),
    'options',
  );
  const resolved = resolveExtractiveOptions(options);
  const summarizer: Summarizer = {
    async summarize(request: SummarizeRequest, callOptions?: { signal?: AbortSignal }): Promise<SummarizeResponse> {
      const signal = callOptions?.signal;
      if (signal?.aborted) throw abortReason(signal);
      return { text: extractiveSummary(request, resolved) };
    },
  };
  return describedAs(summarizer, 'built-in offline extractive summarizer');
}

function abortReason(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason;
  return reason;
}

interface ResolvedExtractiveOptions {
  maxChars: number;
  maxRatio: number;
  identifierShare: number;
}

function resolveExtractiveOptions({
  maxChars = DEFAULT_EXTRACTIVE_MAX_CHARS,
  maxRatio = DEFAULT_EXTRACTIVE_MAX_RATIO,
  identifierShare = DEFAULT_IDENTIFIER_SHARE,
}: ExtractiveSummarizerOptions): ResolvedExtractiveOptions {
  if (!Number.isInteger(maxChars) || maxChars < MIN_EXTRACTIVE_SUMMARY_CHARS) {
    throw new RangeError(
      `createExtractiveSummarizer: maxChars must be an integer of at least ${MIN_EXTRACTIVE_SUMMARY_CHARS}, got ${maxChars}`,
    );
  }
  if (Number.isNaN(maxRatio) || maxRatio <= 0) {
    throw new RangeError(`createExtractiveSummarizer: maxRatio must be a positive number, got ${maxRatio}`);
  }
  if (!(identifierShare >= 0 && identifierShare < 1)) {
    throw new RangeError(
      `createExtractiveSummarizer: identifierShare must be a number from 0 up to (not including) 1, got ${identifierShare}`,
    );
  }
  return { maxChars, maxRatio, identifierShare };
}

/**
 * The extractive summary of one summarizer request, as `createExtractiveSummarizer` writes it.
 * Pure and synchronous: the same request and options always give the same string.
 *
 * Its length is at most `min(maxChars, max(MIN_EXTRACTIVE_SUMMARY_CHARS + the line of the
 * identifiers the instructions name, maxRatio × transcript))` characters, and under the limit a
 * tighter retry states. That bound holds for every summary of a
 * run, the hundredth as the first: what earlier summaries carry competes for the same room.
 *
 * When the transcript holds earlier summaries (a run that compacted before), their sections are
 * merged into the new ones as if their lines had been read from the older part of the run:
 * - Goals: one list, older goals first. The run's first request keeps the first place and the
 *   latest request the second; the others compete for room as in a single summary.
 * - Decisions: earlier decisions rank below new ones of the same strength and are let go oldest
 *   first when the section is full.
 * - Files and commands: one line per file and per command across all summaries; a file or command
 *   used again has its counts summed and its latest outcome. Files and commands not used again
 *   rank below new ones of the same kind and are let go oldest first.
 * - Unresolved: the latest user request and the agent's last words carry over until newer ones
 *   replace them. An earlier open failure carries over while the new part holds fewer tool
 *   results than Unresolved looks back over (six) and no later call of the same command or file
 *   superseded it; the failure stays in Files and commands either way.
 * - `(N more not shown)` in Goals, Decisions and Files and commands counts what this summary and
 *   the earlier ones left out (an item left out once and seen again later may count twice).
 * The earlier summaries' headers and notice lines are never copied, so summaries do not nest.
 */
export function extractiveSummary(request: SummarizeRequest, options: ExtractiveSummarizerOptions = {}): string {
  const { maxChars, maxRatio, identifierShare } = resolveExtractiveOptions(options);
  const { middle } = request;
  // The kept task is the user's text, not the engine's: a length it states is no limit of the summary.
  const statedLimit = statedCharLimit(
    request.task === undefined ? request.instruction : request.instruction.replace(request.task, ''),
  );
  // docs/design.md#summary-instructions What matches the caller's instructions is kept first.
  // The engine's line of identifiers to keep is no instruction of the caller's: those identifiers go
  // to the identifiers line (named first), and the sections stay what they would be without it.
  const terms = instructionTerms(callerInstructions(request.instructions));
  const turns = readTurns(middle);
  const ranked = rankedIdentifiers(middle, turns, request.task);
  const named = namedIdentifiers(ranked, request.instructions);
  // The ratio's bound gives way to the line of the identifiers the request names (docs/design.md#coverage):
  // left out, the coverage check would ask again for them, then carry them on a line of its own.
  const byRatio = Math.max(
    MIN_EXTRACTIVE_SUMMARY_CHARS + (named.length === 0 ? 0 : lineLength(named)),
    Math.floor(transcriptChars(middle) * maxRatio),
  );
  const budget = Math.min(maxChars, byRatio, statedLimit ?? Number.POSITIVE_INFINITY);
  // The identifiers line gets its share of the room, never the sections' first SECTIONS_FLOOR
  // characters; identifiers the instructions name get room before that floor, down to the bare
  // minimum (a coverage retry asks for them). Without a line, the sections get the whole budget.
  const share = Math.min(Math.floor(budget * identifierShare), Math.max(0, budget - SECTIONS_FLOOR));
  const forNamed = Math.min(named.length === 0 ? 0 : lineLength(named), budget - MIN_EXTRACTIVE_SUMMARY_CHARS);
  const reserve = identifierShare === 0 ? 0 : Math.max(share, forNamed, 0);
  const sections = honourInstructions(buildSections(turns), terms, middle);
  const body = renderSummary(sections, budget - reserve, turns.earlier.omitted);
  const line =
    reserve === 0 ? '' : identifiersLine(namedFirst(ranked, named), body, Math.min(reserve, budget - body.length - 2));
  return line === '' ? renderSummary(sections, budget, turns.earlier.omitted) : `${body}\n\n${line}`;
}

/** `instructions` without the engine's `Keep these identifiers: …` line (docs/design.md#coverage); undefined when nothing else is left. */
function callerInstructions(instructions: string | undefined): string | undefined {
  if (instructions === undefined) return undefined;
  const rest = instructions
    .split('\n')
    .filter((line) => !line.startsWith(KEEP_IDENTIFIERS_PREFIX))
    .join('\n');
  return rest.trim() === '' ? undefined : rest;
}
