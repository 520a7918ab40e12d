// Sandbox-safe entry point (`temporal-compactor/workflow`): the workflow API — `compact` and
// `needsCompaction` for your own workflows, the workflows `compactConversation` and `agentRun` with
// their inputs, results, queries and updates, the counters a workflow may count with, reading a
// transcript back, and every failure type. Nothing here may import Node modules (the linter
// enforces it). The engine's parts are not an entry point: the package's own tests, benchmarks and
// scripts import them by module path. Every export is listed in api/temporal-compactor-workflow.api.md
// (`npm run api:report`); keep this entry at 40 runtime names or fewer (test/api-report.test.ts).
export type * from './core/types.js';
// Failure types (docs/design.md#failure-types): list them in `nonRetryableErrorTypes`, match them on a caught failure.
export { FailureType, InvalidInputError, SummarizerError, type SummarizerFailureKind } from './core/errors.js';
export type { InvalidInputDetails } from './shared/failures.js';
export type { PayloadTooLargeDetails } from './core/limits/payload-size.js';
// Messages and options.
export { toProviderMessages, validateMessages } from './core/schema.js';
export {
  REFERENCE_EXACT,
  type ElisionEpochs,
  type SummaryCoverage,
  type ElisionEndsPass,
  type CompactionOptions,
  type Duration,
  type CallOverrides,
} from './core/compaction/options.js';
// Message formats (docs/compaction.md#formats): Anthropic Messages and AI SDK messages in and out, beside OpenAI chat.
export type { MessageFormat, FormatOption, Conversation, AnyCompactionResult } from './core/formats/format.js';
export type {
  AnthropicMessage,
  AnthropicBlock,
  AnthropicTextBlock,
  AnthropicToolUseBlock,
  AnthropicToolResultBlock,
  AnthropicOtherBlock,
  AnthropicRequest,
  AnthropicConversation,
} from './core/formats/anthropic-schema.js';
export type { AnthropicCompactionResult, AnthropicElision } from './core/formats/anthropic.js';
export type {
  AiSdkMessage,
  AiSdkPart,
  AiSdkTextPart,
  AiSdkToolCallPart,
  AiSdkToolResultPart,
  AiSdkToolResultOutput,
  AiSdkOtherPart,
} from './core/formats/ai-sdk-schema.js';
export type { AiSdkCompactionResult } from './core/formats/ai-sdk.js';
export type { PartElision } from './core/formats/view.js';
// Compaction inside any workflow (docs/design.md#workflow-compact).
export {
  compact,
  needsCompaction,
  planCompaction,
  type CompactOptions,
  type SummarizeActivitySettings,
} from './workflows/compact.js';
// The AI SDK's language-model middleware (docs/compaction.md#ai-sdk-middleware).
export {
  compactionMiddleware,
  type CompactionMiddleware,
  type CompactionMiddlewareOptions,
  type PromptCallOptions,
} from './workflows/ai-sdk-middleware.js';
// Counters (docs/design.md#counting): deterministic, so a workflow may count with them.
export { createCharCounter, defaultCounter, type CharCounterOptions } from './core/counting/tokens.js';
export { createBpeCounter, type BpeCounterOptions, type BpeEncodingName } from './core/counting/bpe-counter.js';
export {
  UsageCounter,
  type UsageCounterOptions,
  type UsageCounterState,
  type UsageCalibrationState,
} from './core/counting/usage-counter.js';
export {
  withRequestFraming,
  type RequestCounter,
  type RequestFramingOptions,
  type ToolDeclaration,
} from './core/counting/request-counter.js';
export type { SummarizerUsage } from './core/counting/summarizer-usage.js';
// The workflow `compactConversation` (docs/design.md#compact-conversation).
export {
  compactConversation,
  type CompactConversationInput,
  type CompactConversationOptions,
} from './workflows/compact-conversation.js';
// The agent loop `agentRun` (docs/design.md#agent-run): the workflow, its definitions, its input and compaction history.
export { agentRun } from './workflows/agent-run.js';
export {
  addUserMessageUpdate,
  stopUpdate,
  sessionQuery,
  compactionsQuery,
  conversationQuery,
  agentRunSteering,
  type CompactAnswer,
  type CompactionProposal,
  type CompactionReview,
  type CompactUpdateInput,
  type NothingCompacted,
  type PinUpdateInput,
  type Pins,
  type ReviewAnswer,
  type ReviewCompactionInput,
  type AgentRunResult,
  type AgentRunWorkflowInput,
  type AddUserMessageInput,
  type ContextExhaustedDetails,
  type StopReason,
  type StopAnswer,
  type BackendStatus,
} from './shared/agent-run.js';
export type {
  BackendCooldown,
  AgentRunInput,
  AgentActivitySettings,
  AgentCompactionOptions,
  ModelConfig,
  OpenAIModelConfig,
  ReplayModelConfig,
  Tokenizer,
} from './core/agent/agent-input.js';
export type { BuiltInToolName } from './core/agent/tool-declarations.js';
export {
  compactionRecordsFromSession,
  type CompactionRecord,
  type CompactionKind,
  type CompactionHistory,
  type CompactionTotals,
} from './core/agent/compaction-history.js';
export type { Pricing, RoundUsage, RunUsage } from './core/agent/run-usage.js';
// The transcript an agent run writes (docs/design.md#transcript-format), and replaying it.
export {
  parseSessionJsonl,
  replaySession,
  replaySessionStream,
  type SessionLine,
  type MessageLine,
  type CompactionLine,
  type CompactionLineContext,
  type ElisionLine,
  type PinLine,
  type ReviewOutcome,
  type SessionEntry,
  type SessionReference,
  type SessionSnapshot,
} from './core/agent/session.js';
// The search attributes an agent run sets (docs/design.md#search-attributes), for your visibility queries.
export { SearchAttributeKeys, type CompactorSearchAttributeName } from './shared/search-attributes.js';
