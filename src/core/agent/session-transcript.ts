// Sandbox-safe: what a caller does with an agent run's transcript (docs/design.md#transcript-format),
// as one object: parse its JSON lines, replay them to the live conversation, list its compactions.
import { compactionRecordsFromSession } from './compaction-history.js';
import { parseSessionJsonl, replaySession, replaySessionStream } from './session.js';

/**
 * An agent run's transcript, read: `readSession(client, result.session)` streams its lines (Node),
 * `temporal-compactor session <workflowId> --jsonl` prints them.
 */
export const transcript = {
  /** The lines of JSONL text (`temporal-compactor session --jsonl`), each checked. */
  parseJsonl: parseSessionJsonl,
  /** The live conversation the lines (or JSONL text) replay to: the run's `result.messages`, byte for byte. */
  replay: replaySession,
  /** `replay` over lines that arrive one by one (`readSession`), holding only the live conversation. */
  replayStream: replaySessionStream,
  /** Every compaction record of the lines (a run's result keeps the last 20). */
  compactionRecords: compactionRecordsFromSession,
} as const;
