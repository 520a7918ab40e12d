// Sandbox-safe entry point (`temporal-compactor/workflow`): what a workflow calls and the types a
// user's code names. Every export is listed in api/temporal-compactor-workflow.api.md (`npm run api:report`).

// Compaction inside any workflow (docs/design.md#workflow-compact), and its options.
export { compact, needsCompaction, planCompaction } from './workflows/compact.js';
export type { CompactOptions } from './workflows/compact-options.js';
export { REFERENCE_EXACT, type CompactionOptions } from './core/compaction/options.js';
// Messages (docs/design.md#messages), and a compaction's result.
export type {
  ChatMessage,
  ContentPart,
  ToolCall,
  CompactionResult,
  FallbackReason,
  CompactionPlan,
  Summarizer,
  SummarizeRequest,
  SummarizeResponse,
  TokenCounter,
} from './core/types.js';
export { toProviderMessages, validateMessages } from './core/schema.js';
// Message formats (docs/compaction.md#formats): Anthropic Messages and AI SDK messages in and out, beside OpenAI chat.
export type { MessageFormat } from './core/formats/format.js';
export type { AnthropicMessage, AnthropicRequest, AnthropicConversation } from './core/formats/anthropic-schema.js';
export type { AnthropicCompactionResult } from './core/formats/anthropic.js';
export type { AiSdkMessage } from './core/formats/ai-sdk-schema.js';
export type { AiSdkCompactionResult } from './core/formats/ai-sdk.js';
// The AI SDK's language-model middleware (docs/compaction.md#ai-sdk-middleware).
export { compactionMiddleware, type CompactionMiddlewareOptions } from './workflows/ai-sdk-middleware.js';
// Counters (docs/compaction.md#counting): deterministic, so a workflow may count with them.
export { counters } from './core/counting/counters.js';
export type { UsageCounter, UsageCounterState } from './core/counting/usage-counter.js';
// The workflow `compactConversation` (docs/design.md#compact-conversation).
export { compactConversation, type CompactConversationInput } from './workflows/compact-conversation.js';
// The agent loop `agentRun` (docs/design.md#agent-run): the workflow, its updates and queries, its input and result.
export { agentRun } from './workflows/agent-run.js';
export { agentRunUpdates, agentRunQueries } from './shared/agent-run.js';
export type { AgentRunResult, ContextExhaustedDetails } from './shared/agent-run.js';
export type { CompactionProposal } from './core/agent/steering.js';
export type { UndoCompactionInput } from './core/agent/undo.js';
export type { AgentRunInput, ModelConfig } from './core/agent/agent-input.js';
export type { CompactionRecord } from './core/agent/compaction-history.js';
// The transcript an agent run writes (docs/design.md#transcript-format).
export { transcript } from './core/agent/session-transcript.js';
export type { SessionEntry, SessionLine, SessionReference, UndoLine } from './core/agent/session.js';
// The search attributes an agent run sets (docs/design.md#search-attributes), for your visibility queries.
export { SearchAttributeKeys } from './shared/search-attributes.js';
// Failure types (docs/design.md#failure-types): list them in `nonRetryableErrorTypes`, match them on a caught failure.
export {
  FailureType,
  InvalidInputError,
  SummarizerError,
  UndoRefusedError,
  type UndoRefusal,
  type UndoRefusedDetails,
} from './core/errors.js';
export type { InvalidInputDetails } from './shared/failures.js';
export type { PayloadTooLargeDetails } from './core/limits/payload-size.js';
