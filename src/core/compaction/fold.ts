// Sandbox-safe: the steps the engine asks its driver for, and the fold that keeps every one of them
// within the summarizer's window (docs/design.md#summarizer-window): the middle cut in pieces for
// the window the engine plans with, each piece's request carrying the summary so far; a request the
// summarizer refuses for its size, or that passes its deadline, teaches the calibration and what is
// left of the middle is cut again smaller, the pieces already summarized kept
// (docs/design.md#summarizer-overflow).
import {
  calibrate,
  learnFromFailure,
  MAX_RECUTS,
  plannedWindow,
  summaryMaxTokens,
  type RequestFailure,
  type SummarizerCalibration,
} from './calibration.js';
import type { Pass } from './pass.js';
import { cutPieces, foldedMiddle } from './pieces.js';
import {
  requestChars,
  requestFor,
  summarizerMessages,
  summaryInstruction,
  type InstructionText,
} from './transcript.js';
import type { ChatMessage, FallbackReason, SummarizeRequest, Usage } from '../types.js';

/** What the engine asks its driver to do. */
export interface SummarizeStep {
  kind: 'summarize';
  /**
   * `summary` for the first request, `tighter` for the one retry after a summary that was too
   * long, `coverage` for the one retry after a summary that left out identifiers it had to keep
   * (docs/design.md#coverage). Never more than one retry. `piece` for each request but the last of a
   * middle summarized in pieces (docs/design.md#summarizer-window): the summary so far and the next piece;
   * the last one's requests are `summary` and its retry.
   */
  purpose: 'summary' | 'tighter' | 'coverage' | 'piece';
  /** Only for a middle summarized in pieces: which piece this request folds in (1-based), of how many. */
  piece?: { index: number; of: number };
  /** What the summarizer is sent: in a workflow, the `summarize` activity's input as it is (docs/design.md#summarizer-request). */
  request: SummarizeRequest;
  /** For UI metadata: how many messages the transcript holds and its length in characters. */
  transcript: { messages: number; characters: number };
}

/**
 * How the driver's attempt ended. `failed` means every attempt the driver was allowed failed
 * (or the first one was rejected), or (`deadline`) the request passed its deadline, which the driver
 * does not retry as it is; `overflow` means the summarizer refused the request as over its context
 * window, with the numbers it stated, in its own tokens (docs/design.md#summarizer-overflow).
 */
export type SummarizeOutcome =
  | { kind: 'summary'; text: string; usage?: Usage }
  | { kind: 'failed'; reason: 'rejected' | 'exhausted' | 'deadline'; message: string }
  | { kind: 'overflow'; message: string; contextWindow?: number; promptTokens?: number }
  | { kind: 'cancelled' };

/** Builds a step: the request for `seen` under `instruction`, and its size for the UI. */
export function summarizeStepOf(
  purpose: SummarizeStep['purpose'],
  instruction: string,
  seen: ChatMessage[],
  text: InstructionText,
  maxTokens: number | undefined,
  piece?: SummarizeStep['piece'],
): SummarizeStep {
  // The transcript's size is counted, not rendered: the request is rendered only by a summarizer that sends text.
  const built = requestFor(instruction, seen, text.summaryInstructions, text.task);
  const request = maxTokens === undefined ? built : { ...built, maxTokens };
  const transcript = { messages: seen.length, characters: requestChars(instruction, seen) };
  return piece === undefined
    ? { kind: 'summarize', purpose, request, transcript }
    : { kind: 'summarize', purpose, request, transcript, piece };
}

/** The summary's own request: the middle, or the fold of its last piece. */
export interface SummaryInput {
  middle: ChatMessage[];
  /** The last piece of a middle summarized in pieces; undefined for a middle sent in one request. */
  piece: SummarizeStep['piece'];
}

/** Why a fold gave up: the pass ends in the hard trim, and its result says why. */
export type FoldEnd = FallbackReason;

/** Why an answer to a summarize step gives no summary to use; undefined for a summary with text. */
export function failureOf(outcome: SummarizeOutcome, what: string): FallbackReason | undefined {
  if (outcome.kind === 'cancelled') return { cause: 'cancelled', message: `the ${what} was cancelled` };
  if (outcome.kind === 'overflow')
    return {
      cause: 'over-summarizer-window',
      message: `the summarizer refused the ${what} for its size: ${outcome.message}`,
    };
  if (outcome.kind === 'failed')
    return {
      cause: 'summarizer-failed',
      message: `the summarizer failed the ${what} (${outcome.reason === 'rejected' ? 'refused, not retried' : 'every attempt'}): ${outcome.message}`,
    };
  if (outcome.text.trim() === '')
    return { cause: 'empty-summary', message: `the summarizer returned an empty summary for the ${what}` };
  return undefined;
}

/** What a request that failed for its size (refused as over the window, or past its deadline) teaches; undefined for any other outcome. */
function sizeFailure(outcome: SummarizeOutcome): RequestFailure | undefined {
  if (outcome.kind === 'overflow')
    return { kind: 'overflow', contextWindow: outcome.contextWindow, promptTokens: outcome.promptTokens };
  return outcome.kind === 'failed' && outcome.reason === 'deadline' ? { kind: 'deadline' } : undefined;
}

/** Where a fold stands: what the summary so far covers, and what is left. */
export class Fold {
  /** The summary so far (of the pieces already summarized); undefined before the first. */
  carried: string | undefined;
  /** How many messages of the middle the summary so far covers. */
  before = 0;
  /** How many pieces are summarized. */
  done = 0;
  /** The messages of the middle not yet summarized. */
  rest: ChatMessage[];
  /** How many times what is left was cut again after a refusal or a deadline. */
  recuts = 0;

  constructor(
    readonly pass: Pass,
    seen: ChatMessage[],
    readonly calibration: SummarizerCalibration,
    /** The room the summary has in the compacted conversation, in the counter's units. */
    private readonly summaryRoom: number,
  ) {
    this.rest = seen;
  }

  /** docs/design.md#summary-length The max tokens of the next request, as the calibration stands; undefined with `summaryTokenCap` off. */
  maxTokens(): number | undefined {
    if (!this.pass.options.summaryTokenCap) return undefined;
    return summaryMaxTokens(this.summaryRoom, this.pass.options.summarizerContextWindow, this.calibration);
  }

  /** The counter's estimate of a request (the unit the calibration's ratio converts). */
  estimate(request: SummarizeRequest): number {
    return this.pass.aim.counter.count(summarizerMessages(request));
  }

  /** A summary came back for `request`: its billed prompt tokens calibrate the next cuts. */
  billed(request: SummarizeRequest, outcome: SummarizeOutcome): void {
    // Counted only when there is a bill to compare with (the extractive summarizer sends none).
    const billed = outcome.kind === 'summary' ? outcome.usage?.promptTokens : undefined;
    if (billed !== undefined) calibrate(this.calibration, this.estimate(request), billed);
  }

  /**
   * A request failed for its size (refused as over the window, or past its deadline): learns from
   * it and says whether the fold may cut what is left again ({@link MAX_RECUTS}); `rest` is then
   * what the failed request held of the middle.
   */
  recut(request: SummarizeRequest, outcome: SummarizeOutcome, rest: ChatMessage[]): boolean {
    const failure = sizeFailure(outcome);
    if (failure === undefined || this.recuts >= MAX_RECUTS) return false;
    learnFromFailure(this.calibration, this.pass.options.summarizerContextWindow, this.estimate(request), failure);
    this.recuts += 1;
    this.rest = rest;
    return true;
  }

  /** Why a failed request ends the fold, for the result's `fallbackReason`. */
  endOf(outcome: SummarizeOutcome, what: string): FoldEnd {
    const said = outcome.kind === 'failed' || outcome.kind === 'overflow' ? `: ${outcome.message}` : '';
    if (sizeFailure(outcome) !== undefined && this.recuts >= MAX_RECUTS)
      return {
        cause: 'over-summarizer-window',
        message: `${MAX_RECUTS + 1} requests failed for their size, each cut smaller than the one before${said}`,
      };
    return failureOf(outcome, what) ?? { cause: 'summarizer-failed', message: `the ${what} failed${said}` };
  }
}

/**
 * The pieces of what is left of the middle before the summary's own request, each sent with the
 * summary so far; returns that request's input. A bill that changes the planned window cuts what is
 * left again for it; a piece refused for its size or past its deadline teaches the calibration and
 * what is left is cut again smaller (the finished pieces stay summarized); another failure, or more
 * than {@link MAX_RECUTS} re-cuts after failures, ends the fold.
 */
export function* foldPieces(fold: Fold): Generator<SummarizeStep, SummaryInput | FoldEnd, SummarizeOutcome> {
  const { text, aim, options } = fold.pass;
  const instruction = summaryInstruction(undefined, text);
  for (;;) {
    const window = plannedWindow(options.summarizerContextWindow, fold.calibration);
    if (window === undefined) return { middle: fold.rest, piece: undefined };
    const after = fold.carried === undefined ? undefined : { before: fold.before };
    const cut = cutPieces(fold.rest, instruction, text.summaryInstructions, aim.counter, window, after);
    if (cut === 'unfit')
      return {
        cause: 'over-summarizer-window',
        message: `the instruction alone does not fit the summarizer's window (${window} tokens as counted)`,
      };
    if (cut === undefined) return { middle: fold.rest, piece: undefined };
    const of = fold.done + cut.pieces.length;
    let recut = false;
    for (let index = 0; index < cut.pieces.length - 1 && !recut; index += 1) {
      const middle = foldedMiddle(cut, index, fold.carried, text.summaryInstructions, aim.counter);
      if (middle === undefined)
        return { cause: 'over-summarizer-window', message: 'the summary so far leaves no room for the next piece' };
      const step = summarizeStepOf('piece', cut.instruction, middle, text, fold.maxTokens(), {
        index: fold.done + 1,
        of,
      });
      const outcome = yield step;
      if (outcome.kind === 'summary' && outcome.text.trim() !== '') {
        fold.billed(step.request, outcome);
        fold.carried = outcome.text.trim();
        fold.before += cut.pieces[index]?.length ?? 0;
        fold.done += 1;
        // What the bill taught plans the pieces not sent yet: the first bill replaces the
        // uncalibrated ratio the cut was made with (docs/design.md#summarizer-overflow).
        if (plannedWindow(options.summarizerContextWindow, fold.calibration) !== window) {
          fold.rest = cut.pieces.slice(index + 1).flat();
          recut = true;
        }
        continue;
      }
      if (!fold.recut(step.request, outcome, cut.pieces.slice(index).flat()))
        return fold.endOf(outcome, `piece ${fold.done + 1} of ${of}`);
      recut = true;
    }
    if (recut) continue;
    const last = cut.pieces.length - 1;
    const middle = foldedMiddle(cut, last, fold.carried, text.summaryInstructions, aim.counter);
    if (middle === undefined)
      return { cause: 'over-summarizer-window', message: 'the summary so far leaves no room for the last piece' };
    fold.rest = cut.pieces[last] ?? [];
    return { middle, piece: { index: fold.done + 1, of } };
  }
}
