// Sandbox-safe: what a caller does with an agent run's transcript (docs/design.md#transcript-format),
// as one object: parse its JSON lines, replay them to the live conversation, list its compactions,
// write a compaction's lines.
import { compactionRecordsFromSession } from './compaction-history.js';
import type { CompactionResult } from '../types.js';
import {
  parseSessionJsonl,
  recordCompaction,
  replaySession,
  replaySessionStream,
  type SessionEntry,
} from './session.js';

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
  /** Every compaction record of the lines, undos included (a run's result keeps the last 20). */
  compactionRecords: compactionRecordsFromSession,
  /**
   * The lines of a compaction of the conversation `entries` (each message with its transcript id),
   * to append to a transcript you keep, and the entries they leave: its elisions and always its
   * compaction line, so that it is a record `Compactor.undo` can undo (docs/design.md#undo).
   */
  recordCompaction: (entries: readonly SessionEntry[], result: CompactionResult) =>
    recordCompaction(entries, result, {}),
} as const;
