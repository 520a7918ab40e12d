// Recall's pure parts (docs/design.md#recall): the bounds on the id a model passes, the id lists a
// summary carries (a summary that replaces an earlier one names that one's ids again), the stubs
// that name their id and stay stubs, and the plan's `recall` option.
import { describe, expect, it } from 'vitest';
import { planAgentRun } from '../../src/core/agent/agent-input.js';
import {
  MAX_RECALL_ID_CHARS,
  parseRecallArgs,
  recallIdList,
  recallIdsLine,
  recallNamer,
  withRecallLine,
} from '../../src/core/agent/recall.js';
import { compactionSteps, type SummarizeStep } from '../../src/core/compaction/engine.js';
import { runCompactionSteps } from '../../corpus/fake-summarizer.js';
import { resolveOptions, type CompactionOptions } from '../../src/core/compaction/options.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import { recordCompaction, type SessionEntry } from '../../src/core/agent/session.js';
import { elisionStub, isStub } from '../../src/core/compaction/elision.js';
import { summaryContent } from '../../src/core/compaction/transcript.js';
import { InvalidInputError } from '../../src/core/errors.js';
import type { ChatMessage, CompactionResult } from '../../src/core/types.js';

describe('parseRecallArgs', () => {
  it('takes { id } in the transcript id form and refuses the rest, naming why', () => {
    expect(parseRecallArgs({ id: 'm14' })).toEqual({ id: 'm14' });
    expect(parseRecallArgs({ id: '' })).toEqual({
      error: 'recall: no message with id "": ids are "m" and a number, as the stubs and summaries name them',
    });
    for (const id of ['../m1', 'm0', 'm01', 'M1', 'summary:m3', 'm1 ', `m${'9'.repeat(17)}`])
      expect(parseRecallArgs({ id })).toMatchObject({ error: expect.stringMatching(/^recall: no message with id /) });
    expect(parseRecallArgs({ id: 'x'.repeat(10_000) })).toEqual({
      error: `recall: arguments.id is 10000 characters; an id has at most ${MAX_RECALL_ID_CHARS}`,
    });
    expect(parseRecallArgs({ id: 14 })).toEqual({ error: 'recall: arguments.id must be a string, such as "m14"' });
    expect(parseRecallArgs([])).toEqual({ error: 'recall: the arguments must be an object { id: string }' });
    expect(parseRecallArgs(null)).toEqual({ error: 'recall: the arguments must be an object { id: string }' });
    expect(parseRecallArgs({ id: 'm1', ['k'.repeat(1000)]: 1 })).toEqual({
      error: `recall: unknown argument "${'k'.repeat(MAX_RECALL_ID_CHARS)}" (it takes only id)`,
    });
  });
});

describe('recallIdList', () => {
  it('sorts, drops repeats and writes consecutive ids as ranges', () => {
    expect(recallIdList([9, 3, 4, 5, 12, 4, 6, 7, 8, 14])).toBe('m3..m9, m12, m14');
    expect(recallIdList([1])).toBe('m1');
    expect(recallIdList([])).toBe('');
  });
});

const tool = (id: string, content: string): ChatMessage => ({ role: 'tool', tool_call_id: id, content });
const asks = (id: string): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'fs_read', arguments: '{"path":"a"}' } }],
});

describe('recallNamer', () => {
  const entries: SessionEntry[] = [
    { id: 'm1', message: { role: 'user', content: 'the task', sticky: true } },
    { id: 'summary:m4', message: { role: 'user', content: `${summaryContent('older', 2)}\n\n[recall ids: m2..m4]` } },
    { id: 'm5', message: asks('c5') },
    { id: 'm6', message: tool('c5', 'x'.repeat(500)) },
    { id: 'm7', message: { role: 'user', content: 'pinned', sticky: true } },
    { id: 'm8', message: asks('c8') },
    { id: 'm9', message: tool('c8', 'y'.repeat(500)) },
    { id: 'm10', message: asks('c10') },
    { id: 'm11', message: tool('c10', 'z') },
  ];
  const stub = elisionStub(500, 'fs_read');

  it('names the elided message on its stub, which stays a stub', () => {
    const named = `${stub}${recallNamer(entries)('stub', [6])}`;
    expect(named).toBe(`${stub} [recall id: m9]`);
    expect(isStub(tool('c8', named))).toBe(true);
  });

  it("names every id a summary replaced, an earlier summary's too, and none it kept", () => {
    // Sticky m1 and m7 stay; m4's summary, m5, m6, m8 and m9 are replaced.
    expect(recallNamer(entries)('summary', [1, 2, 3, 5, 6])).toBe('\n\n[recall ids: m2..m6, m8..m9]');
    expect(recallNamer(entries)('trim', [])).toBe('');
  });
});

describe("the ids counted inside the pass (the engine's nameReplaced hook)", () => {
  /** A task, eight reads of varied files, and a last turn: a middle to elide or summarize. */
  const read = (file: number): ChatMessage[] => [
    asks(`c${file}`),
    tool(
      `c${file}`,
      Array.from({ length: 40 }, (_, line) => `f${file} line ${line}: ${(line * 7919 + file) % 997}`).join('\n'),
    ),
  ];
  const conversation: ChatMessage[] = [
    { role: 'user', content: 'Read the eight files and tell me which one fails.', sticky: true },
    ...Array.from({ length: 8 }, (_, file) => read(file)).flat(),
    { role: 'assistant', content: 'All eight are read.' },
    { role: 'user', content: 'Which one fails?' },
  ];
  const run: SessionEntry[] = conversation.map((message, index) => ({ id: `m${index + 1}`, message }));
  const messages = run.map((entry) => entry.message);
  const count = (list: readonly ChatMessage[]): number => defaultCounter.count(list);
  /** The summarizer: a fixed summary, a shorter one when asked for a tighter one. */
  const answer = (step: SummarizeStep) =>
    ({
      kind: 'summary',
      text: step.purpose === 'tighter' ? 'All eight files were read.' : 'All eight files were read; f3 line 7 is 57.',
    }) as const;
  const compactNamed = (options: CompactionOptions, target: number): CompactionResult =>
    runCompactionSteps(
      compactionSteps(messages, resolveOptions({ keepRecent: 2, ...options }), { target }, undefined, {
        nameReplaced: recallNamer(run),
      }),
      answer,
    );
  // Every target from 20 to 2,000 tokens: the edges where a candidate just fits are among them.
  const targets = Array.from({ length: 1_981 }, (_, step) => 20 + step);

  it('a summary is accepted only when it fits with its ids line', () => {
    const options = { contextBudget: 100_000, summaryCoverage: 'off' } as const;
    let summaries = 0;
    for (const target of targets) {
      const inPass = compactNamed(options, target);
      if (!inPass.exhausted) expect(inPass.tokensAfter, `target ${target}`).toBeLessThanOrEqual(target);
      expect(inPass.tokensAfter).toBe(count(inPass.messages));
      if (inPass.summary !== null) {
        summaries += 1;
        expect(inPass.summary).toMatch(/\n\n\[recall ids: m2\.\.m\d+\]$/);
        expect(inPass.messages).toContainEqual({ role: 'user', content: inPass.summary });
        // What the run records replays to the result.
        expect(recordCompaction(run, inPass).entries.map((entry) => entry.message)).toEqual(inPass.messages);
      }
    }
    expect(summaries).toBeGreaterThan(10);
  });

  it('an elision-only pass stops only when the named stubs are under the trigger', () => {
    const options = {
      contextBudget: 100_000,
      ageObservations: true,
      ageMinChars: 200,
      ageReclaimMin: 100,
      elisionEndsPass: 'under-trigger',
    } as const;
    let stubbed = 0;
    for (const target of targets) {
      const inPass = compactNamed(options, target);
      if (!inPass.exhausted) expect(inPass.tokensAfter, `target ${target}`).toBeLessThanOrEqual(target);
      for (const { index, stub } of inPass.elisions) {
        stubbed += 1;
        const length = String(messages[index]?.content).length;
        expect(stub).toBe(`${elisionStub(length, 'fs_read')} [recall id: m${index + 1}]`);
        expect(isStub(tool('', stub))).toBe(true);
      }
    }
    expect(stubbed).toBeGreaterThan(0);
  });
});

describe('a hard trim names what it dropped (recall on)', () => {
  const read = (file: number): ChatMessage[] => [asks(`c${file}`), tool(`c${file}`, `${file}`.repeat(600))];
  const conversation: ChatMessage[] = [
    { role: 'user', content: 'Read the six files.', sticky: true },
    ...Array.from({ length: 6 }, (_, file) => read(file)).flat(),
    { role: 'user', content: 'Which one fails?' },
  ];
  const run: SessionEntry[] = conversation.map((message, index) => ({ id: `m${index + 1}`, message }));
  const failed = () => ({ kind: 'failed', reason: 'rejected', message: 'no' }) as const;
  const trim = (target: number, named: boolean): CompactionResult =>
    runCompactionSteps(
      compactionSteps(
        conversation,
        resolveOptions({ contextBudget: 100_000, keepRecent: 1, recentWindowGivesWay: false }),
        { target },
        undefined,
        named ? { nameReplaced: recallNamer(run) } : {},
      ),
      failed,
    );

  it('leaves a marker where the dropped messages stood, counted in the fit, that a later summary names again', () => {
    let marked = 0;
    for (let target = 100; target <= 1_200; target += 1) {
      const result = trim(target, true);
      expect(result.fallback).toBe(true);
      if (!result.exhausted) expect(result.tokensAfter, `target ${target}`).toBeLessThanOrEqual(target);
      if (result.dropped === 0) {
        expect(result.trimMarker).toBeUndefined();
        continue;
      }
      marked += 1;
      const last = Number(/^m(\d+)$/.exec(run[result.cutIndex]?.id ?? '')?.[1]);
      expect(result.trimMarker).toBe(
        `[${result.dropped} earlier messages dropped by the harness to fit the context]\n\n[recall ids: m2..m${last}]`,
      );
      expect(result.messages[1]).toEqual({ role: 'user', content: result.trimMarker });
      expect(result.summary).toBeNull();
      const recorded = recordCompaction(run, result);
      expect(recorded.entries.map((entry) => entry.message)).toEqual(result.messages);
      expect(recorded.lines.at(-1)).toMatchObject({ type: 'compaction', summary: null, trimMarker: result.trimMarker });
      // A summary that replaces the marker later names what the marker named.
      expect(recallIdsLine(recorded.entries.slice(1, 2))).toBe(`\n\n[recall ids: m2..m${last}]`);
    }
    expect(marked).toBeGreaterThan(10);
    // Without recall a trim leaves no marker, as before.
    expect(trim(400, false).trimMarker).toBeUndefined();
    expect(trim(400, false).messages).toHaveLength(trim(400, true).messages.length - 1);
  });
});

describe("withRecallLine (a reviewer's summary)", () => {
  it("ends with the ids of the summary it replaces, the person's own line giving way", () => {
    const proposed = `${summaryContent('theirs', 4)}\n\n[recall ids: m2..m5]`;
    expect(withRecallLine('mine', proposed)).toBe('mine\n\n[recall ids: m2..m5]');
    expect(withRecallLine(' mine\n\n[recall ids: m1..m99] ', proposed)).toBe('mine\n\n[recall ids: m2..m5]');
    expect(withRecallLine('mine', summaryContent('theirs', 4))).toBe('mine');
    expect(withRecallLine('mine', null)).toBe('mine');
  });
});

describe('compaction.recall in the plan', () => {
  const input = (compaction: Record<string, unknown>, tools: unknown[] = ['fs_read']) => ({
    messages: [{ role: 'user', content: 'go' }],
    model: { provider: 'openai', model: 'm', contextWindow: 10_000, maxOutputTokens: 100 },
    tools,
    compaction,
  });

  it('declares the tool when on, nothing when off; refuses a non-boolean and a tool of its name', () => {
    expect(planAgentRun(input({})).recall).toBe(false);
    expect(planAgentRun(input({})).tools.map((t) => t.function.name)).toEqual(['fs_read']);
    const on = planAgentRun(input({ recall: true }));
    expect(on.recall).toBe(true);
    expect(on.tools.map((t) => t.function.name)).toEqual(['fs_read', 'recall']);
    expect('recall' in on.compaction).toBe(false);
    expect(() => planAgentRun(input({ recall: 'yes' }))).toThrow(
      new InvalidInputError('input.compaction.recall', 'must be true or false, got "yes"'),
    );
    const own = { type: 'function', function: { name: 'recall', parameters: { type: 'object', properties: {} } } };
    expect(() => planAgentRun(input({ recall: true }, [own]))).toThrow(/input\.tools\[0\]\.function\.name/);
    expect(planAgentRun(input({}, [own])).tools.map((t) => t.function.name)).toEqual(['recall']);
    expect(() => planAgentRun(input({ recal: true }))).toThrow(/input\.compaction/);
  });
});
