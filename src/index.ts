// Node entry point (`temporal-compactor`): the workflow API plus what runs on Node. Every export is
// listed in api/temporal-compactor.api.md (`npm run api:report`); tests import the rest by module path.
export * from './workflow.js';
// Compaction in this process (docs/design.md#compactor), and the summarizers.
export { Compactor, type CompactorOptions, type UndoCallOptions } from './compactor.js';
export type { TranscriptUndo } from './core/agent/undo.js';
export { createOpenAISummarizer } from './summarizers/openai.js';
export { createExtractiveSummarizer } from './summarizers/extractive.js';
// What a model summarizer sends for a request (docs/design.md#summarizer-request).
export { summarizerMessages } from './core/compaction/transcript.js';
// Workers: the plugin (workflows and activities on your own worker), or a whole worker of ours.
export { compactorPlugin, type CompactorPlugin, type CompactorPluginOptions } from './worker/plugin.js';
export { createWorker, type CompactorWorkerConfig } from './worker/create-worker.js';
// Configuration (environment and flags), and the SDK runtime that serves the metrics (docs/telemetry.md#metrics).
export { loadConfig, type CompactorConfig } from './config.js';
export { installTelemetryRuntime } from './telemetry/metrics.js';
// An agent run's transcript, read back from its histories.
export { readSession } from './client/session-reader.js';
