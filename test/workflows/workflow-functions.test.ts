// The pure parts of the workflow entry (`temporal-compactor/workflow`) that need no server:
// needsCompaction, the activity's UI summary, and how bad input becomes a non-retryable failure.
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { FailureType, needsCompaction, planCompaction } from '../../src/workflow.js';
import { type SummarizeStep } from '../../src/core/compaction/engine.js';
import { compactionPlanCore, needsCompactionCore } from '../../src/core/compaction/needs-compaction.js';
import { resolveOptions } from '../../src/core/compaction/options.js';
import { ACTIVITY_SUMMARY_MAX_CHARS, summarizeActivitySummary } from '../../src/workflows/summarize-step.js';
import { summarizeRequest } from '../support/summarize-request.js';
import { charCounter, toolRounds } from '../support/messages.js';

function failureOf(fn: () => unknown): ApplicationFailure {
  try {
    fn();
  } catch (error) {
    if (error instanceof ApplicationFailure) return error;
    throw error;
  }
  throw new Error('expected an ApplicationFailure');
}

describe('needsCompaction (workflow entry)', () => {
  const messages = toolRounds(20, 400);

  it('agrees with the engine over and under the trigger, with a counter and a target', () => {
    for (const contextBudget of [1000, 5000, 20_000, 100_000]) {
      expect(needsCompaction(messages, { contextBudget })).toBe(
        needsCompactionCore(messages, resolveOptions({ contextBudget })),
      );
    }
    expect(needsCompaction(messages, { contextBudget: 100_000 })).toBe(false);
    expect(needsCompaction(messages, { contextBudget: 1000 })).toBe(true);
    // One token per character: the same conversation is now four times as large.
    expect(needsCompaction(messages, { contextBudget: 10_000, counter: charCounter })).toBe(true);
    expect(needsCompaction(messages, { contextBudget: 10_000 })).toBe(false);
    expect(needsCompaction(messages, { contextBudget: 100_000, target: 100 })).toBe(true);
  });

  it('planCompaction: needsCompaction, and with summarizerContextWindow the pieces the summary would take', () => {
    const big = toolRounds(30, 2000);
    const windowed = { contextBudget: 16_000, summarizerContextWindow: 4096 };
    const plan = planCompaction(big, windowed);
    expect(plan).toEqual(compactionPlanCore(big, resolveOptions(windowed)));
    expect(plan.needed).toBe(needsCompaction(big, windowed));
    expect(plan.summaryPieces).toBeGreaterThan(3);
    expect(planCompaction(big, { contextBudget: 16_000 })).toEqual({ needed: true });
    expect(planCompaction(messages, { contextBudget: 100_000, summarizerContextWindow: 4096 })).toEqual({
      needed: false,
    });
    const bad = failureOf(() => planCompaction(big, { ...windowed, summarizerContextWindow: 100 }));
    expect(bad.message).toContain('options.summarizerContextWindow');
  });

  it('an elision batch makes it true below the trigger (ageObservations, elisionEpochs batch)', () => {
    const big = toolRounds(12, 5000);
    const options = {
      contextBudget: 100_000,
      ageMinChars: 1000,
      ageReclaimMin: 10_000,
      elisionEpochs: 'batch',
    } as const;
    expect(needsCompaction(big, options)).toBe(false);
    expect(needsCompaction(big, { ...options, ageObservations: true })).toBe(true);
  });

  it('bad input → non-retryable Compaction.InvalidInput naming the field', () => {
    const badMessage = failureOf(() =>
      needsCompaction([{ role: 'robot', content: 'hi' }] as never, { contextBudget: 1000 }),
    );
    expect(badMessage.type).toBe(FailureType.Compaction.InvalidInput);
    expect(badMessage.nonRetryable).toBe(true);
    expect(badMessage.message).toContain('messages[0].role');
    const badOption = failureOf(() => needsCompaction(messages, { contextBudget: 0 }));
    expect(badOption.message).toContain('options.contextBudget');
    const badTimeout = failureOf(() => needsCompaction(messages, { contextBudget: 1000, startToCloseTimeout: '0s' }));
    expect(badTimeout.message).toContain('options.startToCloseTimeout');
    const badQueue = failureOf(() => needsCompaction(messages, { contextBudget: 1000, taskQueue: '' }));
    expect(badQueue.message).toContain('options.taskQueue');
  });
});

describe('summarizeActivitySummary (the UI line of each summarize activity)', () => {
  const step = (purpose: SummarizeStep['purpose'], messages: number, characters: number): SummarizeStep => ({
    kind: 'summarize',
    purpose,
    request: summarizeRequest([], 2000),
    transcript: { messages, characters },
  });

  it('says how many messages and characters, and the model when known', () => {
    expect(summarizeActivitySummary(step('summary', 247, 109_333), 'gpt-4o-mini')).toBe(
      'summarize 247 messages (109,333 chars) · gpt-4o-mini',
    );
    expect(summarizeActivitySummary(step('summary', 3, 999))).toBe('summarize 3 messages (999 chars)');
    expect(summarizeActivitySummary(step('tighter', 1200, 1_234_567), 'small')).toBe(
      'summarize 1,200 messages (1,234,567 chars), tighter retry · small',
    );
  });

  it("with an agent run's label: which compaction and why first, then a retry, within the Timeline's width", () => {
    expect(summarizeActivitySummary(step('summary', 21, 12_547), undefined, '#2 trigger')).toBe(
      '#2 trigger · 21 msgs (12,547 chars)',
    );
    expect(summarizeActivitySummary(step('coverage', 21, 12_547), 'gpt-4o', '#3 on demand')).toBe(
      '#3 on demand · coverage retry · 21 msgs (12,547 chars) · gpt-4o',
    );
    const long = summarizeActivitySummary(
      step('tighter', 1200, 1_234_567),
      'built-in offline extractive summarizer (no model configured)',
      '#12 for review',
    );
    expect(long).toHaveLength(ACTIVITY_SUMMARY_MAX_CHARS);
    expect(long).toBe('#12 for review · tighter retry · 1,200 msgs (1,234,567 chars) ·…');
  });
});
