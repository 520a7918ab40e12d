// Sandbox-safe: an agent run's compaction history (recent records and totals; the whole history is in
// the transcript), and the Markdown the Temporal UI and `temporal-compactor history` show.
import { emptyRunUsage, percent, type Pricing, type RunUsage } from './run-usage.js';
import {
  compactionLineOf,
  type CompactionLine,
  type CompactionLineContext,
  type ReviewOutcome,
  type SessionLine,
  type UndoLine,
} from './session.js';
import type { CompactionResult, Coverage } from '../types.js';
import { compactionKind, type CompactionKind } from '../compaction/kind.js';
import { jsonPayloadBytes } from '../limits/payload-size.js';
import { groupDigits } from '../counting/parts.js';

export { compactionKind, groupDigits, type CompactionKind };

/** A compaction of one of those kinds, or the undo of one (docs/design.md#undo). */
export type RecordKind = CompactionKind | 'undo';

/** One compaction of an agent run (docs/design.md#compaction-history). Counts are in the units of `backend`. */
export interface CompactionRecord {
  /** The chat round the compaction ran before (1-based). */
  round: number;
  /** The label of the backend whose room it aimed at. */
  backend: string;
  target: number;
  tokensBefore: number;
  tokensAfter: number;
  /** Messages replaced by the summary or trimmed. */
  dropped: number;
  /** Tool results elided in place (truncations included). */
  elided: number;
  /** Messages cut middle-out to fit (docs/design.md#truncation); absent when none was. */
  truncated?: number;
  /** docs/design.md#coverage, naming at most {@link RECORD_MISSING} missing ones. */
  coverage?: Coverage;
  /** Pieces the summary took (docs/design.md#summarizer-window); absent when one. */
  summaryPieces?: number;
  kind: RecordKind;
  /** An undo: the number of the compaction it undid, and how many messages it brought back. */
  undoes?: number;
  restored?: number;
  /** Null when there is no summary (its text is in the transcript). */
  summaryChars: number | null;
  /** The messages came from the hard trim. */
  fallback: boolean;
  /** Even the hard trim could not fit `target`. */
  exhausted: boolean;
  tokensReclaimed: number;
  /** Prompt tokens sent to the summarizer for it; 0 without a summary. */
  summarizerTokens: number;
  /** The run's cache hit rate and billed input so far; null when not known. */
  cacheHitRate: number | null;
  billedInput: number | null;
  review?: ReviewOutcome;
  /** With `keepUserMessages` (docs/design.md#user-words): user messages kept verbatim and summarized. */
  userMessages?: { kept: number; summarized: number };
  coldCache?: boolean;
  askedBy?: 'agent';
}

/** The totals of a run without compactions. */
const NO_TOTALS = {
  compactions: 0,
  summaries: 0,
  trims: 0,
  elisionOnly: 0,
  fallbacks: 0,
  exhausted: 0,
  dropped: 0,
  elided: 0,
  /** In the units of each compaction's backend (an undo's is negative). */
  tokensReclaimed: 0,
  /** Undo records, numbered with the compactions (docs/design.md#undo). */
  undos: 0,
};

/** Running totals over every compaction of a run, across continue-as-new. */
export type CompactionTotals = typeof NO_TOTALS;

/** A compaction undone, and the record of the undo (their numbers in the history). */
export interface UndoneCompaction {
  compaction: number;
  by: number;
}

export interface CompactionHistory {
  totals: CompactionTotals;
  /** The last {@link RECENT_COMPACTIONS} records, oldest first; the rest are in the transcript. */
  recent: CompactionRecord[];
  usage: RunUsage;
  undone: UndoneCompaction[];
}

export function recordCount(totals: CompactionTotals): number {
  return totals.compactions + totals.undos;
}

/** Records an agent run keeps in its state, result and queries (the transcript holds every one). @default 20 */
export const RECENT_COMPACTIONS = 20;

/** A record names at most this many missing identifiers: records stay small. */
export const RECORD_MISSING = 10;

export function compactionRecord(context: CompactionLineContext, result: CompactionResult): CompactionRecord {
  return recordOfLine(compactionLineOf(result, context), result.elisions.length, result.userMessages?.kept);
}

export function emptyCompactionHistory(pricing?: Pricing): CompactionHistory {
  return {
    totals: { ...NO_TOTALS },
    recent: [],
    usage: emptyRunUsage(pricing),
    undone: [],
  };
}

export function addCompactionRecord(history: CompactionHistory, record: CompactionRecord): CompactionHistory {
  const { totals } = history;
  // An undo's record (undoRecord) adds to no kind, fallback, drop or elision: only to the tokens and `undos`.
  const undo = record.kind === 'undo';
  const by = recordCount(totals) + 1;
  return {
    usage: history.usage,
    undone: undo ? [...history.undone, { compaction: record.undoes ?? 0, by }] : history.undone,
    totals: {
      ...totals,
      compactions: totals.compactions + (undo ? 0 : 1),
      summaries: totals.summaries + (record.kind === 'summary' ? 1 : 0),
      trims: totals.trims + (record.kind === 'trim' ? 1 : 0),
      elisionOnly: totals.elisionOnly + (record.kind === 'elision' ? 1 : 0),
      fallbacks: totals.fallbacks + (record.fallback ? 1 : 0),
      exhausted: totals.exhausted + (record.exhausted ? 1 : 0),
      dropped: totals.dropped + record.dropped,
      elided: totals.elided + record.elided,
      tokensReclaimed: totals.tokensReclaimed + (record.tokensBefore - record.tokensAfter),
      undos: totals.undos + (undo ? 1 : 0),
    },
    recent: [...history.recent, record].slice(-RECENT_COMPACTIONS),
  };
}

/** Every compaction record of a transcript; a line without context gets round 0, backend `?` and target 0. */
export function compactionRecordsFromSession(lines: Iterable<SessionLine>): CompactionRecord[] {
  const records: CompactionRecord[] = [];
  let elided = 0;
  for (const line of lines) {
    if (line.type === 'compaction') records.push(recordOfLine(line, elided));
    else if (line.type === 'undo') records.push(undoRecord(line));
    elided = line.type === 'elision' ? elided + 1 : 0;
  }
  return records;
}

export function undoRecord(line: UndoLine): CompactionRecord {
  return {
    ...lineFields(line),
    target: 0,
    dropped: 0,
    elided: 0,
    kind: 'undo',
    undoes: line.compaction,
    restored: line.restored.length,
    summaryChars: null,
    fallback: false,
    exhausted: false,
    summarizerTokens: 0,
  };
}

/** The fields a compaction's record and an undo's take alike from their transcript line. */
function lineFields(line: CompactionLine | UndoLine) {
  const { tokensBefore, tokensAfter } = line;
  return {
    round: line.round ?? 0,
    backend: line.backend ?? '?',
    tokensBefore,
    tokensAfter,
    tokensReclaimed: tokensBefore - tokensAfter,
    cacheHitRate: line.cacheHitRate ?? null,
    billedInput: line.billedInput ?? null,
  };
}

function recordOfLine(line: CompactionLine, elided: number, kept = line.keptUserIds?.length ?? 0): CompactionRecord {
  return {
    ...lineFields(line),
    target: line.target ?? 0,
    dropped: line.dropped,
    elided,
    ...(line.truncated === undefined ? {} : { truncated: line.truncated }),
    ...(line.coverage === undefined
      ? {}
      : { coverage: { ...line.coverage, missing: line.coverage.missing.slice(0, RECORD_MISSING) } }),
    ...(line.summaryPieces === undefined ? {} : { summaryPieces: line.summaryPieces }),
    kind: compactionKind({ summary: line.summary, fallback: line.fallback, elisions: { length: elided } }),
    summaryChars: line.summary?.length ?? null,
    fallback: line.fallback,
    exhausted: line.exhausted,
    summarizerTokens: line.summarizerUsage?.promptTokens ?? 0,
    ...(line.review === undefined ? {} : { review: line.review }),
    ...(line.coldCache === true ? { coldCache: true } : {}),
    ...(line.userMessagesSummarized === undefined
      ? {}
      : { userMessages: { kept, summarized: line.userMessagesSummarized } }),
    ...(line.askedBy === undefined ? {} : { askedBy: line.askedBy }),
  };
}

function piecesLabel(record: CompactionRecord): string {
  return record.summaryPieces === undefined ? '' : ` in ${record.summaryPieces} pieces`;
}

/** `, 3 user messages kept (2 summarized)` (docs/design.md#user-words), or ''. */
function userMessagesLabel(record: CompactionRecord): string {
  const words = record.userMessages;
  if (words === undefined || words.kept + words.summarized === 0) return '';
  return `, ${words.kept} user message${words.kept === 1 ? '' : 's'} kept (${words.summarized} summarized)`;
}

/** How a compaction reads in a table: `summary (1,234 chars)`, `trim`, `elision only`, `nothing to remove`, `undo`. */
export function compactionKindLabel(kind: RecordKind, summaryChars: number): string {
  if (kind === 'summary') return `summary (${groupDigits(summaryChars)} chars)`;
  return { undo: 'undo', trim: 'trim', elision: 'elision only', none: 'nothing to remove' }[kind];
}

/** `ids 20 of 24 (13 carried), missing: a, b` (docs/design.md#coverage); not `20/24`: the UI renders that as a fraction. */
export function coverageLabel(coverage: Coverage): string {
  const carried = coverage.carried > 0 ? ` (${coverage.carried} carried)` : '';
  const shown = coverage.missing.slice(0, 3).join(', ');
  const more = coverage.missing.length > 3 ? ', …' : '';
  const missing = coverage.missing.length > 0 ? `, missing: ${shown}${more}` : '';
  return `ids ${coverage.kept} of ${coverage.required}${carried}${missing}`;
}

/** The header line of {@link renderCompactionTable}: what the CLI prints and tests look for. */
export const COMPACTION_TABLE_HEADER =
  '| # | round | tokens before → after | reclaimed | dropped | elided | summary or trim | fallback | exhausted | cache hits so far | billed input so far |';

/** The compaction history as a wide Markdown table for a terminal, rows numbered from `first`. */
export function renderCompactionTable(
  records: readonly CompactionRecord[],
  first = 1,
  undone: readonly UndoneCompaction[] = undoneIn(records, first),
): string {
  const rows = records.map(
    (record, index) =>
      `| ${first + index} | ${record.round} | ${groupDigits(record.tokensBefore)} → ${groupDigits(record.tokensAfter)} | ${groupDigits(record.tokensReclaimed)} | ${record.dropped} | ${record.elided} | ${kindCell(record, first + index, undone)}${piecesLabel(record)}${record.coldCache === true ? ', cold cache' : ''}${userMessagesLabel(record)}${record.truncated === undefined ? '' : `, truncated ${record.truncated}`}${record.askedBy === 'agent' ? ', asked by the agent' : ''}${record.coverage === undefined || record.coverage.required === 0 ? '' : `, ${coverageLabel(record.coverage)}`} | ${record.fallback ? 'yes' : 'no'} | ${record.exhausted ? 'yes' : 'no'} | ${record.cacheHitRate === null ? '—' : percent(record.cacheHitRate)} | ${record.billedInput === null ? '—' : groupDigits(record.billedInput)} |`,
  );
  return [COMPACTION_TABLE_HEADER, '|--:|--:|--:|--:|--:|--:|---|---|---|--:|--:|', ...rows].join('\n');
}

export function undoneIn(records: readonly CompactionRecord[], first: number): UndoneCompaction[] {
  return records.flatMap((record, index) =>
    record.kind === 'undo' && record.undoes !== undefined ? [{ compaction: record.undoes, by: first + index }] : [],
  );
}

function kindCell(record: CompactionRecord, number: number, undone: readonly UndoneCompaction[]): string {
  if (record.kind === 'undo') return undoWhat(record);
  const by = undone.find((item) => item.compaction === number)?.by;
  const kind = compactionKindLabel(record.kind, record.summaryChars ?? 0);
  return by === undefined ? kind : `${kind}, undone by #${by}`;
}

/** What a run cost, in one line: `412,803 prompt tokens in 30 requests, 81% from the cache (modelled); billed input ≈ …`. */
export function describeRunUsage(usage: RunUsage): string {
  const source =
    usage.requests === 0
      ? ''
      : usage.reportedCacheRequests === usage.requests
        ? ' (reported)'
        : usage.reportedCacheRequests === 0
          ? ' (modelled)'
          : ' (partly modelled)';
  const summarizer =
    usage.summarizer.requests === 0
      ? ''
      : ` (summarizer ${groupDigits(usage.summarizer.promptTokens)} prompt tokens${usage.summarizer.estimated ? ', estimated' : ''})`;
  return `${groupDigits(usage.promptTokens)} prompt tokens in ${usage.requests} request${usage.requests === 1 ? '' : 's'}, ${percent(usage.cacheHitRate)} from the cache${source}; billed input ≈ ${groupDigits(usage.billedInput)}${summarizer}`;
}

function undoWhat(record: CompactionRecord): string {
  return `undo of #${record.undoes ?? '?'}, ${record.restored ?? 0} messages back`;
}

/** What a compaction did, shortly: `summary of 24, + elided 2, fallback`. */
function shortWhat(record: CompactionRecord): string {
  if (record.kind === 'undo') return undoWhat(record);
  const parts = [
    {
      summary: `summary of ${record.dropped}${piecesLabel(record)}`,
      trim: `trim of ${record.dropped}`,
      elision: `elided ${record.elided}`,
      none: 'nothing',
    }[record.kind],
  ];
  if (record.kind !== 'elision' && record.elided > 0) parts.push(`+ elided ${record.elided}`);
  if (record.fallback && record.kind !== 'trim') parts.push('fallback');
  if (record.truncated !== undefined) parts.push(`truncated ${record.truncated}`);
  if (record.coldCache === true) parts.push('cold cache');
  if (record.userMessages !== undefined && record.userMessages.kept > 0)
    parts.push(`${record.userMessages.kept} user kept`);
  // The panel is narrow: an item names only what a summary lost; the coverage line above has the rest.
  const lost = record.coverage === undefined ? 0 : record.coverage.required - record.coverage.kept;
  if (lost > 0) parts.push(`${lost} ids lost`);
  if (record.exhausted) parts.push('EXHAUSTED');
  if (record.askedBy === 'agent') parts.push('asked by the agent');
  return parts.join(', ');
}

/** `#3 round 25 · 10,496 → 2,214 · summary of 44`, for a narrow panel. */
export function compactionLine(record: CompactionRecord, number: number): string {
  return `#${number} round ${record.round} · ${groupDigits(record.tokensBefore)} → ${groupDigits(record.tokensAfter)} · ${shortWhat(record)}`;
}

/** The run's compactions as Markdown for the UI's *Current Details*: a list, as that narrow panel renders tables unpadded. */
export function renderCompactionDetails(history: CompactionHistory, extraLines: readonly string[] = []): string {
  const { totals, recent, usage } = history;
  const first = recordCount(totals) - recent.length + 1;
  const summary = [
    `**${groupDigits(totals.compactions)} compaction${totals.compactions === 1 ? '' : 's'}**`,
    `${groupDigits(totals.tokensReclaimed)} tokens reclaimed (each below: tokens before → after)`,
    `${totals.summaries} summar${totals.summaries === 1 ? 'y' : 'ies'}`,
    `${totals.fallbacks} fallback${totals.fallbacks === 1 ? '' : 's'}`,
    ...(totals.undos === 0 ? [] : [`${totals.undos} undo${totals.undos === 1 ? '' : 's'}`]),
  ].join(' · ');
  const items = recent.map((record, index) => {
    const by = history.undone.find((item) => item.compaction === first + index)?.by;
    return `- ${compactionLine(record, first + index)}${by === undefined ? '' : ` (undone by #${by})`}`;
  });
  const earlier =
    first > 1
      ? [
          `_${groupDigits(first - 1)} earlier compactions are in the transcript (\`temporal-compactor history --all\`)._`,
          '',
        ]
      : [];
  const cost = usage.requests === 0 ? [] : ['', `Cost so far: ${describeRunUsage(usage)}.`];
  const checked = recent.flatMap((record) =>
    record.coverage !== undefined && record.coverage.required > 0 ? [record.coverage] : [],
  );
  const sum = (pick: (coverage: Coverage) => number): number =>
    checked.reduce((total, coverage) => total + pick(coverage), 0);
  const coverage =
    checked.length === 0
      ? []
      : [
          '',
          `Summaries below kept ${groupDigits(sum((item) => item.kept))} of the ${groupDigits(sum((item) => item.required))} identifiers they had to keep (${groupDigits(sum((item) => item.carried))} by a carried-facts line).`,
        ];
  return [
    '### Compactions',
    '',
    summary,
    ...cost,
    ...coverage,
    ...extraLines.map((line) => `\n${line}`),
    '',
    ...earlier,
    ...items,
  ].join('\n');
}

/** `text` on one line (whitespace runs folded), cut to `max` characters with an ellipsis. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** JSON bytes of the static summary and details: under the store's threshold (256 B), they stay in history for the UI. */
export const STATIC_METADATA_MAX_BYTES = 220;

/** `text` cut (with an ellipsis) until it takes at most `maxBytes` as JSON; '' when not even that fits. */
export function fitStaticMetadata(text: string, maxBytes = STATIC_METADATA_MAX_BYTES): string {
  if (jsonPayloadBytes(text) <= maxBytes) return text;
  // A JSON string takes at least a byte a character: no cut longer than maxBytes can fit.
  for (let length = Math.min(text.length - 1, maxBytes); length > 0; length -= 1) {
    const cut = `${text.slice(0, length)}…`;
    if (jsonPayloadBytes(cut) <= maxBytes) return cut;
  }
  return '';
}
