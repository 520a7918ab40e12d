// Sandbox-safe: the agent loop behind `agentRun` (docs/design.md#agent-run). Each round: preflight in every backend's
// units, compact when needed, one `chat` activity, the tools as activities, append, calibrate. What the run holds is
// bounded by its live context, never by its length (docs/design.md#never-wedge).
import { ApplicationFailure } from '@temporalio/common';
import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  proxyActivities,
} from '@temporalio/workflow';
import type { ChatActivityInput, CompactorActivities } from '../../activities/index.js';
import { FailureType } from '../../core/errors.js';
import { pinTask, type AgentRunPlan } from '../../core/agent/agent-input.js';
import { CARRIED_STATE_VERSION, parseCarriedState, type AgentRunCarried } from '../../core/agent/carried-state.js';
import { groupDigits } from '../../core/agent/compaction-history.js';
import { preflight } from '../../core/agent/preflight.js';
import { RECALL_TOOL_NAME } from '../../core/agent/recall.js';
import type { SessionSnapshot } from '../../core/agent/session.js';
import {
  NOTHING_TO_COMPACT,
  noPins,
  pinDetails,
  proposalDetails,
  type CompactAnswer,
} from '../../core/agent/steering.js';
import { jsonPayloadBytes } from '../../core/limits/payload-size.js';
import type { ChatMessage } from '../../core/types.js';
import { CHAT_ACTIVITY_DEFAULTS, agentActivityOptions } from '../../shared/activity-options.js';
import type {
  AgentRunResult,
  AgentRunWorkflow,
  AgentRunWorkflowInput,
  StopAnswer,
  StopReason,
} from '../../shared/agent-run.js';
import { failureMessage, nonRetryableFailure } from '../../shared/failures.js';
import { UNDESCRIBED_WORKER, type WorkerDescription } from '../../shared/worker-description.js';
import { describeWorker } from '../describe-worker.js';
import { runToolCalls } from '../tool-dispatch.js';
import { answerAgentToolCalls } from './agent-tool-calls.js';
import { BackendChain } from './backend-chain.js';
import { CompactionUndo } from './compaction-undo.js';
import { Continuation } from './continuation.js';
import { LiveConversation } from './live-conversation.js';
import { PayloadLimit } from './payload-limit.js';
import { PendingReview } from './pending-review.js';
import { RoundCompaction, type CompactionDemand } from './round-compaction.js';
import { SteeringRequests } from './steering-requests.js';
import { TokenCache } from './token-cache.js';
import { TranscriptWriter } from './transcript-writer.js';
import { UsageLedger } from './usage-ledger.js';
import { RunVisibility } from './visibility.js';

/** One run of the loop: its parts, which only their own methods change; queries and updates reach the public ones. */
export class AgentLoop {
  readonly limit: PayloadLimit;
  readonly transcript: TranscriptWriter;
  private readonly visibility = new RunVisibility();
  readonly tokens: TokenCache;
  readonly conversation: LiveConversation;
  readonly steering: SteeringRequests;
  readonly review: PendingReview;
  private readonly chain: BackendChain;
  readonly ledger: UsageLedger;
  private readonly compaction: RoundCompaction;
  readonly undo: CompactionUndo;
  private readonly continuation: Continuation;
  private readonly pendingUserMessages: ChatMessage[];
  private rounds: number;
  private worker: WorkerDescription = UNDESCRIBED_WORKER;
  private finished = false;
  private stopRequested = false;

  constructor(
    private readonly input: AgentRunWorkflowInput,
    readonly plan: AgentRunPlan,
  ) {
    const carried = input.carried === undefined ? undefined : parseCarriedState(input.carried);
    this.limit = new PayloadLimit(plan.maxPayloadBytes);
    this.transcript = new TranscriptWriter(carried?.sessionLines ?? 0, this.limit);
    this.ledger = new UsageLedger(plan.pricing, carried);
    this.conversation = new LiveConversation(this.transcript, carried);
    this.steering = new SteeringRequests(carried?.pins ?? noPins(), this.conversation, () => this.publish(undefined));
    this.review = new PendingReview(() => this.publish(undefined));
    this.rounds = carried?.rounds ?? 0;
    this.pendingUserMessages = carried?.pendingUserMessages ?? [];
    this.continuation = new Continuation(carried?.continuedAsNew ?? 0, plan.continueAsNewAfterRounds);
    this.tokens = new TokenCache(plan.backends);
    if (carried !== undefined) this.tokens.remember(carried.live, carried.tokenCounts);
    this.chain = new BackendChain(plan, this.tokens, carried);
    // The parts a compaction and an undo read and change are the loop's own.
    this.compaction = new RoundCompaction(this, carried?.lastModelCallAt);
    this.undo = new CompactionUndo(this);
    // docs/design.md#task-survives: the task stays verbatim (sticky) unless the input says otherwise.
    if (carried === undefined)
      for (const message of plan.keepTask ? pinTask(plan.messages) : plan.messages) this.conversation.append(message);
  }

  get messages(): ChatMessage[] {
    return this.conversation.messages;
  }

  get isFinished(): boolean {
    return this.finished;
  }

  sessionSnapshot(): SessionSnapshot {
    return { reference: this.transcript.reference(), pending: this.transcript.pending };
  }

  /** The `stop` update: the run stops once the round in progress is done. */
  requestStop(): StopAnswer {
    this.stopRequested = true;
    return { stopping: true, rounds: this.rounds };
  }

  /** The `addUserMessage` update: queued for the next round; returns how many wait. */
  queueUserMessage(message: ChatMessage): number {
    this.pendingUserMessages.push(message);
    return this.pendingUserMessages.length;
  }

  /** docs/design.md#undo */
  private async serveUndos(): Promise<void> {
    await this.undo.serve(this.chain.candidates(new Set(), this.rounds + 1), this.rounds + 1);
    this.publish(undefined);
  }

  /** Compacts for every `compact` update waiting, once, their instructions together (docs/design.md#steering). */
  private async steer(): Promise<void> {
    const requests = this.steering.takeCompactRequests();
    if (requests === undefined) return this.publish(undefined);
    requests.answer((await this.compactOnDemand({ instructions: requests.instructions })) ?? NOTHING_TO_COMPACT);
  }

  /** A compaction asked for (`compact` updates, the agent's `compact_context`). */
  private async compactOnDemand(demand: CompactionDemand): Promise<CompactAnswer | undefined> {
    await this.tokens.countNewText(this.messages, this.limit.batchBytes());
    const round = this.rounds + 1;
    const answer = await this.compaction.compactIfNeeded(this.chain.candidates(new Set(), round), round, demand);
    this.publish(undefined);
    return answer;
  }

  /**
   * Before the run fails or ends cancelled: its memo, and what it can of the transcript. A failure to record (a batch
   * over the payload limit, perhaps the cause of this very failure) must not replace the run's own failure.
   */
  async recordSessionBeforeFailing(ending: 'failed' | 'cancelled'): Promise<void> {
    this.finished = true;
    this.visibility.publishMemo(this.ledger.compactions, { stopReason: ending, rounds: this.rounds });
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

  /** What the next run carries across continue-as-new (docs/design.md#continue-as-new). */
  private carry(): AgentRunCarried {
    return {
      version: CARRIED_STATE_VERSION,
      live: this.conversation.liveEntries,
      sessionLines: this.transcript.recorded,
      compactions: this.ledger.compactions,
      rounds: this.rounds,
      nextId: this.conversation.nextMessageId,
      counters: this.chain.counterStates(),
      pendingUserMessages: this.pendingUserMessages,
      backendFallbacks: this.chain.backendFallbacks,
      backends: this.chain.backends,
      previousRequest: this.ledger.lastRequest,
      peakContextTokens: this.ledger.peakContextTokens,
      continuedAsNew: this.continuation.continuedAsNew + 1,
      tokenCounts: this.tokens.toCarry(this.messages),
      pins: this.steering.currentPins,
      ...(this.compaction.lastModelCallAt === undefined ? {} : { lastModelCallAt: this.compaction.lastModelCallAt }),
    };
  }

  private async finish(stopReason: StopReason): Promise<AgentRunResult> {
    this.finished = true;
    await this.transcript.recordNow();
    const result: AgentRunResult = {
      messages: this.messages,
      session: this.transcript.reference(),
      compactions: this.ledger.compactions,
      rounds: this.rounds,
      stopReason,
      backendFallbacks: this.chain.backendFallbacks,
      backends: this.chain.backends,
      peakContextTokens: this.ledger.peakContextTokens,
      continuedAsNew: this.continuation.continuedAsNew,
    };
    this.publish(undefined);
    this.visibility.publishMemo(this.ledger.compactions, { stopReason, rounds: this.rounds });
    this.limit.check('the result of the run', jsonPayloadBytes(result));
    // A `compact` or `pin` waiting for a round that will not come is answered, and its handler ends with the run.
    const refusedCompactions = this.steering.refuseCompactions();
    if (this.undo.refuseAll() || refusedCompactions) await condition(allHandlersFinished);
    return result;
  }

  /** Current details and search attributes (./visibility.ts); `window`: that of the backend `contextTokens` is for. */
  publish(contextTokens: number | undefined, window?: number): void {
    const note = this.chain.restingNote(this.rounds + 1);
    const allowed = new Set(this.plan.searchAttributes ? this.worker.searchAttributes : []);
    const proposal = this.review.proposal;
    const notes = [
      ...(note === '' ? [] : [note]),
      ...pinDetails(this.steering.currentPins),
      ...(proposal === undefined ? [] : [proposalDetails(proposal)]),
    ];
    this.visibility.publish(this.ledger.compactions, notes, allowed, contextTokens, window, proposal !== undefined);
  }

  /** One chat call, falling back along the chain when a backend fails after its retries. */
  private async chat() {
    const failed = new Set<number>();
    let lastFailure: unknown;
    await this.tokens.countNewText(this.messages, this.limit.batchBytes());
    for (;;) {
      const round = this.rounds + 1;
      const candidates = this.chain.candidates(failed, round);
      if (candidates.length === 0)
        throw nonRetryableFailure(
          FailureType.RunFailed.BackendsFailed,
          `every backend failed in round ${round}; last: ${failureMessage(lastFailure)}`,
          undefined,
          lastFailure instanceof Error ? lastFailure : undefined,
        );
      await this.compaction.compactIfNeeded(candidates, round);
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
      this.limit.check(`the chat request of round ${round}`, jsonPayloadBytes([input]));
      // docs/design.md#review How a reviewed compaction was decided, on the first request after it.
      const reviewNote = this.compaction.takeReviewNote();
      try {
        const { chat } = proxyActivities<CompactorActivities>({
          ...agentActivityOptions(this.plan.chatActivity, 'input.chatActivity', CHAT_ACTIVITY_DEFAULTS),
          // The backend is named only when there is a choice (a summary is history bytes every round).
          summary: `chat${this.chain.hasChoice ? ` · ${backend.backend.label}` : ''} · ${sent.length} messages (${groupDigits(tokens)} tokens)${reviewNote === undefined ? '' : ` · ${reviewNote}`}`,
        });
        const answer = await chat(input);
        this.compaction.modelCalled();
        const ids = this.conversation.liveEntries.map((entry) => entry.id);
        const usage = this.ledger.chargeRound({ ids, sent, backend, tokens, answer });
        if (answer.usage !== undefined) backend.usage.calibrate(sent, answer.usage.promptTokens);
        return { answer, backend, usage };
      } catch (error) {
        if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
        lastFailure = error;
        failed.add(backend.backend.index);
        this.chain.fail(backend.backend.index, failed, round);
      }
    }
  }

  private async continueAsNew(): Promise<never> {
    // Updates in flight finish first: their messages must be in what the next run carries, and a
    // `compact` or `pin` waiting for the loop is applied here (its handler cannot outlive this run).
    // A pin applied while the transcript was being recorded wrote a line: record again.
    for (;;) {
      await condition(() => allHandlersFinished() || this.steering.compactionAsked || this.undo.asked);
      if (this.steering.compactionAsked) await this.steer();
      else if (this.undo.asked) await this.serveUndos();
      else {
        for (const message of this.pendingUserMessages.splice(0)) this.conversation.append(message);
        await this.transcript.record();
        const asked = this.steering.compactionAsked || this.undo.asked;
        if (allHandlersFinished() && !asked && this.transcript.pending.length === 0) break;
      }
    }
    const next: AgentRunWorkflowInput = { ...this.input, messages: [], carried: this.carry() };
    this.limit.check('the state the run continues as new with', jsonPayloadBytes([next]));
    return continueAsNew<AgentRunWorkflow>(next);
  }

  async run(): Promise<AgentRunResult> {
    this.worker = await describeWorker();
    this.limit.externalStorage = this.worker.externalStorage;
    this.publish(undefined);
    for (;;) {
      for (const message of this.pendingUserMessages.splice(0)) this.conversation.append(message);
      if (this.rounds >= this.plan.maxRounds) return this.finish('maxRounds');
      if (this.stopRequested) return this.finish('stopped');
      // docs/design.md#steering: what the updates asked is applied before the next chat request.
      if (this.steering.compactionAsked) await this.steer();
      if (this.undo.asked) await this.serveUndos();
      if (this.continuation.due()) await this.continueAsNew();
      const { answer, backend, usage } = await this.chat();
      this.conversation.append(answer.message, usage);
      this.rounds += 1;
      this.continuation.roundDone();
      // docs/design.md#recall: the `recall` activity reads the transcript from history, so every line is recorded first.
      if (this.plan.recall && (answer.message.tool_calls ?? []).some((call) => call.function.name === RECALL_TOOL_NAME))
        await this.transcript.record();
      // docs/design.md#agent-tool: the run answers the agent's compact_context calls itself.
      const own = answerAgentToolCalls(answer.message, {
        plan: this.plan,
        round: this.rounds,
        history: this.ledger.compactions,
        messages: this.messages,
        candidates: this.chain.candidates(new Set(), this.rounds + 1),
      });
      const results = await runToolCalls(answer.message, answer.unanswered ?? [], {
        plan: this.plan,
        backend: backend.backend.config,
        externalStorage: this.worker.externalStorage,
        ...(own === undefined ? {} : { answered: own.answered }),
      });
      for (const result of results) this.conversation.append(result);
      for (const message of answer.userMessages ?? []) this.conversation.append(message);
      if (own?.compact === true) await this.compactOnDemand({ instructions: own.focus, askedBy: 'agent' });
      if (answer.endOfTrajectory === true) return this.finish('completed');
      if (results.length === 0 && (answer.userMessages ?? []).length === 0 && this.pendingUserMessages.length === 0)
        return this.finish('completed');
      if (this.transcript.batchIsDue()) await this.transcript.record();
    }
  }
}
