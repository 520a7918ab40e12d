// summaryInstructions and summaryPrompt (docs/design.md#summary-instructions): what the summarizer
// request says, per call and per compactor, and how bad values are refused.
import { describe, expect, it } from 'vitest';
import { Compactor } from '../../src/compactor.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { REFERENCE_EXACT, resolveOptions } from '../../src/core/compaction/options.js';
import { planAgentRun } from '../../src/core/agent/agent-input.js';
import { SUMMARY_INSTRUCTION, SUMMARY_INSTRUCTIONS_HEADING } from '../../src/core/compaction/transcript.js';
import type { SummarizeRequest } from '../../src/core/types.js';
import { charCounter, scriptedSummarizer, toolRounds } from '../support/messages.js';

const messages = toolRounds(20, 200);
const budget = { contextBudget: 4000, counter: charCounter };

function systemText(request: SummarizeRequest | undefined): string {
  if (request === undefined) throw new Error('no request');
  return request.instruction;
}

describe('summary instructions', () => {
  it('adds summaryInstructions after the fixed instruction and carries them on the request', async () => {
    const summarizer = scriptedSummarizer('## Goals\nshort');
    const compactor = new Compactor({ summarizer, ...budget, summaryInstructions: '  Keep the failing test names.  ' });
    await compactor.compact(messages);
    const [request] = summarizer.requests;
    expect(systemText(request)).toBe(
      `${SUMMARY_INSTRUCTION}\n\n${SUMMARY_INSTRUCTIONS_HEADING}\nKeep the failing test names.`,
    );
    expect(request?.instructions).toBe('Keep the failing test names.');
  });

  it('replaces the fixed instruction with summaryPrompt, still followed by the instructions', async () => {
    const summarizer = scriptedSummarizer('short');
    const compactor = new Compactor({
      summarizer,
      ...budget,
      summaryPrompt: 'Summarize as a bullet list.',
      summaryInstructions: 'Keep f3.py.',
    });
    await compactor.compact(messages);
    expect(systemText(summarizer.requests[0])).toBe(
      `Summarize as a bullet list.\n\n${SUMMARY_INSTRUCTIONS_HEADING}\nKeep f3.py.`,
    );
  });

  it('sends the fixed instruction byte for byte when neither is set, and no instructions field', async () => {
    const summarizer = scriptedSummarizer('short');
    await new Compactor({ summarizer, ...budget }).compact(messages);
    expect(systemText(summarizer.requests[0])).toBe(SUMMARY_INSTRUCTION);
    expect(summarizer.requests[0]).not.toHaveProperty('instructions');
  });

  it('lets a call override the compactor, and keeps the instructions in the tighter retry', async () => {
    // The first summary is longer than the conversation: the tighter retry is asked.
    const summarizer = scriptedSummarizer('x'.repeat(20_000), 'short');
    const compactor = new Compactor({ summarizer, ...budget, summaryInstructions: 'Keep f1.py.' });
    await compactor.compact(messages, { summaryInstructions: 'Keep f7.py instead.', summaryPrompt: 'Be brief.' });
    expect(summarizer.requests).toHaveLength(2);
    const [first, tighter] = summarizer.requests.map(systemText);
    expect(first).toBe(`Be brief.\n\n${SUMMARY_INSTRUCTIONS_HEADING}\nKeep f7.py instead.`);
    expect(tighter?.startsWith(`${first}\n\nYour last attempt was too long`)).toBe(true);
    expect(tighter).toContain('keep the shape asked for');
    expect(summarizer.requests[1]?.instructions).toBe('Keep f7.py instead.');
  });

  it('refuses bad values naming the field', () => {
    const summarizer = scriptedSummarizer('short');
    const refusal = (run: () => unknown): string => {
      try {
        run();
      } catch (error) {
        if (error instanceof InvalidInputError) return error.message;
        throw error;
      }
      throw new Error('not refused');
    };
    expect(refusal(() => resolveOptions({ contextBudget: 10, summaryInstructions: 42 }))).toMatch(
      /^options\.summaryInstructions: .*string/,
    );
    expect(refusal(() => resolveOptions({ contextBudget: 10, summaryInstructions: 'x'.repeat(10_001) }))).toBe(
      'options.summaryInstructions: must be at most 10000 characters',
    );
    expect(refusal(() => resolveOptions({ contextBudget: 10, summaryPrompt: '   ' }))).toBe(
      'options.summaryPrompt: must not be blank: it replaces the whole instruction',
    );
    expect(refusal(() => resolveOptions({ contextBudget: 10, summaryInstruction: 'x' }))).toMatch(
      /^options\.summaryInstruction: unknown option; did you mean summaryInstructions\?/,
    );
    const compactor = new Compactor({ summarizer, ...budget });
    return expect(compactor.compact(messages, { summaryPrompt: 'x'.repeat(10_001) })).rejects.toThrow(
      'callOptions.summaryPrompt: must be at most 10000 characters',
    );
  });

  it('is honoured with REFERENCE_EXACT: the preset leaves the instruction alone, an explicit option still counts', async () => {
    const plain = scriptedSummarizer('short');
    await new Compactor({ summarizer: plain, ...budget, ...REFERENCE_EXACT }).compact(messages);
    expect(systemText(plain.requests[0])).toBe(SUMMARY_INSTRUCTION);
    const instructed = scriptedSummarizer('short');
    await new Compactor({
      summarizer: instructed,
      ...budget,
      ...REFERENCE_EXACT,
      summaryInstructions: 'Keep f2.py.',
    }).compact(messages);
    expect(systemText(instructed.requests[0])).toContain('Keep f2.py.');
  });

  it("agentRun's compaction input takes them, checked at the run's start", () => {
    const replay = { provider: 'replay', trajectory: 't', contextWindow: 10_000, maxOutputTokens: 1_000 } as const;
    const plan = planAgentRun({ messages: [], model: replay, compaction: { summaryInstructions: 'Keep the ids.' } });
    expect(plan.compaction.options.summaryInstructions).toBe('Keep the ids.');
    expect(() =>
      planAgentRun({ messages: [], model: replay, compaction: { summaryPrompt: 'x'.repeat(10_001) } }),
    ).toThrow('input.compaction.summaryPrompt: must be at most 10000 characters');
  });
});
