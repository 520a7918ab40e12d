// Node only (activities): `restoreCompaction` (docs/design.md#undo), read from the run's history: it keeps nothing extra.
import { Context } from '@temporalio/activity';
import { FailureType } from '../core/errors.js';
import { UndoFinder, type UndoChange } from '../core/agent/undo.js';
import { readSession } from '../client/session-reader.js';
import { nonRetryableFailure } from '../shared/failures.js';

/**
 * The `restoreCompaction` activity: what undoing compaction `compaction` of the calling run changes,
 * byte for byte; a transcript without it fails `Compaction.UndoRefused`, never retried.
 */
export function createRestoreCompactionActivity() {
  return async function restoreCompaction({ compaction }: { compaction: number }): Promise<UndoChange> {
    const context = Context.current();
    const execution = context.info.workflowExecution;
    const details = { reason: 'transcript', compactionId: compaction };
    const refused = (message: string) => nonRetryableFailure(FailureType.Compaction.UndoRefused, message, details);
    if (execution === undefined) throw refused('restoreCompaction: only an agent run can read its own transcript');
    const { workflowId, runId } = execution;
    const finder = new UndoFinder(compaction);
    for await (const line of readSession(context.client, { workflowId, runId, lines: 0 }, { pending: false })) {
      context.heartbeat();
      if (finder.push(line) && finder.change !== undefined) return finder.change;
    }
    throw refused(`compaction #${compaction} is not in the transcript of ${workflowId}`);
  };
}
