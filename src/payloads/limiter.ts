// Node only, like the rest of src/payloads (it uses no Node API itself): bounded concurrency for
// backend calls, the codec server's requests and payloads, and gc's phases.

/** Backend operations in flight at once per driver (and per phase of gc). */
export const BACKEND_CALLS_AT_ONCE = 16;

/** Runs at most `limit` operations at once; waiting callers hold nothing (no deadlock across recursion). */
export class Limiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(private readonly limit: number) {}

  /** Whether a new operation would wait behind `queue` or more waiting ones. */
  full(queue: number): boolean {
    return this.active >= this.limit && this.waiting.length >= queue;
  }

  async run<T>(operation: () => Promise<T>): Promise<T> {
    // A finished operation hands its turn to the next waiting one, keeping `active` as it is.
    if (this.active < this.limit) this.active += 1;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await operation();
    } finally {
      const next = this.waiting.shift();
      if (next === undefined) this.active -= 1;
      else next();
    }
  }
}

/** Runs `work` over `items` (which `work` may extend) with at most `concurrency` at once; the first error stops it. */
export async function drain<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined) {
      const item = items.pop();
      if (item === undefined) return;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  // Workers that found the list empty while others still add to it would end early: run rounds until it stays empty.
  while (items.length > 0 && failure === undefined) await Promise.all(Array.from({ length: concurrency }, worker));
  if (failure !== undefined) throw failure.error;
}
