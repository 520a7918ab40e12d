// summarizerContextWindow (docs/design.md#summarizer-window): a middle too large for the summarizer's
// own window is summarized in pieces, as a fold, every request within the window.
import { describe, expect, it } from 'vitest';
import { Compactor } from '../../src/compactor.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { SUMMARY_OUTPUT_SHARE, resolveOptions } from '../../src/core/compaction/options.js';
import { compactionSteps, type SummarizeStep } from '../../src/core/compaction/engine.js';
import { runCompactionSteps } from '../../corpus/fake-summarizer.js';
import { compactionPlanCore } from '../../src/core/compaction/needs-compaction.js';
import { UNCALIBRATED_RATIO } from '../../src/core/compaction/calibration.js';
import { FOLD_NOTE } from '../../src/core/compaction/pieces.js';
import { isSummaryMessage, summarizerMessages } from '../../src/core/compaction/transcript.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage, SummarizeRequest } from '../../src/core/types.js';
import { compactionSpanAttributes } from '../../src/core/compaction/telemetry.js';
import { planAgentRun } from '../../src/core/agent/agent-input.js';
import { compactionLine, compactionRecord, renderCompactionTable } from '../../src/core/agent/compaction-history.js';
import { assistant, httpError, scriptedSummarizer, system, tool, transcriptOf, user } from '../support/messages.js';

const WINDOW = 16_000;
/**
 * The window requests are planned for, in the counter's units: these summarizers bill nothing, so
 * every request is planned with the uncalibrated ratio (docs/design.md#summarizer-overflow).
 */
const PLANNED = WINDOW / UNCALIBRATED_RATIO;

/** About 400k tokens by the default counter: 200 rounds of an 4,000-character thought and result, and one 60,000-character user message. */
function bigConversation(): ChatMessage[] {
  const messages: ChatMessage[] = [system('You are an agent.'), user('Fix the bug in app.py.')];
  for (let round = 0; round < 200; round += 1) {
    if (round === 100) messages.push(user(`pasted log ${'L'.repeat(60_000)}`));
    messages.push(
      assistant(`thought ${round} ${'t'.repeat(4000)}`, [
        [`call_${round}`, 'fs_read', JSON.stringify({ path: `f${round}.py` })],
      ]),
    );
    messages.push(tool(`call_${round}`, `result ${round} ${String(round % 10).repeat(4000)}`));
  }
  messages.push(user('Go on.'));
  return messages;
}

const options = { contextBudget: 450_000, toolResultCap: 5000, summarizerContextWindow: WINDOW } as const;

/** A summarizer that says which rounds it saw, and keeps what the summary so far said. */
function foldingSummarizer() {
  return scriptedSummarizer(async (request) => {
    const rounds = [...transcriptOf(request).matchAll(/thought (\d+) /g)].map((match) => match[1]);
    return `## Goals\nfix app.py\n## Decisions\nread rounds ${rounds.at(0)}-${rounds.at(-1)}`;
  });
}

describe('summaries within the summarizer window', () => {
  it('summarizes a 400k-token middle with a 16k window in pieces, every request within the window', async () => {
    const messages = bigConversation();
    expect(defaultCounter.count(messages)).toBeGreaterThan(400_000);
    const summarizer = foldingSummarizer();
    const result = await new Compactor({ summarizer, ...options }).compact(messages);

    expect(result.fallback).toBe(false);
    expect(result.summary).toContain('read rounds');
    expect(summarizer.requests.length).toBeGreaterThan(50);
    expect(result.summaryPieces).toBe(summarizer.requests.length);
    for (const request of summarizer.requests) {
      expect(defaultCounter.count(summarizerMessages(request))).toBeLessThanOrEqual(
        PLANNED * (1 - SUMMARY_OUTPUT_SHARE),
      );
      expect(request.instruction).toContain(FOLD_NOTE);
    }
    // A fold: every request after the first starts with the summary the one before it returned, as
    // the engine's summary message of the middle messages the requests before it held.
    let before = summarizer.requests[0]?.middle?.length ?? 0;
    for (let index = 1; index < summarizer.requests.length; index += 1) {
      const middle = summarizer.requests[index]?.middle ?? [];
      const carried = middle[0];
      expect(carried !== undefined && isSummaryMessage(carried)).toBe(true);
      expect(carried?.content).toMatch(
        new RegExp(`^\\[Summary by the harness of ${before} earlier messages\\]\n\n## Goals\n`),
      );
      before += middle.length - 1;
    }
    // What a piece's summary said reaches the next request.
    const second = summarizer.requests[1]?.middle?.[0]?.content;
    const firstRounds = [...transcriptOf(summarizer.requests[0] as SummarizeRequest).matchAll(/thought (\d+) /g)];
    expect(second).toContain(`read rounds ${firstRounds.at(0)?.[1]}-${firstRounds.at(-1)?.[1]}`);
    // A tool call and its result are never in different requests.
    for (const request of summarizer.requests) {
      const calls = new Set(
        (request.middle ?? []).flatMap((message) => message.tool_calls?.map((call) => call.id) ?? []),
      );
      for (const message of request.middle ?? [])
        if (message.role === 'tool') expect(calls.has(message.tool_call_id ?? '')).toBe(true);
    }
    // Every round of the middle is in exactly one request, in order.
    const seen = summarizer.requests.flatMap((request) =>
      [...transcriptOf(request).matchAll(/\[assistant\]\nthought (\d+) /g)].map((match) => Number(match[1])),
    );
    expect(seen).toEqual([...Array(seen.length).keys()]);
    // The pasted log, larger than any piece, was cut as a tool result is, with its marker.
    const log = summarizer.requests.find((request) => transcriptOf(request).includes('pasted log'));
    expect(log === undefined ? '' : transcriptOf(log)).toMatch(/pasted log L+» \[truncated by the harness: \d+ more/);
  });

  it('names each piece in its step and takes the same steps in the step machine as in-process', () => {
    const steps: SummarizeStep[] = [];
    const result = runCompactionSteps(compactionSteps(bigConversation(), resolveOptions(options)), (step) => {
      steps.push(step);
      return { kind: 'summary', text: `## Goals\npiece ${steps.length}` };
    });
    expect(result.summaryPieces).toBe(steps.length);
    expect(steps.map((step) => step.purpose)).toEqual([...Array(steps.length - 1).fill('piece'), 'summary']);
    expect(steps.map((step) => step.piece)).toEqual(steps.map((_, index) => ({ index: index + 1, of: steps.length })));
  });

  it('asks the tighter retry of the last fold only, within the window, and keeps its summary', () => {
    const steps: SummarizeStep[] = [];
    const result = runCompactionSteps(compactionSteps(bigConversation(), resolveOptions(options)), (step) => {
      steps.push(step);
      // The last fold's first summary is larger than the whole conversation: the proof fails.
      const text = step.purpose === 'summary' ? 'x'.repeat(2_000_000) : `## Goals\n${step.purpose} ${steps.length}`;
      return { kind: 'summary', text };
    });
    const of = steps[0]?.piece?.of ?? 0;
    expect(steps.map((step) => step.purpose).slice(-3)).toEqual(['piece', 'summary', 'tighter']);
    expect(steps).toHaveLength(of + 1);
    expect(steps.at(-1)?.piece).toEqual({ index: of, of });
    expect(steps.at(-1)?.request.middle).toEqual(steps.at(-2)?.request.middle);
    for (const step of steps)
      expect(defaultCounter.count(summarizerMessages(step.request))).toBeLessThanOrEqual(
        PLANNED * (1 - SUMMARY_OUTPUT_SHARE),
      );
    expect(result.fallback).toBe(false);
    expect(result.summary).toContain(`tighter ${of + 1}`);
    expect(result.summaryPieces).toBe(of);
  });

  it('sends one request, as without the option, when the middle fits the window', async () => {
    const messages = bigConversation().slice(0, 12);
    const summarizer = foldingSummarizer();
    const result = await new Compactor({
      summarizer,
      contextBudget: 4000,
      summarizerContextWindow: 200_000,
    }).compact(messages);
    expect(summarizer.requests).toHaveLength(1);
    expect(result.summaryPieces).toBeUndefined();
    expect(summarizer.requests[0]?.instruction).not.toContain(FOLD_NOTE);
    const without = scriptedSummarizer(...summarizer.requests.map(() => 'x'));
    await new Compactor({ summarizer: without, contextBudget: 4000 }).compact(messages);
    expect(without.requests).toEqual(summarizer.requests);
  });

  it('falls back to the hard trim when a piece fails, and asks nothing after it', async () => {
    let calls = 0;
    const summarizer = scriptedSummarizer(async () => {
      calls += 1;
      if (calls === 3) throw httpError(400);
      return '## Goals\nso far';
    });
    const result = await new Compactor({ summarizer, ...options }).compact(bigConversation());
    expect(result.fallback).toBe(true);
    expect(result.summary).toBeNull();
    expect(result.summaryPieces).toBeUndefined();
    expect(summarizer.requests).toHaveLength(3);
  });

  it('says how many pieces the summary took in the compaction record, its line and its table row', async () => {
    const result = await new Compactor({ summarizer: foldingSummarizer(), ...options }).compact(bigConversation());
    const pieces = result.summaryPieces ?? 0;
    expect(pieces).toBeGreaterThan(1);
    const record = compactionRecord({ round: 3, backend: 'main', target: 225_000 }, result);
    expect(record.summaryPieces).toBe(pieces);
    expect(compactionLine(record, 1)).toContain(`summary of ${result.dropped} in ${pieces} pieces`);
    expect(renderCompactionTable([record])).toContain(` chars) in ${pieces} pieces`);
    expect(compactionSpanAttributes(result, undefined, { requests: pieces, attempts: pieces })).toMatchObject({
      'compaction.summary.pieces': pieces,
      'compaction.summarizer.requests': pieces,
    });
    const { summaryPieces: _omitted, ...single } = record;
    expect(compactionLine(single, 1)).not.toContain('pieces');
  });

  it('planCompaction says how many pieces the summary would take: those a compaction then takes', async () => {
    const messages = bigConversation();
    const summarizer = foldingSummarizer();
    const compactor = new Compactor({ summarizer, ...options });
    const plan = compactor.planCompaction(messages);
    expect(plan.needed).toBe(compactor.needsCompaction(messages));
    expect(plan.summaryPieces).toBeGreaterThan(50);
    const result = await compactor.compact(messages);
    expect(result.summaryPieces).toBe(plan.summaryPieces);
    expect(summarizer.requests).toHaveLength(plan.summaryPieces ?? 0);
    // The same in the core, as workflow code calls it.
    expect(compactionPlanCore(messages, resolveOptions(options))).toEqual(plan);
  });

  it('planCompaction says no pieces when one request fits, without the window, or when nothing is needed', () => {
    const messages = bigConversation();
    const { summarizerContextWindow: _window, ...unwindowed } = options;
    const plain = new Compactor({ summarizer: foldingSummarizer(), ...unwindowed });
    expect(plain.planCompaction(messages)).toEqual({ needed: true });
    const roomy = new Compactor({ summarizer: foldingSummarizer(), ...options, summarizerContextWindow: 4_000_000 });
    expect(roomy.planCompaction(messages)).toEqual({ needed: true });
    const under = new Compactor({ summarizer: foldingSummarizer(), ...options, contextBudget: 10_000_000 });
    expect(under.planCompaction(messages)).toEqual({ needed: false });
    expect(() => plain.planCompaction(messages, { format: 'openai', extra: 1 } as never)).toThrow('callOptions.extra');
  });

  it("agentRun's compaction input takes it, checked at the run's start", () => {
    const replay = { provider: 'replay', trajectory: 't', contextWindow: 10_000, maxOutputTokens: 1_000 } as const;
    const plan = planAgentRun({ messages: [], model: replay, compaction: { summarizerContextWindow: 8192 } });
    expect(plan.compaction.options.summarizerContextWindow).toBe(8192);
    expect(() => planAgentRun({ messages: [], model: replay, compaction: { summarizerContextWindow: 100 } })).toThrow(
      'input.compaction.summarizerContextWindow',
    );
  });

  it('refuses a window that is not an integer of at least 1,024, naming the option', () => {
    for (const bad of [0, 512, 1.5, '8000']) {
      let error: unknown;
      try {
        resolveOptions({ contextBudget: 1000, summarizerContextWindow: bad });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as InvalidInputError).message).toContain('options.summarizerContextWindow');
    }
  });
});
