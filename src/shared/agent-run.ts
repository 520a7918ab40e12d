// Sandbox-safe: `agentRun`'s input, result, queries and updates (docs/design.md#agent-run), which a
// client imports (through `temporal-compactor/workflow`) without the loop itself.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { AgentRunInput } from '../core/agent/agent-input.js';
import type { BackendStatus } from '../core/agent/backend-cooldown.js';
import type { AgentRunCarried } from '../core/agent/carried-state.js';
import type { CompactionHistory, CompactionRecord } from '../core/agent/compaction-history.js';
import type { UndoCompactionInput } from '../core/agent/undo.js';
import type { SessionEntry, SessionReference, SessionSnapshot } from '../core/agent/session.js';
import type {
  CompactAnswer,
  CompactionProposal,
  CompactUpdateInput,
  PinUpdateInput,
  Pins,
  ReviewAnswer,
  ReviewCompactionInput,
} from '../core/agent/steering.js';
import type { ChatMessage, ContentPart } from '../core/types.js';

/** The workflow's input: {@link AgentRunInput}, plus the state a continued run carries. */
export interface AgentRunWorkflowInput extends AgentRunInput {
  /** Set by the run itself when it continues as new; never set it yourself. */
  carried?: AgentRunCarried;
}

/** Why the loop stopped: the model answered without tools (or the recording ended), `maxRounds`, or `stop`. */
export type StopReason = 'completed' | 'maxRounds' | 'stopped';

/** What `agentRun` returns (docs/design.md#agent-run). Bounded by the live context, however long the run was. */
export interface AgentRunResult {
  /** The final conversation (equal to replaying the whole transcript). */
  messages: ChatMessage[];
  /** Where the transcript is: `readSession(client, session)` reads every line (Node). */
  session: SessionReference;
  /** Compaction totals and the recent records (every record: `transcript.compactionRecords` of its lines). */
  compactions: CompactionHistory;
  /** Chat rounds, across continue-as-new. */
  rounds: number;
  stopReason: StopReason;
  /** Rounds in which a backend failed after its retries and the next one of the chain was tried. */
  backendFallbacks: number;
  /** Each backend of the chain: failed rounds, and whether it is resting. */
  backends: BackendStatus[];
  /** The largest prompt the run sent, in the answering backend's units (billed when the backend reported usage). */
  peakContextTokens: number;
  /** How many times the run continued as new. */
  continuedAsNew: number;
}

/** The workflow function's type, for `continueAsNew` and typed starts without importing the loop. */
export type AgentRunWorkflow = (input: AgentRunWorkflowInput) => Promise<AgentRunResult>;

/** Details of a `RunFailed.ContextExhausted` failure. */
export interface ContextExhaustedDetails {
  round: number;
  backend: string;
  tokens: number;
  room: number;
}

/** The update's argument: the text (or content parts) of a user message. */
export type AddUserMessageInput = string | { content: string | ContentPart[] };

/** What the `stop` update answers: the run will stop once its current round is done. */
export interface StopAnswer {
  stopping: true;
  /** Rounds done when the stop was asked for. */
  rounds: number;
}

/** The updates of `agentRun` by Temporal name (docs/agent-runs.md#steering): `handle.executeUpdate(agentRunUpdates.stop)`. */
export const agentRunUpdates = {
  /** Adds a user message to the conversation: it is sent with the next chat round; answers how many wait. */
  addUserMessage: defineUpdate<{ pending: number }, [AddUserMessageInput]>('addUserMessage'),
  /** Stops the run gracefully: the round in progress finishes, then the run returns its result with `stopReason: 'stopped'`. */
  stop: defineUpdate<StopAnswer, []>('stop'),
  /**
   * Compacts the run before its next chat request, even under the trigger, with `instructions` for this
   * summary (docs/design.md#steering): answers the record, or `{ compacted: false, reason }`.
   */
  compact: defineUpdate<CompactAnswer, [CompactUpdateInput]>('compact'),
  /** Pins messages by transcript id (kept in place by every compaction) and/or a fact every summary keeps. */
  pin: defineUpdate<Pins, [PinUpdateInput]>('pin'),
  /** Unpins messages pinned by `pin` (and/or forgets a pinned fact); answers with the run's pins. */
  unpin: defineUpdate<Pins, [PinUpdateInput]>('unpin'),
  /** Applies, rejects or edits (applies with your summary) the compaction waiting for review. */
  reviewCompaction: defineUpdate<ReviewAnswer, [ReviewCompactionInput]>('reviewCompaction'),
  /**
   * Undoes compaction `compactionId` (default: the last in effect) before the next chat request, every
   * message it replaced, dropped or elided back byte for byte (docs/design.md#undo). `Compaction.UndoRefused`
   * when the result would not fit the window or later compactions depend on it.
   */
  undoCompaction: defineUpdate<CompactionRecord, [UndoCompactionInput]>('undoCompaction'),
} as const;

/** The queries of `agentRun`, each under its Temporal name: `handle.query(agentRunQueries.compactions)`. */
export const agentRunQueries = {
  /** The transcript so far: a reference to the recorded lines and the lines not recorded yet. */
  session: defineQuery<SessionSnapshot>('session'),
  /** The compaction history: totals and the recent records. */
  compactions: defineQuery<CompactionHistory>('compactions'),
  /** The live conversation. */
  conversation: defineQuery<ChatMessage[]>('conversation'),
  /** The live conversation with the transcript id of each message: the ids `pin` takes. */
  conversationEntries: defineQuery<SessionEntry[]>('conversationEntries'),
  /** With `compaction.review: 'approve'`: the compaction waiting for `reviewCompaction`, or null. */
  pendingCompaction: defineQuery<CompactionProposal | null>('pendingCompaction'),
} as const;
