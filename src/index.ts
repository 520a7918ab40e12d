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
export {
  createWorker,
  runWorker,
  loadWorkerConfig,
  connectFromEnvironment,
  workflowCode,
  TemporalConnectionError,
  type CompactorWorker,
  type CompactorWorkerConfig,
  type WorkerMode,
} from './worker.js';
export {
  loadConfig,
  summarizerFromConfig,
  configTable,
  configTableMarkdown,
  ConfigError,
  DEFAULT_TASK_QUEUE,
  DEFAULT_SUMMARIZER_MODEL,
  type CompactorConfig,
  type LoadConfigOptions,
  type ConfiguredSummarizer,
} from './config.js';
export { startDevServer, ensureSearchAttributes, DevServerStartError, type DevServer, type DevServerOptions } from './dev-server.js';
export { runDemo, type DemoOptions, type DemoOutcome } from './demo.js';
