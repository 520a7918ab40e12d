// Sandbox-safe: the session transcript (docs/design.md#transcript-format) — JSON lines that replay to the live conversation.
// The run derives its live conversation by applying the lines it writes, so replay equals it by construction.
import { InvalidInputError } from '../errors.js';
import { removableMask } from '../compaction/regions.js';
import { isRecord } from '../schema.js';
import type { RoundUsage } from './run-usage.js';
import type { SummarizerUsage } from '../counting/summarizer-usage.js';
import type { ChatMessage, CompactionResult, ContentPart, Coverage } from '../types.js';

export interface MessageLine {
  type: 'message';
  id: string;
  message: ChatMessage;
  /** On an assistant message of an agent run: the usage of the request that produced it. Replay ignores it. */
  usage?: RoundUsage;
}
export interface CompactionLine extends Partial<CompactionLineContext> {
  type: 'compaction';
  /** Id of the last message replaced or dropped; null when none was. */
  replacesThroughId: string | null;
  summary: string | null;
  dropped: number;
  tokensBefore: number;
  tokensAfter: number;
  fallback: boolean;
  exhausted: boolean;
  truncated?: number;
  coverage?: Coverage;
  summaryPieces?: number;
  /** A hard trim's marker in a run with recall on (docs/design.md#recall): placed as a summary is. */
  trimMarker?: string;
  /** With `keepUserMessages` (docs/design.md#user-words): ids of the user messages kept in place. */
  keptUserIds?: string[];
  /** With `keepUserMessages`: how many user messages it summarized (or the hard trim dropped). */
  userMessagesSummarized?: number;
}

/** Where a compaction happened, recorded so the whole history can be rebuilt from the transcript; replay ignores it. */
export interface CompactionLineContext {
  /** The chat round the compaction ran before (1-based). */
  round: number;
  /** The label of the backend whose room it aimed at. */
  backend: string;
  target: number;
  summarizerUsage?: SummarizerUsage;
  /** The run's cache hit rate (0..1) and estimated billed input so far. */
  cacheHitRate?: number;
  billedInput?: number;
  /** Under `compaction.review` (not `'auto'`): how it was applied (docs/design.md#review). */
  review?: ReviewOutcome;
  /** It ran at the cold trigger (docs/design.md#cold-cache). */
  coldCache?: boolean;
  /** The agent asked for it (docs/design.md#agent-tool). */
  askedBy?: 'agent';
}

/** How a compaction of a run under review was applied: reviewed, edited, on timeout, or forced by the window. */
export type ReviewOutcome = 'applied' | 'edited' | 'timed-out' | 'forced';
export interface ElisionLine {
  type: 'elision';
  id: string;
  stub: string;
  /** An image elision's new content; absent, it is `stub`. */
  content?: ContentPart[];
}
/** Messages pinned (marked `sticky`) or unpinned by the `pin` and `unpin` updates (docs/design.md#steering). */
export interface PinLine {
  type: 'pin';
  ids: string[];
  pinned: boolean;
}
/** An undo of a compaction (docs/design.md#undo): replay applies it with {@link applyUndoLine}. */
export interface UndoLine extends Partial<UndoLineContext> {
  type: 'undo';
  /** The compaction undone: its `#` in the history (compaction and undo lines, counted from 1). */
  compaction: number;
  order: string[];
  restored: SessionEntry[];
  removes: string[];
  tokensBefore: number;
  tokensAfter: number;
}

/** Where an undo happened, as an agent run records it on its undo line (replay ignores it). */
export type UndoLineContext = Pick<CompactionLineContext, 'round' | 'backend' | 'cacheHitRate' | 'billedInput'>;
export type SessionLine = MessageLine | CompactionLine | ElisionLine | PinLine | UndoLine;

export const SESSION_LINE_TYPES: readonly SessionLine['type'][] = ['message', 'compaction', 'elision', 'pin', 'undo'];

const LINE_TYPES_REASON = 'must be "message", "compaction", "elision", "pin" or "undo"';

/** Where a run's transcript is: the `recordSession` inputs of `runId` and the runs it continued from (`readSession`). */
export interface SessionReference {
  workflowId: string;
  runId: string;
  lines: number;
}

/** What the `session` query answers: the lines recorded so far (by reference) and those not recorded yet. */
export interface SessionSnapshot {
  reference: SessionReference;
  pending: SessionLine[];
}

/** The input of the `recordSession` activity: a batch of consecutive transcript lines. */
export interface SessionBatch {
  /** Position of the first line in the whole transcript (0-based, across continue-as-new). */
  from: number;
  lines: SessionLine[];
}

export interface SessionEntry {
  id: string;
  message: ChatMessage;
}

/** The id the synthetic summary message gets: unique, because the message it names is gone after. */
export function summaryId(replacesThroughId: string): string {
  return `summary:${replacesThroughId}`;
}

function positionOf(entries: readonly SessionEntry[], id: string, field: string): number {
  const position = entries.findIndex((entry) => entry.id === id);
  if (position < 0) throw new InvalidInputError(field, `no message with id "${id}" in the conversation at this point`);
  return position;
}

/** Applies one transcript line to a conversation, exactly as the engine compacts. */
export function applySessionLine(entries: readonly SessionEntry[], line: SessionLine, lineIndex = 0): SessionEntry[] {
  const field = `lines[${lineIndex}]`;
  switch (line.type) {
    case 'message':
      if (entries.some((entry) => entry.id === line.id))
        throw new InvalidInputError(`${field}.id`, `duplicate message id "${line.id}"`);
      return [...entries, { id: line.id, message: line.message }];
    case 'elision': {
      const position = positionOf(entries, line.id, `${field}.id`);
      return entries.map((entry, index) =>
        index === position
          ? { id: entry.id, message: { ...entry.message, content: line.content ?? line.stub } }
          : entry,
      );
    }
    case 'compaction': {
      const throughId = line.replacesThroughId;
      if (throughId === null) return [...entries];
      const through = positionOf(entries, throughId, `${field}.replacesThroughId`);
      const removable = removableMask(entries.map((entry) => entry.message));
      // docs/design.md#user-words The user messages the compaction kept stay where they were.
      const kept = new Set(line.keptUserIds ?? []);
      const next: SessionEntry[] = [];
      let placed = false;
      entries.forEach((entry, index) => {
        if (index > through || removable[index] !== 1 || kept.has(entry.id)) return next.push(entry);
        const content = line.summary ?? line.trimMarker;
        if (!placed && content !== undefined)
          next.push({ id: summaryId(throughId), message: { role: 'user', content } });
        placed = true;
        return next.length;
      });
      return next;
    }
    case 'pin': {
      const positions = new Set(line.ids.map((id, index) => positionOf(entries, id, `${field}.ids[${index}]`)));
      return entries.map((entry, index) => {
        if (!positions.has(index)) return entry;
        const { sticky: _sticky, ...plain } = entry.message;
        return { id: entry.id, message: line.pinned ? { ...plain, sticky: true } : plain };
      });
    }
    case 'undo':
      return applyUndoLine(entries, line, field);
    default:
      throw new InvalidInputError(`${field}.type`, LINE_TYPES_REASON);
  }
}

/** Rebuilds the live conversation from a transcript, byte for byte. Accepts parsed lines or JSONL text. */
export function replaySession(lines: Iterable<SessionLine> | string): ChatMessage[] {
  const parsed = typeof lines === 'string' ? parseSessionJsonl(lines) : [...lines];
  const entries = parsed.reduce<SessionEntry[]>((applied, line, index) => applySessionLine(applied, line, index), []);
  return entries.map((entry) => entry.message);
}

/** {@link replaySession} over lines that arrive one by one (e.g. `readSession`): holds only the live conversation. */
export async function replaySessionStream(lines: AsyncIterable<SessionLine>): Promise<ChatMessage[]> {
  let entries: SessionEntry[] = [];
  let index = 0;
  for await (const line of lines) entries = applySessionLine(entries, line, index++);
  return entries.map((entry) => entry.message);
}

/** `message` as it was restored, with the pin flag `now` has (a `pin` since the compaction stays). */
function withPinOf(message: ChatMessage, now: ChatMessage): ChatMessage {
  if (now.sticky === message.sticky) return message;
  const { sticky: _sticky, ...plain } = message;
  return now.sticky === true ? { ...plain, sticky: true } : plain;
}

/** The conversation `order` lists, each message restored (keeping a pin since) or as now, then those added since. */
export function applyUndoLine(entries: readonly SessionEntry[], line: UndoLine, field: string): SessionEntry[] {
  const current = new Map(entries.map((entry) => [entry.id, entry]));
  const restored = new Map(line.restored.map((entry) => [entry.id, entry]));
  const listed = new Set(line.order);
  const removes = new Set(line.removes);
  line.removes.forEach((id, index) => {
    if (!current.has(id)) positionOf(entries, id, `${field}.removes[${index}]`);
  });
  const head = line.order.map((id, index): SessionEntry => {
    const back = restored.get(id);
    const now = current.get(id);
    if (back !== undefined) return now === undefined ? back : { id, message: withPinOf(back.message, now.message) };
    if (now === undefined)
      throw new InvalidInputError(
        `${field}.order[${index}]`,
        `no message with id "${id}" in the conversation at this point, nor among the restored ones`,
      );
    return now;
  });
  const since = entries.filter((entry) => !listed.has(entry.id) && !removes.has(entry.id));
  return [...head, ...since];
}

export function parseSessionJsonl(text: string): SessionLine[] {
  return text.split('\n').flatMap((raw, index): SessionLine[] => {
    if (raw.trim() === '') return [];
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      throw new InvalidInputError(`lines[${index}]`, 'is not valid JSON');
    }
    const type = isRecord(value) ? value.type : undefined;
    if (!SESSION_LINE_TYPES.some((known) => known === type))
      throw new InvalidInputError(`lines[${index}].type`, LINE_TYPES_REASON);
    // The shape of each kind is checked when it is applied (ids must resolve; messages were validated when recorded).
    return [value as SessionLine];
  });
}

/** The id of the entry a result names by its index. */
function idAt(entries: readonly SessionEntry[], index: number, field: string): string {
  const entry = entries[index];
  if (entry === undefined) throw new InvalidInputError(field, `index ${index} is outside the conversation`);
  return entry.id;
}

/** The compaction line of `result`; `replacesThroughId` and `keptUserIds` name entries of the transcript. */
export function compactionLineOf(
  result: CompactionResult,
  context?: Partial<CompactionLineContext>,
  replacesThroughId: string | null = null,
  keptUserIds: readonly string[] = [],
): CompactionLine {
  return {
    type: 'compaction',
    ...context,
    replacesThroughId,
    summary: result.summary,
    dropped: result.dropped,
    tokensBefore: result.tokensBefore,
    tokensAfter: result.tokensAfter,
    fallback: result.fallback,
    exhausted: result.exhausted,
    ...(result.truncations === undefined ? {} : { truncated: result.truncations.length }),
    ...(result.coverage === undefined ? {} : { coverage: result.coverage }),
    ...(result.summaryPieces === undefined ? {} : { summaryPieces: result.summaryPieces }),
    ...(result.trimMarker === undefined ? {} : { trimMarker: result.trimMarker }),
    ...(keptUserIds.length === 0 ? {} : { keptUserIds: [...keptUserIds] }),
    ...(result.userMessages === undefined ? {} : { userMessagesSummarized: result.userMessages.summarized }),
  };
}

/**
 * One compaction result as transcript lines (elisions, then a compaction line unless nothing happened and there is
 * no `context`) and the entries they replay to; throws when those disagree with the engine's result.
 */
export function recordCompaction(
  entries: readonly SessionEntry[],
  result: CompactionResult,
  context?: Partial<CompactionLineContext>,
): { lines: SessionLine[]; entries: SessionEntry[] } {
  const lines: SessionLine[] = result.elisions.map(({ index, stub, content }) => {
    const id = idAt(entries, index, 'result.elisions');
    return content === undefined ? { type: 'elision', id, stub } : { type: 'elision', id, stub, content };
  });
  const replacedOrMarked =
    result.cutIndex >= 0 || result.fallback || result.exhausted || result.truncations !== undefined;
  if (replacedOrMarked || context !== undefined) {
    const through = result.cutIndex >= 0 ? (entries[result.cutIndex]?.id ?? null) : null;
    // docs/design.md#user-words The ids of the user messages the compaction kept.
    const kept = (result.userMessages?.keptAt ?? []).map((index, at) =>
      idAt(entries, index, `result.userMessages.keptAt[${at}]`),
    );
    lines.push(compactionLineOf(result, context, through, kept));
  }
  const next = lines.reduce((applied, line, index) => applySessionLine(applied, line, index), [...entries]);
  if (JSON.stringify(next.map((entry) => entry.message)) !== JSON.stringify(result.messages))
    throw new Error('session replay diverged from the compaction result: the transcript could not reproduce this run');
  return { lines, entries: next };
}
