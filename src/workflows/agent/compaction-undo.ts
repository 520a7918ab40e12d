// Sandbox-safe: the `undoCompaction` updates of an agent run (docs/design.md#undo), checked when they arrive and
// served by the loop before its next chat request, from the run's recorded transcript.
import { ActivityFailure, type ApplicationFailure } from '@temporalio/common';
import { condition, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { CompactorActivities } from '../../activities/index.js';
import { recordCount, type CompactionRecord } from '../../core/agent/compaction-history.js';
import { preflight, type BackendCounter } from '../../core/agent/preflight.js';
import { undoLineFor, undoTarget, type UndoChange, type UndoState } from '../../core/agent/undo.js';
import { FailureType, UndoRefusedError } from '../../core/errors.js';
import { BOOKKEEPING_ACTIVITY } from '../../shared/activity-options.js';
import { failureMessage, nonRetryableFailure, undoRefusedFailure } from '../../shared/failures.js';
import type { LoopParts } from './loop-parts.js';

/** An `undoCompaction` update waiting for the loop: answered with the undo's record, or refused. */
interface UndoRequest {
  compaction: number;
  outcome?: { record: CompactionRecord } | { failure: ApplicationFailure };
}

export class CompactionUndo {
  private readonly requests: UndoRequest[] = [];

  constructor(private readonly parts: LoopParts) {}

  get asked(): boolean {
    return this.requests.length > 0;
  }

  private get state(): UndoState {
    const { totals, undone } = this.parts.ledger.compactions;
    return { records: recordCount(totals), undone };
  }

  /** The compaction an `undoCompaction` undoes: the one named, or the last in effect once the undos waiting apply. */
  target(compactionId: number | undefined): number {
    const queued = this.requests.map((request) => request.compaction);
    return undoTarget(this.state, compactionId, 'undoCompaction.compactionId', queued);
  }

  async request(compaction: number): Promise<CompactionRecord> {
    const request: UndoRequest = { compaction };
    this.requests.push(request);
    await condition(() => request.outcome !== undefined);
    const { outcome } = request;
    if (outcome === undefined) throw new Error('unreachable: the undo request was not answered');
    if ('failure' in outcome) throw outcome.failure;
    return outcome.record;
  }

  /** Serves the undos waiting, in order, before round `round`; the restored conversation must fit the largest room of `candidates`. */
  async serve(candidates: readonly BackendCounter[], round: number): Promise<void> {
    for (const request of this.requests.splice(0)) {
      try {
        request.outcome = { record: await this.undo(request.compaction, candidates, round) };
      } catch (error) {
        if (!(error instanceof UndoRefusedError)) throw error;
        request.outcome = { failure: undoRefusedFailure(error) };
      }
    }
  }

  /** Refuses the undos the loop will not serve, the run having finished; true when there was any. */
  refuseAll(): boolean {
    const requests = this.requests.splice(0);
    for (const request of requests)
      request.outcome = {
        failure: nonRetryableFailure(FailureType.AgentRun.Finished, 'the run finished before its next chat request'),
      };
    return requests.length > 0;
  }

  private async undo(
    compaction: number,
    candidates: readonly BackendCounter[],
    round: number,
  ): Promise<CompactionRecord> {
    const { conversation, transcript, ledger, steering, tokens } = this.parts;
    // A compaction recorded since the update was accepted depends on the one it names: checked again.
    undoTarget(this.state, compaction, 'undoCompaction.compactionId');
    // The activity reads the transcript from history: every line is recorded first.
    await transcript.record();
    const { restoreCompaction } = proxyActivities<CompactorActivities>({
      ...BOOKKEEPING_ACTIVITY,
      heartbeatTimeout: 30_000,
      summary: `restore compaction #${compaction}`,
    });
    let change: UndoChange;
    try {
      change = await restoreCompaction({ compaction });
    } catch (error) {
      if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
      throw new UndoRefusedError(
        { reason: 'transcript', compactionId: compaction },
        `compaction #${compaction}: the transcript could not be read back: ${failureMessage(error)}`,
      );
    }
    const { aimAt, aim } = preflight(conversation.messages, candidates);
    const restored = change.restored.map((entry) => entry.message);
    await tokens.countNewText(restored, this.parts.limit.batchBytes());
    const { cacheHitRate, billedInput } = ledger.compactions.usage;
    const { line, record } = undoLineFor(conversation.liveEntries, change, {
      compaction,
      counter: aimAt.conversation,
      room: aim,
      context: { round, backend: aimAt.backend.label, cacheHitRate, billedInput },
    });
    conversation.writeLine(line);
    ledger.addRecord(record);
    steering.forgetPins(line.removes);
    tokens.forgetAllBut(conversation.messages);
    return record;
  }
}
