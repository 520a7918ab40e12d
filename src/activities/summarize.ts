// Node only (activities): the `summarize` activity — the one slow, flaky step of a compaction.
import { Context } from '@temporalio/activity';
import { validateMessages } from '../core/schema.js';
import type { SummarizeRequest, Summarizer, Usage } from '../core/types.js';
import { failOnInvalidInput } from '../workflows/failures.js';
import { emptySummaryFailure, toSummarizerFailure } from './to-failure.js';

/** Input of the `summarize` activity: the capped transcript the engine built (never the raw conversation). */
export interface SummarizeActivityInput {
  request: SummarizeRequest;
}

/** Output of the `summarize` activity: one string (plus the billed usage when the backend reports it). */
export interface SummarizeActivityOutput {
  text: string;
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
}

/** Longest pause between heartbeats when the activity has no heartbeat timeout (cancellation still travels on them). */
const MAX_HEARTBEAT_INTERVAL_MS = 5000;
const MIN_HEARTBEAT_INTERVAL_MS = 50;

function heartbeatInterval(heartbeatTimeoutMs: number | undefined, configured: number | undefined): number {
  if (configured !== undefined) return Math.max(MIN_HEARTBEAT_INTERVAL_MS, configured);
  if (heartbeatTimeoutMs === undefined || heartbeatTimeoutMs <= 0) return MAX_HEARTBEAT_INTERVAL_MS;
  // Well under the timeout: the SDK throttles what it sends to the server anyway.
  return Math.min(MAX_HEARTBEAT_INTERVAL_MS, Math.max(MIN_HEARTBEAT_INTERVAL_MS, Math.floor(heartbeatTimeoutMs / 4)));
}

/**
 * Creates the `summarize` activity. It sends one request through the summarizer with the
 * activity's cancellation signal, heartbeats while it waits, and maps failures to
 * `ApplicationFailure`s (see `toSummarizerFailure`); an empty or blank summary is
 * `Summarizer.Empty`. Cancelled, it rethrows the activity's cancellation reason — never the
 * backend's abort error, which the worker would report as a failure.
 */
export function createSummarizeActivity({ summarizer, heartbeatIntervalMs }: SummarizeActivityDeps) {
  return async function summarize({ request }: SummarizeActivityInput): Promise<SummarizeActivityOutput> {
    const context = Context.current();
    const signal = context.cancellationSignal;
    failOnInvalidInput(() => validateMessages(request?.messages, 'request.messages'));

    context.heartbeat();
    const timer = setInterval(() => context.heartbeat(), heartbeatInterval(context.info.heartbeatTimeoutMs, heartbeatIntervalMs));
    try {
      // Race the cancellation too: a backend that ignores its signal must not keep the activity alive.
      const response = await Promise.race([summarizer.summarize(request, { signal }), context.cancelled]);
      if (typeof response?.text !== 'string' || response.text.trim() === '') throw emptySummaryFailure();
      return response.usage === undefined ? { text: response.text } : { text: response.text, usage: response.usage };
    } catch (error) {
      if (signal.aborted) throw cancellationReason(signal);
      throw toSummarizerFailure(error);
    } finally {
      clearInterval(timer);
    }
  };
}

/** The activity's own cancellation (a `CancelledFailure`), which the worker reports as cancelled. */
function cancellationReason(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason;
  return reason;
}
