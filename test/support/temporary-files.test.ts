// The test run's temporary files: each test removes what it makes, and the run keeps all of them
// under one directory of its own (test/support/global-setup.ts), which teardown checks and removes.
import { existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCleanups, temporaryDirectory } from '../support/cleanup.js';

describe('temporary files of the test run', () => {
  it('go under a directory of the run, not straight into the system temporary directory', () => {
    expect(basename(tmpdir())).toMatch(/^compactor-test-run-/);
  });

  it('temporaryDirectory, called inside a test, is removed with its contents once the file is done', async () => {
    const directory = temporaryDirectory('compactor-cleanup-test-');
    writeFileSync(join(directory, 'file.txt'), 'x');
    expect(directory.startsWith(tmpdir())).toBe(true);
    expect(existsSync(directory)).toBe(true);
    // What the setup file's afterAll does after the file's tests (test/support/setup-file.ts).
    await runCleanups();
    expect(existsSync(directory)).toBe(false);
  });
});
