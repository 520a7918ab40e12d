// Sandbox-safe: the parts of an agent loop that its compaction and its undos read and change (the loop holds
// both: named here, not imported from it).
import type { AgentRunPlan } from '../../core/agent/agent-input.js';
import type { LiveConversation } from './live-conversation.js';
import type { PayloadLimit } from './payload-limit.js';
import type { PendingReview } from './pending-review.js';
import type { SteeringRequests } from './steering-requests.js';
import type { TokenCache } from './token-cache.js';
import type { TranscriptWriter } from './transcript-writer.js';
import type { UsageLedger } from './usage-ledger.js';

export interface LoopParts {
  readonly plan: AgentRunPlan;
  readonly limit: PayloadLimit;
  readonly transcript: TranscriptWriter;
  readonly conversation: LiveConversation;
  readonly steering: SteeringRequests;
  readonly review: PendingReview;
  readonly ledger: UsageLedger;
  readonly tokens: TokenCache;
  publish: (contextTokens: number | undefined) => void;
}
