// A tiny registry of things to close after each test file (see test/support/setup-file.ts).
// Kept free of heavy imports: the setup file that drains it runs before every test file.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type Cleanup = () => Promise<void> | void;

const cleanups: Cleanup[] = [];

/**
 * Run `fn` after the current test file's own afterAll hooks. Unlike `afterAll`, it may be called
 * from inside a test: vitest drops a hook registered once the file's tests have been collected.
 */
export function registerCleanup(fn: Cleanup): void {
  cleanups.push(fn);
}

/** A new empty directory under the system's temporary directory, removed after the current test file. */
export function temporaryDirectory(prefix: string): string {
  const directory = mkdtempSync(join(tmpdir(), prefix));
  registerCleanup(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/** Runs and forgets every registered cleanup, last registered first; rethrows the first error. */
export async function runCleanups(): Promise<void> {
  let firstError: unknown;
  while (cleanups.length > 0) {
    const fn = cleanups.pop() as Cleanup;
    try {
      await fn();
    } catch (err) {
      firstError ??= err;
    }
  }
  if (firstError !== undefined) throw firstError;
}
