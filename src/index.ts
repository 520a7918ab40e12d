// Node entry point (`temporal-compactor`): the whole workflow API (`temporal-compactor/workflow`)
// plus what runs on Node — the in-process `Compactor`, the summarizers, the activities, the plugin
// and the worker, configuration and the connection to Temporal, reading a transcript from history,
// the payload store and its codec server and garbage collection, tracing and metrics. Every export is
// listed in api/temporal-compactor.api.md (`npm run api:report`); keep this entry at 60 runtime names
// or fewer (test/api-report.test.ts). The package's own tests, benchmarks and scripts import
// everything else by module path.
export * from './workflow.js';
// Compaction in this process (docs/design.md#compactor), and the summarizers.
export { Compactor, type CompactorOptions, type CompactCallOptions } from './compactor.js';
export {
  createOpenAISummarizer,
  createExtractiveSummarizer,
  type OpenAISummarizerOptions,
  type ExtractiveSummarizerOptions,
} from './summarizers/index.js';
// What a model summarizer sends for a request (docs/design.md#summarizer-request).
export { summarizerMessages } from './core/compaction/transcript.js';
// Workers: the plugin (workflows and activities on your own worker), or a whole worker of ours.
export {
  compactorPlugin,
  compactorWorkflowsPath,
  workerBuildId,
  type CompactorPlugin,
  type CompactorPluginOptions,
  type PluginRegistration,
} from './worker/plugin.js';
export { createActivities, type ActivityDeps, type CompactorActivities } from './activities/index.js';
export {
  createWorker,
  runWorker,
  type CompactorWorker,
  type CompactorWorkerConfig,
  type WorkerMode,
} from './worker/create-worker.js';
// Configuration (environment and flags) and the connection it describes.
export {
  loadConfig,
  ConfigError,
  type CompactorConfig,
  type LoadConfigOptions,
  type TemporalSettings,
} from './config.js';
export {
  connectTemporal,
  TemporalConnectionError,
  type ConnectTemporalOptions,
  type TemporalConnection,
} from './worker/temporal-connection.js';
// An agent run's transcript, read back from its histories.
export { readSession, SessionReadError, type ReadSessionOptions } from './client/session-reader.js';
// Payloads by reference: the data converter of a configuration (codec + chunk store), the codec
// server for the Temporal UI and CLI, and the store's garbage collection.
export {
  payloadConverterFromConfig,
  collectGarbage,
  collectRetainedClaims,
  type PayloadSettings,
  type PayloadConverterOptions,
  type ConfiguredPayloads,
  type PayloadStoreLocation,
  type CompactorCodec,
  type ChunkStoreDriver,
  type ChunkStoreDriverOptions,
  type CollectGarbageOptions,
  type GarbageReport,
  type RetainedClaims,
  type RetainedClaimsOptions,
} from './payloads/index.js';
export { startCodecServer, type CodecServer, type CodecServerOptions } from './payloads/codec-server.js';
// Tracing and metrics: the setup and the names of the spans and metrics.
export {
  createTracing,
  tracingWorkflowInterceptorModules,
  type CompactorTracing,
  type CompactorTracingOptions,
  type TracingOption,
  type TracingSetting,
} from './telemetry/tracing.js';
export { installTelemetryRuntime, type TelemetryRuntimeOptions } from './telemetry/metrics.js';
export { COMPACTION_SPAN_NAME, CompactionSpanAttribute, CompactionMetric } from './core/compaction/telemetry.js';
