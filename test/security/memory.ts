// Node (tests): how much memory a piece of work took, for the adversarial suite's bounds. Buffers
// (zlib's output, decrypted bodies, payload data) live outside V8's heap, in `arrayBuffers`; a
// refused decode leaves what it allocated as garbage until the next collection, so the growth of
// `arrayBuffers` across the work is at least what it held at its peak once the work returns
// (a collection during the work can only make it smaller). RSS is reported beside it.
export interface MemoryUse {
  /** Growth of `process.memoryUsage().arrayBuffers` across the work, in bytes. */
  arrayBuffers: number;
  /** Growth of the resident set across the work, in bytes. */
  rss: number;
}

/** Runs `work` and measures the memory it took; resolves with its outcome (value or error) and the use. */
export async function measured<T>(
  work: () => Promise<T> | T,
): Promise<{ outcome: { ok: true; value: T } | { ok: false; error: unknown }; use: MemoryUse }> {
  const before = process.memoryUsage();
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await work() };
  } catch (error) {
    outcome = { ok: false, error };
  }
  const after = process.memoryUsage();
  return { outcome, use: { arrayBuffers: after.arrayBuffers - before.arrayBuffers, rss: after.rss - before.rss } };
}

export const MiB = 1024 * 1024;
