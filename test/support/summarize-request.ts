// The summarize request the engine builds for a whole middle, in one call: what the summarizer tests send.
import {
  capMiddle,
  requestFor,
  baseInstruction,
  tooLongInstruction,
  type InstructionText,
} from '../../src/core/compaction/transcript.js';
import type { ChatMessage, SummarizeRequest } from '../../src/core/types.js';

/** The whole request; `previousSummaryChars` makes it the tighter retry. */
export function summarizeRequest(
  middle: readonly ChatMessage[],
  toolResultCap: number,
  previousSummaryChars?: number,
  text: InstructionText = {},
): SummarizeRequest {
  const instructions = text.summaryInstructions?.trim();
  return requestFor(
    previousSummaryChars === undefined ? baseInstruction(text) : tooLongInstruction(previousSummaryChars, text),
    capMiddle(middle, toolResultCap),
    instructions === '' ? undefined : instructions,
    text.task,
  );
}
