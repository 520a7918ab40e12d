// Sandbox-safe and pure: what a compaction learns of its summarizer's tokens and window from billed prompt
// tokens and a refusal's stated numbers (docs/design.md#summarizer-overflow).
import { MIN_SUMMARIZER_CONTEXT_WINDOW, SUMMARY_OUTPUT_SHARE } from './options.js';
import { inputRoom } from './pieces.js';

/** Kept by a driver for its lifetime and handed to each pass; the engine updates it. */
export interface SummarizerCalibration {
  /** The summarizer's tokens per counter token: the largest billed/estimated ratio seen, in [1, {@link MAX_TOKEN_RATIO}]. */
  ratio: number;
  /** True once an answer stated a count; until then requests are planned with at least {@link UNCALIBRATED_RATIO}. */
  measured?: boolean;
  /** The window, in the summarizer's tokens, its refusals taught (lowered so that each cut shrinks). */
  window?: number;
}

/** A ratio above this is not believed (a counter four times too low would be broken, not calibrated). */
export const MAX_TOKEN_RATIO = 4;

/** The ratio before any answer measured one: above every ratio measured on the corpus (docs/design.md#summarizer-overflow). */
export const UNCALIBRATED_RATIO = 2;

/** The most of a failed request's estimate the next cut gives a request. */
export const SHRINK_SHARE = { overflow: 0.75, deadline: 0.5 } as const;

/** How many times a pass re-cuts its middle after a refusal or a deadline before the hard trim. */
export const MAX_RECUTS = 3;

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
  calibration.measured = true;
  if (ratio > calibration.ratio) calibration.ratio = ratio;
}

export function planningRatio({ ratio, measured }: SummarizerCalibration): number {
  return measured === true ? ratio : Math.max(ratio, UNCALIBRATED_RATIO);
}

/** The window the engine plans with, in the counter's units; undefined when none is known (one request). */
export function plannedWindow(option: number | undefined, calibration: SummarizerCalibration): number | undefined {
  const window = knownWindow(option, calibration);
  if (window === undefined) return undefined;
  const planned = Math.floor(window / planningRatio(calibration));
  if (calibration.measured === true || calibration.window !== undefined) return planned;
  // Before anything was learnt, never below the smallest window the option takes.
  return Math.max(planned, Math.min(window, MIN_SUMMARIZER_CONTEXT_WINDOW));
}

/** The smaller of the option and the taught window, in the summarizer's tokens; undefined when neither is known. */
function knownWindow(option: number | undefined, { window }: SummarizerCalibration): number | undefined {
  return option === undefined || window === undefined ? (option ?? window) : Math.min(option, window);
}

export interface RequestFailure {
  kind: 'overflow' | 'deadline';
  /** The window the refusal stated, in the summarizer's tokens. */
  contextWindow?: number;
  /** The refused prompt's tokens as the summarizer counted them. */
  promptTokens?: number;
}

/** Learns from a request that failed for its size, so that the next cut plans at most {@link SHRINK_SHARE} of it. */
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

/** More than any summary the instruction asks for, within every common model's output limit. */
export const MAX_SUMMARY_TOKENS = 4096;

/** A smaller room still gets a summary that can say something (the proof then judges it). */
export const MIN_SUMMARY_TOKENS = 256;

/** docs/design.md#summary-length The max tokens of a request: the summary's `room` in the summarizer's tokens, within the window's output share. */
export function summaryMaxTokens(room: number, option: number | undefined, calibration: SummarizerCalibration): number {
  const window = knownWindow(option, calibration) ?? Number.POSITIVE_INFINITY;
  const windowShare = Math.floor(window * SUMMARY_OUTPUT_SHARE);
  const tokens = Math.min(Math.floor(room * calibration.ratio), windowShare, MAX_SUMMARY_TOKENS);
  return Math.max(MIN_SUMMARY_TOKENS, tokens);
}
