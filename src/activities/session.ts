// Node only (activities): `recordSession`. The batch of lines IS the record: this activity's input,
// kept in the run's history (or the payload store); the activity only checks and acknowledges it.
import { z } from 'zod';
import type { SessionBatch } from '../core/agent/session.js';
import { checkWith } from '../core/schema.js';
import { failOnInvalidInput } from '../shared/failures.js';

const batchSchema = z.object({
  from: z.int().min(0, { error: (issue) => `must be a non-negative integer, got ${String(issue.input)}` }),
  lines: z.array(z.unknown()),
});

/** Creates the `recordSession` activity: it answers how many lines it acknowledged and where the next batch starts. */
export function createRecordSessionActivity() {
  return async function recordSession(batch: SessionBatch): Promise<{ recorded: number; next: number }> {
    const { from, lines } = failOnInvalidInput(() => checkWith(batchSchema, batch, 'input'));
    return { recorded: lines.length, next: from + lines.length };
  };
}
