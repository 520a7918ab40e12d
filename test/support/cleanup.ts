// A tiny registry of things to close after each test file (see test/support/setup-file.ts).
// Kept free of heavy imports: the setup file that drains it runs before every test file.
type Cleanup = () => Promise<void> | void;

const cleanups: Cleanup[] = [];

/** Run `fn` after the current test file's own afterAll hooks. */
export function registerCleanup(fn: Cleanup): void {
  cleanups.push(fn);
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
