// Node only: `compactorPlugin()`, compaction for any Temporal worker and client in one line: our
// activities and workflows, the data converter on both ends, opt-in tracing and activity metrics.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ClientOptions } from '@temporalio/client';
import { noopMetricMeter, type DataConverter } from '@temporalio/common';
import { SimplePlugin } from '@temporalio/plugin';
import {
  Runtime,
  type BundleOptions,
  type ReplayWorkerOptions,
  type Worker,
  type WorkerOptions,
} from '@temporalio/worker';
import { createActivities, createDescribeWorkerActivity, type ActivityDeps } from '../activities/index.js';
import { loadConfig, readSettings, type CompactorConfig } from '../config.js';
import { summarizerFromConfig } from './summarizer-from-config.js';
import type { Summarizer } from '../core/types.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import { payloadConverterFromConfig } from '../payloads/index.js';
import { ensureSearchAttributesIfAllowed, type SearchAttributeSetup } from '../client/namespace-search-attributes.js';
import { activityMetricsInterceptor } from '../telemetry/metrics.js';
import { bundleHasTracing, createTracing, type CompactorTracing, type TracingOption } from '../telemetry/tracing.js';
import { workerStartLine, type WorkerStart } from './start-line.js';
import { withOurWorkflows } from './workflow-bundling.js';

export type PluginRegistration = 'all' | 'workflows' | 'activities';

export interface CompactorPluginOptions {
  /** Builds the data converter and, unless `summarizer` is given, the summarizer. @default loadConfig() */
  config?: CompactorConfig;
  /** @default the one the configuration selects */
  summarizer?: Summarizer;
  /** The activities' settings; what is not given comes from `config`, else the environment. */
  activities?: Omit<ActivityDeps, 'summarizer'>;
  /** Only the workflows (and their `describeWorker` activity), or only the activities (a summarizer worker). @default 'all' */
  register?: PluginRegistration;
  /** The data converter instead of the configuration's. */
  dataConverter?: DataConverter;
  /** At worker start, register our missing search attributes where allowed, only check, or skip. @default 'register' */
  searchAttributes?: 'register' | 'check' | 'skip';
  /** Where the plugin's warnings go. @default console.error */
  warn?: (message: string) => void;
  /** Where the worker's start line goes (its queue, summarizer, chat server, store, codec). @default console.error */
  log?: (line: string) => void;
  /** Called with what the start-up check found (tests, logs). */
  onSearchAttributes?: (setup: SearchAttributeSetup) => void;
  /**
   * OpenTelemetry on the worker and client: `off`, `otlp`, `console`, `{ spanProcessor }`, or another
   * plugin's `tracing` (one exporter shared); docs/telemetry.md. @default COMPACTOR_TRACING (`off`)
   */
  tracing?: TracingOption;
}

type ActivitySettingKey =
  'toolsRoot' | 'toolsAllow' | 'trajectoryDir' | 'openaiBaseUrl' | 'openaiApiKey' | 'summarizerContextWindow';

function given(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** What the activities were not given, from `config`, else only the settings needed from the environment. */
function withConfiguredSettings(
  deps: Omit<ActivityDeps, 'summarizer'>,
  config: CompactorConfig | undefined,
): Omit<ActivityDeps, 'summarizer'> {
  const server =
    deps.openai === undefined
      ? { baseURL: given(deps.chatServer?.baseURL), apiKey: given(deps.chatServer?.apiKey) }
      : undefined;
  const needed: ActivitySettingKey[] = (
    ['toolsRoot', 'toolsAllow', 'trajectoryDir', 'summarizerContextWindow'] as const
  ).filter((key) => deps[key] === undefined);
  if (server !== undefined && (server.baseURL === undefined || server.apiKey === undefined))
    needed.push('openaiBaseUrl', 'openaiApiKey');
  if (needed.length === 0) return deps;
  const settings: Partial<Pick<CompactorConfig, ActivitySettingKey>> = config ?? readSettings(needed);
  return {
    ...deps,
    toolsRoot: deps.toolsRoot ?? settings.toolsRoot,
    toolsAllow: deps.toolsAllow ?? settings.toolsAllow,
    trajectoryDir: deps.trajectoryDir ?? settings.trajectoryDir,
    summarizerContextWindow: deps.summarizerContextWindow ?? settings.summarizerContextWindow,
    chatServer:
      server === undefined
        ? deps.chatServer
        : { baseURL: server.baseURL ?? settings.openaiBaseUrl, apiKey: server.apiKey ?? settings.openaiApiKey },
  };
}

const PLUGIN_OPTION_KEYS = keysOf<CompactorPluginOptions>({
  config: true,
  summarizer: true,
  activities: true,
  register: true,
  dataConverter: true,
  searchAttributes: true,
  warn: true,
  log: true,
  onSearchAttributes: true,
  tracing: true,
});
const ACTIVITY_OPTION_KEYS = keysOf<Omit<ActivityDeps, 'summarizer'>>({
  model: true,
  summarizerContextWindow: true,
  openai: true,
  chatServer: true,
  chatTimeoutMs: true,
  toolsRoot: true,
  toolsAllow: true,
  trajectoryDir: true,
});
export const CHAT_SERVER_KEYS = keysOf<NonNullable<ActivityDeps['chatServer']>>({ baseURL: true, apiKey: true });

/** Worker options whose workflows are the worker's own (if any) and ours, in one bundle. */
function workerWithOurWorkflows<T extends { workflowsPath?: string; bundlerOptions?: WorkerOptions['bundlerOptions'] }>(
  options: T,
): T {
  const { workflowsPath, ...bundling } = withOurWorkflows({
    workflowsPath: options.workflowsPath,
    webpackConfigHook: options.bundlerOptions?.webpackConfigHook,
    preloadModules: options.bundlerOptions?.preloadModules,
  });
  return { ...options, workflowsPath, bundlerOptions: { ...options.bundlerOptions, ...bundling } };
}

export class CompactorPlugin extends SimplePlugin {
  private readonly registration: PluginRegistration;
  private readonly checked = new Set<string>();
  private readonly activityTypes: ReadonlySet<string>;
  readonly tracing: CompactorTracing | undefined;
  /** What the start line names, less the task queue. */
  private readonly uses: Omit<WorkerStart, 'queues'>;

  constructor(private readonly pluginOptions: CompactorPluginOptions = {}) {
    assertKnownKeys(pluginOptions, PLUGIN_OPTION_KEYS, 'options');
    assertKnownKeys(pluginOptions.activities, ACTIVITY_OPTION_KEYS, 'options.activities');
    assertKnownKeys(pluginOptions.activities?.chatServer, CHAT_SERVER_KEYS, 'options.activities.chatServer');
    let config = pluginOptions.config;
    const configured = (): CompactorConfig => (config ??= loadConfig());
    const registration = pluginOptions.register ?? 'all';
    const dataConverter = pluginOptions.dataConverter ?? payloadConverterFromConfig(configured()).dataConverter;
    const summarizer =
      registration === 'workflows'
        ? undefined
        : (pluginOptions.summarizer ?? summarizerFromConfig(configured()).summarizer);
    const deps =
      summarizer === undefined
        ? undefined
        : { ...withConfiguredSettings(pluginOptions.activities ?? {}, config), summarizer };
    const activities = deps === undefined ? { describeWorker: createDescribeWorkerActivity() } : createActivities(deps);
    const tracing = createTracing(pluginOptions.tracing ?? configured().tracing);
    super({ name: 'temporal-compactor', dataConverter, activities });
    this.registration = registration;
    this.activityTypes = new Set(Object.keys(activities));
    this.tracing = tracing;
    this.uses = {
      summarizer,
      chat:
        deps === undefined
          ? undefined
          : { baseURL: deps.openai?.baseURL ?? deps.chatServer?.baseURL, apiKey: deps.chatServer?.apiKey },
      dataConverter,
      more: tracing === undefined ? [] : [`tracing: ${tracing.describe}`],
    };
  }

  /**
   * Adds our workflows next to the worker's own (unless it runs only activities or a prebuilt bundle),
   * then tracing and our activities' metrics when on; a prebuilt bundle gets {@link workerBuildId}.
   * @throws Error when tracing is on and a prebuilt workflow bundle lacks the tracing interceptors.
   */
  override configureWorker(options: WorkerOptions): WorkerOptions {
    const base = super.configureWorker(options);
    const configured =
      this.registration === 'activities' || base.workflowBundle !== undefined ? base : workerWithOurWorkflows(base);
    // After our workflows are set: the tracing plugin adds its workflow interceptors only to a worker that bundles.
    const withTracing = this.tracing === undefined ? configured : this.tracing.plugin.configureWorker(configured);
    // A prebuilt bundle's code is read once, as bytes: decoded only for the tracing check (start-up time).
    const bundle = withTracing.workflowBundle;
    const code = bundle === undefined ? undefined : 'code' in bundle ? bundle.code : readFileSync(bundle.codePath);
    const traced = code === undefined ? withTracing : withShortBuildId(withTracing, code);
    if (this.tracing !== undefined && code !== undefined && !bundleHasTracing(code.toString()))
      throw new Error(
        'temporal-compactor: tracing is on (COMPACTOR_TRACING) but the prebuilt workflow bundle has no OpenTelemetry workflow interceptors, so workflow and compaction spans would be lost: rebuild it with tracing on (`temporal-compactor bundle --tracing otlp --out FILE`, or bundleWorkflowCode with plugins: [compactorPlugin({ tracing })])',
      );
    // Only a Runtime that exports metrics gets them: without one the interceptor would measure for nothing.
    if (Runtime.instance().metricMeter === noopMetricMeter) return traced;
    const interceptors = traced.interceptors ?? {};
    return {
      ...traced,
      interceptors: {
        ...interceptors,
        activity: [...(interceptors.activity ?? []), activityMetricsInterceptor(this.activityTypes)],
      },
    };
  }

  override configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const base = super.configureReplayWorker(options);
    const configured = base.workflowBundle !== undefined ? base : workerWithOurWorkflows(base);
    return this.tracing === undefined ? configured : this.tracing.plugin.configureReplayWorker(configured);
  }

  override configureClient(options: ClientOptions): ClientOptions {
    const configured = super.configureClient(options);
    return this.tracing === undefined ? configured : this.tracing.plugin.configureClient(configured);
  }

  /** `bundleWorkflowCode({ workflowsPath, plugins: [compactorPlugin()] })`: their workflows and ours in one bundle. */
  override configureBundler(options: BundleOptions): BundleOptions {
    const base = super.configureBundler(options);
    const configured = this.registration === 'activities' ? base : { ...base, ...withOurWorkflows(base) };
    return this.tracing === undefined ? configured : this.tracing.plugin.configureBundler(configured);
  }

  /** Hands the spans still buffered to the exporter (a worker does it when it stops; a short-lived client before it exits). */
  async flushTracing(): Promise<void> {
    await this.tracing?.flush();
  }

  /** Before the worker polls: our search attributes in its namespace, checked (and registered where allowed) once. */
  override async runWorker(worker: Worker, next: (worker: Worker) => Promise<void>): Promise<void> {
    const { connection, options } = worker;
    const mode = this.pluginOptions.searchAttributes ?? 'register';
    const unchecked = mode !== 'skip' && this.registration !== 'activities' && !this.checked.has(options.namespace);
    if (unchecked && connection !== undefined) {
      this.checked.add(options.namespace);
      const setup = await ensureSearchAttributesIfAllowed(connection, options.namespace, {
        register: mode === 'register',
        warn: (warning) => (this.pluginOptions.warn ?? console.error)(`temporal-compactor: ${warning}`),
      });
      this.pluginOptions.onSearchAttributes?.(setup);
    }
    const queues = [{ taskQueue: options.taskQueue, runs: this.registration }];
    (this.pluginOptions.log ?? console.error)(workerStartLine({ ...this.uses, queues }));
    try {
      return await super.runWorker(worker, next);
    } finally {
      await this.flushTracing();
    }
  }
}

/** 12 hex digits of the bundle's SHA-256: history records a build id in several events a round; the SDK's is 90 bytes. */
export function workerBuildId(bundleCode: string | Uint8Array): string {
  return createHash('sha256').update(bundleCode).digest('hex').slice(0, 12);
}

/** {@link workerBuildId} unless the worker chose a build id or versioning of its own. */
function withShortBuildId(options: WorkerOptions, code: string | Uint8Array): WorkerOptions {
  if (options.buildId !== undefined || options.useVersioning === true || options.workerDeploymentOptions !== undefined)
    return options;
  return { ...options, buildId: workerBuildId(code) };
}

/** {@link CompactorPlugin}: `plugins: [compactorPlugin()]` on `Worker.create` and on `new Client`. */
export function compactorPlugin(options: CompactorPluginOptions = {}): CompactorPlugin {
  return new CompactorPlugin(options);
}
