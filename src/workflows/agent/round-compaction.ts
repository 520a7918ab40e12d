// Sandbox-safe: the compaction of an agent run before a chat request (docs/design.md#agent-run,
// docs/design.md#review): whether one is due, the pass, its review and its record.
import { newCalibration, type SummarizerCalibration } from '../../core/compaction/calibration.js';
import type { ActivityOptions } from '@temporalio/common';
import { FailureType } from '../../core/errors.js';
import { cacheIsCold, withColdTrigger } from '../../core/agent/cold-cache.js';
import { compactionRecord, groupDigits, type CompactionRecord } from '../../core/agent/compaction-history.js';
import { preflight, type BackendCounter } from '../../core/agent/preflight.js';
import { recallNamer, withRecallLine } from '../../core/agent/recall.js';
import type { CompactionLineContext, ReviewOutcome } from '../../core/agent/session.js';
import {
  NOTHING_TO_COMPACT,
  proposalOf,
  steeredInstructions,
  withEditedSummary,
  type CompactAnswer,
} from '../../core/agent/steering.js';
import { heldByUndo } from '../../core/agent/undo.js';
import { needsCompactionCore } from '../../core/compaction/needs-compaction.js';
import type { SummarizerUsage } from '../../core/counting/summarizer-usage.js';
import type { CompactionResult } from '../../core/types.js';
import { summarizeActivityOptions } from '../../shared/activity-options.js';
import type { ContextExhaustedDetails } from '../../shared/agent-run.js';
import { failOnInvalidInput, nonRetryableFailure } from '../../shared/failures.js';
import type { CompactionCall } from '../compact-options.js';
import { driveCompaction } from '../drive-compaction.js';
import type { LoopParts } from './loop-parts.js';
import { workflowTime } from './workflow-time.js';

function changes(result: CompactionResult): boolean {
  return result.cutIndex >= 0 || result.elisions.length > 0 || result.fallback || result.exhausted;
}

/** A compaction's result as decided (undefined `review`: not under review), or undefined when the reviewer rejected it. */
type Decided = { result: CompactionResult; review: ReviewOutcome | undefined } | undefined;

export type CompactionDemand = { instructions: string | undefined; askedBy?: 'agent' };

/** Compacts the run's live conversation when a round needs it, or on demand. */
export class RoundCompaction {
  private readonly summarizeActivity: ActivityOptions;
  /** How the last reviewed compaction was decided, until the next chat request says it. */
  private reviewNote: string | undefined;
  /** docs/design.md#summarizer-overflow What the summarizer taught of its tokens and window, for every compaction of this run. */
  private readonly calibration: SummarizerCalibration = newCalibration();

  constructor(
    private readonly parts: LoopParts,
    /** Workflow time (ms) of the run's last model call: the prompt cache is as old as it (docs/design.md#cold-cache). */
    public lastModelCallAt: number | undefined,
  ) {
    const { compaction } = parts.plan;
    this.summarizeActivity = summarizeActivityOptions(compaction.options, compaction.activity, 'input.compaction');
  }

  modelCalled(): void {
    this.lastModelCallAt = workflowTime();
  }

  /**
   * Compacts before round `round` when the conversation is over the room (aiming at it exactly,
   * docs/design.md#overrides) or over the trigger (aiming at `targetRatio × contextBudget`, so one compaction buys
   * several rounds), or on demand, answering with the record or why nothing changed. Under review
   * (docs/design.md#review) `'manual'` compacts only on demand and `'approve'` waits for `reviewCompaction`; over the
   * room it applies at once in every mode (forced). After an undo (docs/design.md#undo) the trigger waits.
   */
  async compactIfNeeded(
    candidates: readonly BackendCounter[],
    round: number,
    demand?: CompactionDemand,
  ): Promise<CompactAnswer | undefined> {
    const { plan, conversation, steering, ledger } = this.parts;
    const { aimAt, aim, tokens } = preflight(conversation.messages, candidates);
    const overRoom = tokens > aim;
    // docs/design.md#cold-cache: the next request misses the cache anyway, so a compaction re-bills nothing.
    const cold = cacheIsCold(plan.coldCache, this.lastModelCallAt, workflowTime());
    const { mode } = plan.review;
    // The Timeline shows this compaction's number and why it runs.
    const number = ledger.compactions.totals.compactions + 1;
    const why = reasonFor(demand, overRoom, mode === 'approve', cold);
    const call = this.compactionCall(aimAt, aim, overRoom, demand?.instructions, cold, `#${number} ${why}`);
    if (
      demand === undefined &&
      !overRoom &&
      (mode === 'manual' || heldByUndo(ledger.compactions) || !this.needsCompaction(call))
    )
      return undefined;
    const target = overRoom ? aim : (plan.compaction.contextBudget ?? aim);
    steering.hold(true);
    let decided: Decided;
    let summarizerUsage: SummarizerUsage | undefined;
    try {
      // docs/design.md#recall: what replaces messages names them inside the pass (every count includes the ids).
      const compaction = await driveCompaction(conversation.messages, () => call, 'hard-trim', {
        calibration: this.calibration,
        ...(plan.recall ? { nameReplaced: recallNamer(conversation.liveEntries) } : {}),
      });
      summarizerUsage = compaction.summarizerUsage;
      // The run is out of room only when the conversation does not fit the backend: a `contextBudget`
      // set below the room is what compaction aims at, not a limit the model has.
      const result = { ...compaction.result, exhausted: compaction.result.tokensAfter > aim };
      const waits = mode === 'approve' && !overRoom && changes(result);
      const review = mode === 'auto' ? undefined : overRoom ? 'forced' : 'applied';
      decided = waits ? await this.reviewed(result, aimAt, round, number) : { result, review };
      if (waits) this.reviewNote = `#${number} review: ${decided?.review ?? 'rejected'}`;
    } finally {
      steering.hold(false);
    }
    if (decided === undefined) {
      // Rejected: the summarizer was billed all the same; the conversation stays as it is.
      ledger.chargeSummarizer(summarizerUsage);
      steering.applyHeldPins();
      return { compacted: false, reason: 'the reviewer rejected it (reviewCompaction)' };
    }
    const { result } = decided;
    const where = { round, backend: aimAt.backend.label, target };
    const record = this.record(result, summarizerUsage, where, decided.review, cold, demand?.askedBy);
    steering.applyHeldPins();
    if (result.exhausted) {
      this.parts.publish(result.tokensAfter);
      const details: ContextExhaustedDetails = {
        round,
        backend: aimAt.backend.label,
        tokens: result.tokensAfter,
        room: aim,
      };
      throw nonRetryableFailure(
        FailureType.RunFailed.ContextExhausted,
        `context exhausted before round ${round}: ${groupDigits(details.tokens)} tokens after compaction, ${groupDigits(aim)} usable on ${details.backend} (keepRecent or a recent tool result is too large for the window)`,
        details,
      );
    }
    return record ?? (demand === undefined ? undefined : NOTHING_TO_COMPACT);
  }

  /** Publishes a proposal and waits, durably, for `reviewCompaction` or `reviewTimeout`; undefined: rejected. */
  private async reviewed(
    result: CompactionResult,
    aimAt: BackendCounter,
    round: number,
    number: number,
  ): Promise<Decided> {
    const { plan, conversation, review } = this.parts;
    const { timeoutMs } = plan.review;
    const proposal = proposalOf(conversation.liveEntries, result, {
      round,
      backend: aimAt.backend.label,
      applyAt: workflowTime() + timeoutMs,
    });
    const waiting = `#${number} review: waiting ${shortDuration(timeoutMs)} at most`;
    const decision = await review.decision(proposal, timeoutMs, waiting);
    if (decision === undefined) return { result, review: 'timed-out' };
    if (decision.decision === 'reject') return undefined;
    if (decision.decision === 'apply' || decision.summary === undefined) return { result, review: 'applied' };
    // docs/design.md#recall: the person's summary names what it replaces as the summarizer's did.
    const summary = plan.recall ? withRecallLine(decision.summary, result.summary) : decision.summary;
    return { result: withEditedSummary(result, summary, aimAt.conversation), review: 'edited' };
  }

  /** How the last reviewed compaction was decided (`#2 review: edited`), once, for the next chat request's summary. */
  takeReviewNote(): string | undefined {
    const note = this.reviewNote;
    this.reviewNote = undefined;
    return note;
  }

  /** docs/design.md#needs-compaction */
  private needsCompaction({ settings, overrides }: CompactionCall): boolean {
    const { messages } = this.parts.conversation;
    return failOnInvalidInput(() => needsCompactionCore(messages, settings.options, overrides, overrides.counter));
  }

  /** One compaction: the run's settings with its budget (else the room `aim`), counter, target and instructions. */
  private compactionCall(
    aimAt: BackendCounter,
    aim: number,
    overRoom: boolean,
    instructions: string | undefined,
    cold: boolean,
    label: string,
  ): CompactionCall {
    const { plan, steering, limit } = this.parts;
    const { contextBudget, activity } = plan.compaction;
    const options = cold ? withColdTrigger(plan.compaction.options, plan.coldCache.trigger) : plan.compaction.options;
    const steered = steeredInstructions(options.summaryInstructions, steering.currentPins.facts, instructions);
    return {
      settings: {
        options: { ...options, contextBudget: contextBudget ?? aim },
        activity: this.summarizeActivity,
        summarizerModel: activity.summarizerModel,
        maxPayloadBytes: plan.maxPayloadBytes,
        payloadStore: limit.externalStorage,
        label,
      },
      overrides: {
        counter: aimAt.conversation,
        ...(overRoom ? { target: aim } : {}),
        ...(steered === undefined ? {} : { summaryInstructions: steered }),
      },
    };
  }

  /** Records a compaction that changed the conversation (undefined: nothing changed). */
  private record(
    result: CompactionResult,
    summarizerUsage: SummarizerUsage | undefined,
    where: Pick<CompactionLineContext, 'round' | 'backend' | 'target'>,
    review: ReviewOutcome | undefined,
    cold: boolean,
    askedBy: 'agent' | undefined,
  ): CompactionRecord | undefined {
    const { conversation, ledger, tokens } = this.parts;
    // The summarizer was billed even when its summary lost to the hard trim.
    ledger.chargeSummarizer(summarizerUsage);
    if (!changes(result)) return undefined;
    const { cacheHitRate, billedInput } = ledger.compactions.usage;
    const context: CompactionLineContext = {
      ...where,
      ...(summarizerUsage === undefined ? {} : { summarizerUsage }),
      cacheHitRate,
      billedInput,
      ...(review === undefined ? {} : { review }),
      ...(cold ? { coldCache: true } : {}),
      ...(askedBy === undefined ? {} : { askedBy }),
    };
    conversation.applyCompaction(result, context);
    const record = compactionRecord(context, result);
    ledger.addRecord(record);
    // The cache forgets what compaction dropped: what it holds stays bounded by the live context.
    tokens.forgetAllBut(conversation.messages);
    return record;
  }
}

/** Why a compaction runs, for the Timeline: asked for, to fit, for review, at the cold or the usual trigger. */
function reasonFor(demand: CompactionDemand | undefined, overRoom: boolean, review: boolean, cold: boolean): string {
  if (demand !== undefined) return demand.askedBy === 'agent' ? 'agent asked' : 'on demand';
  if (overRoom) return 'to fit';
  if (review) return 'for review';
  return cold ? 'cold cache' : 'trigger';
}

/** A duration for a label: `1h`, `30m`, `45s`, `1h30m`. */
function shortDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = seconds % 60;
  const parts = [hours > 0 ? `${hours}h` : '', minutes > 0 ? `${minutes}m` : '', rest > 0 ? `${rest}s` : ''];
  return parts.join('') || '0s';
}
