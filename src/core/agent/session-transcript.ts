// Sandbox-safe: what a caller does with an agent run's transcript (docs/design.md#transcript-format), as one object.
import { compactionRecordsFromSession } from './compaction-history.js';
import type { CompactionResult } from '../types.js';
import {
  parseSessionJsonl,
  recordCompaction,
  replaySession,
  replaySessionStream,
  type SessionEntry,
} from './session.js';

/** An agent run's transcript, read: `readSession(client, result.session)` streams its lines. */
export const transcript = {
  /** The lines of JSONL text, each checked. */
  parseJsonl: parseSessionJsonl,
  /** The live conversation the lines (or JSONL text) replay to: the run's `result.messages`, byte for byte. */
  replay: replaySession,
  /** `replay` over lines that arrive one by one. */
  replayStream: replaySessionStream,
  /** Every compaction record of the lines, undos included (a run's result keeps the last 20). */
  compactionRecords: compactionRecordsFromSession,
  /** The lines of a compaction of `entries` to append to a transcript you keep (always with a compaction line, for `Compactor.undo`), and the entries they leave. */
  recordCompaction: (entries: readonly SessionEntry[], result: CompactionResult) =>
    recordCompaction(entries, result, {}),
} as const;
