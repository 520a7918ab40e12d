// Sandbox-safe: what a compaction learns of its summarizer's tokens and window from the summarizer's
// own answers (docs/design.md#summarizer-overflow) — the prompt tokens each call was billed, and the
// numbers a context-overflow refusal states — kept by the driver across the pieces of a pass and the
// passes of a run, so the engine plans pieces that fit the server that reads them. Pure: the same
// answers teach the same numbers, in workflow code as in-process.
import { MIN_SUMMARIZER_CONTEXT_WINDOW, SUMMARY_OUTPUT_SHARE } from './options.js';
import { inputRoom } from './pieces.js';

/**
 * The summarizer's tokens against the pass's counter, and its window, as its answers showed them. A
 * driver keeps one for its lifetime (a `Compactor`, a workflow's compactions) and hands it to each
 * pass; the engine updates it.
 */
export interface SummarizerCalibration {
  /**
   * The summarizer's tokens per token of the pass's counter: the largest ratio of billed (or
   * refused) prompt tokens to the counter's estimate of the same request seen so far, at least 1
   * (a summarizer counting fewer tokens than the estimate leaves the estimate as it is), at most
   * {@link MAX_TOKEN_RATIO}.
   */
  ratio: number;
  /**
   * True once an answer stated a count to compare with the estimate (a bill, or a refusal's
   * numbers); until then requests are planned with at least {@link UNCALIBRATED_RATIO}.
   */
  measured?: boolean;
  /**
   * The window, in the summarizer's tokens, its answers taught: what a context-overflow refusal
   * stated, or less when that would not make the next request smaller than a failed one (then the
   * window that plans it at {@link SHRINK_SHARE} of the failed one); unset until then.
   */
  window?: number;
}

/** A ratio above this is not believed (a counter four times too low would be broken, not calibrated). */
export const MAX_TOKEN_RATIO = 4;

/**
 * The ratio requests are planned with before any answer measured one (docs/design.md#summarizer-overflow):
 * the first request of a driver is sent before anything was billed, and a summarizer whose
 * tokenizer counts more than the estimate would refuse it. 2 is above every ratio measured on the
 * corpus's summarizer requests (SmolLM2's tokenizer against the default counter: at most 1.79).
 */
export const UNCALIBRATED_RATIO = 2;

/**
 * How much of a failed request's estimate, at most, the next cut gives a request: after a refusal
 * (what the stated numbers give, when that is less), and after a deadline (a retry as large would
 * miss it again).
 */
export const SHRINK_SHARE = { overflow: 0.75, deadline: 0.5 } as const;

/** How many times a pass re-cuts what is left of its middle after a refusal or a deadline before it ends in the hard trim. */
export const MAX_RECUTS = 3;

/** A calibration that knows nothing yet. */
export function newCalibration(): SummarizerCalibration {
  return { ratio: 1 };
}

/** Takes a billed (or refused) prompt's tokens against the counter's estimate of the same request. */
export function calibrate(
  calibration: SummarizerCalibration,
  estimate: number,
  promptTokens: number | undefined,
): void {
  if (promptTokens === undefined || !(estimate > 0) || !(promptTokens > 0)) return;
  const ratio = Math.min(promptTokens / estimate, MAX_TOKEN_RATIO);
  if (!Number.isFinite(ratio)) return;
  calibration.measured = true;
  if (ratio > calibration.ratio) calibration.ratio = ratio;
}

/**
 * The ratio requests are planned with: the measured one, or at least {@link UNCALIBRATED_RATIO}
 * before any answer measured it.
 */
export function planningRatio({ ratio, measured }: SummarizerCalibration): number {
  return measured === true ? ratio : Math.max(ratio, UNCALIBRATED_RATIO);
}

/**
 * The window the engine plans with, in the pass's counter's units: the smaller of the option (in
 * the summarizer's tokens) and what the answers taught, divided by the {@link planningRatio} (before
 * anything was measured or taught, at least the option's minimum, 1,024, or the option when smaller);
 * undefined when neither is known (one request, whatever its size).
 */
export function plannedWindow(option: number | undefined, calibration: SummarizerCalibration): number | undefined {
  const window = knownWindow(option, calibration);
  if (window === undefined) return undefined;
  const planned = Math.floor(window / planningRatio(calibration));
  if (calibration.measured === true || calibration.window !== undefined) return planned;
  // The margin leaves the configured window room for the instruction and a piece: it never plans
  // below the smallest window the option takes.
  return Math.max(planned, Math.min(window, MIN_SUMMARIZER_CONTEXT_WINDOW));
}

/** The smaller of the option and the taught window, in the summarizer's tokens; undefined when neither is known. */
function knownWindow(option: number | undefined, { window }: SummarizerCalibration): number | undefined {
  return option === undefined || window === undefined ? (option ?? window) : Math.min(option, window);
}

/** What a refused or timed-out request teaches. */
export interface RequestFailure {
  /** `overflow`: the server said the request does not fit its window; `deadline`: the request passed its deadline. */
  kind: 'overflow' | 'deadline';
  /** The window the refusal stated, in the summarizer's tokens. */
  contextWindow?: number;
  /** The refused prompt's tokens as the summarizer counted them. */
  promptTokens?: number;
}

/**
 * Learns from a request that failed for its size (`estimate`: the counter's count of it) and makes
 * sure the next cut plans every request at most {@link SHRINK_SHARE} of it: a refusal's stated
 * window and count do when they say so; else the window is lowered until they do.
 */
export function learnFromFailure(
  calibration: SummarizerCalibration,
  option: number | undefined,
  estimate: number,
  failure: RequestFailure,
): void {
  if (failure.kind === 'overflow') {
    calibrate(calibration, estimate, failure.promptTokens);
    const stated = failure.contextWindow;
    if (stated !== undefined && stated > 0) calibration.window = Math.min(calibration.window ?? stated, stated);
  }
  const most = Math.floor(estimate * SHRINK_SHARE[failure.kind]);
  const planned = plannedWindow(option, calibration);
  if (planned !== undefined && inputRoom(planned) <= most) return;
  // The window (in the summarizer's tokens) whose input room is `most` estimated tokens.
  calibration.window = Math.floor((most / (1 - SUMMARY_OUTPUT_SHARE)) * planningRatio(calibration));
}

/** The most tokens a summary is allowed, whatever its room: more than any summary the instruction asks for, and within every common model's output limit. */
export const MAX_SUMMARY_TOKENS = 4096;

/** The fewest: a room smaller than this still gets a summary that can say something (the proof then judges it). */
export const MIN_SUMMARY_TOKENS = 256;

/**
 * docs/design.md#summary-length The max tokens a summarize request carries: the room the summary has
 * in the compacted conversation (`room`, in the counter's units) in the summarizer's tokens, at most
 * the output share of the window the summarizer is known to have, within
 * [{@link MIN_SUMMARY_TOKENS}, {@link MAX_SUMMARY_TOKENS}].
 */
export function summaryMaxTokens(room: number, option: number | undefined, calibration: SummarizerCalibration): number {
  const window = knownWindow(option, calibration) ?? Number.POSITIVE_INFINITY;
  const windowShare = Math.floor(window * SUMMARY_OUTPUT_SHARE);
  const tokens = Math.min(Math.floor(room * calibration.ratio), windowShare, MAX_SUMMARY_TOKENS);
  return Math.max(MIN_SUMMARY_TOKENS, tokens);
}
