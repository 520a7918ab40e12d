// The cold-cache rule's settings and decision (docs/design.md#cold-cache): the TTL per provider,
// 'off', the cold trigger's bounds, and "cold" as more workflow time than the TTL since the last
// model call.
import { describe, expect, it } from 'vitest';
import {
  cacheIsCold,
  DEFAULT_CACHE_TTL,
  DEFAULT_COLD_TRIGGER,
  resolveColdCache,
  withColdTrigger,
} from '../../src/core/agent/cold-cache.js';
import { planAgentRun } from '../../src/core/agent/agent-input.js';
import {
  addCompactionRecord,
  compactionRecord,
  emptyCompactionHistory,
  renderCompactionDetails,
  renderCompactionTable,
} from '../../src/core/agent/compaction-history.js';
import { InvalidInputError } from '../../src/core/errors.js';

const model = { provider: 'replay' as const, trajectory: 'x', contextWindow: 10_000, maxOutputTokens: 500 };

describe('cold-cache rule', () => {
  it('defaults: 5 minutes for openai and replay, the cold trigger 0.7', () => {
    expect(DEFAULT_CACHE_TTL).toEqual({ openai: '5m', replay: '5m' });
    expect(resolveColdCache({}, ['openai', 'replay'], 0.8, 'input.compaction')).toEqual({
      ttlMs: 300_000,
      trigger: DEFAULT_COLD_TRIGGER,
    });
    expect(DEFAULT_COLD_TRIGGER).toBe(0.7);
  });

  it("takes a duration or 'off', and a cold trigger up to triggerRatio; a bad one names the field", () => {
    expect(resolveColdCache({ cacheTtl: '1h', coldTrigger: 0.4 }, ['openai'], 0.8, 'c')).toEqual({
      ttlMs: 3_600_000,
      trigger: 0.4,
    });
    expect(resolveColdCache({ cacheTtl: 'off' }, ['openai'], 0.8, 'c').ttlMs).toBeUndefined();
    // A trigger ratio under the default cold trigger takes the cold trigger down with it.
    expect(resolveColdCache({}, ['openai'], 0.5, 'c').trigger).toBe(0.5);
    expect(() => resolveColdCache({ coldTrigger: 0.9 }, ['openai'], 0.8, 'c')).toThrow(
      'c.coldTrigger: must be a ratio over 0 and at most triggerRatio (0.8), got 0.9',
    );
    expect(() => resolveColdCache({ cacheTtl: 'soon' }, ['openai'], 0.8, 'c')).toThrow(InvalidInputError);
    expect(() => resolveColdCache({ cacheTtl: 'soon' }, ['openai'], 0.8, 'c')).toThrow('c.cacheTtl');
  });

  it('is cold only when more than the TTL has passed since the last model call, and never before the first', () => {
    const rule = { ttlMs: 300_000, trigger: 0.6 };
    expect(cacheIsCold(rule, undefined, 10_000_000)).toBe(false);
    expect(cacheIsCold(rule, 1_000_000, 1_300_000)).toBe(false);
    expect(cacheIsCold(rule, 1_000_000, 1_300_001)).toBe(true);
    expect(cacheIsCold({ ttlMs: undefined, trigger: 0.6 }, 0, 10_000_000)).toBe(false);
  });

  it('the cold trigger replaces the trigger, and the low-water mark is no higher than it', () => {
    expect(withColdTrigger({ triggerRatio: 0.8, targetRatio: 0.5, keepRecent: 8 }, 0.6)).toEqual({
      triggerRatio: 0.6,
      targetRatio: 0.5,
      keepRecent: 8,
    });
    expect(withColdTrigger({ triggerRatio: 0.8, targetRatio: 0.5 }, 0.3)).toEqual({
      triggerRatio: 0.3,
      targetRatio: 0.3,
    });
  });

  it("agentRun's input resolves it into the plan, and refuses a bad one naming input.compaction", () => {
    const plan = planAgentRun({ messages: [{ role: 'user', content: 'hi' }], model, compaction: {} });
    expect(plan.coldCache).toEqual({ ttlMs: 300_000, trigger: 0.7 });
    const off = planAgentRun({ messages: [], model, compaction: { cacheTtl: 'off', coldTrigger: 0.7 } });
    expect(off.coldCache).toEqual({ ttlMs: undefined, trigger: 0.7 });
    expect(() => planAgentRun({ messages: [], model, compaction: { coldTrigger: 1.5 } })).toThrow(
      'input.compaction.coldTrigger',
    );
    expect(() => planAgentRun({ messages: [], model, compaction: { cacheTtl: true } })).toThrow(
      'input.compaction.cacheTtl: must be a duration like "5m" or "off", got true',
    );
  });

  it("a compaction at the cold trigger says so in the UI's details and the history table", () => {
    const result = {
      messages: [],
      dropped: 12,
      tokensBefore: 5_000,
      tokensAfter: 1_800,
      fallback: false,
      exhausted: false,
      elisions: [],
      summary: 'done',
      cutIndex: 14,
      userMessages: { kept: 3, summarized: 1, keptAt: [2, 6, 9] },
    };
    const record = compactionRecord({ round: 7, backend: 'a', target: 6_000, coldCache: true }, result);
    expect(record).toMatchObject({ coldCache: true, userMessages: { kept: 3, summarized: 1 } });
    const details = renderCompactionDetails(addCompactionRecord(emptyCompactionHistory(), record));
    expect(details).toContain('#1 round 7 · 5,000 → 1,800 · summary of 12, cold cache, 3 user kept');
    expect(renderCompactionTable([record])).toContain(
      'summary (4 chars), cold cache, 3 user messages kept (1 summarized)',
    );
    const warm = compactionRecord({ round: 7, backend: 'a', target: 6_000 }, { ...result, userMessages: undefined });
    expect(warm.coldCache).toBeUndefined();
    expect(renderCompactionTable([warm])).not.toContain('cold cache');
  });
});
