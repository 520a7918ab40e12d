// The compaction history as an agent run's memo (docs/design.md#search-attributes): a padded
// table of the last compactions with totals and cost, bounded in rows and in bytes.
import { describe, expect, it } from 'vitest';
import {
  addCompactionRecord,
  emptyCompactionHistory,
  STATIC_METADATA_MAX_BYTES,
  type CompactionHistory,
  type CompactionRecord,
} from '../../src/core/agent/compaction-history.js';
import { MEMO_COMPACTIONS, MEMO_MAX_BYTES, renderCompactionMemo } from '../../src/core/agent/compaction-memo.js';
import { jsonPayloadBytes } from '../../src/core/limits/payload-size.js';
import { agentRunStaticMetadata } from '../../dev/static-metadata.js';

function record(round: number, overrides: Partial<CompactionRecord> = {}): CompactionRecord {
  return {
    round,
    backend: 'replay',
    target: 4500,
    tokensBefore: 7768,
    tokensAfter: 1263,
    dropped: 6,
    elided: 2,
    kind: 'summary',
    summaryChars: 506,
    fallback: false,
    exhausted: false,
    tokensReclaimed: 6505,
    summarizerTokens: 900,
    cacheHitRate: 0.2,
    billedInput: 7623 * round,
    ...overrides,
  };
}

function historyOf(records: readonly CompactionRecord[]): CompactionHistory {
  const history = records.reduce<CompactionHistory>(
    (so, next) => addCompactionRecord(so, next),
    emptyCompactionHistory(),
  );
  return {
    ...history,
    usage: {
      ...history.usage,
      requests: 30,
      promptTokens: 112_854,
      cachedPromptTokens: 92_000,
      cacheHitRate: 0.82,
      billedInput: 32_595,
    },
  };
}

describe('the compaction memo', () => {
  it('is a table padded to its columns, after the totals, the cost and how the run ended', () => {
    const history = historyOf([
      record(5),
      record(20, { kind: 'trim', fallback: true, summaryChars: null, tokensBefore: 16_531, tokensAfter: 2165 }),
      record(30, { review: 'edited' }),
    ]);
    const text = renderCompactionMemo(history, { stopReason: 'completed', rounds: 30 });
    const lines = text.split('\n');
    expect(lines[0]).toBe('');
    expect(lines[1]).toBe(
      '3 compactions · 27,376 tokens reclaimed · 2 summaries · 1 trim · 1 fallback · 18 dropped · 6 elided',
    );
    expect(lines[2]).toMatch(/^Cost: 112,854 prompt tokens in 30 requests, 82% from the cache/);
    expect(lines[3]).toBe('Run: completed after 30 rounds.');
    const table = lines.slice(5);
    expect(table).toEqual([
      '| # | round | tokens before → after | summary or trim             | dropped | elided | billed input so far |',
      '|--:|------:|----------------------:|-----------------------------|--------:|-------:|--------------------:|',
      '| 1 |     5 |         7,768 → 1,263 | summary (506 chars)         |       6 |      2 |              38,115 |',
      '| 2 |    20 |        16,531 → 2,165 | trim, fallback              |       6 |      2 |             152,460 |',
      '| 3 |    30 |         7,768 → 1,263 | summary (506 chars), edited |       6 |      2 |             228,690 |',
    ]);
    // Every line of the table is as long as its header: the columns line up in a monospaced block.
    for (const line of table) expect(line.length, line).toBe(table[0]?.length);
  });

  it(`lists the last ${MEMO_COMPACTIONS} compactions and counts the earlier ones`, () => {
    const history = historyOf(Array.from({ length: 14 }, (_, index) => record(index + 1)));
    const text = renderCompactionMemo(history);
    const rows = text.split('\n').filter((line) => /^\| +\d+ \|/.test(line));
    expect(rows).toHaveLength(MEMO_COMPACTIONS);
    expect(rows[0]).toMatch(/^\| +5 \| +5 \|/);
    expect(rows.at(-1)).toMatch(/^\| 14 \| +14 \|/);
    expect(text).toContain('4 earlier compactions: temporal-compactor history --all');
    expect(text).not.toContain('Run:');
  });

  it('numbers its rows as the history does, an undo counted with the compactions', () => {
    const undo = (round: number, undoes: number): CompactionRecord =>
      record(round, {
        kind: 'undo',
        undoes,
        summaryChars: null,
        dropped: 0,
        elided: 0,
        tokensBefore: 1263,
        tokensAfter: 7768,
      });
    const history = historyOf([
      ...Array.from({ length: 8 }, (_, index) => record(index + 1)),
      undo(9, 8),
      record(10),
      undo(11, 10),
      record(12),
    ]);
    const text = renderCompactionMemo(history);
    const rows = text.split('\n').filter((line) => /^\| +\d+ \|/.test(line));
    expect(rows).toHaveLength(MEMO_COMPACTIONS);
    expect(rows.map((row) => Number(/^\| +(\d+) \|/.exec(row)?.[1]))).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(rows[6]).toMatch(/^\| +9 \| +9 \| .* \| undo +\|/);
    expect(text).toContain('2 earlier compactions: temporal-compactor history --all');
    expect(text.split('\n')[1]).toMatch(/^10 compactions · /);
  });

  it(`stays within ${MEMO_MAX_BYTES} bytes of JSON, dropping the oldest rows first`, () => {
    const long = { summaryChars: 1_234_567, review: 'timed-out' as const, exhausted: true, fallback: true };
    const history = historyOf(
      Array.from({ length: 10 }, (_, index) =>
        record(1_000_000 + index, { ...long, tokensBefore: 1_234_567_890, tokensAfter: 987_654_321 }),
      ),
    );
    const text = renderCompactionMemo(history, { stopReason: 'maxRounds', rounds: 1_000_010 });
    expect(jsonPayloadBytes(text)).toBeLessThanOrEqual(MEMO_MAX_BYTES);
    const rows = text.split('\n').filter((line) => /^\| +\d+ \|/.test(line));
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThan(10);
    expect(rows.at(-1)).toMatch(/^\| 10 \|/);
    expect(text).toContain(`${10 - rows.length} earlier compaction`);
  });

  it('says so when the run closed without a compaction', () => {
    const text = renderCompactionMemo(emptyCompactionHistory(), { stopReason: 'completed', rounds: 4 });
    expect(text).toBe(
      '\n0 compactions · 0 tokens reclaimed · 0 summaries · 0 trims · 0 fallbacks · 0 dropped · 0 elided\nRun: completed after 4 rounds.',
    );
  });
});

describe('the static summary and details of an agent run', () => {
  const long = 'openhands_gpt4o_django__django-11797-with-a-much-longer-trajectory-name';
  const input = {
    model: [
      { provider: 'replay', trajectory: long, contextWindow: 32_000 },
      { provider: 'openai', model: 'gpt-4o-mini-2024-07-18', contextWindow: 128_000 },
    ],
    compaction: { ageObservations: true, ageMinChars: 1000, ageReclaimMin: 4000, keepRecent: 6 },
    maxRounds: 1000,
  };

  it(`takes at most ${STATIC_METADATA_MAX_BYTES} bytes of JSON each, under the payload store's default threshold as a payload`, () => {
    for (const what of [undefined, `demo · ${long} · window 32,000 tokens`, 'ü'.repeat(300)]) {
      const { staticSummary, staticDetails } = agentRunStaticMetadata(input, what);
      expect(jsonPayloadBytes(staticSummary)).toBeLessThanOrEqual(STATIC_METADATA_MAX_BYTES);
      expect(jsonPayloadBytes(staticDetails)).toBeLessThanOrEqual(STATIC_METADATA_MAX_BYTES);
      // Said first, so never left out: where the compactions are.
      expect(staticDetails).toMatch(/^Compactions: the \*Memo\* tab \(no worker needed\); live, \*Current Details\*\./);
      expect(staticSummary).toMatch(/^agentRun · /);
    }
  });

  it('lists the backends, then the compaction options and the round limit as far as they fit', () => {
    const one = {
      model: { provider: 'replay', trajectory: 'MONAI-3715', contextWindow: 9_000 },
      compaction: { keepRecent: 4 },
      maxRounds: 50,
    };
    expect(agentRunStaticMetadata(one).staticDetails.split('\n\n')).toEqual([
      'Compactions: the *Memo* tab (no worker needed); live, *Current Details*.',
      '**Backends:** replay:MONAI-3715 (window 9,000 tokens)',
      '**Compaction:** `{"keepRecent":4}`',
      '**Max rounds:** 50',
    ]);
    const details = agentRunStaticMetadata(input).staticDetails.split('\n\n');
    expect(details[1]).toMatch(/^\*\*Backends:\*\* replay:openhands_gpt4o_django.*…$/);
    expect(details).toHaveLength(2);
    expect(agentRunStaticMetadata(one, undefined, 120).staticDetails.length).toBeLessThan(120);
  });
});
