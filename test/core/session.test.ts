import { describe, expect, it } from 'vitest';
import { Compactor, REFERENCE_EXACT, type ChatMessage, type SessionLine } from '../../src/index.js';
import {
  parseSessionJsonl,
  recordCompaction,
  replaySession,
  summaryId,
  type SessionEntry,
} from '../../src/core/agent/session.js';
import {
  assistant,
  charCounter,
  httpError,
  scriptedSummarizer,
  system,
  tool,
  toJsonl,
  toolRounds,
  user,
} from '../support/messages.js';

function start(messages: ChatMessage[]): { entries: SessionEntry[]; lines: SessionLine[] } {
  const entries = messages.map((message, index) => ({ id: `m${index}`, message }));
  return { entries, lines: entries.map(({ id, message }) => ({ type: 'message', id, message })) };
}

describe('session transcript', () => {
  it('replays a summarizing compaction byte for byte, with the summary where the middle stood', async () => {
    const messages = [...toolRounds(6, 300), user('pinned', { sticky: true }), user('recent'), assistant('answer')];
    const { entries, lines } = start(messages);
    const result = await new Compactor({
      summarizer: scriptedSummarizer('sum'),
      counter: charCounter,
      contextBudget: 1000,
      keepRecent: 2,
    }).compact(messages);
    const recorded = recordCompaction(entries, result);
    const transcript = [...lines, ...recorded.lines];
    expect(JSON.stringify(replaySession(transcript))).toBe(JSON.stringify(result.messages));
    expect(recorded.lines.at(-1)).toMatchObject({
      type: 'compaction',
      replacesThroughId: `m${result.cutIndex}`,
      summary: result.summary,
      fallback: false,
    });
    expect(recorded.entries.find((entry) => entry.message.content === result.summary)?.id).toBe(
      summaryId(`m${result.cutIndex}`),
    );
  });

  it('replays elisions and a hard trim, through JSONL text', async () => {
    const messages = toolRounds(12, 500);
    const { entries, lines } = start(messages);
    const compactor = new Compactor({
      summarizer: scriptedSummarizer(httpError(401)),
      counter: charCounter,
      contextBudget: 2500,
      targetRatio: 0.7,
      keepRecent: 2,
      ageObservations: true,
      ageMinChars: 100,
      ageReclaimMin: 600,
    });
    const result = await compactor.compact(messages);
    expect(result.fallback).toBe(true);
    expect(result.elisions.length).toBeGreaterThan(0);
    const recorded = recordCompaction(entries, result);
    expect(recorded.lines.filter((line) => line.type === 'elision')).toHaveLength(result.elisions.length);
    const text = toJsonl([...lines, ...recorded.lines]);
    expect(JSON.stringify(replaySession(text))).toBe(JSON.stringify(result.messages));
  });

  it('a second compaction can replace through the first summary (summaries of summaries replay too)', async () => {
    const compactor = new Compactor({
      summarizer: scriptedSummarizer('first', 'second'),
      counter: charCounter,
      contextBudget: 600,
      keepRecent: 2,
    });
    const first = start(toolRounds(5, 100));
    const one = await compactor.compact(first.entries.map((entry) => entry.message));
    const afterOne = recordCompaction(first.entries, one);
    const more = toolRounds(3, 100)
      .slice(2)
      .map((message, index) => ({ id: `n${index}`, message }));
    const entries = [...afterOne.entries, ...more];
    const two = await compactor.compact(entries.map((entry) => entry.message));
    const afterTwo = recordCompaction(entries, two);
    const transcript: SessionLine[] = [
      ...first.lines,
      ...afterOne.lines,
      ...more.map(({ id, message }): SessionLine => ({ type: 'message', id, message })),
      ...afterTwo.lines,
    ];
    expect(JSON.stringify(replaySession(transcript))).toBe(JSON.stringify(two.messages));
    expect(two.summary).toContain('second');
  });

  it('an elision-only pass writes only elision lines', async () => {
    const messages = toolRounds(10, 500);
    const { entries } = start(messages);
    const result = await new Compactor({
      summarizer: scriptedSummarizer('never'),
      counter: charCounter,
      contextBudget: 100_000,
      ageObservations: true,
      ageMinChars: 100,
      ageReclaimMin: 600,
      keepRecent: 2,
    }).compact(messages);
    const recorded = recordCompaction(entries, result);
    expect(recorded.lines.every((line) => line.type === 'elision')).toBe(true);
  });

  it('rejects a transcript that names a message it does not have, naming the line', () => {
    const lines: SessionLine[] = [
      { type: 'message', id: 'a', message: user('x') },
      { type: 'elision', id: 'zzz', stub: 's' },
    ];
    expect(() => replaySession(lines)).toThrow('lines[1].id: no message with id "zzz"');
    expect(() =>
      parseSessionJsonl('{"type":"message","id":"a","message":{"role":"user","content":"x"}}\nnot json'),
    ).toThrow('lines[1]: is not valid JSON');
    expect(() => parseSessionJsonl('{"type":"other"}')).toThrow('lines[0].type');
  });

  it('keeps a turn with a sticky result whole (never orphans a sticky tool result)', async () => {
    const messages = [
      system('rules'),
      user('old'),
      assistant(null, [['k', 'fs_read', '{}']]),
      tool('k', 'important', { sticky: true }),
      assistant('old answer'),
      user('recent'),
      assistant('now'),
    ];
    const { entries, lines } = start(messages);
    const options = {
      summarizer: scriptedSummarizer(httpError(400)),
      counter: charCounter,
      contextBudget: 10,
      keepRecent: 2,
    };
    const reference = await new Compactor({ ...options, ...REFERENCE_EXACT }).compact(messages);
    expect(reference.messages).toEqual([messages[0], messages[2], messages[3], messages[5], messages[6]]);
    expect(JSON.stringify(replaySession([...lines, ...recordCompaction(entries, reference).lines]))).toBe(
      JSON.stringify(reference.messages),
    );
    // With the defaults the recent window gives way to the last complete turn (docs/design.md#window-gives-way); the pinned turn stays whole.
    const defaults = await new Compactor(options).compact(messages);
    expect(defaults.messages).toEqual([messages[0], messages[2], messages[3], messages[6]]);
    expect(JSON.stringify(replaySession([...lines, ...recordCompaction(entries, defaults).lines]))).toBe(
      JSON.stringify(defaults.messages),
    );
  });
});
