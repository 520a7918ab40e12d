// Helpers for tests that talk to the run's Temporal dev server (started by global-setup.ts).
//
//   let t: TestConnection;
//   beforeAll(async () => { t = await testConnection(); });
//   const result = await withWorker({ ...t, workflowBundle }, () => t.client.workflow.execute(...));
//
// Connections are opened once per test file and closed after it (setup-file.ts); every
// testConnection() call gets its own task queue. Payload codec and store: pass the data converter
// the configuration builds, and withWorker gives the worker the same one:
//
//   const payloads = payloadConverterFromConfig(loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: `file:${dir}` } }));
//   t = await testConnection({ dataConverter: payloads.dataConverter });
//
// COMPACTOR_TEST_PAYLOADS=1 turns the configured store and codec (COMPACTOR_PAYLOAD_STORE,
// COMPACTOR_CODEC_KEY, ... from the environment) on for every testConnection() without its own,
// to run workflow tests with payloads offloaded and encrypted (tests that inspect raw history
// payloads then see claims: expected).
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import {
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type BundleOptions,
  type WorkerOptions,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { inject } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import type { temporal } from '@temporalio/proto';
import { chainRunIds, HISTORY_CHANNEL_ARGS, historyEvents } from '../../src/client/session-reader.js';
import { bundleForTests, sharedBundle } from './bundle-cache.js';
import { registerCleanup } from './cleanup.js';

export interface TestConnection {
  client: Client;
  /** The client's gRPC connection (workflowService, operatorService, ...). */
  connection: Connection;
  /** For `Worker.create({ connection: nativeConnection, ... })`. */
  nativeConnection: NativeConnection;
  address: string;
  namespace: string;
  /** A task queue no other test uses. */
  taskQueue: string;
  /** The client's data converter; `withWorker` gives the worker the same one. Undefined: the SDK's. */
  dataConverter: DataConverter | undefined;
}

export interface TestConnectionOptions {
  /** Payload codec and External Storage for the client and the workers of `withWorker` (see `payloadConverterFromConfig`). */
  dataConverter?: DataConverter;
}

let counter = 0;

/** An id unique across this run and concurrent runs: `${prefix}-<time>-<pid>-<n>-<random>`. */
export function uniqueId(prefix: string): string {
  counter += 1;
  return `${prefix}-${Date.now().toString(36)}-${process.pid}-${counter}-${randomUUID().slice(0, 8)}`;
}

/** The run's Temporal server, or a clear error if the global setup could not provide one. */
export function temporalTarget(): { address: string; namespace: string } {
  const address = inject('temporalAddress');
  if (!address) {
    throw new Error(
      inject('temporalStartError') ??
        'No Temporal server: run the tests through vitest, whose global setup (test/support/global-setup.ts) starts one',
    );
  }
  return { address, namespace: inject('temporalNamespace') };
}

let runtimeChecked = false;
/**
 * Keep the SDK's own logging at WARN unless a Runtime was already installed: files share their
 * process (`isolate: false`), so an earlier file may have made it.
 */
export function quietRuntime(): void {
  if (runtimeChecked) return;
  runtimeChecked = true;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  } catch {
    // Already installed (or instantiated) in this process: keep it.
  }
}

let fromEnvironment: DataConverter | undefined;
/** With COMPACTOR_TEST_PAYLOADS=1, the environment's store and codec (one per test file, shared by its connections). */
function dataConverterFromEnvironment(): DataConverter | undefined {
  if (process.env.COMPACTOR_TEST_PAYLOADS !== '1') return undefined;
  fromEnvironment ??= payloadConverterFromConfig(loadConfig()).dataConverter;
  return fromEnvironment;
}

let shared: Promise<{ client: Client; connection: Connection; nativeConnection: NativeConnection }> | undefined;

/**
 * Connect to the run's server (once per test file) and hand out a fresh task queue. With a data
 * converter, the client is a new one on the shared connection that encodes and offloads with it.
 */
export async function testConnection({
  dataConverter = dataConverterFromEnvironment(),
}: TestConnectionOptions = {}): Promise<TestConnection> {
  const { address, namespace } = temporalTarget();
  if (!shared) {
    quietRuntime();
    const opening = (async () => {
      const [connection, nativeConnection] = await Promise.all([
        // As the CLI connects: histories without a payload store hold events of up to 2 MB.
        Connection.connect({ address, channelArgs: HISTORY_CHANNEL_ARGS }),
        NativeConnection.connect({ address }),
      ]);
      return { client: new Client({ connection, namespace }), connection, nativeConnection };
    })();
    shared = opening;
    registerCleanup(async () => {
      shared = undefined;
      const { connection, nativeConnection } = await opening;
      await Promise.allSettled([connection.close(), nativeConnection.close()]);
    });
    opening.catch(() => {
      if (shared === opening) shared = undefined;
    });
  }
  const opened = await shared;
  const client =
    dataConverter === undefined
      ? opened.client
      : new Client({ connection: opened.connection, namespace, dataConverter });
  return { ...opened, client, address, namespace, taskQueue: uniqueId('tq'), dataConverter };
}

/**
 * Bundle workflows for a Worker (do it once per test file, in beforeAll). The production and the
 * test workflows, with no options, are built once for the run and shared (bundle-cache.ts);
 * anything else is bundled here.
 */
export async function bundleWorkflows(
  workflowsPath: string | URL,
  options: Omit<BundleOptions, 'workflowsPath'> = {},
): Promise<WorkflowBundleWithSourceMap> {
  const path = workflowsPath instanceof URL ? fileURLToPath(workflowsPath) : workflowsPath;
  const dir = Object.keys(options).length === 0 ? sharedBundleDir() : undefined;
  const key = `${dir}\0${path}`;
  let reading = dir === undefined ? undefined : sharedBundles.get(key);
  if (dir !== undefined && reading === undefined) {
    reading = sharedBundle(dir, path).then((code) => {
      // Another process's build outlasted the wait: the next file asks again.
      if (code === undefined) sharedBundles.delete(key);
      if (code === undefined) return undefined;
      // sourceMap: deprecated in the SDK (the map is inline in the code); bundleWorkflowCode says so too.
      const bundle = { code, sourceMap: '' };
      runBundles.add(bundle);
      return bundle;
    });
    sharedBundles.set(key, reading);
    // A build that failed throws in this file; the next file that asks tries again.
    reading.catch(() => sharedBundles.delete(key));
  }
  return (await reading) ?? bundleForTests({ ...options, workflowsPath: path });
}

/**
 * The run's shared bundles as this process read them, one object per entry for every test file the
 * process runs (with `isolate: false` a process runs file after file with the same modules).
 */
const sharedBundles = new Map<string, Promise<WorkflowBundleWithSourceMap | undefined>>();
/** Those bundles: a worker of one of them may be kept for the process (withFileWorker). */
const runBundles = new WeakSet<WorkflowBundleWithSourceMap>();

/**
 * The run's directory of shared workflow bundles, or undefined: watch mode, a config with no
 * global setup, or outside a vitest worker (nothing to inject).
 */
export function sharedBundleDir(): string | undefined {
  try {
    return inject('workflowBundleDir') ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Run `fn` while a Worker polls `t.taskQueue` (then shut the worker down); returns what `fn`
 * returned. `options` go to Worker.create (workflowBundle, activities, ...); the worker gets
 * `t.dataConverter` unless `options` has its own.
 */
export async function withWorker<T>(
  t: TestConnection,
  options: Omit<WorkerOptions, 'connection' | 'namespace' | 'taskQueue'>,
  fn: () => Promise<T>,
): Promise<T> {
  const worker = await Worker.create({
    connection: t.nativeConnection,
    namespace: t.namespace,
    taskQueue: t.taskQueue,
    ...(t.dataConverter === undefined ? {} : { dataConverter: t.dataConverter }),
    ...options,
  });
  return worker.runUntil(fn);
}

/** Activities as Worker.create takes them. */
type Activities = NonNullable<WorkerOptions['activities']>;

interface FileWorker {
  taskQueue: string;
  /** A worker kept for the process: whether the current test file has registered its end-of-file sweep. */
  swept?: boolean;
  /** The activities of the test using the worker now; undefined between uses. */
  current: Activities | undefined;
  /** Activities that ran while no test used the worker: the file's cleanup fails naming them. */
  strays: string[];
  /** Fails the current use when the worker stops. */
  onStop?: (error: Error) => void;
  /** Settles when the worker stops (rejects when it failed). */
  running: Promise<void>;
  worker: Worker;
}

const fileWorkers = new Map<string, FileWorker>();

let processConnection: Promise<NativeConnection> | undefined;
/**
 * The connection of the workers kept for the process: the test file's own (`testConnection`) is
 * closed at the file's end. Never closed: vitest ends the process (SIGTERM) after its last file,
 * and the server forgets the polls of a worker that went away.
 */
function connectionForProcess(address: string): Promise<NativeConnection> {
  if (processConnection === undefined) {
    const connecting = NativeConnection.connect({ address });
    processConnection = connecting;
    connecting.catch(() => {
      if (processConnection === connecting) processConnection = undefined;
    });
  }
  return processConnection;
}
const keyIds = new WeakMap<object, number>();
let nextKeyId = 0;
function identity(value: object | undefined): number {
  if (value === undefined) return -1;
  let id = keyIds.get(value);
  if (id === undefined) keyIds.set(value, (id = nextKeyId++));
  return id;
}

/**
 * Like `withWorker`, on a worker kept for the rest of the test file: `fn` gets `t` with that worker's
 * task queue. A worker's start-up (a thread that loads the workflow bundle, then its first workflow
 * task) takes seconds, several times a run of a small workflow; the tests of a file that each need only
 * the file's bundle and their own activities share one instead. One worker per bundle, data
 * converter and set of activity names; the worker registers those names, and each call routes them to
 * its own `activities`. When `fn` ends, runs it started that are still open on the queue are
 * terminated, as a worker's shutdown would leave them without a worker. A call made while another
 * uses the worker (concurrent calls) gets a worker of its own, as `withWorker` gives it.
 *
 * A worker of one of the run's shared bundles (`bundleWorkflows` with no options), with no data
 * converter of the test's own, is kept for the whole process instead, on a connection of its own:
 * the later files the process runs with that bundle and those activity names use it too. Between
 * uses it routes no activity (one that runs then fails, naming the queue).
 */
export async function withFileWorker<T>(
  t: TestConnection,
  options: { workflowBundle: WorkflowBundleWithSourceMap; activities: Activities },
  fn: (t: TestConnection) => Promise<T>,
): Promise<T> {
  const names = Object.keys(options.activities).sort();
  const key = `${identity(options.workflowBundle)}:${identity(t.dataConverter)}:${names.join(',')}`;
  const forProcess =
    runBundles.has(options.workflowBundle) && (t.dataConverter === undefined || t.dataConverter === fromEnvironment);
  let kept = fileWorkers.get(key);
  if (kept?.current !== undefined) return withWorker(t, options, () => fn(t));
  // A kept worker that failed between uses: its error fails this test rather than vanish.
  if (kept?.worker.getState() === 'FAILED') await kept.running;
  if (kept === undefined || kept.worker.getState() !== 'RUNNING') {
    const taskQueue = uniqueId('tq-file');
    const routed: Activities = Object.fromEntries(
      names.map((name) => [
        name,
        (...args: unknown[]) => {
          const activity = (kept?.current as Record<string, (...args: unknown[]) => unknown> | undefined)?.[name];
          if (activity === undefined) {
            const stray = `activity ${name} ran on ${taskQueue} while no test used its worker`;
            kept?.strays.push(stray);
            throw new Error(stray);
          }
          return activity(...args);
        },
      ]),
    );
    const worker = await Worker.create({
      connection: forProcess ? await connectionForProcess(t.address) : t.nativeConnection,
      namespace: t.namespace,
      taskQueue,
      ...(t.dataConverter === undefined ? {} : { dataConverter: t.dataConverter }),
      workflowBundle: options.workflowBundle,
      activities: routed,
    });
    const running = worker.run();
    const created: FileWorker = { taskQueue, current: undefined, strays: [], running, worker };
    running.then(
      () => created.onStop?.(new Error(`the worker on ${taskQueue} stopped while a test used it`)),
      (error: unknown) => created.onStop?.(error instanceof Error ? error : new Error(String(error))),
    );
    kept = created;
    fileWorkers.set(key, kept);
    if (!forProcess)
      registerCleanup(async () => {
        fileWorkers.delete(key);
        if (created.worker.getState() === 'RUNNING') created.worker.shutdown();
        await created.running;
        throwStrays(created);
      });
  }
  const using = kept;
  if (forProcess && using.swept !== true) {
    // At the file's end, its runs still open on the queue are terminated: a test that timed out
    // never reached its own `finally`, and its runs must not go on beside the next file's.
    using.swept = true;
    const { client } = t;
    registerCleanup(async () => {
      using.swept = false;
      await terminateOpenRuns(client, using.taskQueue);
      throwStrays(using);
    });
  }
  using.current = options.activities;
  // One handler on the worker's `running` (set where it was made), not one per use: a kept worker's
  // `running` does not settle, and a race on it would hold every use's result.
  const stopped = new Promise<never>((_, reject) => {
    using.onStop = reject;
  });
  stopped.catch(() => undefined);
  try {
    return await Promise.race([fn({ ...t, taskQueue: using.taskQueue }), stopped]);
  } finally {
    using.onStop = undefined;
    try {
      await terminateOpenRuns(t.client, using.taskQueue);
    } finally {
      using.current = undefined;
    }
  }
}

function throwStrays(worker: FileWorker): void {
  const strays = worker.strays.splice(0);
  if (strays.length > 0) throw new Error(strays.join('\n'));
}

/**
 * Replays each history on one replay worker (`Worker.runReplayHistories`) and throws the first
 * failure, naming its workflow id. One replay worker loads the bundle once; `Worker.runReplayHistory`
 * makes a new one, and loads it again, for every history.
 */
export async function replayHistories(
  workflowBundle: WorkflowBundleWithSourceMap,
  histories: ReadonlyArray<{ workflowId: string; history: temporal.api.history.v1.IHistory }>,
): Promise<void> {
  for await (const { workflowId, error } of Worker.runReplayHistories({ workflowBundle }, histories)) {
    if (error !== undefined)
      throw new Error(`the history of ${workflowId} did not replay: ${String(error)}`, { cause: error });
  }
}

/**
 * Terminates the runs still open on `taskQueue`: each workflow's latest run, so one that continued
 * as new since the listing goes too.
 */
async function terminateOpenRuns(client: Client, taskQueue: string): Promise<void> {
  for await (const execution of client.workflow.list({
    query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'`,
  })) {
    await client.workflow
      .getHandle(execution.workflowId)
      .terminate('the test that started it ended')
      .catch(() => undefined);
  }
}

/**
 * The events of every run of a workflow's continue-as-new chain, run by run, first run first
 * (`.flat()` for the whole chain). Holds them all in memory: for histories of a few MB.
 */
export async function chainHistories(
  client: Client,
  workflowId: string,
): Promise<temporal.api.history.v1.IHistoryEvent[][]> {
  // The raw description: its memo may be a claim a client without the store cannot decode.
  const described = await client.workflowService.describeWorkflowExecution({
    namespace: client.options.namespace,
    execution: { workflowId },
  });
  const runId = described.workflowExecutionInfo?.execution?.runId ?? '';
  const runs: temporal.api.history.v1.IHistoryEvent[][] = [];
  for (const run of await chainRunIds(client, workflowId, runId)) {
    const events: temporal.api.history.v1.IHistoryEvent[] = [];
    for await (const event of historyEvents(client, workflowId, run)) events.push(event);
    runs.push(events);
  }
  return runs;
}
