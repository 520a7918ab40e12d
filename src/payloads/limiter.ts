// Node only, like the rest of src/payloads (it uses no Node API itself): a concurrency limiter for backend calls.

/** Runs at most `limit` operations at once; waiting callers hold nothing (no deadlock across recursion). */
export class Limiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(private readonly limit: number) {}

  async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active += 1;
    try {
      return await operation();
    } finally {
      this.active -= 1;
      this.waiting.shift()?.();
    }
  }
}
