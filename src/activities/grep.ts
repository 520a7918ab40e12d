// Node only (activities): runs `grep`'s search in a worker thread with a deadline and a memory
// limit, so that no pattern and no file can hold the worker's event loop (docs/agent-runs.md#tool-bounds).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { GrepThreadInput, GrepThreadMessage } from './grep-thread.js';

export type { GrepThreadInput };

/** How a search ended: whole, or where it stopped and why. */
export interface GrepOutcome {
  matches: string[];
  /** `deadline`: the search ran out of time; `memory`: over its memory limit; `results`/`files`: at a count limit. */
  stoppedAt: 'results' | 'files' | 'deadline' | 'memory' | undefined;
}

/**
 * The thread's script: the built file next to this one; run from source (tests, tsx), the
 * TypeScript file, loaded through tsx's loader registered inside the thread.
 */
function threadScript(): { script: URL | string; eval: boolean } {
  const built = new URL('./grep-thread.js', import.meta.url);
  if (existsSync(fileURLToPath(built))) return { script: built, eval: false };
  const source = new URL('./grep-thread.ts', import.meta.url).href;
  const load = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(source)}); })`;
  return { script: load, eval: true };
}

/**
 * Searches in a worker thread. At `timeoutMs` (or when `signal` aborts) the thread is terminated and
 * the matches found so far come back with `stoppedAt: 'deadline'`; a thread over `memoryMb` of heap
 * ends with `stoppedAt: 'memory'`. The caller's event loop only ever receives messages.
 */
export function grepInThread(
  input: GrepThreadInput,
  { timeoutMs, memoryMb, signal }: { timeoutMs: number; memoryMb: number; signal?: AbortSignal },
): Promise<GrepOutcome> {
  const { script, eval: evaluate } = threadScript();
  return new Promise<GrepOutcome>((resolve, reject) => {
    const matches: string[] = [];
    let settled = false;
    const worker = new Worker(script, {
      eval: evaluate,
      workerData: input,
      resourceLimits: { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: Math.max(4, memoryMb / 8) },
      stdout: true,
      stderr: true,
    });
    const finish = (outcome: GrepOutcome | Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
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
