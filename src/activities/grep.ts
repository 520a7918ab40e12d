// Node only (activities): runs `grep`'s search in a worker thread with a deadline and a memory
// limit, so that no pattern and no file can hold the worker's event loop (docs/agent-runs.md#tool-bounds).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { GrepThreadInput, GrepThreadMessage, GrepThreadStop } from './grep-thread.js';

export interface GrepOutcome {
  matches: string[];
  /**
   * `deadline`: the search ran out of time; `memory`: over its memory limit; `results`/`files`: at
   * a count limit; `output`: the matched lines reached the characters a result may hold.
   */
  stoppedAt: GrepThreadStop | 'deadline' | 'memory' | undefined;
}

/**
 * The thread's script: the built file next to this one, else the TypeScript file through tsx's
 * CommonJS loader (tests), which compiles in the thread itself: its ESM loader would start a second
 * thread for its hooks, and cost each search twice the CPU to start.
 */
function threadScript(): { script: URL | string; eval: boolean } {
  const built = new URL('./grep-thread.js', import.meta.url);
  if (existsSync(fileURLToPath(built))) return { script: built, eval: false };
  const source = fileURLToPath(new URL('./grep-thread.ts', import.meta.url));
  const load = `require('tsx/cjs/api').require(${JSON.stringify(source)}, ${JSON.stringify(source)});`;
  return { script: load, eval: true };
}

/**
 * At most `limit` searches run at a time; the others wait in order (an aborted one leaves the queue).
 * Each is a thread that may burn a core until its deadline: 64 catastrophic patterns must not be 64 threads.
 */
export class SearchSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`grepThreads: expected a positive integer, got ${limit}`);
  }

  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /** The slot's release, once a slot is free; rejects if `signal` aborts first. */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.running < this.limit) {
      this.running += 1;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.waiting.indexOf(start);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(signal?.reason instanceof Error ? signal.reason : new Error('grep cancelled'));
      };
      const start = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiting.push(start);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next !== undefined) next();
      else this.running -= 1;
    };
  }
}

/** How long a thread being terminated may hold its slot: one that will not stop must not hold every later search back. */
const EXIT_GRACE_MS = 5_000;

/**
 * Searches in a worker thread once `slots` has a free slot, until `timeoutMs`, `signal` or `memoryMb`
 * stops it with the matches so far. The slot is freed once the thread has exited, not when its result
 * comes back: a search started in it meanwhile would run beside the old one.
 */
export async function grepInThread(
  input: GrepThreadInput,
  {
    timeoutMs,
    memoryMb,
    signal,
    slots,
  }: { timeoutMs: number; memoryMb: number; signal?: AbortSignal; slots?: SearchSlots },
): Promise<GrepOutcome> {
  const release = (await slots?.acquire(signal)) ?? (() => undefined);
  const { script, eval: evaluate } = threadScript();
  return new Promise<GrepOutcome>((resolve, reject) => {
    const matches: string[] = [];
    let settled = false;
    let worker: Worker;
    try {
      worker = new Worker(script, {
        eval: evaluate,
        workerData: input,
        resourceLimits: { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: Math.max(4, memoryMb / 8) },
        stdout: true,
        stderr: true,
      });
    } catch (error) {
      release();
      reject(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    worker.once('exit', release);
    const finish = (outcome: GrepOutcome | Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
      setTimeout(release, EXIT_GRACE_MS).unref();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const timer = setTimeout(() => finish({ matches, stoppedAt: 'deadline' }), timeoutMs);
    const onAbort = (): void => finish(signal?.reason instanceof Error ? signal.reason : new Error('grep cancelled'));
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort);
    worker.on('message', (message: GrepThreadMessage) => {
      if (message.kind === 'match') matches.push(message.line);
      else finish({ matches, stoppedAt: message.stoppedAt });
    });
    worker.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') finish({ matches, stoppedAt: 'memory' });
      else finish(error);
    });
    worker.on('exit', (code) =>
      finish(new Error(`grep: the search thread exited with code ${code} before it finished`)),
    );
  });
}
