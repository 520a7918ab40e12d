// Node (test support): the workflow bundles most test files run, built once per test run, and kept
// between runs while nothing they are built from changes.
//
// Bundling the production workflows with webpack takes about 4 s (6 s of CPU) on a quiet two-core
// machine, and some thirty test files each bundled the same entry points in their beforeAll.
// The global setup (global-setup.ts) makes an empty directory for the run and provides it
// (`workflowBundleDir`). The first test file that asks `bundleWorkflows` (temporal.ts) for one of
// these entry points, with no options, puts it there; the files that ask while it does wait for it,
// and the later ones read it. Nothing is built for a run that needs neither (one unit test file).
// Anything else is bundled by the file as before: other entry points, bundle options, watch mode (an
// edit must reach the next run) and the vitest configs with no global setup (cluster, chaos).
//
// A bundle is also kept under node_modules/.cache, named by a digest of what it is built from: the
// entry, every file under src/, the installed packages (npm's node_modules/.package-lock.json), the
// compiler settings and this file. The shared entries import nothing else (bundle-cache.test.ts
// reads each bundle's module list to hold them to it), so a run after an edit anywhere in src/
// builds again, and a run with nothing changed reads what the last one built. Only the last bundle
// of each entry is kept.
//
// One process builds an entry at a time: it holds `<bundle>.lock`, a directory (mkdir is atomic),
// with its pid inside. A waiter takes a lock over when its holder has died, and after
// WAIT_LIMIT_MS bundles on its own. A build that fails leaves no bundle and throws the bundler's
// error in the file that built it; the next file that asks tries again.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  bundleWorkflowCode,
  DefaultLogger,
  type BundleOptions,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { withoutDataSources } from '../../src/cli/bundle-source-map.js';
import { compactorPreloadModules } from '../../src/worker/workflow-bundling.js';
import { INSTALLED, inputsDigest, KEPT_DIR, ROOT, writeWhole } from './build-inputs.js';

/** The workflows the package ships (what `compactorPlugin` bundles). */
export const PRODUCTION_WORKFLOWS_PATH = join(ROOT, 'src/workflows/index.ts');
/** The shipped workflows plus the test ones (`compactInWorkflow`, ...). */
export const TEST_WORKFLOWS_PATH = join(ROOT, 'test/workflows/test-workflows.ts');
/** The shipped workflows plus one that stores a payload through an activity (the payload store's tests). */
export const STORE_WORKFLOWS_PATH = join(ROOT, 'corpus/store-workflows.ts');

export const SHARED_ENTRIES: readonly string[] = [PRODUCTION_WORKFLOWS_PATH, TEST_WORKFLOWS_PATH, STORE_WORKFLOWS_PATH];

/** Where bundles are kept between runs. */
export const KEPT_BUNDLES_DIR = join(KEPT_DIR, 'compactor-test-bundles');

/**
 * A digest of what `entry`'s bundle is built from, under `root`: the entry, every file under
 * `src/`, the installed packages and this file (how it is built).
 */
export function bundleInputsDigest(entry: string, root = ROOT): string {
  return inputsDigest(root, [relative(root, entry), 'test/support/bundle-cache.ts', ...INSTALLED], ['src']);
}

/** How long a file waits for another to finish a bundle before it bundles on its own. */
const WAIT_LIMIT_MS = 180_000;
const POLL_MS = 200;

/** Where `entry`'s bundle is (or will be) in the run's directory; undefined for an entry that is not shared. */
export function sharedBundlePath(dir: string, entry: string): string | undefined {
  const index = SHARED_ENTRIES.indexOf(entry);
  return index < 0 ? undefined : join(dir, `bundle-${index}.js`);
}

/**
 * The code of `entry`'s bundle from the run's directory, built here when no other process has built
 * it or is building it. Undefined when the caller must bundle on its own: `entry` is not shared, or
 * another process held the build past WAIT_LIMIT_MS. A build here that fails throws the bundler's
 * error, and the next file that asks tries again.
 */
export async function sharedBundle(
  dir: string,
  entry: string,
  kept: string = KEPT_BUNDLES_DIR,
): Promise<string | undefined> {
  const file = sharedBundlePath(dir, entry);
  if (file === undefined) return undefined;
  const lock = `${file}.lock`;
  const deadline = Date.now() + WAIT_LIMIT_MS;
  for (;;) {
    if (existsSync(file)) return readFileSync(file, 'utf8');
    if (takeLock(lock)) break;
    if (holderDied(lock)) {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) return undefined;
    await sleep(POLL_MS);
  }
  try {
    const name = keptName(entry);
    const code = readKept(join(kept, name)) ?? (await buildAndKeep(kept, entry, name));
    writeWhole(file, code);
    return code;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** The name `entry`'s bundle is kept under for what it is built from now. */
export function keptName(entry: string): string {
  return `${SHARED_ENTRIES.indexOf(entry)}-${bundleInputsDigest(entry)}.js`;
}

/** What `file` holds; undefined when there is no such file. */
function readKept(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * A bundle as `temporal-compactor bundle` writes one, as `bundleWorkflows` gives every test: it
 * preloads what every bundle of this package preloads, and its inline source map leaves out the BPE
 * rank tables, so each worker and replayer of a run reads and compiles 9 MB rather than 17.
 */
export async function bundleForTests(options: BundleOptions): Promise<WorkflowBundleWithSourceMap> {
  const built = await bundleWorkflowCode({
    logger: new DefaultLogger('WARN'),
    preloadModules: compactorPreloadModules(),
    ...options,
  });
  return { ...built, code: withoutDataSources(built.code).code };
}

/**
 * `entry`'s bundle, built, and kept in `kept` as `before` (its name when the build began) in place
 * of the entry's earlier ones, unless what it is built from changed while it was built (then the
 * name would not say what it holds).
 */
async function buildAndKeep(kept: string, entry: string, before: string): Promise<string> {
  const { code } = await bundleForTests({ workflowsPath: entry });
  if (keptName(entry) !== before) return code;
  mkdirSync(kept, { recursive: true });
  const prefix = `${SHARED_ENTRIES.indexOf(entry)}-`;
  for (const name of readdirSync(kept))
    if (name.startsWith(prefix) && name !== before) rmSync(join(kept, name), { force: true });
  writeWhole(join(kept, before), code);
  return code;
}

function takeLock(lock: string): boolean {
  try {
    mkdirSync(lock);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  writeFileSync(join(lock, 'pid'), String(process.pid));
  return true;
}

/** True when the lock's holder is a process that no longer exists (a lock without a pid yet is held). */
function holderDied(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
  } catch {
    return false;
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
