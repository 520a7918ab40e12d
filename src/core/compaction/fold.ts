// Sandbox-safe: the steps the engine asks its driver for, and the fold that keeps them within the summarizer's window.
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
import { cutPieces, foldedMiddle, foldInstruction, requestFits } from './pieces.js';
import { baseInstruction, requestChars, requestFor, summarizerMessages, type InstructionText } from './transcript.js';
import type { ChatMessage, FallbackReason, SummarizeRequest, Usage } from '../types.js';

export interface SummarizeStep {
  kind: 'summarize';
  /** `piece` for each request but the last of a middle in pieces; at most one retry (`tighter` or `coverage`). */
  purpose: 'summary' | 'tighter' | 'coverage' | 'piece';
  /** Only for a middle summarized in pieces: which piece this request folds in (1-based), of how many. */
  piece?: { index: number; of: number };
  /** In a workflow, the `summarize` activity's input (docs/design.md#summarizer-request). */
  request: SummarizeRequest;
  /** For UI metadata: how many messages the transcript holds and its length in characters. */
  transcript: { messages: number; characters: number };
}

/** `failed`: after every attempt (a rejection or a deadline: not retried); `overflow`: refused as over the window. */
export type SummarizeOutcome =
  | { kind: 'summary'; text: string; usage?: Usage }
  | { kind: 'failed'; reason: 'rejected' | 'exhausted' | 'deadline'; message: string }
  | { kind: 'overflow'; message: string; contextWindow?: number; promptTokens?: number }
  | { kind: 'cancelled' };

export function summarizeStepOf(
  purpose: SummarizeStep['purpose'],
  instruction: string,
  seen: ChatMessage[],
  text: InstructionText,
  maxTokens: number | undefined,
  piece?: SummarizeStep['piece'],
): SummarizeStep {
  // Counted, not rendered: only a summarizer that sends text renders the request.
  const built = requestFor(instruction, seen, text.summaryInstructions, text.task);
  const request = maxTokens === undefined ? built : { ...built, maxTokens };
  const transcript = { messages: seen.length, characters: requestChars(instruction, seen) };
  return { kind: 'summarize', purpose, request, transcript, ...(piece === undefined ? {} : { piece }) };
}

export interface SummaryInput {
  middle: ChatMessage[];
  piece: SummarizeStep['piece'];
}

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

function sizeFailure(outcome: SummarizeOutcome): RequestFailure | undefined {
  if (outcome.kind === 'overflow') return outcome;
  return outcome.kind === 'failed' && outcome.reason === 'deadline' ? { kind: 'deadline' } : undefined;
}

export class Fold {
  carried: string | undefined;
  before = 0;
  done = 0;
  rest: ChatMessage[];
  recuts = 0;

  constructor(
    readonly pass: Pass,
    seen: ChatMessage[],
    readonly calibration: SummarizerCalibration,
    private readonly summaryRoom: number,
  ) {
    this.rest = seen;
  }

  /** docs/design.md#summary-length Undefined with `summaryTokenCap` off. */
  maxTokens(): number | undefined {
    if (!this.pass.options.summaryTokenCap) return undefined;
    return summaryMaxTokens(this.summaryRoom, this.pass.options.summarizerContextWindow, this.calibration);
  }

  /** A step of the summary's own request (its instruction folded when the middle came in pieces). */
  summaryStep(
    input: SummaryInput,
    purpose: SummarizeStep['purpose'],
    instruction: string,
    text: InstructionText,
  ): SummarizeStep {
    const full = input.piece === undefined ? instruction : foldInstruction(instruction);
    return summarizeStepOf(purpose, full, input.middle, text, this.maxTokens(), input.piece);
  }

  /** Whether a request fits the summarizer's window as planned now. */
  fits(request: SummarizeRequest): boolean {
    const window = plannedWindow(this.pass.options.summarizerContextWindow, this.calibration);
    return window === undefined || requestFits(request, window, this.pass.aim.counter);
  }

  estimate(request: SummarizeRequest): number {
    return this.pass.aim.counter.count(summarizerMessages(request));
  }

  billed(request: SummarizeRequest, outcome: SummarizeOutcome): void {
    // Only with a bill to compare with (the extractive summarizer sends none).
    const billed = outcome.kind === 'summary' ? outcome.usage?.promptTokens : undefined;
    if (billed !== undefined) calibrate(this.calibration, this.estimate(request), billed);
  }

  /** A request failed for its size: learns from it and says whether `rest` may be cut again ({@link MAX_RECUTS}). */
  recut(request: SummarizeRequest, outcome: SummarizeOutcome, rest: ChatMessage[]): boolean {
    const failure = sizeFailure(outcome);
    if (failure === undefined || this.recuts >= MAX_RECUTS) return false;
    learnFromFailure(this.calibration, this.pass.options.summarizerContextWindow, this.estimate(request), failure);
    this.recuts += 1;
    this.rest = rest;
    return true;
  }

  endOf(outcome: SummarizeOutcome, what: string): FallbackReason {
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
 * The pieces before the summary's own request, each with the summary so far; returns that request's input. A bill
 * that changes the planned window, or a piece failed for its size, cuts the rest again; other failures end the fold.
 */
export function* foldPieces(fold: Fold): Generator<SummarizeStep, SummaryInput | FallbackReason, SummarizeOutcome> {
  const { text, aim, options } = fold.pass;
  const instruction = baseInstruction(text);
  for (;;) {
    const window = plannedWindow(options.summarizerContextWindow, fold.calibration);
    if (window === undefined) return { middle: fold.rest, piece: undefined };
    const after = fold.carried === undefined ? undefined : { before: fold.before };
    const cut = cutPieces(fold.rest, instruction, aim.counter, window, after);
    if (cut === 'unfit')
      return {
        cause: 'over-summarizer-window',
        message: `the instruction alone does not fit the summarizer's window (${window} tokens as counted)`,
      };
    if (cut === undefined) return { middle: fold.rest, piece: undefined };
    const of = fold.done + cut.pieces.length;
    const last = cut.pieces.length - 1;
    for (let index = 0; index <= last; index += 1) {
      const middle = foldedMiddle(cut, index, fold.carried);
      const which = index === last ? 'last' : 'next';
      if (middle === undefined)
        return { cause: 'over-summarizer-window', message: `the summary so far leaves no room for the ${which} piece` };
      const piece = { index: fold.done + 1, of };
      if (index === last) {
        fold.rest = cut.pieces[last] ?? [];
        return { middle, piece };
      }
      const step = summarizeStepOf('piece', cut.instruction, middle, text, fold.maxTokens(), piece);
      const outcome = yield step;
      if (outcome.kind === 'summary' && outcome.text.trim() !== '') {
        fold.billed(step.request, outcome);
        fold.carried = outcome.text.trim();
        fold.before += cut.pieces[index]?.length ?? 0;
        fold.done += 1;
        // The first bill replaces the uncalibrated ratio the cut was made with: the rest is cut again.
        if (plannedWindow(options.summarizerContextWindow, fold.calibration) === window) continue;
        fold.rest = cut.pieces.slice(index + 1).flat();
      } else if (!fold.recut(step.request, outcome, cut.pieces.slice(index).flat()))
        return fold.endOf(outcome, `piece ${fold.done + 1} of ${of}`);
      break;
    }
  }
}
