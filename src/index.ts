// Node entry point (`temporal-compactor`): everything sandbox-safe plus the Node-only drivers.
export * from './workflow.js';
export { Compactor, type CompactorOptions, type CompactCallOptions } from './compactor.js';
export * from './summarizers/index.js';
// Activities and the worker (Node only: they do I/O and load the Temporal worker runtime).
export {
  createActivities,
  createSummarizeActivity,
  toSummarizerFailure,
  emptySummaryFailure,
  type ActivityDeps,
  type CompactorActivities,
  type SummarizeActivityDeps,
  type SummarizeActivityInput,
  type SummarizeActivityOutput,
  type SummarizerFailureDetails,
  createChatActivity,
  toChatFailure,
  createBuiltInTools,
  createReplayTool,
  createTrajectoryStore,
  DEFAULT_CHAT_TIMEOUT_MS,
  DEFAULT_TOOL_RESULT_CHARS,
  type ChatActivityInput,
  type ChatActivityOutput,
  type ChatActivityDeps,
  type ChatUsage,
  type ToolActivity,
  type BuiltInToolsOptions,
  type ReplayToolInput,
  type TrajectoryStore,
  type TrajectoryStoreOptions,
  createRecordSessionActivity,
  createCountTokensActivity,
  createDescribeWorkerActivity,
  type SessionBatchReceipt,
  type CountTokensInput,
  type CountTokensOutput,
  type DescribeWorkerOptions,
} from './activities/index.js';
export { readSession, readSessionLines, replayRun, readCompactionRecords, historyEvents, HISTORY_CHANNEL_ARGS, HISTORY_PAGE_EVENTS, SessionReadError, RECORD_SESSION_ACTIVITY, type ReadSessionOptions } from './session-reader.js';
export {
  searchAttributeStatus,
  addSearchAttributes,
  ensureSearchAttributesIfAllowed,
  searchAttributeWarning,
  searchAttributeTypeName,
  type SearchAttributeStatus,
  type SearchAttributeSetup,
  type HasOperatorService,
} from './search-attributes.js';
export { compactorPlugin, CompactorPlugin, compactorWorkflowsPath, workerBuildId, type CompactorPluginOptions, type PluginRegistration } from './plugin.js';
export {
  createTracing,
  tracingWorkflowInterceptorModules,
  StderrSpanExporter,
  DEFAULT_TRACING_SERVICE_NAME,
  type CompactorTracing,
  type CompactorTracingOptions,
  type TracingOption,
  type TracingSetting,
} from './telemetry/tracing.js';
export { installTelemetryRuntime, activityMetricsInterceptor, RuntimeAlreadyInstalledError, SUMMARIZER_LATENCY_BUCKETS_MS, type TelemetryRuntimeOptions } from './telemetry/metrics.js';
export { COMPACTION_SPAN_NAME, CompactionSpanAttribute, CompactionMetric, compactionResultKind, type CompactionResultKind } from './core/compaction/telemetry.js';
export {
  createWorker,
  runWorker,
  loadWorkerConfig,
  workflowCode,
  type CompactorWorker,
  type CompactorWorkerConfig,
  type WorkerMode,
} from './worker.js';
export { connectTemporal, TemporalConnectionError, type ConnectTemporalOptions, type TemporalConnection } from './temporal-connection.js';
export {
  loadConfig,
  readSettings,
  configTable,
  configTableMarkdown,
  ConfigError,
  DEFAULT_TASK_QUEUE,
  DEFAULT_SUMMARIZER_MODEL,
  type CompactorConfig,
  type LoadConfigOptions,
  type TemporalSettings,
} from './config.js';
export { summarizerFromConfig, type ConfiguredSummarizer } from './summarizers/from-config.js';
export { startDevServer, ensureSearchAttributes, DevServerStartError, type DevServer, type DevServerOptions } from './dev-server.js';
export { runDemo, type DemoOptions, type DemoOutcome } from './demo.js';
export { startCodecServer, DEFAULT_CODEC_SERVER_INLINE_LIMIT, type CodecServer, type CodecServerOptions } from './codec-server.js';
// Payloads by reference: the codec, the content-addressed chunk store (External Storage driver)
// and the data converter of a configuration (Node only: files, S3, crypto).
export {
  payloadConverterFromConfig,
  CompactorCodec,
  ChunkStoreDriver,
  FileBackend,
  S3Backend,
  keyringFromSettings,
  keyringOf,
  codecKey,
  defaultKeyId,
  parsePayloadStore,
  chunkBoundaries,
  CHUNK_STORE_DRIVER_NAME,
  CODEC_ENCODING,
  codecEnvelopeOf,
  PayloadDecodeError,
  PayloadKeyMissingError,
  ChunkIntegrityError,
  ChunkMissingError,
  collectGarbage,
  collectRetainedClaims,
  DEFAULT_GC_GRACE_MS,
  GarbageCollectionError,
  type GarbageReport,
  type CollectGarbageOptions,
  type RetainedClaims,
  type SweepableBackend,
  type ConfiguredPayloads,
  type PayloadConverterOptions,
  type CompactorCodecOptions,
  type CodecEnvelope,
  type ChunkStoreDriverOptions,
  type ChunkStoreStats,
  type ObjectBackend,
  type ObjectStat,
  type Keyring,
  type CodecKey,
  type PayloadStoreLocation,
} from './payloads/index.js';
