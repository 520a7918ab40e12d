// Vitest global setup: ONE Temporal dev server for the whole test run.
//
// - TEMPORAL_ADDRESS already set: use that server (namespace from TEMPORAL_NAMESPACE, default
//   "default") and only make sure the project's search attributes exist there.
// - Otherwise: start `temporal server start-dev` on free 127.0.0.1 ports (headless, in-memory),
//   and stop it in teardown.
// Tests read the target with `inject('temporalAddress')` (see test/support/temporal.ts); child
// processes get TEMPORAL_TEST_ADDRESS (and TEMPORAL_ADDRESS, which the SDK's envconfig reads).
//
// If the server cannot be started, the run does not abort: unit tests still run, and every test
// that asks for a connection fails with `temporalStartError` as its message.
//
// Also, once per run: the test corpus (corpus/index.ts) written into a temporary trajectory
// directory for the replay provider (COMPACTOR_TEST_TRAJECTORY_DIR, removed in teardown), and one
// line saying whether the extended corpus was found (its cases are skipped when it was not); and an
// empty directory for the workflow bundles the test files share (test/support/bundle-cache.ts).
//
// Every temporary file of the run goes under one directory of the run's own: TMPDIR is set to it
// for the test files and every process they start. Teardown removes it, and fails the run (exit
// code 1) when a test left something there: each test removes what it made (`temporaryDirectory`
// in test/support/cleanup.ts), so a user's temporary directory does not fill up run after run.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import type { ProvidedContext } from 'vitest';
import type { TestProject } from 'vitest/node';
import {
  createTrajectoryDir,
  extendedCorpusLocation,
  extendedCorpusMissing,
  extendedRun,
  extendedSkipped,
  fullCorpus,
  repositoryCorpus,
  TRAJECTORY_DIR_ENV,
  TEST_CORPUS_ENV,
} from '../../corpus/index.js';
import { ensureSearchAttributes, startDevServer, type DevServer } from '../../dev/dev-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** "host:port" of the test run's Temporal frontend, or null if it could not be started. */
    temporalAddress: string | null;
    temporalNamespace: string;
    /** Why there is no server (null when there is one). */
    temporalStartError: string | null;
    /** The dev server's Web UI (browser tests), or null when it runs headless or is external (TEMPORAL_TEST_UI_URL). */
    temporalUiUrl: string | null;
    /** The directory of the workflow bundles built once for the run (bundle-cache.ts); null in watch mode. */
    workflowBundleDir: string | null;
  }
}

const ENV_KEYS = [
  'TEMPORAL_TEST_ADDRESS',
  'TEMPORAL_TEST_NAMESPACE',
  'TEMPORAL_ADDRESS',
  'TMPDIR',
  TRAJECTORY_DIR_ENV,
] as const;

/**
 * What may stay in the run's temporary directory until teardown removes it: tsx's compile cache
 * (child processes run TypeScript through tsx) and the plugin's combined workflows modules
 * (src/worker/plugin.ts writes them there once per pair of paths, by design).
 */
const KEPT_UNTIL_TEARDOWN = [/^tsx-/, /^temporal-compactor-workflows$/];

/** The run's temporary directory: made under the system's own, and TMPDIR for everything after. */
function runTemporaryDirectory(): { dir: string; leftovers: () => string[]; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-test-run-'));
  process.env.TMPDIR = dir;
  return {
    dir,
    leftovers: () => readdirSync(dir).filter((name) => !KEPT_UNTIL_TEARDOWN.some((kept) => kept.test(name))),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

interface Run {
  provided: ProvidedContext;
  teardown: () => Promise<void>;
}

/**
 * Vitest calls a global setup once per project (vitest.config.ts has two: the files that share
 * their process, and the few that need one of their own), each through its own module loader: the
 * run is kept on `globalThis`, started by the first call and torn down after the last.
 */
const SHARED_RUN = Symbol.for('temporal-compactor.test-run');
interface SharedRun {
  users: number;
  run: Promise<Run>;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const holder = globalThis as { [SHARED_RUN]?: SharedRun };
  const shared = (holder[SHARED_RUN] ??= { users: 0, run: startRun(project.config.watch) });
  shared.users += 1;
  const run = await shared.run;
  for (const [key, value] of Object.entries(run.provided))
    project.provide(key as keyof ProvidedContext, value as never);
  return async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    delete holder[SHARED_RUN];
    await run.teardown();
  };
}

async function startRun(watch: boolean): Promise<Run> {
  const savedEnv = Object.fromEntries(ENV_KEYS.map((key) => [key, process.env[key]]));
  const restoreEnv = () => {
    for (const key of ENV_KEYS) {
      if (savedEnv[key] === undefined) delete process.env[key];
      else process.env[key] = savedEnv[key];
    }
  };

  const runTmp = runTemporaryDirectory();
  process.once('exit', runTmp.remove);

  const extended = extendedRun();
  const corpus = extended ? fullCorpus() : repositoryCorpus();
  const trajectories = createTrajectoryDir(corpus);
  // Teardown removes it; the exit hook covers a run that is interrupted before teardown.
  process.once('exit', trajectories.remove);
  process.env[TRAJECTORY_DIR_ENV] = trajectories.dir;
  const location = extendedCorpusLocation();
  if (extended && !location.present) throw new Error(`${TEST_CORPUS_ENV}=extended: ${extendedCorpusMissing(location)}`);
  process.stderr.write(
    extended
      ? `[global-setup] extended corpus at ${location.dir}: ${corpus.filter((trajectory) => trajectory.origin === 'extended').length} trajectories beyond the repository set run too\n`
      : `[global-setup] ${extendedSkipped()}; this run covers the repository set\n`,
  );

  // The workflow bundles test files share (bundle-cache.ts): the first file that needs one builds it
  // here. In watch mode each file bundles its own, so that an edit reaches the next run.
  const bundleDir = watch ? null : mkdtempSync(join(tmpdir(), 'compactor-test-bundles-'));
  const removeBundles = () => {
    if (bundleDir !== null) rmSync(bundleDir, { recursive: true, force: true });
  };
  process.once('exit', removeBundles);

  let server: DevServer | undefined;
  let address: string | null = null;
  let namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  let startError: string | null = null;

  const external = process.env.TEMPORAL_ADDRESS;
  try {
    if (external) {
      address = external;
      const connection = await Connection.connect({ address, connectTimeout: 10_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        await ensureSearchAttributes(connection, namespace);
      } finally {
        await connection.close();
      }
      process.stderr.write(
        `[global-setup] using the Temporal server at TEMPORAL_ADDRESS=${address} (namespace ${namespace})\n`,
      );
    } else {
      const started = Date.now();
      server = await startDevServer({
        // The UI is on unless TEMPORAL_TEST_UI=0: the browser test opens it (test/e2e/ui.test.ts).
        ui: process.env.TEMPORAL_TEST_UI !== '0',
        logFile: process.env.TEMPORAL_TEST_LOG_FILE || undefined,
      });
      address = server.address;
      namespace = server.namespace;
      process.stderr.write(
        `[global-setup] Temporal dev server ${address} ready in ${Date.now() - started} ms (${server.cliPath})\n`,
      );
    }
  } catch (err) {
    address = null;
    startError = `No Temporal server for the tests: ${err instanceof Error ? err.message : String(err)}`;
    process.stderr.write(`[global-setup] ${startError}\n`);
  }

  const provided: Run['provided'] = {
    temporalAddress: address,
    temporalNamespace: namespace,
    temporalStartError: startError,
    temporalUiUrl: server?.uiUrl ?? process.env.TEMPORAL_TEST_UI_URL ?? null,
    workflowBundleDir: bundleDir,
  };
  if (address) {
    process.env.TEMPORAL_TEST_ADDRESS = address;
    process.env.TEMPORAL_TEST_NAMESPACE = namespace;
    process.env.TEMPORAL_ADDRESS = address;
  }

  const teardown = async (): Promise<void> => {
    restoreEnv();
    trajectories.remove();
    removeBundles();
    await server?.stop();
    const leftovers = runTmp.leftovers();
    runTmp.remove();
    if (leftovers.length > 0) {
      process.stderr.write(
        `[global-setup] the tests left ${leftovers.length} ${leftovers.length === 1 ? 'entry' : 'entries'} in their temporary directory ${runTmp.dir} ` +
          `(now removed): ${leftovers.sort().join(', ')}; make them with temporaryDirectory() from test/support/cleanup.ts\n`,
      );
      // A teardown that throws does not fail a vitest run; the exit code does.
      process.exitCode = 1;
    }
  };
  return { provided, teardown };
}
