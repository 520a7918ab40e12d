// Sandbox-safe: undoing a compaction (docs/design.md#undo): which compaction an undo applies to, or why it is
// refused, and what it brings back; shared by the workflow, its activity and `Compactor.undo`.
import { z } from 'zod';
import { InvalidInputError, UndoRefusedError } from '../errors.js';
import { checkWith } from '../schema.js';
import type { TokenCounter } from '../types.js';
import {
  compactionRecordsFromSession,
  undoneIn,
  undoRecord,
  type CompactionHistory,
  type CompactionRecord,
  type UndoneCompaction,
} from './compaction-history.js';
import {
  applySessionLine,
  applyUndoLine,
  type SessionEntry,
  type SessionLine,
  type UndoLine,
  type UndoLineContext,
} from './session.js';
import { expected } from './steering.js';

/** The part of an undo line the transcript alone decides. */
export type UndoChange = Pick<UndoLine, 'order' | 'restored' | 'removes'>;

/** What undoing a compaction changes, from the conversation just before it and just after it. */
export function undoChange(before: readonly SessionEntry[], after: readonly SessionEntry[]): UndoChange {
  const afterById = new Map(after.map((entry) => [entry.id, entry]));
  const beforeIds = new Set(before.map((entry) => entry.id));
  return {
    order: before.map((entry) => entry.id),
    restored: before.filter((entry) => {
      const now = afterById.get(entry.id);
      return now === undefined || JSON.stringify(now.message) !== JSON.stringify(entry.message);
    }),
    removes: after.flatMap((entry) => (beforeIds.has(entry.id) ? [] : [entry.id])),
  };
}

/** What decides whether a compaction can be undone: the number of the last record (compactions, undos), the undos. */
export interface UndoState {
  records: number;
  undone: readonly UndoneCompaction[];
}

/**
 * The compaction an undo applies to: `compactionId`, or the last in effect (`queued`: undos accepted, not applied).
 * Only the last in effect can be undone: each compaction applies to the conversation the one before it left.
 */
export function undoTarget(
  state: UndoState,
  compactionId: number | undefined,
  field: string,
  queued: readonly number[] = [],
): number {
  const undos = new Set(state.undone.map((item) => item.by));
  const undone = new Map(state.undone.map((item) => [item.compaction, item.by]));
  const inEffect: number[] = [];
  for (let number = state.records; number >= 1; number -= 1)
    if (!undos.has(number) && !undone.has(number) && !queued.includes(number)) inEffect.push(number);
  if (compactionId === undefined) {
    const [last] = inEffect;
    if (last === undefined)
      throw new UndoRefusedError({ reason: 'none', compactionId: null }, 'there is no compaction in effect to undo');
    return last;
  }
  if (compactionId > state.records)
    throw new InvalidInputError(
      field,
      `no compaction #${compactionId}: the history holds ${state.records} record${state.records === 1 ? '' : 's'}`,
    );
  if (undos.has(compactionId)) throw new InvalidInputError(field, `#${compactionId} is an undo, not a compaction`);
  if (undone.has(compactionId) || queued.includes(compactionId)) {
    const by = undone.get(compactionId);
    throw new UndoRefusedError(
      { reason: 'undone', compactionId },
      `compaction #${compactionId} is undone already${by === undefined ? ' (its undo is waiting to apply)' : ` (by #${by})`}`,
    );
  }
  const later = inEffect.filter((number) => number > compactionId);
  if (later.length > 0)
    throw new UndoRefusedError(
      { reason: 'later-compactions', compactionId, later },
      `compaction #${compactionId}: later compactions depend on it; undo ${later.map((number) => `#${number}`).join(', then ')} first`,
    );
  return compactionId;
}

/** Whether the trigger waits because the last record is an undo: compacting again would take it back. */
export function heldByUndo(history: Pick<CompactionHistory, 'recent'>): boolean {
  return history.recent.at(-1)?.kind === 'undo';
}

/** The argument of the `undoCompaction` update. */
export interface UndoCompactionInput {
  /** The `#` of the compaction in the history. @default the last compaction in effect */
  compactionId?: number;
}

const idError = expected('a whole number from 1 (the # of the compaction in the history)');
const idSchema = z.number(idError).int(idError).min(1, idError).optional();
const undoSchema = z.strictObject(
  { compactionId: idSchema },
  expected('an object { compactionId?: number } or left out'),
);

export function parseUndoInput(value: unknown): number | undefined {
  return checkWith(undoSchema, value ?? {}, 'undoCompaction').compactionId;
}

export function checkCompactionId(value: unknown, field: string): number | undefined {
  return checkWith(idSchema, value, field);
}

/** Finds, line by line, what undoing `compaction` brings back: the conversation before its lines, and after them. */
export class UndoFinder {
  /** The conversation the lines so far replay to. */
  conversation: SessionEntry[] = [];
  private beforeElisions: SessionEntry[] | undefined;
  private records = 0;
  private index = 0;
  change: UndoChange | undefined;

  constructor(readonly compaction: number) {}

  /** Applies the next line; true when it was the compaction's own line. */
  push(line: SessionLine): boolean {
    const before = this.conversation;
    if (line.type === 'elision' && this.beforeElisions === undefined) this.beforeElisions = before;
    this.conversation = applySessionLine(this.conversation, line, this.index++);
    if (line.type === 'compaction' || line.type === 'undo') this.records += 1;
    const found = line.type === 'compaction' && this.records === this.compaction;
    if (found) this.change = undoChange(this.beforeElisions ?? before, this.conversation);
    if (line.type !== 'elision') this.beforeElisions = undefined;
    return found;
  }
}

/** What an undo of a transcript a caller keeps gives back: append `line` to the transcript. */
export interface TranscriptUndo {
  entries: SessionEntry[];
  line: UndoLine;
  record: CompactionRecord;
}

/** Undoes compaction `compactionId` of a transcript a caller keeps; refused when over `room` tokens. */
export function undoTranscript(
  lines: readonly SessionLine[],
  options: { compactionId: number | undefined; counter: TokenCounter; room: number; field: string },
): TranscriptUndo {
  const { compactionId, counter, room, field } = options;
  const records = compactionRecordsFromSession(lines);
  const compaction = undoTarget({ records: records.length, undone: undoneIn(records, 1) }, compactionId, field);
  const finder = new UndoFinder(compaction);
  for (const line of lines) finder.push(line);
  const { change } = finder;
  if (change === undefined) throw new InvalidInputError(field, `no compaction #${compaction} in the transcript`);
  return undoLineFor(finder.conversation, change, { compaction, counter, room });
}

/** The undo line of `change` applied to `entries`, and its record; refused (`window`) when over `room` tokens. */
export function undoLineFor(
  entries: readonly SessionEntry[],
  change: UndoChange,
  options: { compaction: number; counter: TokenCounter; room: number; context?: UndoLineContext },
): TranscriptUndo {
  const { compaction, counter, room, context } = options;
  const draft: UndoLine = { type: 'undo', compaction, ...change, tokensBefore: 0, tokensAfter: 0 };
  const restored = applyUndoLine(entries, draft, 'undo');
  const tokensAfter = counter.count(restored.map((entry) => entry.message));
  if (tokensAfter > room)
    throw new UndoRefusedError(
      { reason: 'window', compactionId: compaction, tokens: tokensAfter, room },
      `compaction #${compaction}: the restored conversation would be ${tokensAfter} tokens, over the ${room} the window leaves`,
    );
  const tokensBefore = counter.count(entries.map((entry) => entry.message));
  const line: UndoLine = { type: 'undo', ...context, compaction, ...change, tokensBefore, tokensAfter };
  return { entries: restored, line, record: undoRecord(line) };
}
