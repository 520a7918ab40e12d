// The workflow bundles test files share (test/support/bundle-cache.ts): built once for the run by
// the first file that asks, the same code a file would have built itself, and never a wait forever
// on a process that died while it held the build.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { afterAll, describe, expect, it } from 'vitest';
import {
  PRODUCTION_WORKFLOWS_PATH,
  sharedBundle,
  sharedBundlePath,
  TEST_WORKFLOWS_PATH,
} from '../support/bundle-cache.js';
import { bundleWorkflows, sharedBundleDir } from '../support/temporal.js';

/** Where two texts first differ, with a little of each around it (undefined when they are equal). */
function firstDifference(left: string, right: string): string | undefined {
  if (left === right) return undefined;
  let at = 0;
  while (at < left.length && left.charCodeAt(at) === right.charCodeAt(at)) at += 1;
  return `at character ${at} (lengths ${left.length} and ${right.length}): ${JSON.stringify(left.slice(at, at + 80))} against ${JSON.stringify(right.slice(at, at + 80))}`;
}

/** The pid of a process that has exited (so that no process has it, for a moment at least). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid as number;
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function emptyDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bundle-cache-test-'));
  dirs.push(dir);
  return dir;
}

// Watch mode shares nothing by design (an edit must reach the next run).
const watching = sharedBundleDir() === undefined;
if (watching) console.log('skipped: no shared workflow bundles in watch mode (the run-wide test below)');

describe('workflow bundles shared by the test files', { timeout: 120_000 }, () => {
  it.skipIf(watching)(
    'the run shares the production and the test workflows through the global setup directory',
    async () => {
      const dir = sharedBundleDir();
      expect(dir).toBeDefined();
      for (const entry of [PRODUCTION_WORKFLOWS_PATH, TEST_WORKFLOWS_PATH]) {
        const { code } = await bundleWorkflows(entry);
        const file = sharedBundlePath(dir as string, entry) as string;
        expect(code === readFileSync(file, 'utf8'), entry).toBe(true);
      }
      // Another entry point is not shared: the file bundles it on its own.
      expect(sharedBundlePath(dir as string, join(tmpdir(), 'workflows.ts'))).toBeUndefined();
      expect(await sharedBundle(dir as string, join(tmpdir(), 'workflows.ts'))).toBeUndefined();
    },
  );

  it('is the bundle a test file would build; two asking at once get it, and no lock is left', async () => {
    const dir = emptyDir();
    const [first, second] = await Promise.all([
      sharedBundle(dir, PRODUCTION_WORKFLOWS_PATH),
      sharedBundle(dir, PRODUCTION_WORKFLOWS_PATH),
    ]);
    const built = await bundleWorkflowCode({
      logger: new DefaultLogger('WARN'),
      workflowsPath: PRODUCTION_WORKFLOWS_PATH,
    });
    expect(firstDifference(first as string, built.code)).toBeUndefined();
    // The second waited for the first's file.
    expect(second === first).toBe(true);
    const file = sharedBundlePath(dir, PRODUCTION_WORKFLOWS_PATH) as string;
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('a build held by a process that died is taken over, not waited for', async () => {
    const dir = emptyDir();
    const file = sharedBundlePath(dir, TEST_WORKFLOWS_PATH) as string;
    mkdirSync(`${file}.lock`);
    writeFileSync(join(`${file}.lock`, 'pid'), String(await deadPid()));
    const code = await sharedBundle(dir, TEST_WORKFLOWS_PATH);
    expect(code === readFileSync(file, 'utf8')).toBe(true);
    expect(existsSync(`${file}.lock`)).toBe(false);
  });
});
