// The workflow bundles test files share (test/support/bundle-cache.ts): built once for the run by
// the first file that asks, or read from where the last run kept them when nothing they are built
// from changed; the same code a file would have built itself, and never a wait forever on a process
// that died while it held the build.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { withoutDataSources } from '../../src/cli/bundle-source-map.js';
import {
  bundleInputsDigest,
  keptName,
  PRODUCTION_WORKFLOWS_PATH,
  SHARED_ENTRIES,
  sharedBundle,
  sharedBundlePath,
  TEST_WORKFLOWS_PATH,
} from '../support/bundle-cache.js';
import { bundleWorkflows, sharedBundleDir } from '../support/temporal.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

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
      for (const entry of SHARED_ENTRIES) {
        const { code } = await bundleWorkflows(entry);
        const file = sharedBundlePath(dir as string, entry) as string;
        expect(code === readFileSync(file, 'utf8'), entry).toBe(true);
        // The digest that names a kept bundle covers src/ and the entry: the bundle holds nothing else of ours.
        const modules = [...code.matchAll(/^\/\*\*\*\/ "(\.\/[^"]+)"$/gm)].map((match) => match[1] as string);
        expect(modules.length, entry).toBeGreaterThan(50);
        const entryModule = `./${relative(ROOT, entry)}`;
        const others = modules.filter((module) => !/^\.\/(src|node_modules)\//.test(module) && module !== entryModule);
        expect(others, entry).toEqual([]);
        // What `temporal-compactor bundle` writes: the inline source map without the BPE rank tables.
        expect(withoutDataSources(code).left, entry).toEqual([]);
      }
      // Another entry point is not shared: the file bundles it on its own.
      expect(sharedBundlePath(dir as string, join(tmpdir(), 'workflows.ts'))).toBeUndefined();
      expect(await sharedBundle(dir as string, join(tmpdir(), 'workflows.ts'))).toBeUndefined();
    },
  );

  it('is the bundle a test file would build; two asking at once get it, it is kept in place of one built from other sources, and no lock is left', async () => {
    const dir = emptyDir();
    const kept = emptyDir();
    const name = keptName(PRODUCTION_WORKFLOWS_PATH);
    // What an earlier run kept of this entry, and of another (whose kept bundle is its own).
    writeFileSync(join(kept, `${name.split('-')[0]}-${'0'.repeat(64)}.js`), '// built from other sources');
    writeFileSync(join(kept, keptName(TEST_WORKFLOWS_PATH)), '// the test workflows');
    const [first, second] = await Promise.all([
      sharedBundle(dir, PRODUCTION_WORKFLOWS_PATH, kept),
      sharedBundle(dir, PRODUCTION_WORKFLOWS_PATH, kept),
    ]);
    // The bundle the other files run: built by one of them, or read from a run before this one, so
    // the comparison also holds a kept bundle to what a build makes now.
    const built = await bundleWorkflows(PRODUCTION_WORKFLOWS_PATH);
    expect(firstDifference(first as string, built.code)).toBeUndefined();
    // The second waited for the first's file.
    expect(second === first).toBe(true);
    const file = sharedBundlePath(dir, PRODUCTION_WORKFLOWS_PATH) as string;
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(readdirSync(kept).sort()).toEqual([name, keptName(TEST_WORKFLOWS_PATH)].sort());
    expect(readFileSync(join(kept, name), 'utf8') === first).toBe(true);
  });

  it('a bundle kept for what it is built from now is read, not built', async () => {
    const kept = emptyDir();
    writeFileSync(join(kept, keptName(TEST_WORKFLOWS_PATH)), '// kept');
    expect(await sharedBundle(emptyDir(), TEST_WORKFLOWS_PATH, kept)).toBe('// kept');
  });

  it('the digest changes with a file under src/, a new one, the entry, the installed packages and the builder; not with a test', () => {
    const root = emptyDir();
    mkdirSync(join(root, 'src', 'core'), { recursive: true });
    mkdirSync(join(root, 'test', 'support'), { recursive: true });
    mkdirSync(join(root, 'node_modules'));
    const entry = join(root, 'test', 'entry.ts');
    const write = (path: string, text: string) => writeFileSync(join(root, path), text);
    write('test/entry.ts', 'export * from "../src/core/a.js";');
    write('src/core/a.ts', 'export const a = 1;');
    write('package-lock.json', '{}');
    const digests = [bundleInputsDigest(entry, root)];
    write('test/other.test.ts', 'unrelated');
    expect(bundleInputsDigest(entry, root)).toBe(digests[0]);
    for (const [path, text] of [
      ['src/core/a.ts', 'export const a = 2;'],
      ['src/core/b.ts', ''],
      ['test/entry.ts', 'export * from "../src/core/b.js";'],
      ['node_modules/.package-lock.json', '{"packages":{}}'],
      ['tsconfig.json', '{}'],
      ['test/support/bundle-cache.ts', '// how the bundles are built'],
    ] as const) {
      write(path, text);
      digests.push(bundleInputsDigest(entry, root));
    }
    expect(new Set(digests).size, digests.join('\n')).toBe(digests.length);
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
