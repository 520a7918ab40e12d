// Node only: the compactor worker (DESIGN §6). Runs the workflows (`compactConversation`, and
// `compact` inside them) and the `summarize` activity. Runnable as `tsx src/worker.ts` or
// `node dist/worker.js`; configured from the environment (see `loadWorkerConfig`).
import { existsSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { WorkerOptions } from '@temporalio/worker';
import { createActivities } from './activities/index.js';
import { parseDuration, type Duration } from './core/options.js';
import type { Summarizer } from './core/types.js';
import { createOpenAISummarizer } from './summarizers/openai.js';

/** @default 'compactor' */
export const DEFAULT_TASK_QUEUE = 'compactor';

/** What a worker polls for: workflows and activities (one queue does it all), or one kind only. */
export type WorkerMode = 'all' | 'workflows' | 'activities';

/** Configuration of {@link createWorker}. Every field has a default or comes from the environment. */
export interface CompactorWorkerConfig {
  /** A connection to reuse (it stays open). @default one from `@temporalio/envconfig` (TEMPORAL_ADDRESS, TEMPORAL_API_KEY, TLS) */
  connection?: NativeConnection;
  /** @default the envconfig namespace (TEMPORAL_NAMESPACE), else 'default' */
  namespace?: string;
  /** @default 'compactor' */
  taskQueue?: string;
  /**
   * `activities` runs only the summarize activity: point workflows' `taskQueue` option at this
   * worker's queue so summarizer capacity and provider rate limits scale apart from the agents.
   * @default 'all'
   */
  mode?: WorkerMode;
  /** The summarizer backend. @default an OpenAI-compatible one for `model` (OPENAI_BASE_URL, OPENAI_API_KEY) */
  summarizer?: Summarizer;
  /** The summarizer model, when `summarizer` is not given. Required then in modes `all` and `activities`. */
  model?: string;
  /** Deadline of one summarizer request in ms; keep it below the activity's startToCloseTimeout (5 min by default). @default 60_000 */
  summarizerTimeoutMs?: number;
  /** A prebuilt workflow bundle (`npm run build:bundle`). @default `workflow-bundle.js` next to this module when it exists */
  workflowBundlePath?: string;
  /** Workflows to bundle at start-up when there is no prebuilt bundle. @default this package's `workflows/index` */
  workflowsPath?: string;
  /** Activities (summarizer requests) this worker runs at once. @default the SDK's (100) */
  maxConcurrentActivityTaskExecutions?: number;
  /** Workflow tasks this worker runs at once. @default the SDK's (40) */
  maxConcurrentWorkflowTaskExecutions?: number;
  /** On SIGINT/SIGTERM, how long in-flight activities may finish before they are cancelled. @default '10s' */
  shutdownGraceTime?: Duration;
}

/** A configuration problem found at start-up; `variable` names the environment variable (or option) at fault. */
export class WorkerConfigError extends Error {
  override readonly name = 'WorkerConfigError';
  constructor(
    readonly variable: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${variable}: ${reason}`, options);
  }
}

type Environment = Readonly<Record<string, string | undefined>>;

function nonEmpty(env: Environment, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function positiveInteger(env: Environment, name: string): number | undefined {
  const text = nonEmpty(env, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0) throw new WorkerConfigError(name, `must be a positive integer, got ${JSON.stringify(text)}`);
  return value;
}

const workerModes: readonly WorkerMode[] = ['all', 'workflows', 'activities'];

function isWorkerMode(value: string): value is WorkerMode {
  return workerModes.some((mode) => mode === value);
}

/**
 * Reads the worker configuration from environment variables (the Temporal connection itself is
 * `@temporalio/envconfig`'s: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*,
 * TEMPORAL_PROFILE):
 *
 * | variable | meaning | default |
 * |---|---|---|
 * | COMPACTOR_TASK_QUEUE | task queue | `compactor` |
 * | COMPACTOR_WORKER_MODE | `all`, `workflows` or `activities` | `all` |
 * | COMPACTOR_SUMMARIZER_MODEL | the model that writes summaries | required unless mode is `workflows` |
 * | OPENAI_BASE_URL, OPENAI_API_KEY | the OpenAI-compatible endpoint | api.openai.com |
 * | COMPACTOR_SUMMARIZER_TIMEOUT_MS | one summarizer request's deadline | 60000 |
 * | COMPACTOR_WORKFLOW_BUNDLE | path of a prebuilt workflow bundle | `workflow-bundle.js` beside the worker |
 * | COMPACTOR_MAX_CONCURRENT_ACTIVITIES | activities at once | SDK default |
 * | COMPACTOR_MAX_CONCURRENT_WORKFLOW_TASKS | workflow tasks at once | SDK default |
 * | COMPACTOR_SHUTDOWN_GRACE_TIME | grace for in-flight activities on shutdown | `10s` |
 *
 * @throws WorkerConfigError naming the variable.
 */
export function loadWorkerConfig(env: Environment = process.env): CompactorWorkerConfig {
  const mode = nonEmpty(env, 'COMPACTOR_WORKER_MODE') ?? 'all';
  if (!isWorkerMode(mode)) throw new WorkerConfigError('COMPACTOR_WORKER_MODE', `must be one of ${workerModes.join(', ')}, got ${JSON.stringify(mode)}`);
  const model = nonEmpty(env, 'COMPACTOR_SUMMARIZER_MODEL');
  if (mode !== 'workflows' && model === undefined) {
    throw new WorkerConfigError('COMPACTOR_SUMMARIZER_MODEL', 'is required: the model that writes summaries (e.g. gpt-4o-mini)');
  }
  const workflowBundlePath = nonEmpty(env, 'COMPACTOR_WORKFLOW_BUNDLE');
  if (workflowBundlePath !== undefined && !existsSync(workflowBundlePath)) {
    throw new WorkerConfigError('COMPACTOR_WORKFLOW_BUNDLE', `no file at ${workflowBundlePath} (build one with npm run build:bundle)`);
  }
  const graceText = nonEmpty(env, 'COMPACTOR_SHUTDOWN_GRACE_TIME');
  const shutdownGraceTime =
    graceText === undefined ? undefined : asConfigError('COMPACTOR_SHUTDOWN_GRACE_TIME', () => parseDuration(graceText, 'COMPACTOR_SHUTDOWN_GRACE_TIME'));
  return {
    taskQueue: nonEmpty(env, 'COMPACTOR_TASK_QUEUE') ?? DEFAULT_TASK_QUEUE,
    mode,
    model,
    summarizerTimeoutMs: positiveInteger(env, 'COMPACTOR_SUMMARIZER_TIMEOUT_MS'),
    workflowBundlePath,
    maxConcurrentActivityTaskExecutions: positiveInteger(env, 'COMPACTOR_MAX_CONCURRENT_ACTIVITIES'),
    maxConcurrentWorkflowTaskExecutions: positiveInteger(env, 'COMPACTOR_MAX_CONCURRENT_WORKFLOW_TASKS'),
    shutdownGraceTime,
  };
}

function asConfigError<T>(variable: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof WorkerConfigError) throw error;
    throw new WorkerConfigError(variable, error instanceof Error ? error.message : String(error), { cause: error });
  }
}

/** The workflow code: a prebuilt bundle when there is one (production), else the workflows' source to bundle now. */
export function workflowCode(config: Pick<CompactorWorkerConfig, 'workflowBundlePath' | 'workflowsPath'>): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (config.workflowBundlePath !== undefined) {
    if (!existsSync(config.workflowBundlePath)) throw new WorkerConfigError('workflowBundlePath', `no file at ${config.workflowBundlePath}`);
    return { workflowBundle: { codePath: config.workflowBundlePath } };
  }
  if (config.workflowsPath !== undefined) return { workflowsPath: config.workflowsPath };
  const prebuilt = fileURLToPath(new URL('./workflow-bundle.js', import.meta.url));
  if (existsSync(prebuilt)) return { workflowBundle: { codePath: prebuilt } };
  const source = ['./workflows/index.js', './workflows/index.ts'].map((path) => fileURLToPath(new URL(path, import.meta.url))).find((path) => existsSync(path));
  if (source === undefined) throw new WorkerConfigError('workflowsPath', 'found neither a workflow bundle nor workflows/index beside the worker');
  return { workflowsPath: source };
}

/** A created worker and the connection it polls on. */
export interface CompactorWorker {
  worker: Worker;
  connection: NativeConnection;
  taskQueue: string;
  /** Runs until shutdown (SIGINT/SIGTERM or `worker.shutdown()`), then closes the connection if this module opened it. */
  run(): Promise<void>;
}

/** Connects with `@temporalio/envconfig` (env vars and the Temporal config file). */
export async function connectFromEnvironment(): Promise<{ connection: NativeConnection; namespace: string | undefined }> {
  const { connectionOptions, namespace } = asConfigError('TEMPORAL_CONFIG_FILE', () => loadClientConnectConfig());
  const address = connectionOptions.address ?? 'localhost:7233';
  try {
    return { connection: await NativeConnection.connect(connectionOptions), namespace };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new WorkerConfigError('TEMPORAL_ADDRESS', `cannot connect to the Temporal server at ${address}: ${reason}`, { cause: error });
  }
}

function summarizerFor(config: CompactorWorkerConfig): Summarizer {
  if (config.summarizer !== undefined) return config.summarizer;
  if (config.model === undefined) throw new WorkerConfigError('COMPACTOR_SUMMARIZER_MODEL', 'is required: the model that writes summaries (or pass a summarizer)');
  const { model, summarizerTimeoutMs } = config;
  return asConfigError('OPENAI_API_KEY', () =>
    createOpenAISummarizer(summarizerTimeoutMs === undefined ? { model } : { model, timeout: summarizerTimeoutMs }),
  );
}

/**
 * Creates a compactor worker. Summarizer clients are built here, on the worker: API keys never
 * enter workflow inputs, results or history.
 *
 * @example
 * const { run } = await createWorker({ taskQueue: 'compactor', model: 'gpt-4o-mini' });
 * await run(); // until SIGINT/SIGTERM
 */
export async function createWorker(config: CompactorWorkerConfig = {}): Promise<CompactorWorker> {
  const mode = config.mode ?? 'all';
  const taskQueue = config.taskQueue ?? DEFAULT_TASK_QUEUE;
  if (taskQueue.trim() === '') throw new WorkerConfigError('COMPACTOR_TASK_QUEUE', 'must not be empty');
  const activities = mode === 'workflows' ? undefined : createActivities({ summarizer: summarizerFor(config) });
  const code = mode === 'activities' ? {} : workflowCode(config);
  const opened = config.connection === undefined ? await connectFromEnvironment() : undefined;
  const connection = config.connection ?? opened?.connection;
  if (connection === undefined) throw new WorkerConfigError('TEMPORAL_ADDRESS', 'no connection');
  try {
    const worker = await Worker.create({
      connection,
      namespace: config.namespace ?? opened?.namespace ?? 'default',
      taskQueue,
      ...code,
      ...(activities === undefined ? {} : { activities }),
      ...(config.maxConcurrentActivityTaskExecutions === undefined ? {} : { maxConcurrentActivityTaskExecutions: config.maxConcurrentActivityTaskExecutions }),
      ...(config.maxConcurrentWorkflowTaskExecutions === undefined ? {} : { maxConcurrentWorkflowTaskExecutions: config.maxConcurrentWorkflowTaskExecutions }),
      shutdownGraceTime: config.shutdownGraceTime ?? '10s',
    });
    return {
      worker,
      connection,
      taskQueue,
      // The SDK's Runtime already turns SIGINT/SIGTERM into `worker.shutdown()`; run() resolves once drained.
      run: async () => {
        try {
          await worker.run();
        } finally {
          if (opened !== undefined) await opened.connection.close();
        }
      },
    };
  } catch (error) {
    if (opened !== undefined) await opened.connection.close();
    throw error;
  }
}

/** Loads the configuration from the environment, creates the worker and runs it until SIGINT/SIGTERM. */
export async function runWorker(env: Environment = process.env): Promise<void> {
  const config = loadWorkerConfig(env);
  const { run, taskQueue } = await createWorker(config);
  console.error(`temporal-compactor worker: polling task queue "${taskQueue}" (mode ${config.mode ?? 'all'}); stop with Ctrl-C`);
  await run();
  console.error('temporal-compactor worker: stopped');
}

function isMain(moduleUrl: string): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

if (isMain(import.meta.url)) {
  runWorker().catch((error: unknown) => {
    const message = error instanceof WorkerConfigError ? `configuration error: ${error.message}` : error instanceof Error ? (error.stack ?? error.message) : String(error);
    console.error(`temporal-compactor worker: ${message}`);
    process.exit(1);
  });
}
