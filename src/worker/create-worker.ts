// Node only: the compactor worker (docs/design.md#worker): our workflows and activities, configured
// from the environment (src/config.ts); runnable as `node dist/worker/create-worker.js`.
import { isMain } from './is-main.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Worker } from '@temporalio/worker';
import type { NativeConnection, WorkerOptions, WorkflowBundleOption } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import { CHAT_SERVER_KEYS, compactorPlugin, type CompactorPlugin, type PluginRegistration } from './plugin.js';
import { compactorWorkflowsPath } from './workflow-bundling.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import { ensureSearchAttributesIfAllowed, type SearchAttributeSetup } from '../client/namespace-search-attributes.js';
import {
  ConfigError,
  DEFAULT_SHUTDOWN_GRACE_MS,
  DEFAULT_TASK_QUEUE,
  DEFAULT_TEMPORAL_NAMESPACE,
  loadConfig,
  readSettings,
  TEMPORAL_SETTING_KEYS,
  temporalEnvVars,
  type WorkerModeSetting,
} from '../config.js';
import { summarizerFromConfig } from './summarizer-from-config.js';
import { parseDuration, type Duration } from '../core/compaction/options.js';
import type { Summarizer } from '../core/types.js';
import type { ActivityDeps } from '../activities/index.js';
import { payloadConverterFromConfig } from '../payloads/index.js';
import { connectTemporal, TemporalConnectionError } from './temporal-connection.js';
import { InstallError } from '../peer-packages.js';
import { installTelemetryRuntime } from '../telemetry/metrics.js';
import { createTracing, type CompactorTracing, type TracingOption } from '../telemetry/tracing.js';

type Environment = Readonly<Record<string, string | undefined>>;

/** Every field but `summarizer` has a default; the activities' settings are `ActivityDeps`'s, read from the environment when not given. */
export interface CompactorWorkerConfig extends Pick<
  ActivityDeps,
  'trajectoryDir' | 'toolsRoot' | 'toolsAllow' | 'chatServer' | 'chatTimeoutMs' | 'summarizerContextWindow'
> {
  /** A connection to reuse (it stays open). @default one from `connectTemporal` (the TEMPORAL_* settings) */
  connection?: NativeConnection;
  /** @default the envconfig namespace (TEMPORAL_NAMESPACE), else 'default' */
  namespace?: string;
  /** The queue of the workflows and of the agent's activities. @default 'compactor' */
  taskQueue?: string;
  /** The queue of the summarize activities, so summarizer capacity scales apart from the agents. @default taskQueue */
  summarizerTaskQueue?: string;
  /** @default 'all' */
  mode?: WorkerModeSetting;
  /** Built on the worker, so API keys never enter workflow history. Required unless mode is `workflows`. */
  summarizer?: Summarizer;
  /** A bundle from `temporal-compactor bundle --out FILE`, so the worker starts without bundling. @default COMPACTOR_WORKFLOW_BUNDLE */
  workflowBundlePath?: string;
  /** A workflow bundle already in memory (e.g. from `bundleWorkflowCode`); wins over the path settings. */
  workflowBundle?: WorkflowBundleOption;
  /** Workflows to bundle at start-up when there is no prebuilt bundle. @default this package's `workflows/index` */
  workflowsPath?: string;
  /** Activities (summarize, chat, tools) one worker runs at once. @default the SDK's (100) */
  maxConcurrentActivityTaskExecutions?: number;
  /** Workflow tasks one worker runs at once. @default the SDK's (40) */
  maxConcurrentWorkflowTaskExecutions?: number;
  /** On SIGINT/SIGTERM, how long in-flight activities may finish before they are cancelled. @default '10s' */
  shutdownGraceTime?: Duration;
  /** OpenTelemetry spans of the workers' workflows and activities (see `compactorPlugin`). @default COMPACTOR_TRACING of the environment (`off`) */
  tracing?: TracingOption;
  /** The environment `connectTemporal` reads when this module opens the connection. @default process.env */
  temporalEnv?: Record<string, string>;
  /** Register our missing search attributes at start where the operator API allows (false: check only). @default true */
  registerSearchAttributes?: boolean;
  /** Where start-up warnings go. @default console.error */
  warn?: (message: string) => void;
  /** Where each worker's start line goes (`compactorPlugin`'s `log`). @default console.error */
  log?: (line: string) => void;
  /** Payload codec and External Storage; clients of these workflows need the same. @default the SDK's */
  dataConverter?: DataConverter;
}

const WORKER_CONFIG_KEYS = keysOf<CompactorWorkerConfig>({
  connection: true,
  namespace: true,
  taskQueue: true,
  summarizerTaskQueue: true,
  mode: true,
  summarizer: true,
  trajectoryDir: true,
  toolsRoot: true,
  toolsAllow: true,
  chatServer: true,
  chatTimeoutMs: true,
  summarizerContextWindow: true,
  workflowBundlePath: true,
  workflowBundle: true,
  workflowsPath: true,
  maxConcurrentActivityTaskExecutions: true,
  maxConcurrentWorkflowTaskExecutions: true,
  shutdownGraceTime: true,
  tracing: true,
  temporalEnv: true,
  registerSearchAttributes: true,
  warn: true,
  log: true,
  dataConverter: true,
});

/** The worker configuration from the environment and flags, with its summarizer built; a ConfigError names the setting. */
export function loadWorkerConfig(env: Environment = process.env, flags: Readonly<Record<string, unknown>> = {}) {
  const config = loadConfig({ env, flags });
  if (config.workflowBundle !== undefined) existingBundle(config.workflowBundle);
  const { summarizer, describe } = summarizerFromConfig(config);
  return {
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    summarizerTaskQueue: config.summarizerTaskQueue,
    mode: config.workerMode,
    summarizer,
    describeSummarizer: describe,
    // Unset settings stay undefined: createWorker gives each its default.
    workflowBundlePath: config.workflowBundle,
    maxConcurrentActivityTaskExecutions: config.maxConcurrentActivities,
    maxConcurrentWorkflowTaskExecutions: config.maxConcurrentWorkflowTasks,
    shutdownGraceTime: config.shutdownGraceMs,
    trajectoryDir: config.trajectoryDir,
    toolsRoot: config.toolsRoot,
    toolsAllow: config.toolsAllow,
    chatServer: { baseURL: config.openaiBaseUrl, apiKey: config.openaiApiKey },
    chatTimeoutMs: config.chatTimeoutMs,
    summarizerContextWindow: config.summarizerContextWindow,
    temporalEnv: temporalEnvVars(config, env),
    dataConverter: payloadConverterFromConfig(config).dataConverter,
    tracing: config.tracing,
    prometheusAddress: config.prometheusAddress,
  };
}

/** @throws ConfigError naming COMPACTOR_WORKFLOW_BUNDLE when no file is at `path` */
function existingBundle(path: string): string {
  if (existsSync(path)) return path;
  const expected = 'the path of an existing workflow bundle (temporal-compactor bundle --out FILE writes one)';
  throw new ConfigError('COMPACTOR_WORKFLOW_BUNDLE', expected, path);
}

/** A prebuilt bundle when one is given, else the workflows' source to bundle now. */
export function workflowCode(
  config: Pick<CompactorWorkerConfig, 'workflowBundle' | 'workflowBundlePath' | 'workflowsPath'>,
): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (config.workflowBundle !== undefined) return { workflowBundle: config.workflowBundle };
  // Absolute: the SDK rewrites the inline source map of a bundle whose path is not.
  if (config.workflowBundlePath !== undefined)
    return { workflowBundle: { codePath: resolve(existingBundle(config.workflowBundlePath)) } };
  return { workflowsPath: config.workflowsPath ?? compactorWorkflowsPath() };
}

/** One Worker per task queue polled, and the connection they share. */
export interface CompactorWorker {
  workers: Worker[];
  connection: NativeConnection;
  taskQueues: string[];
  /** What the start-up check of our search attributes found and registered (undefined for an activities-only worker). */
  searchAttributes: SearchAttributeSetup | undefined;
  /** Runs until shutdown (SIGINT/SIGTERM or `shutdown()`), then closes the connection if this module opened it. */
  run(): Promise<void>;
  shutdown(): void;
}

/**
 * Mode `all`: one Worker with everything (the activities apart on a different `summarizerTaskQueue`);
 * `workflows`: the workflows only; `activities`: the activities, on `summarizerTaskQueue`.
 */
export async function createWorker(config: CompactorWorkerConfig): Promise<CompactorWorker> {
  assertKnownKeys(config, WORKER_CONFIG_KEYS, 'config');
  assertKnownKeys(config.chatServer, CHAT_SERVER_KEYS, 'config.chatServer');
  const mode = config.mode ?? 'all';
  const taskQueue = config.taskQueue ?? DEFAULT_TASK_QUEUE;
  const summarizerTaskQueue = config.summarizerTaskQueue ?? taskQueue;
  if (mode !== 'workflows' && config.summarizer === undefined)
    throw new TypeError(`createWorker: a worker in mode "${mode}" needs a summarizer`);
  // One tracer for every worker made here, so their spans share one exporter.
  const tracing: CompactorTracing | undefined = createTracing(config.tracing ?? readSettings(['tracing']).tracing);
  const code = mode === 'activities' ? undefined : workflowCode(config);
  const { trajectoryDir, toolsRoot, toolsAllow, chatServer, chatTimeoutMs, summarizerContextWindow } = config;
  const plugin = (register: PluginRegistration): CompactorPlugin =>
    compactorPlugin({
      register,
      ...(config.summarizer === undefined ? {} : { summarizer: config.summarizer }),
      dataConverter: config.dataConverter ?? {},
      activities: { trajectoryDir, toolsRoot, toolsAllow, chatServer, chatTimeoutMs, summarizerContextWindow },
      // Checked once below, before any worker polls, so the result can say what was found.
      searchAttributes: 'skip',
      tracing: tracing ?? 'off',
      ...(config.log === undefined ? {} : { log: config.log }),
    });
  // From `temporalEnv` (where loadWorkerConfig puts the configuration, flags included), else the process's.
  const env = config.temporalEnv;
  const opened =
    config.connection === undefined
      ? await connectTemporal(readSettings(TEMPORAL_SETTING_KEYS, { env }), { kind: 'worker', env })
      : undefined;
  const connection = config.connection ?? opened?.connection;
  if (connection === undefined) throw new TypeError('createWorker: no connection');

  const namespace = config.namespace ?? opened?.namespace ?? DEFAULT_TEMPORAL_NAMESPACE;
  // Missing search attributes must not stop a run: the runs upsert only those the worker says exist.
  let searchAttributes: SearchAttributeSetup | undefined;
  if (mode !== 'activities') {
    searchAttributes = await ensureSearchAttributesIfAllowed(connection, namespace, {
      register: config.registerSearchAttributes !== false,
      warn: (warning) => (config.warn ?? console.error)(`temporal-compactor worker: ${warning}`),
    });
  }
  const common = {
    connection,
    namespace,
    // Unset is undefined, which the SDK reads as its default.
    maxConcurrentActivityTaskExecutions: config.maxConcurrentActivityTaskExecutions,
    maxConcurrentWorkflowTaskExecutions: config.maxConcurrentWorkflowTaskExecutions,
    shutdownGraceTime: parseDuration(config.shutdownGraceTime ?? DEFAULT_SHUTDOWN_GRACE_MS, 'shutdownGraceTime'),
  };
  const plans: WorkerOptions[] = [];
  if (mode === 'activities') plans.push({ ...common, taskQueue: summarizerTaskQueue, plugins: [plugin('activities')] });
  else {
    // A workflows-only worker still answers its workflows' `describeWorker` (its payload store is theirs).
    plans.push({ ...common, taskQueue, ...code, plugins: [plugin(mode === 'all' ? 'all' : 'workflows')] });
    if (mode === 'all' && summarizerTaskQueue !== taskQueue)
      plans.push({ ...common, taskQueue: summarizerTaskQueue, plugins: [plugin('activities')] });
  }

  try {
    const workers: Worker[] = [];
    for (const options of plans) workers.push(await Worker.create(options));
    return {
      workers,
      connection,
      taskQueues: plans.map((options) => options.taskQueue),
      searchAttributes,
      // The SDK's Runtime turns SIGINT/SIGTERM into shutdown() of every worker; run() resolves once they drained.
      run: async () => {
        try {
          await Promise.all(workers.map((worker) => worker.run()));
        } finally {
          if (opened !== undefined) await opened.connection.close();
        }
      },
      shutdown: () => workers.forEach((worker) => worker.shutdown()),
    };
  } catch (error) {
    if (opened !== undefined) await opened.connection.close();
    throw error;
  }
}

/** Loads the configuration from the environment, creates the worker and runs it until SIGINT/SIGTERM. */
export async function runWorker(
  env: Environment = process.env,
  flags: Readonly<Record<string, unknown>> = {},
): Promise<void> {
  const config = loadWorkerConfig(env, flags);
  // The metrics endpoint belongs to the SDK's Runtime, which must be set up before the first connection.
  if (config.prometheusAddress !== undefined) installTelemetryRuntime({ prometheusAddress: config.prometheusAddress });
  const tracing = createTracing(config.tracing ?? 'off', env);
  const { describeSummarizer: _summarizer, prometheusAddress: _metrics, ...workerConfig } = config;
  // Each worker's start line is the plugin's, as on any user's worker; the command adds what only it knows.
  const metrics = config.prometheusAddress === undefined ? '' : `; metrics: http://${config.prometheusAddress}/metrics`;
  const { run } = await createWorker({
    ...workerConfig,
    tracing: tracing ?? 'off',
    log: (line) => console.error(`${line}${metrics}; stop with Ctrl-C`),
  });
  await run();
  console.error('temporal-compactor worker: stopped');
}

if (isMain(import.meta.url)) {
  runWorker().catch((error: unknown) => {
    const message =
      error instanceof ConfigError || error instanceof TemporalConnectionError || error instanceof InstallError
        ? `configuration error: ${error.message}`
        : error instanceof Error
          ? (error.stack ?? error.message)
          : String(error);
    console.error(`temporal-compactor worker: ${message}`);
    process.exit(1);
  });
}
