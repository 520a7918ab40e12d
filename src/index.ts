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
} from './activities/index.js';
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
