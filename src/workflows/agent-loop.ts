// Sandbox-safe: the agent loop behind `agentRun` (docs/design.md#agent-run). Each round: preflight in every
// backend's own units, compact when needed (inline, through `compact`), one `chat` activity, the
// requested tools as activities (./tool-dispatch.ts), append, calibrate.
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
  isCancellation,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ChatActivityInput, ChatActivityOutput, CompactorActivities } from '../activities/index.js';
import { RunFailureType } from '../core/agent/agent-errors.js';
import { pinTask, type AgentRunPlan, type ResolvedBackend } from '../core/agent/agent-input.js';
import { addCompactionRecord, compactionRecord, emptyCompactionHistory, groupDigits, renderCompactionDetails, type CompactionHistory } from '../core/agent/compaction-history.js';
import { backendCounter, preflight, type BackendCounter } from '../core/agent/preflight.js';
import { addRoundUsage, addSummarizerUsage, type RoundUsage } from '../core/agent/run-usage.js';
import { applySessionLine, recordCompaction, type SessionBatch, type SessionEntry, type SessionLine, type SessionReference, type SessionSnapshot } from '../core/agent/session.js';
import { messageTexts, type BpeEncodingName } from '../core/counting/bpe-counter.js';
import type { SummarizerUsage } from '../core/counting/summarizer-usage.js';
import { InvalidInputError } from '../core/errors.js';
import { jsonPayloadBytes, utf8Length } from '../core/limits/payload-size.js';
import { validateMessages } from '../core/schema.js';
import type { ChatMessage, CompactionResult } from '../core/types.js';
import { BOOKKEEPING_ACTIVITY, CHAT_ACTIVITY_DEFAULTS, agentActivityOptions } from '../shared/activity-options.js';
import {
  CARRIED_STATE_VERSION,
  type AgentRunCarried,
  type AgentRunResult,
  type AgentRunWorkflowInput,
  type BackendStatus,
  type ContextExhaustedDetails,
  type RequestShape,
  type StopAnswer,
  type StopReason,
} from '../shared/agent-run.js';
import { failureMessage, payloadTooLargeFailure } from '../shared/failures.js';
import { SearchAttributeKeys } from '../shared/search-attributes.js';
import { UNDESCRIBED_WORKER, type WorkerDescription } from '../shared/worker-description.js';
import type { agentRun } from './agent-run.js';
import { compactWithUsage, needsCompaction, type CompactOptions } from './compact.js';
import { describeWorker } from './describe-worker.js';
import { runToolCalls } from './tool-dispatch.js';

/**
 * Transcript lines are recorded (one `recordSession` activity) once this many bytes of them are
 * waiting, and always before the run continues as new, ends or fails. Small enough that a batch
 * travels inline without a payload store, under the 256 KB a history payload should stay below;
 * large enough that a long run records rarely (every dozen rounds at 10 KB a round).
 * @default 128 KiB
 */
export const SESSION_BATCH_BYTES = 128 * 1024;

/**
 * The batch size when the worker stores payloads externally: a batch is then a claim in history
 * whatever its size, and each `recordSession` costs about 1.2 KB of history (its three events and
 * the workflow task its completion wakes) — at 40 KB of new content a round, 128 KiB batches cost
 * one every third round. The waiting lines stay in the workflow's memory, so this is still a bound.
 * @default 1 MiB
 */
export const STORED_SESSION_BATCH_BYTES = 1024 * 1024;

/**
 * Gates what a long run changed after it shipped: larger transcript batches with a payload store
 * ({@link STORED_SESSION_BATCH_BYTES}), and a token-count cache that forgets the texts compaction
 * dropped. A run recorded before them replays with the old batches and cache.
 */
export const LONG_RUN_PATCH_ID = 'temporal-compactor:long-run-v2';

/**
 * Runs that refresh the `ContextTokens` search attribute when the context moved by a tenth of the
 * round's context window (or at a compaction). Before it, the rule was a tenth of the last value:
 * a context that grows by a large tool result each round was upserted every round, one history
 * event each, for a figure that serves to find runs near their window.
 */
export const CONTEXT_TOKENS_PATCH_ID = 'temporal-compactor:context-tokens-window';

/**
 * Text the workflow may tokenize itself per round, in characters. More new text than this (a long
 * conversation at the start of a run, a huge tool result) is counted by the `countTokens` activity
 * instead: pure-JS BPE runs at a few MB/s, and a workflow activation must stay far below the SDK's
 * 2 s deadlock timeout, on a warm worker and on one replaying the run from history.
 * @default 200,000
 */
export const WORKFLOW_COUNT_CHARS = 200_000;

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
  checkCarriedCounts(carried);
  return carried;
}

/** `carried.tokenCounts`, when present: a count (or null) for each text of the live conversation, per encoding. */
function checkCarriedCounts(carried: AgentRunCarried): void {
  const counts: unknown = carried.tokenCounts;
  if (counts === undefined) return;
  const field = 'input.carried.tokenCounts';
  if (typeof counts !== 'object' || counts === null || Array.isArray(counts)) throw new InvalidInputError(field, 'must be an object of count lists by encoding, or left out');
  const texts = carried.live.reduce((sum, entry) => sum + messageTexts(entry.message).length, 0);
  for (const [encoding, list] of Object.entries(counts)) {
    if (!Array.isArray(list) || list.length !== texts) throw new InvalidInputError(`${field}.${encoding}`, `must list a count or null for each of the ${texts} texts of the live conversation`);
    list.forEach((count: unknown, index) => {
      if (count !== null && !(typeof count === 'number' && Number.isSafeInteger(count) && count >= 0)) throw new InvalidInputError(`${field}.${encoding}[${index}]`, 'must be a non-negative integer or null');
    });
  }
}

/**
 * Workflow time in ms: the sandbox replaces `Date` with the time of the workflow task, the same
 * on replay, so this is deterministic (the lint rule against clocks is for the pure core).
 */
function workflowTime(): number {
  // eslint-disable-next-line no-restricted-properties -- workflow time, not the machine's clock (see above)
  return Date.now();
}

/** One run of the loop: its state, which only its own methods change, and what a round does with it. */
export class AgentLoop {
  private entries: SessionEntry[] = [];
  /** Transcript lines not recorded yet, and their size as JSON. */
  private unrecorded: SessionLine[] = [];
  /** The JSON size of each line of {@link unrecorded}, measured once when it was written. */
  private unrecordedSizes: number[] = [];
  private unrecordedBytes = 0;
  /** Transcript lines recorded so far, across runs. */
  private recordedLines: number;
  private compactions: CompactionHistory;
  private readonly counters: BackendCounter[];
  /** Token counts by text, per BPE encoding of the chain: what this run has counted or was told (`countTokens`). */
  private readonly knownTokens = new Map<BpeEncodingName, Map<string, number>>();
  /** {@link LONG_RUN_PATCH_ID}, once asked. */
  private longRunPatched: boolean | undefined;
  /** {@link CONTEXT_TOKENS_PATCH_ID}, once asked. */
  private contextTokensPatched: boolean | undefined;
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
    if (carried?.tokenCounts !== undefined) this.rememberCounts(carried.live, carried.tokenCounts);
    this.counters = plan.backends.map((backend) =>
      backendCounter(backend, plan.tools, carried?.counters[backend.index] ?? null, backend.tokenizer === 'chars' ? undefined : this.knownTokens.get(backend.tokenizer)),
    );
    if (carried !== undefined) this.entries = carried.live;
    else {
      // docs/design.md#task-survives: the task stays verbatim (sticky) unless the input says otherwise.
      for (const message of plan.keepTask ? pinTask(plan.messages) : plan.messages) this.append(message);
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
    this.queueLine(line);
  }

  /** Puts a transcript line in the queue of lines to record, with its size. */
  private queueLine(line: SessionLine): void {
    const size = jsonPayloadBytes(line);
    this.unrecorded.push(line);
    this.unrecordedSizes.push(size);
    this.unrecordedBytes += size;
  }

  private append(message: ChatMessage, usage?: RoundUsage): void {
    this.writeLine(usage === undefined ? { type: 'message', id: `m${this.nextId}`, message } : { type: 'message', id: `m${this.nextId}`, message, usage });
    this.nextId += 1;
  }

  /** Whether this run has {@link LONG_RUN_PATCH_ID}'s behaviour; asked once, when first needed. */
  private longRunV2(): boolean {
    this.longRunPatched ??= patched(LONG_RUN_PATCH_ID);
    return this.longRunPatched;
  }

  /** Whether this run has {@link CONTEXT_TOKENS_PATCH_ID}'s behaviour; asked once, at the first round's publication. */
  private contextTokensByWindow(): boolean {
    this.contextTokensPatched ??= patched(CONTEXT_TOKENS_PATCH_ID);
    return this.contextTokensPatched;
  }

  /** How many bytes of transcript lines wait before they are recorded. */
  private sessionBatchBytes(): number {
    return this.worker.externalStorage && this.longRunV2() ? STORED_SESSION_BATCH_BYTES : SESSION_BATCH_BYTES;
  }

  /**
   * Forgets the counts of texts no longer in the conversation — summarized, trimmed or elided away:
   * without this the cache holds every text the run ever counted until it continues as new
   * (megabytes on a long run with big tool results). Called after every compaction that changed it.
   */
  private forgetDroppedTexts(): void {
    if (!this.longRunV2()) return;
    const live = new Set(this.messages.flatMap((message) => messageTexts(message)));
    for (const known of this.knownTokens.values()) {
      for (const text of known.keys()) if (!live.has(text)) known.delete(text);
    }
  }

  /** The counts a continued run was handed (see {@link AgentRunCarried.tokenCounts}), for the encodings this chain uses. */
  private rememberCounts(live: readonly SessionEntry[], counts: Record<string, Array<number | null>>): void {
    const texts = live.flatMap((entry) => messageTexts(entry.message));
    for (const [encoding, known] of this.knownTokens) {
      const list = counts[encoding];
      if (list === undefined) continue;
      texts.forEach((text, index) => {
        const count = list[index];
        if (typeof count === 'number') known.set(text, count);
      });
    }
  }

  /** What this run knows of the live conversation's token counts, to carry: a continued run need not count it again. */
  private countsToCarry(): Record<string, Array<number | null>> {
    const texts = this.messages.flatMap((message) => messageTexts(message));
    return Object.fromEntries([...this.knownTokens].map(([encoding, known]) => [encoding, texts.map((text) => known.get(text) ?? null)]));
  }

  /** Fails the run with `RunFailed.PayloadTooLarge` when `bytes` would be sent inline over the limit. */
  private checkPayload(payload: string, bytes: number): void {
    if (bytes <= this.plan.maxPayloadBytes || this.worker.externalStorage) return;
    throw payloadTooLargeFailure({ payload, bytes, limit: this.plan.maxPayloadBytes });
  }

  /**
   * Records the waiting transcript lines, in batches of about {@link SESSION_BATCH_BYTES}. The
   * batch is the record (the activity's input in history, or in the payload store), so a batch is
   * recorded once it is scheduled; the activity only acknowledges it.
   */
  private async recordSession(): Promise<void> {
    // Without a store a batch must travel inline: at most ¾ of the payload limit (one line may be more, and is checked).
    // With a store (since LONG_RUN_PATCH_ID) everything waiting goes as one batch: a claim whatever
    // its size, and the waiting lines are bounded by when this is called.
    const batchBytes = !this.worker.externalStorage
      ? Math.min(SESSION_BATCH_BYTES, Math.floor(this.plan.maxPayloadBytes * 0.75))
      : this.longRunV2()
        ? Number.POSITIVE_INFINITY
        : SESSION_BATCH_BYTES;
    while (this.unrecorded.length > 0) {
      let bytes = 0;
      let count = 0;
      for (const size of this.unrecordedSizes) {
        if (count > 0 && bytes + size > batchBytes) break;
        bytes += size;
        count += 1;
      }
      const batch: SessionBatch = { from: this.recordedLines, lines: this.unrecorded.slice(0, count) };
      this.checkPayload(`a batch of ${count} transcript line${count === 1 ? '' : 's'} (from line ${batch.from})`, bytes);
      const last = batch.from + count - 1;
      const { recordSession } = proxyActivities<CompactorActivities>({
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
      this.unrecordedSizes = this.unrecordedSizes.slice(count);
      this.unrecordedBytes -= bytes;
      this.recordedLines += count;
    }
    this.unrecordedBytes = 0;
  }

  /** Records the transcript even while the run is being cancelled: nothing it wrote is lost. */
  private recordSessionNow(): Promise<void> {
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
      tokenCounts: this.countsToCarry(),
    };
  }

  /** Records the transcript, then builds the result and checks it fits a payload. */
  private async finish(stopReason: StopReason): Promise<AgentRunResult> {
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

  /**
   * Current details (the compaction history) and search attributes, when they changed; `window` is
   * the context window of the backend `contextTokens` was counted for.
   */
  private publish(contextTokens: number | undefined, window?: number): void {
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
    // The context size moves every round: upsert it when it moved by a tenth of the window (runs
    // before CONTEXT_TOKENS_PATCH_ID: a tenth of itself), or at a compaction, not every round (one history event each).
    const tolerance = window !== undefined && this.contextTokensByWindow() ? window / 10 : this.published.contextTokens / 10;
    const moved = contextTokens !== undefined && (this.published.contextTokens < 0 || Math.abs(contextTokens - this.published.contextTokens) > tolerance);
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
        const { countTokens } = proxyActivities<CompactorActivities>({
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
    for (const line of lines) this.queueLine(line);
    this.entries = entries;
    this.compactions = addCompactionRecord(this.compactions, compactionRecord(context, result));
    this.forgetDroppedTexts();
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
      this.publish(tokens, backend.backend.config.contextWindow);
      const input: ChatActivityInput = { backend: backend.backend.config, messages: sent, tools: this.plan.tools, turn: this.rounds };
      this.checkPayload(`the chat request of round ${this.rounds + 1}`, jsonPayloadBytes([input]));
      try {
        const { chat } = proxyActivities<CompactorActivities>({
          ...agentActivityOptions(this.plan.chatActivity, 'input.chatActivity', CHAT_ACTIVITY_DEFAULTS),
          // The backend is named only when there is a choice of them (one-backend runs name it in their input): a summary is history bytes every round.
          summary: `chat${this.backends.length > 1 ? ` · ${backend.backend.label}` : ''} · ${sent.length} messages (${groupDigits(tokens)} tokens)`,
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
      const results = await runToolCalls(answer.message, answer.unanswered ?? [], { plan: this.plan, backend: backend.backend.config, externalStorage: this.worker.externalStorage });
      for (const result of results) this.append(result);
      for (const message of answer.userMessages ?? []) this.append(message);
      if (answer.endOfTrajectory === true) return this.finish('completed');
      if (results.length === 0 && (answer.userMessages ?? []).length === 0 && this.pendingUserMessages.length === 0) return this.finish('completed');
      if (this.unrecordedBytes >= this.sessionBatchBytes()) await this.recordSession();
    }
  }
}
