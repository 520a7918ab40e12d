// Node only: `temporal-compactor undo <workflowId> [--compaction N]` — undoes a compaction of a running
// agentRun (the `undoCompaction` update, docs/design.md#undo) and prints the undo's record.
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { groupDigits } from '../../core/agent/compaction-history.js';
import { agentRunUpdates } from '../../shared/agent-run.js';
import { openAgentRun } from '../agent-run.js';
import { wholeNumber, type CliCommand } from '../command.js';

/** Why the run refused the undo: the failure's message, found under the update's error. */
function refusal(error: WorkflowUpdateFailedError): string {
  let cause: unknown = error.cause;
  while (cause instanceof Error) {
    if (cause instanceof ApplicationFailure) return `${cause.type ?? 'refused'}: ${cause.message}`;
    cause = cause.cause;
  }
  return error.message;
}

export const undo: CliCommand = {
  name: 'undo',
  usage: '<workflowId> [--compaction N] [--json]',
  summary: 'undo a compaction of a running agentRun: the messages it replaced come back',
  description: [
    "Sends the undoCompaction update: before its next chat request, the run restores the conversation as it was before compaction N (its # in `history`; default the last still in effect), every message it replaced, dropped or elided back as the transcript holds it. Prints the undo's record. Exit 1 when the run refuses it (the reason is printed: it would not fit the window, later compactions depend on it — undo them first —, it was undone already, or none is in effect). The update needs a worker polling the run's task queue.",
  ],
  options: {
    compaction: { type: 'string', help: 'the # of the compaction to undo (default: the last in effect)' },
    json: { type: 'boolean', help: "print the undo's record as JSON" },
  },
  async run(context) {
    const given = context.values.compaction;
    const what = 'the # of a compaction in the history (a whole number from 1)';
    const compactionId = given === undefined ? undefined : wholeNumber('compaction', given, 1, what);
    const { workflowId, handle } = await openAgentRun(context);
    const args: [{ compactionId?: number }] = [compactionId === undefined ? {} : { compactionId }];
    const record = await handle.executeUpdate(agentRunUpdates.undoCompaction, { args }).catch((error: unknown) => {
      if (!(error instanceof WorkflowUpdateFailedError)) throw error;
      context.io.stderr(`agentRun ${workflowId}: the undo was refused: ${refusal(error)}\n`);
    });
    if (record === undefined) return 1;
    context.io.stdout(
      context.values.json === true
        ? `${JSON.stringify(record)}\n`
        : `agentRun ${workflowId}: undid compaction #${record.undoes ?? '?'} before round ${record.round}: ${record.restored ?? 0} messages back, ${groupDigits(record.tokensBefore)} → ${groupDigits(record.tokensAfter)} tokens\n`,
    );
    return 0;
  },
};
