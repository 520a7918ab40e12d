// Sandbox-safe: the reference agent loop `agentRun` (docs/design.md#agent-run). Each round: preflight in every
// backend's own units, compact when needed (inline, through `compact`), one `chat` activity, the
// requested tools as activities, append, calibrate.
//
// What the run holds is bounded by its live context, never by its length: the transcript leaves
// the workflow in batches (the `recordSession` activity; with a payload store the batches live in
// the store and the history holds claims), the compaction history keeps recent records and totals,
// and continue-as-new carries the live conversation with its transcript ids. Anything that could
// still exceed the server's payload limit is measured before it is sent (docs/design.md#never-wedge).
import { ApplicationFailure, type SearchAttributeUpdatePair } from '@temporalio/common';
import {
  ActivityFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  defineQuery,
  defineUpdate,
  isCancellation,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { ChatActivityInput, ChatActivityOutput } from '../activities/chat.js';
import type { CountTokensInput, CountTokensOutput } from '../activities/count-tokens.js';
import type { SessionBatchReceipt } from '../activities/session.js';
import type { ReplayToolInput } from '../activities/tools.js';
import { RunFailureType, UpdateFailureType } from '../core/agent/agent-errors.js';
import { pinTask, planAgentRun, type AgentActivitySettings, type AgentRunInput, type AgentRunPlan, type ResolvedBackend } from '../core/agent/agent-input.js';
import { messageTexts, type BpeEncodingName } from '../core/counting/bpe-counter.js';
import {
  addCompactionRecord,
  compactionRecord,
  emptyCompactionHistory,
  groupDigits,
  oneLine,
  renderCompactionDetails,
  type CompactionHistory,
} from '../core/agent/compaction-history.js';
import { FailureType, InvalidInputError } from '../core/errors.js';
import { parseDuration, type Duration } from '../core/compaction/options.js';
import { jsonPayloadBytes, utf8Length, type PayloadTooLargeDetails } from '../core/limits/payload-size.js';
import { backendCounter, preflight, type BackendCounter } from '../core/agent/preflight.js';
import { addRoundUsage, addSummarizerUsage, type RoundUsage } from '../core/agent/run-usage.js';
import { validateMessages } from '../core/schema.js';
import type { SummarizerUsage } from '../core/counting/summarizer-usage.js';
import { isBuiltInToolName } from '../core/agent/tool-declarations.js';
import { applySessionLine, recordCompaction, type SessionBatch, type SessionEntry, type SessionLine, type SessionReference, type SessionSnapshot } from '../core/agent/session.js';
import type { ChatMessage, CompactionResult, ContentPart } from '../core/types.js';
import type { UsageCounterState } from '../core/counting/usage-counter.js';
import { SearchAttributeKeys } from '../shared/search-attributes.js';
import { UNDESCRIBED_WORKER, type WorkerDescription } from '../shared/worker-description.js';
import { compactWithUsage, needsCompaction, type CompactOptions } from './compact.js';
import { describeWorker } from './describe-worker.js';
import { failOnInvalidInput, invalidInputFailure } from '../shared/failures.js';

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
export const compactionsQuery = defineQuery<CompactionHistory>('compactions');
/** The live conversation. */
export const conversationQuery = defineQuery<ChatMessage[]>('conversation');

/**
 * Transcript lines are recorded (one `recordSession` activity) once this many bytes of them are
 * waiting, and always before the run continues as new, ends or fails. Small enough that a batch
 * travels inline without a payload store, under the 256 KB a history payload should stay below;
 * large enough that a long run records rarely (every dozen rounds at 10 KB a round).
 * @default 128 KiB
 */
export const SESSION_BATCH_BYTES = 128 * 1024;

/**
 * Text the workflow may tokenize itself per round, in characters. More new text than this (a long
 * conversation at the start of a run, a huge tool result) is counted by the `countTokens` activity
 * instead: pure-JS BPE runs at a few MB/s, and a workflow activation must stay far below the SDK's
 * 2 s deadlock timeout, on a warm worker and on one replaying the run from history.
 * @default 200,000
 */
export const WORKFLOW_COUNT_CHARS = 200_000;


/** Timeouts of the loop's own bookkeeping activities (`recordSession`, `countTokens`). */
const BOOKKEEPING_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: 60_000,
  retry: { maximumAttempts: 5, initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 30_000, nonRetryableErrorTypes: [FailureType.InvalidInput] },
};

/**
 * A worker that stops heartbeating for this long is presumed dead and its attempt is retried
 * elsewhere: the chat activity and our own tools heartbeat every few seconds, so a killed worker
 * costs a run about this long, not a whole start-to-close timeout.
 * @default 10 s
 */
export const AGENT_HEARTBEAT_TIMEOUT_MS = 10_000;
/** @default '5m' per chat attempt, heartbeats within 10 s (it heartbeats while waiting). */
const CHAT_DEFAULTS = { startToClose: 300_000, heartbeat: AGENT_HEARTBEAT_TIMEOUT_MS };
/** @default '1m' per attempt of the built-in and replayed tools, which heartbeat within 10 s. */
const OUR_TOOL_DEFAULTS = { startToClose: 60_000, heartbeat: AGENT_HEARTBEAT_TIMEOUT_MS };
/** @default '1m' per attempt of your own tool activities, no heartbeat unless `toolActivity.heartbeatTimeout` says so (they may not heartbeat). */
const USER_TOOL_DEFAULTS = { startToClose: 60_000, heartbeat: undefined };

function ms(value: Duration | undefined, field: string, fallback: number): number {
  return value === undefined ? fallback : parseDuration(value, field);
}

/**
 * The options of an activity the loop schedules. No `nonRetryableErrorTypes`: every failure of ours
 * that must not be retried (Chat.Rejected, Replay.*, Tool.*, Compaction.InvalidInput) is raised
 * with `nonRetryable: true`, and the list would be written into every scheduled event of every
 * round (~150 bytes of history each).
 */
function activityOptions(settings: AgentActivitySettings, field: string, defaults: { startToClose: number; heartbeat: number | undefined }): ActivityOptions {
  const heartbeat = ms(settings.heartbeatTimeout, `${field}.heartbeatTimeout`, defaults.heartbeat ?? 0);
  return {
    startToCloseTimeout: Math.max(1, ms(settings.startToCloseTimeout, `${field}.startToCloseTimeout`, defaults.startToClose)),
    ...(heartbeat > 0 ? { heartbeatTimeout: heartbeat } : {}),
    retry: {
      maximumAttempts: settings.maximumAttempts ?? 3,
      initialInterval: Math.max(1, ms(settings.initialInterval, `${field}.initialInterval`, 1000)),
      backoffCoefficient: 2,
      maximumInterval: 30_000,
    },
    ...(settings.taskQueue === undefined ? {} : { taskQueue: settings.taskQueue }),
  };
}


function failureMessage(error: unknown): string {
  if (error instanceof ActivityFailure) return error.cause?.message ?? error.message;
  return error instanceof Error ? error.message : String(error);
}

function userMessageFrom(input: AddUserMessageInput): ChatMessage {
  const content = typeof input === 'string' ? input : input?.content;
  try {
    const [message] = validateMessages([{ role: 'user', content }]);
    if (message === undefined) throw new InvalidInputError('message', 'required');
    return message;
  } catch (error) {
    // Name the update's argument, not the one-message conversation it was checked as.
    if (error instanceof InvalidInputError) throw new InvalidInputError(error.field.replace(/^messages\[0\]/, 'message'), error.reason);
    throw error;
  }
}

/** Checks carried state as far as a hand-made one could be wrong; the messages are validated like any input. */
function carriedState(value: unknown): AgentRunCarried {
  const field = 'input.carried';
  if (typeof value !== 'object' || value === null) throw new InvalidInputError(field, 'is what a run carries when it continues as new; leave it out');
  if (Reflect.get(value, 'version') !== CARRIED_STATE_VERSION) {
    throw new InvalidInputError(`${field}.version`, `must be ${CARRIED_STATE_VERSION} (state carried by another version of agentRun cannot be continued); leave input.carried out`);
  }
  const arrays = ['live', 'counters', 'pendingUserMessages', 'backends'].every((key) => Array.isArray(Reflect.get(value, key)));
  const previous: unknown = Reflect.get(value, 'previousRequest');
  const shape = previous === null || (typeof previous === 'object' && Array.isArray(Reflect.get(previous, 'ids')) && Array.isArray(Reflect.get(previous, 'sizes')));
  const numbers = ['sessionLines', 'rounds', 'nextId', 'backendFallbacks', 'peakContextTokens', 'continuedAsNew'].every((key) => Number.isSafeInteger(Reflect.get(value, key)));
  const compactions: unknown = Reflect.get(value, 'compactions');
  const history =
    typeof compactions === 'object' && compactions !== null && Array.isArray(Reflect.get(compactions, 'recent')) && typeof Reflect.get(compactions, 'totals') === 'object' && typeof Reflect.get(compactions, 'usage') === 'object';
  if (!arrays || !numbers || !history || !shape) throw new InvalidInputError(field, 'is what a run carries when it continues as new; leave it out');
  const carried = value as AgentRunCarried;
  const ids = new Set<string>();
  carried.live.forEach((entry: unknown, index) => {
    const id: unknown = typeof entry === 'object' && entry !== null ? Reflect.get(entry, 'id') : undefined;
    if (typeof id !== 'string' || ids.has(id)) throw new InvalidInputError(`${field}.live[${index}].id`, 'must be a unique transcript id');
    ids.add(id);
  });
  try {
    validateMessages(carried.live.map((entry) => entry.message));
  } catch (error) {
    // Name the carried field, not the conversation it was checked as.
    if (error instanceof InvalidInputError) throw new InvalidInputError(error.field.replace(/^messages\[(\d+)\]/, `${field}.live[$1].message`), error.reason, error.index);
    throw error;
  }
  return carried;
}

/**
 * Workflow time in ms: the sandbox replaces `Date` with the time of the workflow task, the same
 * on replay, so this is deterministic (the lint rule against clocks is for the pure core).
 */
function workflowTime(): number {
  // eslint-disable-next-line no-restricted-properties -- workflow time, not the machine's clock (see above)
  return Date.now();
}

function payloadTooLarge(details: PayloadTooLargeDetails): ApplicationFailure {
  return ApplicationFailure.create({
    type: RunFailureType.PayloadTooLarge,
    message: `${details.payload} is ${groupDigits(details.bytes)} bytes, over the ${groupDigits(details.limit)}-byte payload limit, and the worker stores no payloads externally: set COMPACTOR_PAYLOAD_STORE (or lower the window)`,
    nonRetryable: true,
    details: [details],
  });
}

/** One run of the loop: its state, which only its own methods change, and what a round does with it. */
class AgentLoop {
  private entries: SessionEntry[] = [];
  /** Transcript lines not recorded yet, and their size as JSON. */
  private unrecorded: SessionLine[] = [];
  private unrecordedBytes = 0;
  /** Transcript lines recorded so far, across runs. */
  private recordedLines: number;
  private compactions: CompactionHistory;
  private readonly counters: BackendCounter[];
  /** Token counts by text, per BPE encoding of the chain: what this run has counted or was told (`countTokens`). */
  private readonly knownTokens = new Map<BpeEncodingName, Map<string, number>>();
  private readonly pendingUserMessages: ChatMessage[];
  private rounds: number;
  private roundsThisRun = 0;
  private nextId: number;
  private backendFallbacks: number;
  private readonly backends: BackendStatus[];
  private peakContextTokens: number;
  private readonly continuedAsNew: number;
  private worker: WorkerDescription = UNDESCRIBED_WORKER;
  private finished = false;
  private stopRequested = false;
  private previousRequest: RequestShape | null;
  /** JSON sizes of messages already measured (the same message object is not measured twice). */
  private readonly sizes = new WeakMap<ChatMessage, number>();
  private published = { compactions: -1, contextTokens: -1, fallbacks: -1, exhausted: false, details: '' };

  constructor(
    private readonly input: AgentRunWorkflowInput,
    private readonly plan: AgentRunPlan,
  ) {
    const carried = input.carried === undefined ? undefined : carriedState(input.carried);
    this.recordedLines = carried?.sessionLines ?? 0;
    this.compactions = carried?.compactions ?? emptyCompactionHistory(plan.pricing);
    this.previousRequest = carried?.previousRequest ?? null;
    this.rounds = carried?.rounds ?? 0;
    this.nextId = carried?.nextId ?? 1;
    this.pendingUserMessages = carried?.pendingUserMessages ?? [];
    this.backendFallbacks = carried?.backendFallbacks ?? 0;
    this.backends = plan.backends.map(
      (backend) => carried?.backends[backend.index] ?? { label: backend.label, failedRounds: 0, restingUntilRound: null, restingUntilTime: null },
    );
    this.peakContextTokens = carried?.peakContextTokens ?? 0;
    this.continuedAsNew = carried?.continuedAsNew ?? 0;
    for (const backend of plan.backends) {
      if (backend.tokenizer !== 'chars' && !this.knownTokens.has(backend.tokenizer)) this.knownTokens.set(backend.tokenizer, new Map());
    }
    this.counters = plan.backends.map((backend) =>
      backendCounter(backend, plan.tools, carried?.counters[backend.index] ?? null, backend.tokenizer === 'chars' ? undefined : this.knownTokens.get(backend.tokenizer)),
    );
    if (carried !== undefined) this.entries = carried.live;
    else {
      // docs/design.md#task-survives: the task stays verbatim (sticky) unless the input says otherwise.
      const messages = validateMessages(input.messages);
      for (const message of plan.keepTask ? pinTask(messages) : messages) this.append(message);
    }
  }

  get messages(): ChatMessage[] {
    return this.entries.map((entry) => entry.message);
  }

  get isFinished(): boolean {
    return this.finished;
  }

  get compactionHistory(): CompactionHistory {
    return this.compactions;
  }

  /** What the `session` query answers. */
  sessionSnapshot(): SessionSnapshot {
    return { reference: this.sessionReference(), pending: this.unrecorded };
  }

  /** Asks the run to stop once the round in progress is done (the `stop` update). */
  requestStop(): StopAnswer {
    this.stopRequested = true;
    return { stopping: true, rounds: this.rounds };
  }

  /** Queues a user message for the next round (the `addUserMessage` update); returns how many wait. */
  queueUserMessage(message: ChatMessage): number {
    this.pendingUserMessages.push(message);
    return this.pendingUserMessages.length;
  }

  private sessionReference(): SessionReference {
    const { workflowId, runId } = workflowInfo();
    return { workflowId, runId, lines: this.recordedLines };
  }

  private writeLine(line: SessionLine): void {
    this.entries = applySessionLine(this.entries, line, this.recordedLines + this.unrecorded.length);
    this.unrecorded.push(line);
    this.unrecordedBytes += jsonPayloadBytes(line);
  }

  private append(message: ChatMessage, usage?: RoundUsage): void {
    this.writeLine(usage === undefined ? { type: 'message', id: `m${this.nextId}`, message } : { type: 'message', id: `m${this.nextId}`, message, usage });
    this.nextId += 1;
  }

  /** Fails the run with `RunFailed.PayloadTooLarge` when `bytes` would be sent inline over the limit. */
  private checkPayload(payload: string, bytes: number): void {
    if (bytes <= this.plan.maxPayloadBytes || this.worker.externalStorage) return;
    throw payloadTooLarge({ payload, bytes, limit: this.plan.maxPayloadBytes });
  }

  /**
   * Records the waiting transcript lines, in batches of about {@link SESSION_BATCH_BYTES}. The
   * batch is the record (the activity's input in history, or in the payload store), so a batch is
   * recorded once it is scheduled; the activity only acknowledges it.
   */
  async recordSession(): Promise<void> {
    // Without a store a batch must travel inline: at most ¾ of the payload limit (one line may be more, and is checked).
    const batchBytes = this.worker.externalStorage ? SESSION_BATCH_BYTES : Math.min(SESSION_BATCH_BYTES, Math.floor(this.plan.maxPayloadBytes * 0.75));
    while (this.unrecorded.length > 0) {
      let bytes = 0;
      let count = 0;
      for (const line of this.unrecorded) {
        const size = jsonPayloadBytes(line);
        if (count > 0 && bytes + size > batchBytes) break;
        bytes += size;
        count += 1;
      }
      const batch: SessionBatch = { from: this.recordedLines, lines: this.unrecorded.slice(0, count) };
      this.checkPayload(`a batch of ${count} transcript line${count === 1 ? '' : 's'} (from line ${batch.from})`, bytes);
      const last = batch.from + count - 1;
      const { recordSession } = proxyActivities<{ recordSession(batch: SessionBatch): Promise<SessionBatchReceipt> }>({
        ...BOOKKEEPING_ACTIVITY,
        summary: `session lines ${batch.from}–${last} (${groupDigits(bytes)} bytes)`,
      });
      try {
        await recordSession(batch);
      } catch (error) {
        if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
        // The batch is in history as the activity's input whether or not a worker acknowledged it.
        log.warn('recordSession was not acknowledged; the batch is recorded as its input', { from: batch.from, lines: count, error: failureMessage(error) });
      }
      this.unrecorded = this.unrecorded.slice(count);
      this.unrecordedBytes -= bytes;
      this.recordedLines += count;
    }
    this.unrecordedBytes = 0;
  }

  /** Records the transcript even while the run is being cancelled: nothing it wrote is lost. */
  recordSessionNow(): Promise<void> {
    return CancellationScope.nonCancellable(() => this.recordSession());
  }

  /**
   * Before the run fails: records what it can of the transcript, so a failed run's transcript is
   * whole. A failure to record (a batch over the payload limit, the cause of this very failure
   * perhaps) must not replace the run's own failure.
   */
  async recordSessionBeforeFailing(): Promise<void> {
    this.finished = true;
    try {
      await this.recordSessionNow();
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) throw error;
      log.warn('the transcript could not be recorded in whole before the run failed', { recordedLines: this.recordedLines, pendingLines: this.unrecorded.length, error: error.message });
    }
  }

  private carry(): AgentRunCarried {
    return {
      version: CARRIED_STATE_VERSION,
      live: this.entries,
      sessionLines: this.recordedLines,
      compactions: this.compactions,
      rounds: this.rounds,
      nextId: this.nextId,
      counters: this.counters.map((counter) => counter.usage.toJSON()),
      pendingUserMessages: this.pendingUserMessages,
      backendFallbacks: this.backendFallbacks,
      backends: this.backends,
      previousRequest: this.previousRequest,
      peakContextTokens: this.peakContextTokens,
      continuedAsNew: this.continuedAsNew,
    };
  }

  /** Records the transcript, then builds the result and checks it fits a payload. */
  async finish(stopReason: StopReason): Promise<AgentRunResult> {
    this.finished = true;
    await this.recordSessionNow();
    const result: AgentRunResult = {
      messages: this.messages,
      session: this.sessionReference(),
      compactions: this.compactions,
      rounds: this.rounds,
      stopReason,
      backendFallbacks: this.backendFallbacks,
      backends: this.backends,
      peakContextTokens: this.peakContextTokens,
      continuedAsNew: this.continuedAsNew,
    };
    this.publish(undefined);
    this.checkPayload('the result of the run', jsonPayloadBytes(result));
    return result;
  }

  /** Current details (the compaction history) and search attributes, when they changed. */
  publish(contextTokens: number | undefined): void {
    const { totals } = this.compactions;
    const exhausted = totals.exhausted > 0;
    // Current details are workflow state answered by query, not history: keep them current every round.
    const resting = this.restingNote();
    const details = renderCompactionDetails(this.compactions, resting === '' ? [] : [resting]);
    if (details !== this.published.details) setCurrentDetails(details);
    const allowed = new Set(this.plan.searchAttributes ? this.worker.searchAttributes : []);
    const updates: SearchAttributeUpdatePair[] = [];
    if (allowed.has('CompactionCount') && this.published.compactions !== totals.compactions) updates.push({ key: SearchAttributeKeys.CompactionCount, value: totals.compactions });
    if (allowed.has('CompactionFallbacks') && this.published.fallbacks !== totals.fallbacks) updates.push({ key: SearchAttributeKeys.CompactionFallbacks, value: totals.fallbacks });
    if (allowed.has('ContextExhausted') && (this.published.exhausted !== exhausted || this.published.compactions < 0)) updates.push({ key: SearchAttributeKeys.ContextExhausted, value: exhausted });
    // The context size moves every round: upsert it when it moved by a tenth, or at a compaction, not every round (one history event each).
    const moved = contextTokens !== undefined && Math.abs(contextTokens - this.published.contextTokens) > this.published.contextTokens / 10;
    const compacted = this.published.compactions !== totals.compactions;
    const contextTokensNow = contextTokens !== undefined && (moved || compacted) ? contextTokens : this.published.contextTokens;
    if (allowed.has('ContextTokens') && contextTokensNow !== this.published.contextTokens) updates.push({ key: SearchAttributeKeys.ContextTokens, value: contextTokensNow });
    this.published = { compactions: totals.compactions, contextTokens: contextTokensNow, fallbacks: totals.fallbacks, exhausted, details };
    if (updates.length > 0) upsertSearchAttributes(updates);
  }

  /** A backend rests when it failed a round and its cooldown (rounds, or time when configured) has not run out. */
  private isResting(index: number): boolean {
    const status = this.backends[index];
    if (status === undefined || status.restingUntilRound === null) return false;
    if (this.rounds + 1 >= status.restingUntilRound) return false;
    return status.restingUntilTime === null || workflowTime() < status.restingUntilTime;
  }

  private rest(index: number): void {
    const status = this.backends[index];
    if (status === undefined) return;
    const { rounds, timeMs } = this.plan.backendCooldown;
    status.failedRounds += 1;
    status.restingUntilRound = rounds > 0 ? this.rounds + 1 + rounds : null;
    status.restingUntilTime = rounds > 0 && timeMs !== undefined ? workflowTime() + timeMs : null;
  }

  /** `Resting: openai:gpt-4o until round 12 (2 failed rounds)`, or '' when none rests. */
  private restingNote(): string {
    const resting = this.backends.filter((_, index) => this.isResting(index));
    if (resting.length === 0) return '';
    return `Resting: ${resting.map((status) => `${status.label} until round ${status.restingUntilRound ?? '?'} (${status.failedRounds} failed round${status.failedRounds === 1 ? '' : 's'})`).join(', ')}`;
  }

  /**
   * Makes sure this run knows the token counts of `messages` in every BPE encoding of the chain:
   * when more than {@link WORKFLOW_COUNT_CHARS} of their text is new, the `countTokens` activity
   * counts it (without a payload store, in requests of at most ¾ of the payload limit); less is
   * tokenized here when it is counted.
   */
  private async countNewText(messages: readonly ChatMessage[]): Promise<void> {
    for (const [encoding, known] of this.knownTokens) {
      const texts: string[] = [];
      const seen = new Set<string>();
      let chars = 0;
      for (const message of messages) {
        for (const text of messageTexts(message)) {
          if (known.has(text) || seen.has(text)) continue;
          seen.add(text);
          texts.push(text);
          chars += text.length;
        }
      }
      if (chars <= WORKFLOW_COUNT_CHARS) continue;
      const batchBytes = this.worker.externalStorage ? Number.POSITIVE_INFINITY : Math.floor(this.plan.maxPayloadBytes * 0.75);
      for (let start = 0; start < texts.length; ) {
        let bytes = 0;
        let end = start;
        while (end < texts.length && (end === start || bytes + utf8Length(texts[end] ?? '') <= batchBytes)) {
          bytes += utf8Length(texts[end] ?? '');
          end += 1;
        }
        const batch = texts.slice(start, end);
        const { countTokens } = proxyActivities<{ countTokens(input: CountTokensInput): Promise<CountTokensOutput> }>({
          ...BOOKKEEPING_ACTIVITY,
          summary: `count ${groupDigits(batch.reduce((sum, text) => sum + text.length, 0))} chars of new text (${encoding})`,
        });
        const { tokens } = await countTokens({ encoding, texts: batch });
        batch.forEach((text, index) => {
          const count = tokens[index];
          if (typeof count === 'number' && Number.isSafeInteger(count) && count >= 0) known.set(text, count);
        });
        start = end;
      }
    }
  }

  private compactOptions(aimAt: BackendCounter, aim: number): CompactOptions {
    const { contextBudget, ...rest } = this.plan.compaction;
    return { ...rest, contextBudget: contextBudget ?? aim, counter: aimAt.conversation, maxPayloadBytes: this.plan.maxPayloadBytes, payloadStore: this.worker.externalStorage };
  }

  /**
   * Compacts when the conversation does not fit the aim, or is over the compaction trigger (or
   * holds an elision batch). Over the room, `compact` aims at the room exactly (docs/design.md#overrides);
   * merely over the trigger, it aims at `targetRatio × contextBudget` so one compaction buys
   * several rounds instead of trimming a little every round.
   */
  private async compactIfNeeded(candidates: readonly BackendCounter[]): Promise<void> {
    const { aimAt, aim, tokens } = preflight(this.messages, candidates);
    const options = this.compactOptions(aimAt, aim);
    const overRoom = tokens > aim;
    if (!overRoom && !needsCompaction(this.messages, options)) return;
    const { result: compacted, summarizerUsage } = await compactWithUsage(this.messages, overRoom ? { ...options, target: aim } : options);
    // The run is out of room only when the conversation does not fit the backend: a `contextBudget`
    // set below the room is what compaction aims at, not a limit the model has.
    const result = { ...compacted, exhausted: compacted.tokensAfter > aim };
    this.record(result, aimAt.backend, overRoom ? aim : (this.plan.compaction.contextBudget ?? aim), summarizerUsage);
    if (result.exhausted) {
      this.publish(result.tokensAfter);
      const details: ContextExhaustedDetails = { round: this.rounds + 1, backend: aimAt.backend.label, tokens: result.tokensAfter, room: aim };
      throw ApplicationFailure.create({
        type: RunFailureType.ContextExhausted,
        message: `context exhausted before round ${details.round}: ${groupDigits(details.tokens)} tokens after compaction, ${groupDigits(aim)} usable on ${details.backend} (keepRecent or a recent tool result is too large for the window)`,
        nonRetryable: true,
        details: [details],
      });
    }
  }

  private record(result: CompactionResult, backend: ResolvedBackend, target: number, summarizerUsage: SummarizerUsage | undefined): void {
    // The summarizer was billed even when its summary lost to the hard trim.
    if (summarizerUsage !== undefined) this.compactions = { ...this.compactions, usage: addSummarizerUsage(this.compactions.usage, summarizerUsage) };
    const changed = result.cutIndex >= 0 || result.elisions.length > 0 || result.fallback || result.exhausted;
    if (!changed) return;
    const { cacheHitRate, billedInput } = this.compactions.usage;
    const context = { round: this.rounds + 1, backend: backend.label, target, ...(summarizerUsage === undefined ? {} : { summarizerUsage }), cacheHitRate, billedInput };
    const { lines, entries } = recordCompaction(this.entries, result, context);
    for (const line of lines) {
      this.unrecorded.push(line);
      this.unrecordedBytes += jsonPayloadBytes(line);
    }
    this.entries = entries;
    this.compactions = addCompactionRecord(this.compactions, compactionRecord(context, result));
  }

  private sizeOf(message: ChatMessage): number {
    let size = this.sizes.get(message);
    if (size === undefined) {
      size = JSON.stringify(message).length;
      this.sizes.set(message, size);
    }
    return size;
  }

  /**
   * What this request cost: the provider's numbers, and its cached prompt tokens as reported or,
   * when the provider does not say, modelled: the messages this request shares from the start with
   * the previous one (same transcript ids, same sizes) counted in the backend's units, as a
   * provider's prefix cache would serve them.
   */
  private roundUsage(sent: readonly ChatMessage[], backend: BackendCounter, tokens: number, answer: ChatActivityOutput): RoundUsage {
    const shape: RequestShape = { ids: this.entries.map((entry) => entry.id), sizes: sent.map((message) => this.sizeOf(message)) };
    const promptTokens = answer.usage?.promptTokens ?? tokens;
    const completionTokens = answer.usage?.completionTokens ?? null;
    const reported = answer.usage?.cachedPromptTokens;
    let cachedPromptTokens = reported ?? 0;
    if (reported === undefined && this.previousRequest !== null) {
      const previous = this.previousRequest;
      let shared = 0;
      while (shared < shape.ids.length && shape.ids[shared] === previous.ids[shared] && shape.sizes[shared] === previous.sizes[shared]) shared += 1;
      cachedPromptTokens = shared === 0 ? 0 : Math.min(promptTokens, backend.usage.count(sent.slice(0, shared)));
    }
    this.previousRequest = shape;
    return { backend: backend.backend.label, promptTokens, cachedPromptTokens, cacheSource: reported === undefined ? 'modelled' : 'reported', completionTokens };
  }

  /** One chat call, falling back along the chain when a backend fails after its retries. */
  private async chat(): Promise<{ answer: ChatActivityOutput; backend: BackendCounter; usage: RoundUsage }> {
    const failed = new Set<number>();
    let lastFailure: unknown;
    await this.countNewText(this.messages);
    for (;;) {
      const available = this.counters.filter((counter) => !failed.has(counter.backend.index));
      // Resting backends are left out while another one can take the round.
      const rested = available.filter((counter) => !this.isResting(counter.backend.index));
      const candidates = rested.length > 0 ? rested : available;
      if (candidates.length === 0) {
        throw ApplicationFailure.create({
          type: RunFailureType.BackendsFailed,
          message: `every backend failed in round ${this.rounds + 1}; last: ${failureMessage(lastFailure)}`,
          nonRetryable: true,
          cause: lastFailure instanceof Error ? lastFailure : undefined,
        });
      }
      await this.compactIfNeeded(candidates);
      const { fits, aimAt } = preflight(this.messages, candidates);
      const backend = fits ?? aimAt;
      const sent = this.messages;
      const tokens = backend.conversation.count(sent);
      this.publish(tokens);
      const input: ChatActivityInput = { backend: backend.backend.config, messages: sent, tools: this.plan.tools, turn: this.rounds };
      this.checkPayload(`the chat request of round ${this.rounds + 1}`, jsonPayloadBytes([input]));
      try {
        const { chat } = proxyActivities<{ chat(input: ChatActivityInput): Promise<ChatActivityOutput> }>({
          ...activityOptions(this.plan.chatActivity, 'input.chatActivity', CHAT_DEFAULTS),
          summary: `chat · ${backend.backend.label} · ${sent.length} messages (${groupDigits(tokens)} tokens)`,
        });
        const answer = await chat(input);
        const usage = this.roundUsage(sent, backend, tokens, answer);
        this.compactions = { ...this.compactions, usage: addRoundUsage(this.compactions.usage, usage) };
        if (answer.usage !== undefined) backend.usage.calibrate(sent, answer.usage.promptTokens);
        this.peakContextTokens = Math.max(this.peakContextTokens, answer.usage?.promptTokens ?? tokens);
        return { answer, backend, usage };
      } catch (error) {
        if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
        lastFailure = error;
        failed.add(backend.backend.index);
        this.rest(backend.backend.index);
        if (failed.size < this.counters.length) this.backendFallbacks += 1;
      }
    }
  }

  /** Runs the tool calls of an assistant turn as activities (in parallel) and returns their results in call order. */
  private async runTools(message: ChatMessage, backend: BackendCounter, unanswered: readonly string[]): Promise<ChatMessage[]> {
    const calls = (message.tool_calls ?? []).filter((call) => !unanswered.includes(call.id));
    const ours = activityOptions(this.plan.toolActivity, 'input.toolActivity', OUR_TOOL_DEFAULTS);
    const theirs = activityOptions(this.plan.toolActivity, 'input.toolActivity', USER_TOOL_DEFAULTS);
    const declared = new Set(this.plan.tools.map((tool) => tool.function.name));
    const config = backend.backend.config;
    return Promise.all(
      calls.map(async (call): Promise<ChatMessage> => {
        const summary = `${call.function.name} ${oneLine(call.function.arguments, 60)}`;
        const answer = (content: string): ChatMessage => ({ role: 'tool', tool_call_id: call.id, content });
        try {
          if (config.provider === 'replay') {
            const { replayTool } = proxyActivities<{ replayTool(input: ReplayToolInput): Promise<ChatMessage> }>({ ...ours, summary: `replay ${summary}` });
            return await replayTool({ trajectory: config.trajectory, toolCallId: call.id });
          }
          if (!declared.has(call.function.name)) return answer(`Error: there is no tool named "${call.function.name}"; the tools are: ${[...declared].join(', ') || 'none'}`);
          let args: unknown;
          try {
            args = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
          } catch {
            return answer(`Error: the arguments of ${call.function.name} are not valid JSON: ${oneLine(call.function.arguments, 200)}`);
          }
          const bytes = jsonPayloadBytes([args]);
          if (bytes > this.plan.maxPayloadBytes && !this.worker.externalStorage) {
            return answer(`Error: the arguments of ${call.function.name} are ${bytes} bytes, more than a tool call may carry (${this.plan.maxPayloadBytes})`);
          }
          const settings = isBuiltInToolName(call.function.name) ? ours : theirs;
          const tools = proxyActivities<Record<string, (args: unknown) => Promise<unknown>>>({ ...settings, summary });
          const run = tools[call.function.name];
          if (run === undefined) return answer(`Error: there is no tool named "${call.function.name}"`);
          const output = await run(args);
          return answer(typeof output === 'string' ? output : JSON.stringify(output));
        } catch (error) {
          if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
          // A failed tool is information for the model, not the end of the run.
          return answer(`Error: ${failureMessage(error)}`);
        }
      }),
    );
  }

  private shouldContinueAsNew(): boolean {
    if (this.roundsThisRun === 0) return false;
    const every = this.plan.continueAsNewAfterRounds;
    return workflowInfo().continueAsNewSuggested || (every !== undefined && this.roundsThisRun >= every);
  }

  private async continueAsNew(): Promise<never> {
    // Updates in flight finish first: their messages must be in what the next run carries.
    await condition(allHandlersFinished);
    for (const message of this.pendingUserMessages.splice(0)) this.append(message);
    await this.recordSession();
    const next: AgentRunWorkflowInput = { ...this.input, messages: [], carried: { ...this.carry(), continuedAsNew: this.continuedAsNew + 1 } };
    this.checkPayload('the state the run continues as new with', jsonPayloadBytes([next]));
    return continueAsNew<typeof agentRun>(next);
  }

  async run(): Promise<AgentRunResult> {
    this.worker = await describeWorker();
    this.publish(undefined);
    for (;;) {
      for (const message of this.pendingUserMessages.splice(0)) this.append(message);
      if (this.rounds >= this.plan.maxRounds) return this.finish('maxRounds');
      if (this.stopRequested) return this.finish('stopped');
      if (this.shouldContinueAsNew()) await this.continueAsNew();
      const { answer, backend, usage } = await this.chat();
      this.append(answer.message, usage);
      this.rounds += 1;
      this.roundsThisRun += 1;
      const results = await this.runTools(answer.message, backend, answer.unanswered ?? []);
      for (const result of results) this.append(result);
      for (const message of answer.userMessages ?? []) this.append(message);
      if (answer.endOfTrajectory === true) return this.finish('completed');
      if (results.length === 0 && (answer.userMessages ?? []).length === 0 && this.pendingUserMessages.length === 0) return this.finish('completed');
      if (this.unrecordedBytes >= SESSION_BATCH_BYTES) await this.recordSession();
    }
  }
}

/**
 * The reference agent loop (docs/design.md#agent-run). Keeps the live conversation, a `UsageCounter` per backend,
 * and writes its transcript as it goes (the `recordSession` activity); compacts with `compact`
 * (summaries as the `summarize` activity); calls the `chat` activity and the requested tools as
 * activities; continues as new when Temporal suggests it (or every `continueAsNewAfterRounds`),
 * carrying the live conversation, the counters and the compaction totals — never the transcript.
 *
 * Ends when the model answers without tool calls (and no user message is waiting), when a replayed
 * recording ends, after `maxRounds`, or after the `stop` update (the round in progress finishes
 * first; `stopReason: 'stopped'`). Cancelled, it ends Cancelled after writing its transcript.
 *
 * @throws ApplicationFailure `Compaction.InvalidInput` (non-retryable) naming the field of bad input.
 * @throws ApplicationFailure `RunFailed.ContextExhausted` (non-retryable) when even a hard trim cannot make the conversation fit; the transcript is written first.
 * @throws ApplicationFailure `RunFailed.BackendsFailed` (non-retryable) when every backend of the chain failed in one round.
 * @throws ApplicationFailure `RunFailed.PayloadTooLarge` (non-retryable) when something the run must send is over `maxPayloadBytes` and the worker has no payload store.
 * @example
 * const result = await client.workflow.execute(agentRun, {
 *   taskQueue: 'compactor', workflowId: `agent-${id}`,
 *   args: [{ messages, model: { provider: 'openai', model: 'gpt-4o', contextWindow: 128_000, maxOutputTokens: 4_096 },
 *            tools: ['fs_read', 'fs_list', 'grep'], compaction: { summarizerModel: 'gpt-4o-mini' } }],
 * });
 */
export async function agentRun(input: AgentRunWorkflowInput): Promise<AgentRunResult> {
  const plan = failOnInvalidInput(() => planAgentRun(input));
  const loop = failOnInvalidInput(() => new AgentLoop(input, plan));
  setHandler(sessionQuery, () => loop.sessionSnapshot());
  setHandler(compactionsQuery, () => loop.compactionHistory);
  setHandler(conversationQuery, () => loop.messages);
  setHandler(addUserMessageUpdate, (message) => ({ pending: loop.queueUserMessage(userMessageFrom(message)) }), {
    validator: (message) => {
      if (loop.isFinished) throw ApplicationFailure.create({ type: UpdateFailureType.Finished, message: 'the run has finished; start a new one', nonRetryable: true });
      try {
        userMessageFrom(message);
      } catch (error) {
        if (error instanceof InvalidInputError) throw invalidInputFailure(error);
        throw error;
      }
    },
  });
  setHandler(stopUpdate, () => loop.requestStop(), {
    validator: () => {
      if (loop.isFinished) throw ApplicationFailure.create({ type: UpdateFailureType.Finished, message: 'the run has finished', nonRetryable: true });
    },
  });
  try {
    return await loop.run();
  } catch (error) {
    if (isCancellation(error)) {
      // Cancelled, the run ends Cancelled, as Temporal users expect; its transcript is written first.
      await loop.recordSessionBeforeFailing();
      throw error;
    }
    // A failure ends the run: its transcript is written first (a bug — any other error — fails
    // the workflow task and is retried from history, so there is nothing to write).
    if (error instanceof ApplicationFailure) await loop.recordSessionBeforeFailing();
    throw error;
  }
}
