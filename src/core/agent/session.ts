// Sandbox-safe: the session transcript (docs/design.md#transcript-format) — JSON lines that replay to the live conversation.
//
// The live conversation of an agent run is *derived* by applying the same lines that are written
// to the transcript (`applySessionLine`), so `replaySession(lines)` equals the live conversation
// by construction; `recordCompaction` also checks it against the engine's own result.
import { InvalidInputError } from '../errors.js';
import { removableMask } from '../compaction/regions.js';
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
  /** Id of the last message replaced or dropped; null when none was (a no-op, an elision-only pass, a trim that dropped nothing). */
  replacesThroughId: string | null;
  summary: string | null;
  dropped: number;
  tokensBefore: number;
  tokensAfter: number;
  fallback: boolean;
  exhausted: boolean;
  /** Messages cut middle-out to fit (their elision lines come just before); absent when none was. */
  truncated?: number;
  /** What the summary kept of the identifiers it had to keep (docs/design.md#coverage); absent without a check. */
  coverage?: Coverage;
  /** How many pieces the summary took when the middle did not fit the summarizer's window (docs/design.md#summarizer-window); absent when one. */
  summaryPieces?: number;
  /** A hard trim's marker in a run with recall on (docs/design.md#recall): placed as a summary is; absent otherwise. */
  trimMarker?: string;
  /**
   * With `keepUserMessages` (docs/design.md#user-words): ids of the user messages of the middle
   * that the compaction kept verbatim, in place; absent when it kept none.
   */
  keptUserIds?: string[];
  /** With `keepUserMessages`: how many user messages it summarized (or the hard trim dropped). */
  userMessagesSummarized?: number;
}

/**
 * Where a compaction happened, as an agent run records it on its compaction lines, so its whole
 * compaction history can be rebuilt from the transcript (the run itself keeps only the recent records).
 * Replay ignores these fields.
 */
export interface CompactionLineContext {
  /** The chat round the compaction ran before (1-based). */
  round: number;
  /** The backend whose room the compaction aimed at (its label). */
  backend: string;
  /** The number of tokens it aimed at. */
  target: number;
  /** What its summarizer requests cost, when a summary came back. */
  summarizerUsage?: SummarizerUsage;
  /** The run's cache hit rate so far, when the compaction ran (0..1). */
  cacheHitRate?: number;
  /** The run's estimated billed input so far, when the compaction ran (see `RunUsage.billedInput`). */
  billedInput?: number;
  /** Under `compaction.review` (not `'auto'`): how the compaction was applied (docs/design.md#review). */
  review?: ReviewOutcome;
  /** True when it ran at the cold trigger, after a pause longer than the cache TTL (docs/design.md#cold-cache). */
  coldCache?: boolean;
  /** `'agent'`: the agent asked for it with its `compact_context` tool (docs/design.md#agent-tool). */
  askedBy?: 'agent';
}

/** How a compaction of a run under review was applied: reviewed, edited, on timeout, or forced by the window. */
export type ReviewOutcome = 'applied' | 'edited' | 'timed-out' | 'forced';
export interface ElisionLine {
  type: 'elision';
  id: string;
  stub: string;
  /** An image elision's new content (see `Elision.content`); absent, the new content is `stub`. */
  content?: ContentPart[];
}
/**
 * Messages pinned (`pinned: true`: marked `sticky`, kept in place by every later compaction) or
 * unpinned (the flag taken off again) by the `pin` and `unpin` updates of an agent run
 * (docs/design.md#steering). The flag never reaches a provider.
 */
export interface PinLine {
  type: 'pin';
  ids: string[];
  pinned: boolean;
}
/**
 * An undo of a compaction (docs/design.md#undo): the conversation as it was before compaction
 * `compaction`, with what came after it. Replay puts `restored` back (byte for byte, a pin set
 * since kept), takes out what the compaction added (`removes`: its summary or trim marker), orders
 * the conversation as `order` lists it, and keeps the messages added since at the end.
 */
export interface UndoLine extends Partial<UndoLineContext> {
  type: 'undo';
  /** The number of the compaction undone: its `#` in the history (compaction and undo lines, counted in order from 1). */
  compaction: number;
  /** The ids of the conversation as it was just before that compaction, in order. */
  order: string[];
  /** The messages that compaction replaced, dropped or elided, as they were before it. */
  restored: SessionEntry[];
  /** The ids of what that compaction added (its summary or trim marker). */
  removes: string[];
  tokensBefore: number;
  tokensAfter: number;
}

/** Where an undo happened, as an agent run records it on its undo line (replay ignores it). */
export interface UndoLineContext {
  /** The chat round the undo was applied before (1-based). */
  round: number;
  /** The backend whose units `tokensBefore` and `tokensAfter` are in (its label). */
  backend: string;
  cacheHitRate?: number;
  billedInput?: number;
}
export type SessionLine = MessageLine | CompactionLine | ElisionLine | PinLine | UndoLine;

/** The `type` of every kind of transcript line. */
export const SESSION_LINE_TYPES: ReadonlyArray<SessionLine['type']> = [
  'message',
  'compaction',
  'elision',
  'pin',
  'undo',
];

const LINE_TYPES_REASON = 'must be "message", "compaction", "elision", "pin" or "undo"';

/**
 * Where an agent run's transcript is. The run records its lines as it goes, in batches, as the
 * input of its `recordSession` activity; with a payload store those inputs live in the store and
 * the history holds claims. So the transcript is the `recordSession` inputs of `runId` and of the
 * runs it continued from, in order: `readSession` (Node) reads them back.
 */
export interface SessionReference {
  workflowId: string;
  /** The run that recorded the last of the lines; earlier ones are in the runs it continued from. */
  runId: string;
  /** Lines recorded in all, across continue-as-new. */
  lines: number;
}

/** What the `session` query answers: the lines recorded so far (by reference) and those not recorded yet. */
export interface SessionSnapshot {
  /** The recorded lines: `reference.lines` of them. */
  reference: SessionReference;
  /** The lines after those, not recorded yet (held by the running workflow). */
  pending: SessionLine[];
}

/** The input of the `recordSession` activity: a batch of consecutive transcript lines. */
export interface SessionBatch {
  /** Position of the first line in the whole transcript (0-based, across continue-as-new). */
  from: number;
  lines: SessionLine[];
}

/** A message of the live conversation with its stable transcript id. */
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

/**
 * Applies one transcript line to a conversation. A compaction removes every removable message
 * (not sticky, not in a group with a sticky message) up to and including `replacesThroughId`,
 * and puts the summary, if any, where the first of them stood — exactly what the engine does.
 */
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
      if (line.replacesThroughId === null) return [...entries];
      const through = positionOf(entries, line.replacesThroughId, `${field}.replacesThroughId`);
      const removable = removableMask(entries.map((entry) => entry.message));
      // docs/design.md#user-words The user messages the compaction kept stay where they were.
      const kept = new Set(line.keptUserIds ?? []);
      const next: SessionEntry[] = [];
      let placed = false;
      entries.forEach((entry, index) => {
        if (index > through || removable[index] !== 1 || kept.has(entry.id)) return next.push(entry);
        const content = line.summary ?? line.trimMarker;
        if (!placed && content !== undefined && line.replacesThroughId !== null) {
          next.push({ id: summaryId(line.replacesThroughId), message: { role: 'user', content } });
        }
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
  const parsed = typeof lines === 'string' ? parseSessionJsonl(lines) : lines;
  let entries: SessionEntry[] = [];
  let index = 0;
  for (const line of parsed) {
    entries = applySessionLine(entries, line, index);
    index += 1;
  }
  return entries.map((entry) => entry.message);
}

/** {@link replaySession} over lines that arrive one by one (e.g. `readSession`): holds only the live conversation. */
export async function replaySessionStream(lines: AsyncIterable<SessionLine>): Promise<ChatMessage[]> {
  let entries: SessionEntry[] = [];
  let index = 0;
  for await (const line of lines) {
    entries = applySessionLine(entries, line, index);
    index += 1;
  }
  return entries.map((entry) => entry.message);
}

/** `message` as it was restored, with the pin flag `now` has (a `pin` since the compaction stays). */
function withPinOf(message: ChatMessage, now: ChatMessage): ChatMessage {
  if (now.sticky === message.sticky) return message;
  const { sticky: _sticky, ...plain } = message;
  return now.sticky === true ? { ...plain, sticky: true } : plain;
}

/**
 * Applies an undo line to a conversation (`field` names the line in errors): the conversation
 * `order` lists, each message restored or as it is now, then the messages added since the compaction.
 * Throws `InvalidInputError` naming the id when the conversation is not one the line can apply to.
 */
export function applyUndoLine(entries: readonly SessionEntry[], line: UndoLine, field: string): SessionEntry[] {
  const current = new Map(entries.map((entry) => [entry.id, entry]));
  const restored = new Map(line.restored.map((entry) => [entry.id, entry]));
  const listed = new Set(line.order);
  const removes = new Set(line.removes);
  line.removes.forEach((id, index) => {
    if (!current.has(id))
      throw new InvalidInputError(
        `${field}.removes[${index}]`,
        `no message with id "${id}" in the conversation at this point`,
      );
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
  // What came after the compaction (messages appended since) stays, after what it restores.
  const since = entries.filter((entry) => !listed.has(entry.id) && !removes.has(entry.id));
  return [...head, ...since];
}

export function parseSessionJsonl(text: string): SessionLine[] {
  const lines: SessionLine[] = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      throw new InvalidInputError(`lines[${index}]`, 'is not valid JSON');
    }
    lines.push(asSessionLine(value, index));
  });
  return lines;
}

function asSessionLine(value: unknown, index: number): SessionLine {
  const type = typeof value === 'object' && value !== null ? Reflect.get(value, 'type') : undefined;
  if (!SESSION_LINE_TYPES.some((known) => known === type)) {
    throw new InvalidInputError(`lines[${index}].type`, LINE_TYPES_REASON);
  }
  // The shape of each kind is checked when it is applied (ids must resolve; messages were validated when recorded).
  return value as SessionLine;
}

export function toJsonl(lines: readonly SessionLine[]): string {
  return lines.map((line) => JSON.stringify(line)).join('\n') + (lines.length > 0 ? '\n' : '');
}

/** docs/design.md#user-words What a compaction line records of the user messages a compaction kept and summarized. */
function userMessageFields(
  entries: readonly SessionEntry[],
  result: CompactionResult,
): Pick<CompactionLine, 'keptUserIds' | 'userMessagesSummarized'> {
  const { userMessages } = result;
  if (userMessages === undefined) return {};
  const keptUserIds = userMessages.keptAt.map((index, position) => {
    const entry = entries[index];
    if (entry === undefined)
      throw new InvalidInputError(
        `result.userMessages.keptAt[${position}]`,
        `index ${index} is outside the conversation`,
      );
    return entry.id;
  });
  return {
    ...(keptUserIds.length === 0 ? {} : { keptUserIds }),
    userMessagesSummarized: userMessages.summarized,
  };
}

/**
 * Turns one compaction result into transcript lines (elisions first, then the compaction when it
 * replaced or dropped anything or was a fallback/exhausted pass — or always, with `context`, which
 * the line then carries) and the new live entries, derived by applying those lines. Throws if that
 * derivation disagrees with the engine's result, which would mean a replayed transcript could not
 * reproduce the run.
 */
export function recordCompaction(
  entries: readonly SessionEntry[],
  result: CompactionResult,
  context?: Partial<CompactionLineContext>,
): { lines: SessionLine[]; entries: SessionEntry[] } {
  const lines: SessionLine[] = result.elisions.map(({ index, stub, content }) => {
    const entry = entries[index];
    if (entry === undefined)
      throw new InvalidInputError('result.elisions', `index ${index} is outside the conversation`);
    return content === undefined
      ? { type: 'elision', id: entry.id, stub }
      : { type: 'elision', id: entry.id, stub, content };
  });
  const replacedOrMarked =
    result.cutIndex >= 0 || result.fallback || result.exhausted || result.truncations !== undefined;
  if (replacedOrMarked || context !== undefined) {
    lines.push({
      type: 'compaction',
      ...context,
      replacesThroughId: result.cutIndex >= 0 ? (entries[result.cutIndex]?.id ?? null) : null,
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
      ...userMessageFields(entries, result),
    });
  }
  let next: SessionEntry[] = [...entries];
  lines.forEach((line, index) => {
    next = applySessionLine(next, line, index);
  });
  if (JSON.stringify(next.map((entry) => entry.message)) !== JSON.stringify(result.messages)) {
    throw new Error('session replay diverged from the compaction result: the transcript could not reproduce this run');
  }
  return { lines, entries: next };
}
