// Node only (activities): the `summarize` activity — the one slow, flaky step of a compaction.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { validateMessages } from '../core/schema.js';
import { requestFor } from '../core/compaction/transcript.js';
import { cutPieces, foldedMiddle, requestFits, type Pieces } from '../core/compaction/pieces.js';
import { defaultCounter } from '../core/counting/tokens.js';
import { FailureType, InvalidInputError } from '../core/errors.js';
import type { SummarizeRequest, Summarizer, TokenCounter, Usage } from '../core/types.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import { failOnInvalidInput } from '../shared/failures.js';
import { whileHeartbeating } from './heartbeats.js';
import { emptySummaryFailure, toSummarizerFailure } from './to-failure.js';

/** Output of the `summarize` activity: one string (plus the billed usage when the backend reports it). */
export interface SummarizeActivityOutput {
  text: string;
  usage?: Usage;
  /** The activity attempt that wrote it, only when Temporal retried (absent: the first), for the compaction's span. */
  attempt?: number;
  /**
   * Only when the worker's `summarizerContextWindow` made the activity fold the middle in more than
   * one request (docs/design.md#summarizer-window): how many.
   */
  pieces?: number;
}

/**
 * The heartbeat details of a fold in the activity: the pieces finished and the summary so far, so a
 * retried attempt resumes after them. `window` and `of` say which cut they belong to: an attempt on
 * a worker with another window cuts other pieces and starts over.
 */
export interface SummarizeFoldProgress {
  window: number;
  of: number;
  done: number;
  carried: string;
  usage?: Usage;
}

export interface SummarizeActivityDeps {
  summarizer: Summarizer;
  /**
   * How often to heartbeat while the request is in flight. Heartbeats carry the cancellation to
   * the activity and let Temporal notice a dead worker after `heartbeatTimeout`.
   * @default a quarter of the activity's heartbeatTimeout, at most 5 s
   */
  heartbeatIntervalMs?: number;
  /**
   * The summarizer's own context window in tokens (COMPACTOR_SUMMARIZER_CONTEXT_WINDOW on a worker):
   * no request the activity sends is over its input room (`window × 0.75`), whatever the workflow
   * sent. A middle whose one request would not fit is summarized in pieces, as a fold, within this
   * one activity (docs/design.md#summarizer-window). Counted with `counter`.
   * @default unset: one request, as sent
   */
  summarizerContextWindow?: number;
  /** What counts a request against `summarizerContextWindow`. @default the engine's default counter (characters / 4) */
  counter?: TokenCounter;
}

/**
 * Creates the `summarize` activity. It sends one request through the summarizer with the
 * activity's cancellation signal, heartbeats while it waits, and maps failures to
 * `ApplicationFailure`s (see `toSummarizerFailure`); an empty or blank summary is
 * `Summarizer.Empty`. Cancelled, it rethrows the activity's cancellation reason — never the
 * backend's abort error, which the worker would report as a failure.
 *
 * With `summarizerContextWindow`, a middle too large for it is folded here, piece by piece (the
 * engine's own cut: `cutPieces`, `foldedMiddle`); each finished piece's summary is heartbeated, so a
 * retried attempt resumes after it, and a cancellation stops between pieces.
 */
export function createSummarizeActivity({
  summarizer,
  heartbeatIntervalMs,
  summarizerContextWindow: window,
  counter = defaultCounter,
}: SummarizeActivityDeps) {
  // The input is the summarizer's request as the engine built it (docs/design.md#summarizer-request).
  return async function summarize(input: SummarizeRequest): Promise<SummarizeActivityOutput> {
    const request = failOnInvalidInput(() => checkedRequest(input));
    // A retried attempt says so in its output or its failure's details, so the workflow's
    // compaction span can count attempts; the first says nothing.
    const context = Context.current();
    const { attempt } = context.info;
    const retried = attempt > 1 ? { attempt } : {};
    const cut =
      window === undefined || requestFits(request, window, counter) ? undefined : piecesOf(request, window, counter);
    if (cut === 'unfit')
      throw ApplicationFailure.create({
        type: FailureType.Summarizer.Rejected,
        message: `summarize: the instruction alone does not fit the summarizer's window of ${window} tokens (summarizerContextWindow)`,
        nonRetryable: true,
        details: [{ ...retried }],
      });
    const ask = async (asked: SummarizeRequest, signal: AbortSignal): Promise<{ text: string; usage?: Usage }> => {
      const response = await summarizer.summarize(asked, { signal });
      if (typeof response?.text !== 'string' || response.text.trim() === '') throw emptySummaryFailure(retried);
      return { text: response.text, ...(response.usage === undefined ? {} : { usage: response.usage }) };
    };
    if (cut === undefined || window === undefined)
      return whileHeartbeating(
        async (signal) => ({ ...(await ask(request, signal)), ...retried }),
        (error) => toSummarizerFailure(error, retried),
        heartbeatIntervalMs,
      );
    // docs/design.md#summarizer-window The fold, resumed after the pieces an earlier attempt finished.
    const of = cut.pieces.pieces.length;
    let progress = resumedProgress(context.info.heartbeatDetails, window, of);
    return whileHeartbeating(
      async (signal) => {
        for (let index = progress?.done ?? 0; index < of; index += 1) {
          if (signal.aborted) break;
          const middle = foldedMiddle(cut.pieces, index, progress?.carried, cut.instructions, counter);
          if (middle === undefined)
            throw ApplicationFailure.create({
              type: FailureType.Summarizer.Rejected,
              message: `summarize: piece ${index + 1} of ${of} does not fit the summarizer's window of ${window} tokens (summarizerContextWindow)`,
              nonRetryable: true,
              details: [{ ...retried }],
            });
          const { text, usage } = await ask(requestFor(cut.pieces.instruction, middle, cut.instructions), signal);
          const total = addUsage(progress?.usage, usage);
          if (index === of - 1)
            return {
              text,
              ...(total === undefined ? {} : { usage: total }),
              ...retried,
              ...(of > 1 ? { pieces: of } : {}),
            };
          progress = {
            window,
            of,
            done: index + 1,
            carried: text.trim(),
            ...(total === undefined ? {} : { usage: total }),
          };
          context.heartbeat(progress);
        }
        // Cancelled between pieces: whileHeartbeating rethrows the activity's cancellation.
        throw new Error('summarize: cancelled between pieces');
      },
      (error) => toSummarizerFailure(error, retried),
      heartbeatIntervalMs,
      [],
      () => progress,
    );
  };
}

/** The request's middle cut into pieces for `window`. */
function piecesOf(
  request: SummarizeRequest,
  window: number,
  counter: TokenCounter,
): { pieces: Pieces; instructions: string | undefined } | 'unfit' | undefined {
  const { instruction, middle, instructions } = request;
  const pieces = cutPieces(middle, instruction, instructions, counter, window);
  if (pieces === 'unfit' || pieces === undefined) return pieces;
  return { pieces, instructions };
}

/** The fold's progress from a retried attempt's heartbeat details, when they belong to the same cut. */
function resumedProgress(details: unknown, window: number, of: number): SummarizeFoldProgress | undefined {
  if (typeof details !== 'object' || details === null) return undefined;
  const done: unknown = Reflect.get(details, 'done');
  const carried: unknown = Reflect.get(details, 'carried');
  const usage: unknown = Reflect.get(details, 'usage');
  if (Reflect.get(details, 'window') !== window || Reflect.get(details, 'of') !== of) return undefined;
  if (typeof done !== 'number' || !Number.isSafeInteger(done) || done < 1 || done >= of) return undefined;
  if (typeof carried !== 'string' || carried === '') return undefined;
  return { window, of, done, carried, ...(isUsage(usage) ? { usage } : {}) };
}

function isUsage(value: unknown): value is Usage {
  if (typeof value !== 'object' || value === null) return false;
  return ['promptTokens', 'completionTokens', 'totalTokens'].every((key) => {
    const field: unknown = Reflect.get(value, key);
    return field === undefined || typeof field === 'number';
  });
}

/** The usage of the pieces so far and of one more; undefined when neither reported any. */
function addUsage(sum: Usage | undefined, more: Usage | undefined): Usage | undefined {
  if (sum === undefined) return more;
  if (more === undefined) return sum;
  const add = (a: number | undefined, b: number | undefined): number | undefined =>
    a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0);
  const fields = {
    promptTokens: add(sum.promptTokens, more.promptTokens),
    completionTokens: add(sum.completionTokens, more.completionTokens),
    totalTokens: add(sum.totalTokens, more.totalTokens),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

/** The input, checked as the request it must be; throws `InvalidInputError` naming the field. */
function checkedRequest(input: SummarizeRequest): SummarizeRequest {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new InvalidInputError('input', 'must be an object { instruction, middle, instructions? }');
  assertKnownKeys(input, REQUEST_KEYS, 'input', 'field');
  const { instruction, middle, instructions } = input;
  if (typeof instruction !== 'string') throw new InvalidInputError('instruction', 'must be a string');
  if (instructions !== undefined && typeof instructions !== 'string')
    throw new InvalidInputError('instructions', 'must be a string');
  try {
    validateMessages(middle, 'middle');
  } catch (error) {
    // The messages are named as what they are here: `middle[3].tool_call_id`.
    if (error instanceof InvalidInputError)
      throw new InvalidInputError(error.field.replace(/^messages(?=\[)/, 'middle'), error.reason, error.index);
    throw error;
  }
  return input;
}

const REQUEST_KEYS = keysOf<SummarizeRequest>({ instruction: true, middle: true, instructions: true });
