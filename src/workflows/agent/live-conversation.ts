// Sandbox-safe: an agent run's live conversation (docs/design.md#agent-run), each message with its transcript id,
// changed only by a transcript line, so the transcript replays to exactly what the run holds.
import {
  applySessionLine,
  recordCompaction,
  type CompactionLineContext,
  type SessionEntry,
  type SessionLine,
} from '../../core/agent/session.js';
import type { RoundUsage } from '../../core/agent/run-usage.js';
import type { ChatMessage, CompactionResult } from '../../core/types.js';
import type { TranscriptWriter } from './transcript-writer.js';

export class LiveConversation {
  private entries: SessionEntry[];
  private nextId: number;

  /** A new run starts empty at `m1`; a continued one with what it was handed. */
  constructor(
    private readonly transcript: TranscriptWriter,
    carried: { live: SessionEntry[]; nextId: number } | undefined,
  ) {
    this.entries = carried?.live ?? [];
    this.nextId = carried?.nextId ?? 1;
  }

  get liveEntries(): SessionEntry[] {
    return this.entries;
  }

  get messages(): ChatMessage[] {
    return this.entries.map((entry) => entry.message);
  }

  get nextMessageId(): number {
    return this.nextId;
  }

  writeLine(line: SessionLine): void {
    this.entries = applySessionLine(this.entries, line, this.transcript.nextLineIndex);
    this.transcript.write(line);
  }

  /** Appends a message under the next id; `usage` is that of the request that produced it. */
  append(message: ChatMessage, usage?: RoundUsage): void {
    const id = `m${this.nextId}`;
    this.writeLine(usage === undefined ? { type: 'message', id, message } : { type: 'message', id, message, usage });
    this.nextId += 1;
  }

  /** Writes a compaction's lines (its elisions and the compaction line) and takes the conversation they leave. */
  applyCompaction(result: CompactionResult, context: CompactionLineContext): void {
    const { lines, entries } = recordCompaction(this.entries, result, context);
    for (const line of lines) this.transcript.write(line);
    this.entries = entries;
  }
}
