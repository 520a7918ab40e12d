// Sandbox-safe: the compaction history as an agent run's memo (docs/design.md#search-attributes), readable
// in the UI with no worker. The *Memo* tab prints JSON in a monospaced block: a table padded to columns.
import { jsonPayloadBytes } from '../limits/payload-size.js';
import {
  compactionKindLabel,
  describeRunUsage,
  groupDigits,
  recordCount,
  type CompactionHistory,
  type CompactionRecord,
} from './compaction-history.js';

export const COMPACTION_MEMO_KEY = 'compactions';

/** At most this many compactions are listed, the most recent. */
export const MEMO_COMPACTIONS = 10;
/** The most bytes the memo's value takes as JSON: under the server's `limit.memoSize.warn` (2 KiB). */
export const MEMO_MAX_BYTES = 2_000;

/** How the run ended, for the memo written as it closes; undefined while it runs. */
export interface MemoEnding {
  stopReason: string;
  rounds: number;
}

/** What a compaction did, in a table cell: `trim, fallback`, `summary (506 chars), edited`. */
function whatCell(record: CompactionRecord): string {
  const parts = [compactionKindLabel(record.kind, record.summaryChars ?? 0)];
  if (record.fallback) parts.push('fallback');
  if (record.review !== undefined && record.review !== 'applied') parts.push(record.review);
  if (record.exhausted) parts.push('EXHAUSTED');
  return parts.join(', ');
}

const HEADER = ['#', 'round', 'tokens before → after', 'summary or trim', 'dropped', 'elided', 'billed input so far'];
const RIGHT = [true, true, true, false, true, true, true];

function paddedTable(rows: readonly string[][]): string[] {
  const widths = HEADER.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((cell, column) => (RIGHT[column] === true ? cell.padStart(widths[column] ?? 0) : cell.padEnd(widths[column] ?? 0))).join(' | ')} |`;
  const rule = `|${widths.map((width, column) => (RIGHT[column] === true ? `${'-'.repeat(width + 1)}:` : '-'.repeat(width + 2))).join('|')}|`;
  return [line(HEADER), rule, ...rows.map(line)];
}

/**
 * The memo's text: totals, cost, how the run ended, and the last compactions as fit {@link MEMO_MAX_BYTES}.
 * The leading line break aligns the table in the UI's JSON view.
 */
export function renderCompactionMemo(history: CompactionHistory, ending?: MemoEnding): string {
  const { totals, recent, usage } = history;
  const plural = (count: number, one: string, many: string): string =>
    `${groupDigits(count)} ${count === 1 ? one : many}`;
  const head = [
    [
      plural(totals.compactions, 'compaction', 'compactions'),
      `${groupDigits(totals.tokensReclaimed)} tokens reclaimed`,
      plural(totals.summaries, 'summary', 'summaries'),
      plural(totals.trims, 'trim', 'trims'),
      plural(totals.fallbacks, 'fallback', 'fallbacks'),
      `${groupDigits(totals.dropped)} dropped`,
      `${groupDigits(totals.elided)} elided`,
    ].join(' · '),
    ...(usage.requests === 0 ? [] : [`Cost: ${describeRunUsage(usage)}.`]),
    ...(ending === undefined ? [] : [`Run: ${ending.stopReason} after ${plural(ending.rounds, 'round', 'rounds')}.`]),
  ];
  // Undo records are numbered with the compactions, as in the history and the UI's details.
  const records = recordCount(totals);
  const first = records - recent.length + 1;
  const rows = recent.map((record, index) => [
    String(first + index),
    String(record.round),
    `${groupDigits(record.tokensBefore)} → ${groupDigits(record.tokensAfter)}`,
    whatCell(record),
    groupDigits(record.dropped),
    groupDigits(record.elided),
    record.billedInput === null ? '—' : groupDigits(record.billedInput),
  ]);
  for (let shown = Math.min(rows.length, MEMO_COMPACTIONS); ; shown -= 1) {
    const listed = rows.slice(rows.length - shown);
    const earlier = records - shown;
    const text = [
      '',
      ...head,
      ...(shown === 0
        ? []
        : [
            '',
            ...paddedTable(listed),
            ...(earlier > 0
              ? [`${plural(earlier, 'earlier compaction', 'earlier compactions')}: temporal-compactor history --all`]
              : []),
          ]),
    ].join('\n');
    if (shown === 0 || jsonPayloadBytes(text) <= MEMO_MAX_BYTES) return text;
  }
}
