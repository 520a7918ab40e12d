// Node only (activities): the `summarize` activity — the one slow, flaky step of a compaction.
import { Context } from '@temporalio/activity';
import { validateMessages } from '../core/schema.js';
import { requestFor } from '../core/compaction/transcript.js';
import { InvalidInputError } from '../core/errors.js';
import type { ChatMessage, SummarizeRequest, Summarizer, Usage } from '../core/types.js';
import { failOnInvalidInput } from '../shared/failures.js';
import { whileHeartbeating } from './heartbeats.js';
import { emptySummaryFailure, toSummarizerFailure } from './to-failure.js';

/**
 * Input of the `summarize` activity: never the raw conversation, always the middle as the engine
 * cut it. Workflows send `{ instruction, middle }` (the activity renders the transcript); those
 * recorded before `temporal-compactor:summarize-middle-v1` sent the rendered `{ request }`, which
 * is still read.
 */
export interface SummarizeActivityInput {
  /** The rendered request (inputs written before the patch). */
  request?: SummarizeRequest;
  /** The instruction: the request's system message. */
  instruction?: string;
  /** The middle, cut by `capMiddle`: the request's transcript is rendered from it. */
  middle?: ChatMessage[];
  /**
   * The caller's `summaryInstructions` (already in `instruction`), for the request's
   * `instructions`. Sent only when set, so inputs of runs without them are as before.
   */
  instructions?: string;
}

/** Output of the `summarize` activity: one string (plus the billed usage when the backend reports it). */
export interface SummarizeActivityOutput {
  text: string;
  usage?: Usage;
  /** The activity attempt that wrote it, only when Temporal retried (absent: the first), for the compaction's span. */
  attempt?: number;
}

export interface SummarizeActivityDeps {
  summarizer: Summarizer;
  /**
   * How often to heartbeat while the request is in flight. Heartbeats carry the cancellation to
   * the activity and let Temporal notice a dead worker after `heartbeatTimeout`.
   * @default a quarter of the activity's heartbeatTimeout, at most 5 s
   */
  heartbeatIntervalMs?: number;
}

/**
 * Creates the `summarize` activity. It sends one request through the summarizer with the
 * activity's cancellation signal, heartbeats while it waits, and maps failures to
 * `ApplicationFailure`s (see `toSummarizerFailure`); an empty or blank summary is
 * `Summarizer.Empty`. Cancelled, it rethrows the activity's cancellation reason — never the
 * backend's abort error, which the worker would report as a failure.
 */
export function createSummarizeActivity({ summarizer, heartbeatIntervalMs }: SummarizeActivityDeps) {
  return async function summarize(input: SummarizeActivityInput): Promise<SummarizeActivityOutput> {
    const request = failOnInvalidInput(() => requestOf(input));
    // A retried attempt says so in its output or its failure's details, so the workflow's
    // compaction span can count attempts; the first says nothing (output and history as before).
    const { attempt } = Context.current().info;
    const retried = attempt > 1 ? { attempt } : {};
    return whileHeartbeating(
      async (signal) => {
        const response = await summarizer.summarize(request, { signal });
        if (typeof response?.text !== 'string' || response.text.trim() === '') throw emptySummaryFailure(retried);
        return { text: response.text, ...(response.usage === undefined ? {} : { usage: response.usage }), ...retried };
      },
      (error) => toSummarizerFailure(error, retried),
      heartbeatIntervalMs,
    );
  };
}

/** The summarizer's request from either input shape; throws `InvalidInputError` naming the field. */
function requestOf(input: SummarizeActivityInput): SummarizeRequest {
  if (typeof input !== 'object' || input === null)
    throw new InvalidInputError('input', 'must be an object with instruction and middle (or request)');
  const { request, instruction, middle, instructions } = input;
  if (request !== undefined) {
    if (instruction !== undefined || middle !== undefined || instructions !== undefined)
      throw new InvalidInputError('input', 'has request and instruction/middle: send one shape, not both');
    validateMessages(request?.messages, 'request.messages');
    return request;
  }
  if (typeof instruction !== 'string') throw new InvalidInputError('instruction', 'must be a string');
  if (instructions !== undefined && typeof instructions !== 'string')
    throw new InvalidInputError('instructions', 'must be a string');
  return requestFor(instruction, validateMessages(middle, 'middle'), instructions);
}
