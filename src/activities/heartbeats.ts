// Node only (activities): the wait every slow activity shares: heartbeats while a request is in
// flight, and the activity's own cancellation rethrown, never the backend's abort error.
import { Context } from '@temporalio/activity';
import { workerSecrets } from '../config.js';
import { redactFailure } from '../redact.js';

/** Longest pause between heartbeats, also without a heartbeat timeout (cancellation still travels on them). */
const MAX_HEARTBEAT_INTERVAL_MS = 5000;
const MIN_HEARTBEAT_INTERVAL_MS = 50;

function heartbeatInterval(heartbeatTimeoutMs: number | undefined): number {
  if (heartbeatTimeoutMs === undefined || heartbeatTimeoutMs <= 0) return MAX_HEARTBEAT_INTERVAL_MS;
  // Well under the timeout: the SDK throttles what it sends to the server anyway.
  return Math.min(MAX_HEARTBEAT_INTERVAL_MS, Math.max(MIN_HEARTBEAT_INTERVAL_MS, Math.floor(heartbeatTimeoutMs / 4)));
}

/**
 * Runs `work` with the activity's cancellation signal, heartbeating until it settles. A failure goes
 * through `toFailure`, less the worker's API keys (and `secrets`); a cancellation rethrows the
 * activity's own. Every heartbeat carries `details()` (one without it would clear the progress).
 * The first heartbeat is one interval in: each is a request the server writes, and work that ends
 * sooner (most tool calls) needs none, since the heartbeat timeout counts from the attempt's start.
 */
export async function whileHeartbeating<T>(
  work: (signal: AbortSignal) => Promise<T>,
  toFailure: (error: unknown) => unknown = (error) => error,
  secrets: ReadonlyArray<string | null | undefined> = [],
  details?: () => unknown,
): Promise<T> {
  const context = Context.current();
  const signal = context.cancellationSignal;
  const timer = setInterval(() => context.heartbeat(details?.()), heartbeatInterval(context.info.heartbeatTimeoutMs));
  try {
    return await Promise.race([work(signal), context.cancelled]);
  } catch (error) {
    // The activity's own cancellation (a `CancelledFailure`), which the worker reports as cancelled.
    if (signal.aborted) throw signal.reason;
    throw redactFailure(toFailure(error), workerSecrets(secrets));
  } finally {
    clearInterval(timer);
  }
}

/** `activity`, heartbeating while it runs (a killed worker's attempt is retried after the heartbeat timeout). */
export function heartbeating<A extends unknown[], R>(activity: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  const wrapped = (...args: A): Promise<R> => whileHeartbeating(() => activity(...args));
  // The worker registers activities by their function name: keep it.
  Object.defineProperty(wrapped, 'name', { value: activity.name });
  return wrapped;
}
