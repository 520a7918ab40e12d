// Sandbox-safe (shared by the workflow and its callers): the definitions of `agentRun`
// (docs/design.md#agent-run) — its input, result and carried state, its queries and updates. A
// client imports them from here (through `temporal-compactor/workflow`) without the loop itself.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { AgentRunInput } from '../core/agent/agent-input.js';
import type { CompactionHistory } from '../core/agent/compaction-history.js';
import type { SessionEntry, SessionReference, SessionSnapshot } from '../core/agent/session.js';
import type { UsageCounterState } from '../core/counting/usage-counter.js';
import type { ChatMessage, ContentPart } from '../core/types.js';

/** The format of {@link AgentRunCarried}; a run refuses carried state of another version. */
export const CARRIED_STATE_VERSION = 2;

/** What a run carries across continue-as-new (internal; plain JSON, bounded by the live context). */
export interface AgentRunCarried {
  version: typeof CARRIED_STATE_VERSION;
  /** The live conversation, each message with its transcript id. */
  live: SessionEntry[];
  /** Transcript lines recorded so far, across runs (every line is recorded before continuing as new). */
  sessionLines: number;
  compactions: CompactionHistory;
  rounds: number;
  nextId: number;
  /** Each backend's `UsageCounter` state, by position in the chain. */
  counters: Array<UsageCounterState | null>;
  pendingUserMessages: ChatMessage[];
  backendFallbacks: number;
  /** Each backend's failed rounds and rest, by position in the chain. */
  backends: BackendStatus[];
  /** The last chat request, as ids and sizes of its messages: the next one's cache is modelled against it. */
  previousRequest: RequestShape | null;
  peakContextTokens: number;
  continuedAsNew: number;
  /**
   * Token counts of the live conversation's texts, per BPE encoding of the chain: one entry per
   * text, message by message in the order `messageTexts` lists them (null: not counted). The
   * continued run starts knowing them instead of counting its conversation again. Absent in state
   * carried by workers before it.
   */
  tokenCounts?: Record<string, Array<number | null>>;
}

/** A chat request as far as prompt caching is concerned: its messages' transcript ids and JSON sizes, in order. */
export interface RequestShape {
  ids: string[];
  sizes: number[];
}

/** How a backend of the chain has fared: rounds it failed, and until when it rests (not tried first). */
export interface BackendStatus {
  label: string;
  /** Rounds in which it failed after its retries. */
  failedRounds: number;
  /** It is not tried first before this round (1-based); null when it is not resting. */
  restingUntilRound: number | null;
  /** Nor before this time (ms since the epoch, workflow time), when the cooldown has a time; else null. */
  restingUntilTime: number | null;
}

/** The workflow's input: {@link AgentRunInput}, plus the state a continued run carries. */
export interface AgentRunWorkflowInput extends AgentRunInput {
  /** Set by the run itself when it continues as new; never set it yourself. */
  carried?: AgentRunCarried;
}

/**
 * Why the loop stopped: the model answered without tools (or the recording ended), `maxRounds`,
 * or the `stop` update. (Cancelling the run ends it Cancelled, with no result.)
 */
export type StopReason = 'completed' | 'maxRounds' | 'stopped';

/** What `agentRun` returns (docs/design.md#agent-run). Bounded by the live context, however long the run was. */
export interface AgentRunResult {
  /** The final conversation (equal to replaying the whole transcript). */
  messages: ChatMessage[];
  /** Where the transcript is: `readSession(client, session)` reads every line (Node). */
  session: SessionReference;
  /** Compaction totals and the recent records (every record: `compactionRecordsFromSession`). */
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

/** Details of a `RunFailed.ContextExhausted` failure. */
export interface ContextExhaustedDetails {
  round: number;
  backend: string;
  tokens: number;
  room: number;
}

/** The update's argument: the text (or content parts) of a user message. */
export type AddUserMessageInput = string | { content: string | ContentPart[] };

/** Adds a user message to the conversation: it is sent with the next chat round; answers how many wait. */
export const addUserMessageUpdate = defineUpdate<{ pending: number }, [AddUserMessageInput]>('addUserMessage');
/** What the `stop` update answers: the run will stop once its current round is done. */
export interface StopAnswer {
  stopping: true;
  /** Rounds done when the stop was asked for. */
  rounds: number;
}
/** Stops the run gracefully: the round in progress finishes, then the run returns its result with `stopReason: 'stopped'`. */
export const stopUpdate = defineUpdate<StopAnswer, []>('stop');
/** The transcript so far: a reference to the recorded lines and the lines not recorded yet. */
export const sessionQuery = defineQuery<SessionSnapshot>('session');
/** The compaction history: totals and the recent records. */
export const compactionsQuery = defineQuery<CompactionHistory>('compactions');
/** The live conversation. */
export const conversationQuery = defineQuery<ChatMessage[]>('conversation');
