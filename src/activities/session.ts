// Node only (activities): `recordSession`, how an agent run writes its transcript outside its own
// state. The batch of lines IS the record: it is this activity's input, kept in the run's history
// (and, with a payload store, in the store, the history holding a claim). The activity only checks
// the batch and acknowledges it; `readSession` reads the inputs back.
import { invalidActivityInput } from './to-failure.js';
import type { SessionBatch } from '../core/agent/session.js';

/** What `recordSession` answers: how many lines it acknowledged and the position after them. */
export interface SessionBatchReceipt {
  recorded: number;
  /** `from + recorded`: where the next batch starts. */
  next: number;
}

/** Creates the `recordSession` activity. */
export function createRecordSessionActivity() {
  return async function recordSession(batch: SessionBatch): Promise<SessionBatchReceipt> {
    const from: unknown = batch?.from;
    const lines: unknown = batch?.lines;
    if (!Number.isSafeInteger(from) || typeof from !== 'number' || from < 0 || !Array.isArray(lines))
      throw invalidActivityInput(
        'recordSession: the input must be { from: a non-negative integer, lines: an array of transcript lines }',
      );
    return { recorded: lines.length, next: from + lines.length };
  };
}
