// Node only: an abort signal of the chunk store's own that follows the caller's.
import { setMaxListeners } from 'node:events';

/**
 * Runs `work` on a signal of our own that follows the caller's. One store or retrieve has many backend calls in
 * flight on it, and the S3 client adds a listener per request: on the caller's signal that would
 * trip Node's listener-leak warning; on ours the limit is lifted, and the caller's gets one listener.
 */
export async function followSignal<T>(
  parent: AbortSignal | undefined,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  if (parent?.aborted === true) controller.abort(parent.reason);
  const onAbort = (): void => controller.abort(parent?.reason);
  parent?.addEventListener('abort', onAbort, { once: true });
  try {
    return await work(controller.signal);
  } finally {
    parent?.removeEventListener('abort', onAbort);
  }
}
