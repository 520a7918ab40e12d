// Node only: an abort signal of the chunk store's own that follows the caller's.
import { setMaxListeners } from 'node:events';

/**
 * A signal of our own that follows the caller's. One store or retrieve has many backend calls in
 * flight on it, and the S3 client adds a listener per request: on the caller's signal that would
 * trip Node's listener-leak warning; on ours the limit is lifted, and the caller's gets one listener.
 */
export function followSignal(parent: AbortSignal | undefined): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  if (parent === undefined) return { signal: controller.signal, release: () => undefined };
  if (parent.aborted) controller.abort(parent.reason);
  const onAbort = (): void => controller.abort(parent.reason);
  parent.addEventListener('abort', onAbort, { once: true });
  return { signal: controller.signal, release: () => parent.removeEventListener('abort', onAbort) };
}
