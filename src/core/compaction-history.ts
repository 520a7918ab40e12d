// Sandbox-safe: one record per compaction of an agent run, and the Markdown table the Temporal UI
// (current details) and the CLI (`temporal-compactor history`) show.
import type { CompactionResult } from './types.js';

/** What a compaction did, in one word: summarized the middle, hard-trimmed it, only elided tool output, or nothing. */
export type CompactionKind = 'summary' | 'trim' | 'elision' | 'none';

/** One compaction of an agent run (DESIGN §7). Counts are in the units of `backend`. */
export interface CompactionRecord {
  /** The chat round the compaction ran before (1-based). */
  round: number;
  /** The backend whose room the compaction aimed at (its label). */
  backend: string;
  /** The room aimed at. */
  target: number;
  tokensBefore: number;
  tokensAfter: number;
  /** Messages replaced by the summary or trimmed. */
  dropped: number;
  /** Tool results elided in place. */
  elided: number;
  kind: CompactionKind;
  /** The whole content of the summary message, or null. */
  summary: string | null;
  /** True when the messages came from the hard trim (the summarizer failed, was rejected or did not fit). */
  fallback: boolean;
  /** True when even the hard trim could not make the conversation fit `target`. */
  exhausted: boolean;
}

export function compactionKind(result: CompactionResult): CompactionKind {
  if (result.summary !== null) return 'summary';
  if (result.fallback) return 'trim';
  if (result.elisions.length > 0) return 'elision';
  return 'none';
}

export function compactionRecord(round: number, backend: string, target: number, result: CompactionResult): CompactionRecord {
  return {
    round,
    backend,
    target,
    tokensBefore: result.tokensBefore,
    tokensAfter: result.tokensAfter,
    dropped: result.dropped,
    elided: result.elisions.length,
    kind: compactionKind(result),
    summary: result.summary,
    fallback: result.fallback,
    exhausted: result.exhausted,
  };
}

/** `1234567` → `1,234,567` without `Intl`: a locale must not change what a workflow records. */
export function groupDigits(value: number): string {
  const sign = value < 0 ? '-' : '';
  return sign + String(Math.abs(Math.round(value))).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function what(record: CompactionRecord): string {
  switch (record.kind) {
    case 'summary':
      return `summary (${groupDigits(record.summary?.length ?? 0)} chars)`;
    case 'trim':
      return 'trim';
    case 'elision':
      return 'elision only';
    case 'none':
      return 'nothing to remove';
  }
}

/** The header line of {@link renderCompactionTable}: what the UI test and the CLI look for. */
export const COMPACTION_TABLE_HEADER = '| # | round | tokens before → after | dropped | elided | summary or trim | fallback | exhausted |';

/**
 * The compaction history as a Markdown table, one row per compaction, e.g.
 *
 * | # | round | tokens before → after | dropped | elided | summary or trim | fallback | exhausted |
 * |--:|--:|--:|--:|--:|---|---|---|
 * | 1 | 12 | 30,512 → 9,876 | 24 | 3 | summary (1,234 chars) | no | no |
 */
export function renderCompactionTable(records: readonly CompactionRecord[]): string {
  const rows = records.map(
    (record, index) =>
      `| ${index + 1} | ${record.round} | ${groupDigits(record.tokensBefore)} → ${groupDigits(record.tokensAfter)} | ${record.dropped} | ${record.elided} | ${what(record)} | ${record.fallback ? 'yes' : 'no'} | ${record.exhausted ? 'yes' : 'no'} |`,
  );
  return [COMPACTION_TABLE_HEADER, '|--:|--:|--:|--:|--:|---|---|---|', ...rows].join('\n');
}

/** `text` on one line (whitespace runs folded), cut to `max` characters with an ellipsis. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
