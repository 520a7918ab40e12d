// Node only (activities): `recordSession`. The batch of lines IS the record: this activity's input,
// kept in the run's history (or the payload store); the activity only checks and acknowledges it.
import { FailureType } from '../core/errors.js';
import { nonRetryableFailure } from '../shared/failures.js';
import type { SessionBatch } from '../core/agent/session.js';

/** Creates the `recordSession` activity: it answers how many lines it acknowledged and where the next batch starts. */
export function createRecordSessionActivity() {
  return async function recordSession(batch: SessionBatch): Promise<{ recorded: number; next: number }> {
    const from: unknown = batch?.from;
    const lines: unknown = batch?.lines;
    if (!Number.isSafeInteger(from) || typeof from !== 'number' || from < 0 || !Array.isArray(lines))
      throw nonRetryableFailure(
        FailureType.Compaction.InvalidInput,
        'recordSession: the input must be { from: a non-negative integer, lines: an array of transcript lines }',
      );
    return { recorded: lines.length, next: from + lines.length };
  };
}
