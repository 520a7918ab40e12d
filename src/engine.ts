// Sandbox-safe entry point (`temporal-compactor/engine`): the compaction engine's parts, for code
// that builds on them rather than calling `compact` — the step machine both drivers run, regions,
// elision, the summarizer's transcript, option resolution, the agent loop's pure parts (its plan,
// preflight, compaction history and cost, the transcript's lines), digests and payload sizes.
// Nothing here may import Node modules (the linter enforces it). What most callers need is the
// workflow API (`temporal-compactor/workflow`, src/workflow.ts).
export { ABORT_STATUSES, classifyError, classifyStatus, retryAfterOf, statusOf, type FailureClass } from './core/errors.js';
// One pass (docs/design.md#pass): the step machine, its regions, elision, the transcript, the economic rules.
export { compactionSteps, needsCompactionCore, hardTrim, runCompactionSteps, type SummarizeStep, type SummarizeOutcome, type CompactionSteps } from './core/compaction/engine.js';
export { findRegions, findCut, removableMask, toolGroups } from './core/compaction/regions.js';
export { elisionStub, isStub, canonicalArguments, planElisions, applyElisions } from './core/compaction/elision.js';
export { SUMMARY_INSTRUCTION, tooLongInstruction, renderTranscript, summarizeRequest, summaryContent, isSummaryMessage, capText } from './core/compaction/transcript.js';
export { SUMMARY_ROOM_SHARE } from './core/compaction/economics.js';
export { resolveOptions, parseDuration, backoffDelayMs, type ResolvedOptions } from './core/compaction/options.js';
export { summarizeActivitySummary } from './workflows/compact.js';
// Counting's parts (docs/design.md#counting).
export { messageChars, contentText } from './core/counting/tokens.js';
export { countTextTokens, messageTexts, type TextTokenCounts } from './core/counting/bpe-counter.js';
export { digestMessages, sha256Hex } from './core/counting/digest.js';
export { addSummarizerRequest } from './core/counting/summarizer-usage.js';
// The agent loop's pure parts (docs/design.md#agent-run).
export { planAgentRun, pinTask, validateAgentMessages, type AgentRunPlan, type ResolvedBackend } from './core/agent/agent-input.js';
export { backendCounter, preflight, requestCounter, tokenizerCounter, type BackendCounter, type PreflightResult } from './core/agent/preflight.js';
export {
  renderCompactionTable,
  renderCompactionDetails,
  agentRunStaticMetadata,
  describeRunUsage,
  compactionRecord,
  compactionKind,
  addCompactionRecord,
  emptyCompactionHistory,
  groupDigits,
  COMPACTION_TABLE_HEADER,
  compactionLine,
  RECENT_COMPACTIONS,
  type CompactionContext,
} from './core/agent/compaction-history.js';
export { emptyRunUsage, addRoundUsage, addSummarizerUsage } from './core/agent/run-usage.js';
export { applySessionLine, recordCompaction, summaryId, type SessionEntry } from './core/agent/session.js';
export { replayScript, openingMessages, type ReplayScript, type RecordedTurn } from './core/agent/trajectory.js';
export { isBuiltInToolName } from './core/agent/tool-declarations.js';
export { CARRIED_STATE_VERSION, type AgentRunCarried, type RequestShape } from './shared/agent-run.js';
export { CONTEXT_TOKENS_PATCH_ID, LONG_RUN_PATCH_ID } from './workflows/agent/patches.js';
export { SESSION_BATCH_BYTES, STORED_SESSION_BATCH_BYTES } from './workflows/agent/transcript-writer.js';
export { WORKFLOW_COUNT_CHARS } from './workflows/agent/token-cache.js';
// What the server accepts (docs/design.md#payload-limits).
export { DEFAULT_PAYLOAD_LIMIT_BYTES, jsonPayloadBytes, utf8Length } from './core/limits/payload-size.js';
export { assertTaskQueueName, TASK_QUEUE_MAX_BYTES } from './core/limits/task-queue.js';
// What a workflow asks its worker (docs/design.md#describe-worker).
export { describeWorker } from './workflows/describe-worker.js';
export { UNDESCRIBED_WORKER } from './shared/worker-description.js';
