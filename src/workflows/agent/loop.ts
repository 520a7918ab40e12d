// Sandbox-safe: the agent loop behind `agentRun` (docs/design.md#agent-run). Each round: preflight in every
// backend's own units, compact when needed (inline, through `compact`), one `chat` activity, the
// requested tools as activities (../tool-dispatch.ts), append, calibrate.
//
// What the run holds is bounded by its live context, never by its length: the transcript leaves
// the workflow in batches (./transcript-writer.ts), the compaction history keeps recent records and
// totals, and continue-as-new carries the live conversation with its transcript ids. Anything that
// could still exceed the server's payload limit is measured before it is sent (./payload-limit.ts,
// docs/design.md#never-wedge). Its other parts, one job each: the token counts it knows
// (./token-cache.ts), what it publishes (./visibility.ts), backend cooldown and request cost (src/core/agent/backend-cooldown.ts, request-cost.ts).
import { ApplicationFailure, type ActivityOptions } from '@temporalio/common';
import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { ChatActivityInput, ChatActivityOutput, CompactorActivities } from '../../activities/index.js';
import { pinTask, type AgentRunPlan, type ResolvedBackend } from '../../core/agent/agent-input.js';
import {
  freshBackendStatus,
  isResting,
  restingNote,
  startRest,
  type BackendStatus,
} from '../../core/agent/backend-cooldown.js';
import { CARRIED_STATE_VERSION, parseCarriedState, type AgentRunCarried } from '../../core/agent/carried-state.js';
import {
  addCompactionRecord,
  compactionRecord,
  emptyCompactionHistory,
  groupDigits,
  type CompactionHistory,
  type CompactionRecord,
} from '../../core/agent/compaction-history.js';
import { backendCounter, preflight, type BackendCounter } from '../../core/agent/preflight.js';
import { needsCompactionCore } from '../../core/compaction/engine.js';
import { requestCost, type RequestShape } from '../../core/agent/request-cost.js';
import { RECALL_TOOL_NAME, recallNamer, withRecallLine } from '../../core/agent/recall.js';
import { addRoundUsage, addSummarizerUsage, type RoundUsage } from '../../core/agent/run-usage.js';
import {
  applySessionLine,
  recordCompaction,
  type ReviewOutcome,
  type SessionEntry,
  type SessionLine,
  type SessionSnapshot,
} from '../../core/agent/session.js';
import {
  NOTHING_TO_COMPACT,
  noPins,
  parseReviewInput,
  pinChange,
  pinDetails,
  proposalDetails,
  proposalOf,
  steeredInstructions,
  unpinChange,
  withEditedSummary,
  type CompactAnswer,
  type CompactionProposal,
  type NothingCompacted,
  type PinChange,
  type Pins,
  type ReviewAnswer,
  type ReviewCompactionInput,
} from '../../core/agent/steering.js';
import type { SummarizerUsage } from '../../core/counting/summarizer-usage.js';
import { FailureType, InvalidInputError } from '../../core/errors.js';
import { jsonPayloadBytes } from '../../core/limits/payload-size.js';
import type { ChatMessage, CompactionResult } from '../../core/types.js';
import { CHAT_ACTIVITY_DEFAULTS, agentActivityOptions } from '../../shared/activity-options.js';
import type {
  AgentRunResult,
  AgentRunWorkflow,
  AgentRunWorkflowInput,
  ContextExhaustedDetails,
  StopAnswer,
  StopReason,
} from '../../shared/agent-run.js';
import { failOnInvalidInput, failureMessage, invalidInputFailure } from '../../shared/failures.js';
import { UNDESCRIBED_WORKER, type WorkerDescription } from '../../shared/worker-description.js';
import { driveCompaction, summarizeActivityOptions, type CompactionCall } from '../compact.js';
import { describeWorker } from '../describe-worker.js';
import { runToolCalls } from '../tool-dispatch.js';
import { PayloadLimit } from './payload-limit.js';
import { TokenCache } from './token-cache.js';
import { TranscriptWriter } from './transcript-writer.js';
import { RunVisibility } from './visibility.js';

/**
 * Workflow time in ms: the sandbox replaces `Date` with the time of the workflow task, the same
 * on replay, so this is deterministic (the lint rule against clocks is for the pure core).
 */
function workflowTime(): number {
  // eslint-disable-next-line no-restricted-properties -- workflow time, not the machine's clock (see above)
  return Date.now();
}

/** A `compact` update waiting for the loop (docs/design.md#steering): answered once the loop has compacted. */
interface CompactRequest {
  instructions: string | undefined;
  answer?: CompactAnswer;
}

/** A `pin` or `unpin` update waiting for the loop: answered with the pins, or refused, once the loop has applied it. */
interface PinRequest {
  kind: 'pin' | 'unpin';
  input: { ids: string[]; fact?: string };
  outcome?: { pins: Pins } | { failure: ApplicationFailure };
}

/** Whether a compaction result changes the conversation (or marks it): only such a one is recorded. */
function changes(result: CompactionResult): boolean {
  return result.cutIndex >= 0 || result.elisions.length > 0 || result.fallback || result.exhausted;
}

/** What one pin request changes, given the live entries and the pins before it (throws `InvalidInputError` naming the id). */
function changeOf(request: Omit<PinRequest, 'outcome'>, entries: readonly SessionEntry[], pins: Pins): PinChange {
  return request.kind === 'pin' ? pinChange(request.input, entries, pins) : unpinChange(request.input, pins);
}

/** One run of the loop: its state, which only its own methods change, and what a round does with it. */
export class AgentLoop {
  private entries: SessionEntry[] = [];
  private readonly limit: PayloadLimit;
  /** The `summarize` activity's options, built once from the plan. */
  private readonly summarizeActivity: ActivityOptions;
  private readonly transcript: TranscriptWriter;
  private readonly visibility: RunVisibility;
  private compactions: CompactionHistory;
  private readonly counters: BackendCounter[];
  private readonly tokens: TokenCache;
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
  /** What `pin` pinned (docs/design.md#steering), carried across continue-as-new. */
  private pins: Pins;
  /** `compact` updates waiting for the loop (served before the next chat request). */
  private readonly compactRequests: CompactRequest[] = [];
  /** `pin`/`unpin` updates that arrived while a compaction held the conversation (applied when it is done). */
  private readonly pinRequests: PinRequest[] = [];
  /** True while a compaction's summary is being written or reviewed: the conversation is not to change under it. */
  private compacting = false;
  /** The compaction waiting for `reviewCompaction`, and the decision once taken. */
  private pending: { proposal: CompactionProposal; decision: ReviewCompactionInput | undefined } | undefined;
  /** JSON sizes of messages already measured (the same message object is not measured twice). */
  private readonly sizes = new WeakMap<ChatMessage, number>();

  constructor(
    private readonly input: AgentRunWorkflowInput,
    private readonly plan: AgentRunPlan,
  ) {
    const carried = input.carried === undefined ? undefined : parseCarriedState(input.carried);
    this.limit = new PayloadLimit(plan.maxPayloadBytes);
    this.summarizeActivity = summarizeActivityOptions(
      plan.compaction.options,
      plan.compaction.activity,
      'input.compaction',
    );
    this.transcript = new TranscriptWriter(carried?.sessionLines ?? 0, this.limit);
    this.visibility = new RunVisibility();
    this.compactions = carried?.compactions ?? emptyCompactionHistory(plan.pricing);
    this.previousRequest = carried?.previousRequest ?? null;
    this.pins = carried?.pins ?? noPins();
    this.rounds = carried?.rounds ?? 0;
    this.nextId = carried?.nextId ?? 1;
    this.pendingUserMessages = carried?.pendingUserMessages ?? [];
    this.backendFallbacks = carried?.backendFallbacks ?? 0;
    this.backends = plan.backends.map(
      (backend) => carried?.backends[backend.index] ?? freshBackendStatus(backend.label),
    );
    this.peakContextTokens = carried?.peakContextTokens ?? 0;
    this.continuedAsNew = carried?.continuedAsNew ?? 0;
    this.tokens = new TokenCache(plan.backends);
    if (carried !== undefined) this.tokens.remember(carried.live, carried.tokenCounts);
    this.counters = plan.backends.map((backend) =>
      backendCounter(
        backend,
        plan.tools,
        carried?.counters[backend.index] ?? null,
        this.tokens.countsFor(backend.tokenizer),
      ),
    );
    if (carried !== undefined) this.entries = carried.live;
    else {
      // docs/design.md#task-survives: the task stays verbatim (sticky) unless the input says otherwise.
      for (const message of plan.keepTask ? pinTask(plan.messages) : plan.messages) this.append(message);
    }
  }

  /** The live conversation with each message's transcript id (the `conversationEntries` query). */
  get liveEntries(): SessionEntry[] {
    return this.entries;
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
    return { reference: this.transcript.reference(), pending: this.transcript.pending };
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

  /**
   * Queues a compaction on demand (the `compact` update) and answers once the loop has done it,
   * before its next chat request (docs/design.md#steering). The handler only waits: the loop compacts.
   */
  async requestCompaction(instructions: string | undefined): Promise<CompactAnswer> {
    const request: CompactRequest = { instructions };
    this.compactRequests.push(request);
    await condition(() => request.answer !== undefined);
    if (request.answer === undefined) throw new Error('unreachable: the compact request was not answered');
    return request.answer;
  }

  /**
   * Checks a `pin`/`unpin` against the live conversation and the pins it would see once the
   * requests queued before it are applied; throws `InvalidInputError` naming the id or fact.
   */
  checkPins(kind: PinRequest['kind'], input: PinRequest['input']): void {
    let pins = this.pins;
    for (const queued of this.pinRequests) {
      try {
        pins = changeOf(queued, this.entries, pins).pins;
      } catch (error) {
        if (!(error instanceof InvalidInputError)) throw error;
      }
    }
    changeOf({ kind, input }, this.entries, pins);
  }

  /**
   * A `pin`/`unpin`: applied at once and answered with the run's pins — or, while a compaction
   * holds the conversation (its summary being written), queued and applied as soon as it is done.
   */
  async requestPins(kind: PinRequest['kind'], input: PinRequest['input']): Promise<Pins> {
    const request: PinRequest = { kind, input };
    if (this.compacting) {
      this.pinRequests.push(request);
      await condition(() => request.outcome !== undefined);
    } else this.applyPins(request);
    const { outcome } = request;
    if (outcome === undefined) throw new Error('unreachable: the pin request was not answered');
    if ('failure' in outcome) throw outcome.failure;
    return outcome.pins;
  }

  /** Applies pin requests: a `pin` transcript line for the messages whose flag changes, and the new pins. */
  private applyPins(...requests: PinRequest[]): void {
    for (const request of requests) {
      try {
        const change = changeOf(request, this.entries, this.pins);
        if (change.ids.length > 0) this.writeLine({ type: 'pin', ids: change.ids, pinned: request.kind === 'pin' });
        this.pins = change.pins;
        request.outcome = { pins: change.pins };
      } catch (error) {
        // The conversation moved since the update was accepted (the compaction removed the message).
        if (!(error instanceof InvalidInputError)) throw error;
        request.outcome = { failure: invalidInputFailure(error) };
      }
    }
    // The pins show in the current details (a search attribute is upserted only when its value changed).
    if (requests.length > 0) this.publish(undefined);
  }

  /**
   * Compacts for every `compact` update waiting, once, their instructions together, at a point
   * where the live conversation is the loop's alone (docs/design.md#steering).
   */
  private async steer(): Promise<void> {
    const requests = this.compactRequests.splice(0);
    if (requests.length > 0) {
      const asked = requests.flatMap((request) => (request.instructions === undefined ? [] : [request.instructions]));
      await this.countNewText();
      const answer = await this.compactIfNeeded(this.candidates(new Set()), {
        instructions: asked.length === 0 ? undefined : asked.join('\n\n'),
      });
      for (const request of requests) request.answer = answer ?? NOTHING_TO_COMPACT;
    }
    this.publish(undefined);
  }

  /** Answers the `compact` updates the loop will not serve, the run having finished; true when there was any. */
  private refuseCompactions(): boolean {
    const requests = this.compactRequests.splice(0);
    for (const request of requests)
      request.answer = {
        compacted: false,
        reason: 'the run finished before its next chat request',
      } satisfies NothingCompacted;
    return requests.length > 0;
  }

  private writeLine(line: SessionLine): void {
    this.entries = applySessionLine(this.entries, line, this.transcript.nextLineIndex);
    this.transcript.write(line);
  }

  private append(message: ChatMessage, usage?: RoundUsage): void {
    this.writeLine(
      usage === undefined
        ? { type: 'message', id: `m${this.nextId}`, message }
        : { type: 'message', id: `m${this.nextId}`, message, usage },
    );
    this.nextId += 1;
  }

  /**
   * Before the run fails: records what it can of the transcript, so a failed run's transcript is
   * whole. A failure to record (a batch over the payload limit, the cause of this very failure
   * perhaps) must not replace the run's own failure.
   */
  async recordSessionBeforeFailing(): Promise<void> {
    this.finished = true;
    try {
      await this.transcript.recordNow();
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) throw error;
      log.warn('the transcript could not be recorded in whole before the run failed', {
        recordedLines: this.transcript.recorded,
        pendingLines: this.transcript.pending.length,
        error: error.message,
      });
    }
  }

  private carry(): AgentRunCarried {
    return {
      version: CARRIED_STATE_VERSION,
      live: this.entries,
      sessionLines: this.transcript.recorded,
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
      tokenCounts: this.tokens.toCarry(this.messages),
      pins: this.pins,
    };
  }

  /** Records the transcript, then builds the result and checks it fits a payload. */
  private async finish(stopReason: StopReason): Promise<AgentRunResult> {
    this.finished = true;
    await this.transcript.recordNow();
    const result: AgentRunResult = {
      messages: this.messages,
      session: this.transcript.reference(),
      compactions: this.compactions,
      rounds: this.rounds,
      stopReason,
      backendFallbacks: this.backendFallbacks,
      backends: this.backends,
      peakContextTokens: this.peakContextTokens,
      continuedAsNew: this.continuedAsNew,
    };
    this.publish(undefined);
    this.limit.check('the result of the run', jsonPayloadBytes(result));
    // A `compact` or `pin` waiting for a round that will not come is answered, and its handler ends with the run.
    if (this.refuseCompactions()) await condition(allHandlersFinished);
    return result;
  }

  /**
   * Current details and search attributes, when they changed (./visibility.ts); `window` is the
   * context window of the backend `contextTokens` was counted for.
   */
  private publish(contextTokens: number | undefined, window?: number): void {
    const note = restingNote(this.backends.filter((_, index) => this.isResting(index)));
    const allowed = new Set(this.plan.searchAttributes ? this.worker.searchAttributes : []);
    const notes = [
      ...(note === '' ? [] : [note]),
      ...pinDetails(this.pins),
      ...(this.pending === undefined ? [] : proposalDetails(this.pending.proposal)),
    ];
    this.visibility.publish(this.compactions, notes, allowed, contextTokens, window, this.pending !== undefined);
  }

  /** Whether a backend rests in the coming round (docs/design.md#cooldown). */
  private isResting(index: number): boolean {
    return isResting(this.backends[index], this.rounds + 1, workflowTime);
  }

  private rest(index: number): void {
    const status = this.backends[index];
    if (status !== undefined) startRest(status, this.plan.backendCooldown, this.rounds + 1, workflowTime);
  }

  /**
   * The options of one compaction of the run; `instructions` are those of a `compact` update. The
   * summary instructions hold the run's own, those, and the pinned facts (none of them: the
   * options are what the run asked before steering existed).
   */
  /** Whether the conversation needs compaction now (docs/design.md#needs-compaction), for one compaction's settings. */
  private needsCompaction({ settings, overrides }: CompactionCall): boolean {
    return failOnInvalidInput(() => needsCompactionCore(this.messages, settings.options, overrides, overrides.counter));
  }

  /**
   * One compaction of the run: the settings resolved at its start with this compaction's budget
   * (the run's, else the room `aim`), and its counter, target and instructions (the steering's).
   */
  private compactionCall(aimAt: BackendCounter, aim: number, target?: number, instructions?: string): CompactionCall {
    const { options, contextBudget, activity } = this.plan.compaction;
    const steered = steeredInstructions(options.summaryInstructions, this.pins.facts, instructions);
    return {
      settings: {
        options: { ...options, contextBudget: contextBudget ?? aim },
        activity: this.summarizeActivity,
        summarizerModel: activity.summarizerModel,
        maxPayloadBytes: this.plan.maxPayloadBytes,
        payloadStore: this.worker.externalStorage,
      },
      overrides: {
        counter: aimAt.conversation,
        ...(target === undefined ? {} : { target }),
        ...(steered === undefined ? {} : { summaryInstructions: steered }),
      },
    };
  }

  /**
   * Compacts when the conversation does not fit the aim, or is over the compaction trigger (or
   * holds an elision batch). Over the room, `compact` aims at the room exactly (docs/design.md#overrides);
   * merely over the trigger, it aims at `targetRatio × contextBudget` so one compaction buys
   * several rounds instead of trimming a little every round. On demand (the `compact` update), it
   * compacts whatever the trigger says and answers with the record, or why nothing changed.
   *
   * Under `compaction.review` (docs/design.md#review): with `'manual'` only on demand; with
   * `'approve'` the compaction waits for `reviewCompaction` before it is applied. Over the room it
   * is applied at once in every mode (recorded as forced): no request goes out over the window.
   */
  private async compactIfNeeded(
    candidates: readonly BackendCounter[],
    demand?: { instructions: string | undefined },
  ): Promise<CompactAnswer | undefined> {
    const { aimAt, aim, tokens } = preflight(this.messages, candidates);
    const overRoom = tokens > aim;
    const call = this.compactionCall(aimAt, aim, overRoom ? aim : undefined, demand?.instructions);
    const { mode } = this.plan.review;
    if (demand === undefined && !overRoom && (mode === 'manual' || !this.needsCompaction(call))) return undefined;
    const target = overRoom ? aim : (this.plan.compaction.contextBudget ?? aim);
    // Pins asked for while the summary is written (or reviewed) wait for the result: it replaces these messages.
    this.compacting = true;
    let decided: { result: CompactionResult; review: ReviewOutcome | undefined } | undefined;
    let summarizerUsage: SummarizerUsage | undefined;
    try {
      // docs/design.md#recall: the stubs, the summary and a trim's marker name what they replaced,
      // inside the pass (every count includes the ids).
      const compaction = await driveCompaction(
        this.messages,
        () => call,
        'hard-trim',
        this.plan.recall ? recallNamer(this.entries) : undefined,
      );
      summarizerUsage = compaction.summarizerUsage;
      // The run is out of room only when the conversation does not fit the backend: a `contextBudget`
      // set below the room is what compaction aims at, not a limit the model has.
      const result = { ...compaction.result, exhausted: compaction.result.tokensAfter > aim };
      decided =
        mode === 'auto'
          ? { result, review: undefined }
          : overRoom
            ? { result, review: 'forced' }
            : mode === 'approve' && changes(result)
              ? await this.review(result, aimAt)
              : { result, review: 'applied' };
    } finally {
      this.compacting = false;
    }
    if (decided === undefined) {
      // Rejected: the summarizer was billed all the same; the conversation stays as it is.
      this.addSummarizerUsage(summarizerUsage);
      this.applyPins(...this.pinRequests.splice(0));
      return { compacted: false, reason: 'the reviewer rejected it (reviewCompaction)' };
    }
    const { result } = decided;
    const record = this.record(result, aimAt.backend, target, summarizerUsage, decided.review);
    this.applyPins(...this.pinRequests.splice(0));
    if (result.exhausted) {
      this.publish(result.tokensAfter);
      const details: ContextExhaustedDetails = {
        round: this.rounds + 1,
        backend: aimAt.backend.label,
        tokens: result.tokensAfter,
        room: aim,
      };
      throw ApplicationFailure.create({
        type: FailureType.RunFailed.ContextExhausted,
        message: `context exhausted before round ${details.round}: ${groupDigits(details.tokens)} tokens after compaction, ${groupDigits(aim)} usable on ${details.backend} (keepRecent or a recent tool result is too large for the window)`,
        nonRetryable: true,
        details: [details],
      });
    }
    return record ?? (demand === undefined ? undefined : NOTHING_TO_COMPACT);
  }

  /**
   * Publishes a computed compaction (the `pendingCompaction` query, the current details) and waits,
   * durably, for `reviewCompaction` or `reviewTimeout`: what was decided (undefined: rejected).
   */
  private async review(
    result: CompactionResult,
    aimAt: BackendCounter,
  ): Promise<{ result: CompactionResult; review: ReviewOutcome } | undefined> {
    const proposal = proposalOf(this.entries, result, {
      round: this.rounds + 1,
      backend: aimAt.backend.label,
      applyAt: workflowTime() + this.plan.review.timeoutMs,
    });
    this.pending = { proposal, decision: undefined };
    this.publish(undefined);
    const pending = this.pending;
    const answered = await condition(() => pending.decision !== undefined, this.plan.review.timeoutMs);
    this.pending = undefined;
    this.publish(undefined);
    const { decision } = pending;
    if (!answered || decision === undefined) return { result, review: 'timed-out' };
    if (decision.decision === 'reject') return undefined;
    if (decision.decision === 'apply' || decision.summary === undefined) return { result, review: 'applied' };
    // docs/design.md#recall: the person's summary names what it replaces as the summarizer's did.
    const summary = this.plan.recall ? withRecallLine(decision.summary, result.summary) : decision.summary;
    return { result: withEditedSummary(result, summary, aimAt.conversation), review: 'edited' };
  }

  /** The compaction waiting for review (the `pendingCompaction` query); null when none is. */
  get pendingCompaction(): CompactionProposal | null {
    return this.pending?.proposal ?? null;
  }

  /** Checks a `reviewCompaction` argument against the proposal waiting; throws `InvalidInputError` naming the field. */
  checkReview(input: unknown): ReviewCompactionInput {
    if (this.pending?.decision !== undefined)
      throw new InvalidInputError('reviewCompaction', 'the compaction waiting was reviewed already');
    return parseReviewInput(input, this.pending?.proposal);
  }

  /** Takes a person's decision on the compaction waiting (the `reviewCompaction` update); the loop goes on with it. */
  decideReview(input: ReviewCompactionInput): ReviewAnswer {
    const { pending } = this;
    if (pending === undefined)
      throw new Error('unreachable: reviewCompaction without a proposal (its validator checks)');
    pending.decision = input;
    return { decision: input.decision, round: pending.proposal.round };
  }

  /** Adds what the summarizer was billed to the run's usage (billed even when its summary is not applied). */
  private addSummarizerUsage(summarizerUsage: SummarizerUsage | undefined): void {
    if (summarizerUsage !== undefined)
      this.compactions = { ...this.compactions, usage: addSummarizerUsage(this.compactions.usage, summarizerUsage) };
  }

  /** Records a compaction that changed the conversation and returns its record (undefined: nothing changed). */
  private record(
    result: CompactionResult,
    backend: ResolvedBackend,
    target: number,
    summarizerUsage: SummarizerUsage | undefined,
    review: ReviewOutcome | undefined,
  ): CompactionRecord | undefined {
    // The summarizer was billed even when its summary lost to the hard trim.
    this.addSummarizerUsage(summarizerUsage);
    if (!changes(result)) return undefined;
    const { cacheHitRate, billedInput } = this.compactions.usage;
    const context = {
      round: this.rounds + 1,
      backend: backend.label,
      target,
      ...(summarizerUsage === undefined ? {} : { summarizerUsage }),
      cacheHitRate,
      billedInput,
      ...(review === undefined ? {} : { review }),
    };
    const { lines, entries } = recordCompaction(this.entries, result, context);
    for (const line of lines) this.transcript.write(line);
    this.entries = entries;
    const record = compactionRecord(context, result);
    this.compactions = addCompactionRecord(this.compactions, record);
    // The cache forgets what compaction dropped: what it holds stays bounded by the live context.
    this.tokens.forgetAllBut(this.messages);
    return record;
  }

  private sizeOf(message: ChatMessage): number {
    let size = this.sizes.get(message);
    if (size === undefined) {
      size = JSON.stringify(message).length;
      this.sizes.set(message, size);
    }
    return size;
  }

  /** What this request cost (src/core/agent/request-cost.ts); it becomes the request the next one's cache is modelled against. */
  private roundUsage(
    sent: readonly ChatMessage[],
    backend: BackendCounter,
    tokens: number,
    answer: ChatActivityOutput,
  ): RoundUsage {
    const shape: RequestShape = {
      ids: this.entries.map((entry) => entry.id),
      sizes: sent.map((message) => this.sizeOf(message)),
    };
    const usage = requestCost({
      backend: backend.backend.label,
      sent,
      shape,
      previous: this.previousRequest,
      tokens,
      reported: answer.usage,
      count: (messages) => backend.usage.count(messages),
    });
    this.previousRequest = shape;
    return usage;
  }

  /** Counts the text of the live conversation no counter knows yet (./token-cache.ts). */
  private countNewText(): Promise<void> {
    return this.tokens.countNewText(
      this.messages,
      this.limit.externalStorage ? Number.POSITIVE_INFINITY : this.limit.inlineBatchBytes(),
    );
  }

  /** The backends a request may go to: those that have not `failed` this round, resting ones only when no other is left. */
  private candidates(failed: ReadonlySet<number>): BackendCounter[] {
    const available = this.counters.filter((counter) => !failed.has(counter.backend.index));
    // Resting backends are left out while another one can take the round.
    const rested = available.filter((counter) => !this.isResting(counter.backend.index));
    return rested.length > 0 ? rested : available;
  }

  /** One chat call, falling back along the chain when a backend fails after its retries. */
  private async chat(): Promise<{ answer: ChatActivityOutput; backend: BackendCounter; usage: RoundUsage }> {
    const failed = new Set<number>();
    let lastFailure: unknown;
    await this.countNewText();
    for (;;) {
      const candidates = this.candidates(failed);
      if (candidates.length === 0) {
        throw ApplicationFailure.create({
          type: FailureType.RunFailed.BackendsFailed,
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
      const input: ChatActivityInput = {
        backend: backend.backend.config,
        messages: sent,
        tools: this.plan.tools,
        turn: this.rounds,
      };
      this.limit.check(`the chat request of round ${this.rounds + 1}`, jsonPayloadBytes([input]));
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
    // Updates in flight finish first: their messages must be in what the next run carries, and a
    // `compact` or `pin` waiting for the loop is applied here (its handler cannot outlive this run).
    // A pin applied while the transcript was being recorded wrote a line: record again.
    for (;;) {
      await condition(() => allHandlersFinished() || this.compactRequests.length > 0);
      if (this.compactRequests.length > 0) {
        await this.steer();
        continue;
      }
      for (const message of this.pendingUserMessages.splice(0)) this.append(message);
      await this.transcript.record();
      if (allHandlersFinished() && this.compactRequests.length === 0 && this.transcript.pending.length === 0) break;
    }
    const next: AgentRunWorkflowInput = {
      ...this.input,
      messages: [],
      carried: { ...this.carry(), continuedAsNew: this.continuedAsNew + 1 },
    };
    this.limit.check('the state the run continues as new with', jsonPayloadBytes([next]));
    return continueAsNew<AgentRunWorkflow>(next);
  }

  async run(): Promise<AgentRunResult> {
    this.worker = await describeWorker();
    this.limit.externalStorage = this.worker.externalStorage;
    this.publish(undefined);
    for (;;) {
      for (const message of this.pendingUserMessages.splice(0)) this.append(message);
      if (this.rounds >= this.plan.maxRounds) return this.finish('maxRounds');
      if (this.stopRequested) return this.finish('stopped');
      // docs/design.md#steering: what the updates asked is applied before the next chat request.
      if (this.compactRequests.length > 0) await this.steer();
      if (this.shouldContinueAsNew()) await this.continueAsNew();
      const { answer, backend, usage } = await this.chat();
      this.append(answer.message, usage);
      this.rounds += 1;
      this.roundsThisRun += 1;
      // docs/design.md#recall: the `recall` activity reads the transcript from history, so every line is recorded first.
      if (this.plan.recall && (answer.message.tool_calls ?? []).some((call) => call.function.name === RECALL_TOOL_NAME))
        await this.transcript.record();
      const results = await runToolCalls(answer.message, answer.unanswered ?? [], {
        plan: this.plan,
        backend: backend.backend.config,
        externalStorage: this.worker.externalStorage,
      });
      for (const result of results) this.append(result);
      for (const message of answer.userMessages ?? []) this.append(message);
      if (answer.endOfTrajectory === true) return this.finish('completed');
      if (results.length === 0 && (answer.userMessages ?? []).length === 0 && this.pendingUserMessages.length === 0)
        return this.finish('completed');
      if (this.transcript.batchIsDue()) await this.transcript.record();
    }
  }
}
