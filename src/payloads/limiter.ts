// Node only, like the rest of src/payloads (it uses no Node API itself): a concurrency limiter for
// backend calls and the codec server's requests.

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
