// Sandbox-safe entry point (`temporal-compactor/workflow`): the pure core and the workflow driver,
// usable in workflow code. Nothing here may import Node modules (the linter enforces it).
export * from './core/types.js';
export * from './core/errors.js';
export { isSticky, toProviderMessages, validateMessages } from './core/schema.js';
export { resolveOptions, parseDuration, backoffDelayMs, REFERENCE_EXACT, type ElisionEpochs, type ElisionEndsPass, type CompactionOptions, type ResolvedOptions, type Duration, type CallOverrides } from './core/compaction/options.js';
export { createCharCounter, defaultCounter, messageChars, contentText, type CharCounterOptions } from './core/counting/tokens.js';
export { elisionStub, isStub, canonicalArguments, planElisions, applyElisions } from './core/compaction/elision.js';
export { findRegions, findCut, removableMask, toolGroups } from './core/compaction/regions.js';
export { SUMMARY_INSTRUCTION, tooLongInstruction, renderTranscript, summarizeRequest, summaryContent, isSummaryMessage, capText } from './core/compaction/transcript.js';
export { SUMMARY_ROOM_SHARE } from './core/compaction/economics.js';
export { compactionSteps, needsCompactionCore, hardTrim, runCompactionSteps, type SummarizeStep, type SummarizeOutcome, type CompactionSteps } from './core/compaction/engine.js';
export {
  compact,
  compactWithUsage,
  needsCompaction,
  summarizeActivitySummary,
  ECONOMICS_PATCH_ID,
  DEFAULT_START_TO_CLOSE_TIMEOUT_MS,
  DEFAULT_HEARTBEAT_TIMEOUT_MS,
  type CompactOptions,
  type CompactionWithUsage,
  type SummarizeActivitySettings,
} from './workflows/compact.js';
export { compactConversation, type CompactConversationInput, type CompactConversationOptions } from './workflows/compact-conversation.js';
export { invalidInputFailure, type InvalidInputDetails } from './shared/failures.js';
export {
  applySessionLine,
  parseSessionJsonl,
  recordCompaction,
  replaySession,
  replaySessionStream,
  summaryId,
  toJsonl,
  type SessionLine,
  type SessionEntry,
  type MessageLine,
  type CompactionLine,
  type CompactionLineContext,
  type ElisionLine,
  type SessionReference,
  type SessionSnapshot,
  type SessionBatch,
} from './core/agent/session.js';
export { DEFAULT_PAYLOAD_LIMIT_BYTES, jsonPayloadBytes, utf8Length, type PayloadTooLargeDetails } from './core/limits/payload-size.js';
export { assertTaskQueueName, TASK_QUEUE_MAX_BYTES } from './core/limits/task-queue.js';
export { COMPACTOR_SEARCH_ATTRIBUTES, COMPACTOR_SEARCH_ATTRIBUTE_NAMES, SearchAttributeKeys, type CompactorSearchAttributeName } from './shared/search-attributes.js';
export { UNDESCRIBED_WORKER, type WorkerDescription } from './shared/worker-description.js';
export { describeWorker } from './workflows/describe-worker.js';
// The agent loop (docs/design.md#agent-run): the workflow, its input, its compaction history and its failures.
export {
  agentRun,
  addUserMessageUpdate,
  stopUpdate,
  sessionQuery,
  compactionsQuery,
  conversationQuery,
  type AgentRunResult,
  type AgentRunWorkflowInput,
  type AgentRunCarried,
  CARRIED_STATE_VERSION,
  SESSION_BATCH_BYTES,
  WORKFLOW_COUNT_CHARS,
  type AddUserMessageInput,
  type ContextExhaustedDetails,
  type StopReason,
  type StopAnswer,
  type BackendStatus,
  type RequestShape,
} from './workflows/agent-run.js';
export {
  planAgentRun,
  pinTask,
  validateAgentMessages,
  AGENT_MAXIMUM_RETRY_INTERVAL_MS,
  DEFAULT_MAX_ROUNDS,
  DEFAULT_BACKEND_COOLDOWN_ROUNDS,
  type BackendCooldown,
  type AgentRunInput,
  type AgentRunPlan,
  type AgentActivitySettings,
  type AgentCompactionOptions,
  type ModelConfig,
  type OpenAIModelConfig,
  type ReplayModelConfig,
  type ResolvedBackend,
  type Tokenizer,
} from './core/agent/agent-input.js';
export { ChatFailureType, ReplayFailureType, ToolFailureType, RunFailureType, UpdateFailureType } from './core/agent/agent-errors.js';
export {
  renderCompactionTable,
  renderCompactionDetails,
  agentRunStaticMetadata,
  describeRunUsage,
  compactionRecord,
  compactionKind,
  compactionRecordsFromSession,
  addCompactionRecord,
  emptyCompactionHistory,
  groupDigits,
  COMPACTION_TABLE_HEADER,
  compactionLine,
  RECENT_COMPACTIONS,
  type CompactionRecord,
  type CompactionKind,
  type CompactionHistory,
  type CompactionTotals,
  type CompactionContext,
} from './core/agent/compaction-history.js';
export { DEFAULT_PRICING, emptyRunUsage, addRoundUsage, addSummarizerUsage, type Pricing, type RoundUsage, type RunUsage } from './core/agent/run-usage.js';
export { addSummarizerRequest, type SummarizerUsage } from './core/counting/summarizer-usage.js';
export { backendCounter, preflight, requestCounter, tokenizerCounter, type BackendCounter, type PreflightResult } from './core/agent/preflight.js';
export { replayScript, openingMessages, type ReplayScript, type RecordedTurn } from './core/agent/trajectory.js';
export { BUILT_IN_TOOLS, BUILT_IN_TOOL_NAMES, isBuiltInToolName, type BuiltInToolName } from './core/agent/tool-declarations.js';
export { UsageCounter, type UsageCounterOptions, type UsageCounterState, type UsageCalibrationState } from './core/counting/usage-counter.js';
export { createBpeCounter, countTextTokens, messageTexts, BPE_ENCODING_NAMES, type BpeCounterOptions, type BpeEncodingName, type TextTokenCounts } from './core/counting/bpe-counter.js';
export { withRequestFraming, type RequestCounter, type RequestFramingOptions } from './core/counting/request-counter.js';
export { digestMessages, sha256Hex } from './core/counting/digest.js';
