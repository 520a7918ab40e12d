// Sandbox-safe: what the extractive summarizer reads from the request besides its middle — the
// transcript's length (its budget is a share of it) and a length limit the instruction states.
import { transcriptLength } from '../../core/compaction/transcript.js';
import type { ChatMessage } from '../../core/types.js';

/** The length of the transcript a model would read for `middle` (`renderTranscript`, uncapped: the middle is capped already). */
export function transcriptChars(middle: readonly ChatMessage[]): number {
  return transcriptLength(middle, Number.POSITIVE_INFINITY);
}

/**
 * The largest length the instruction allows, from the too-long retry's "under N characters"
 * (`tooLongInstruction`); "at most N characters" is read too. `undefined` when none is stated.
 */
export function statedCharLimit(instruction: string): number | undefined {
  let limit: number | undefined;
  for (const match of instruction.matchAll(
    /\b(under|fewer than|less than|at most|no more than)\s+([\d,_]+)\s+characters\b/gi,
  )) {
    const amount = Number((match[2] ?? '').replace(/[,_]/g, ''));
    if (!Number.isFinite(amount)) continue;
    const allowed = /^(under|fewer than|less than)$/i.test(match[1] ?? '') ? amount - 1 : amount;
    limit = limit === undefined ? allowed : Math.min(limit, allowed);
  }
  return limit === undefined ? undefined : Math.max(0, limit);
}
