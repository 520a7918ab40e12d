// Undoing a compaction of a transcript in process (docs/design.md#undo): `Compactor.undo` on the lines
// a caller keeps brings back every message a compaction replaced, dropped or elided, byte for byte
// (images and pins included), and replay of the undo line gives the same conversation; refusals
// (a later compaction in effect, the window, nothing left) carry their reason.
import { describe, expect, it } from 'vitest';
import { Compactor, createExtractiveSummarizer, type ChatMessage } from '../../src/index.js';
import { FailureType, InvalidInputError, UndoRefusedError } from '../../src/core/errors.js';
import { replaySession, type SessionEntry, type SessionLine } from '../../src/core/agent/session.js';
import { transcript } from '../../src/core/agent/session-transcript.js';
import { parseUndoInput } from '../../src/core/agent/undo.js';
import { assistant, charCounter, system, tool, user } from '../support/messages.js';
import { dataUrl, pngBytes } from '../support/images.js';

/** A transcript a caller keeps: message lines under ids m1.., the live entries beside. */
class KeptTranscript {
  lines: SessionLine[] = [];
  entries: SessionEntry[] = [];
  private next = 1;

  append(...messages: ChatMessage[]): void {
    for (const message of messages) {
      const id = `m${this.next}`;
      this.next += 1;
      this.lines.push({ type: 'message', id, message });
      this.entries.push({ id, message });
    }
  }

  async compact(compactor: Compactor): Promise<void> {
    const result = await compactor.compact(this.entries.map((entry) => entry.message));
    const { lines, entries } = transcript.recordCompaction(this.entries, result);
    this.lines.push(...lines);
    this.entries = entries;
  }

  get messages(): ChatMessage[] {
    return this.entries.map((entry) => entry.message);
  }
}

const image = dataUrl(pngBytes(32, 32));

/** A coding run: a task with a screenshot, tool rounds with long results, the last ones recent. */
function codingRun(rounds: number): ChatMessage[] {
  const messages: ChatMessage[] = [
    system('You are an agent.'),
    user('Fix the bug in app.py.', { sticky: true }),
    {
      role: 'user',
      content: [
        { type: 'text', text: 'This is what the page shows.' },
        { type: 'image_url', image_url: { url: image } },
      ],
    },
  ];
  for (let round = 0; round < rounds; round += 1) {
    messages.push(assistant(`Reading f${round}.py.`, [[`call_${round}`, 'fs_read', `{"path":"f${round}.py"}`]]));
    messages.push(tool(`call_${round}`, `def f${round}():\n${'    return 1\n'.repeat(30)}`));
  }
  return messages;
}

function compactor(contextBudget: number, extra: Partial<ConstructorParameters<typeof Compactor>[0]> = {}): Compactor {
  return new Compactor({
    summarizer: createExtractiveSummarizer(),
    counter: charCounter,
    contextBudget,
    keepRecent: 4,
    ...extra,
  });
}

describe('Compactor.undo', () => {
  it('brings back what a compaction replaced and elided, byte for byte, with what came since', async () => {
    const kept = new KeptTranscript();
    kept.append(...codingRun(8));
    const before = JSON.stringify(kept.entries);
    const engine = compactor(4_000, { ageObservations: true, ageMinChars: 100, ageReclaimMin: 500 });
    await kept.compact(engine);
    expect(kept.lines.some((line) => line.type === 'elision')).toBe(true);
    expect(JSON.stringify(kept.entries)).not.toBe(before);
    kept.append(assistant('Found it.'), user('Go on.'));
    const since = kept.entries.slice(-2);

    const undo = engine.undo(kept.lines);
    expect(JSON.stringify(undo.entries)).toBe(JSON.stringify([...JSON.parse(before), ...since]));
    expect(undo.line).toMatchObject({ type: 'undo', compaction: 1 });
    expect(undo.record).toMatchObject({
      kind: 'undo',
      undoes: 1,
      tokensAfter: charCounter.count(undo.entries.map((entry) => entry.message)),
    });
    expect(undo.record.tokensReclaimed).toBeLessThan(0);
    // Replay of the lines with the undo line gives the same conversation.
    const lines = [...kept.lines, undo.line];
    expect(replaySession(lines)).toEqual(undo.entries.map((entry) => entry.message));
    expect(transcript.replay(lines.map((line) => JSON.stringify(line)).join('\n'))).toEqual(
      undo.entries.map((entry) => entry.message),
    );
    expect(transcript.compactionRecords(lines).map((record) => record.kind)).toEqual([
      expect.stringMatching(/^(summary|trim|elision)$/),
      'undo',
    ]);
    // Nothing is left to undo.
    const none = (() => {
      try {
        engine.undo(lines);
      } catch (error) {
        return error;
      }
    })();
    expect(none).toBeInstanceOf(UndoRefusedError);
    expect(none).toMatchObject({ reason: 'none', type: FailureType.Compaction.UndoRefused });
  });

  it('undoes the last compaction first: an earlier one is refused while a later one depends on it', async () => {
    const kept = new KeptTranscript();
    kept.append(...codingRun(6));
    const first = JSON.stringify(kept.messages);
    const engine = compactor(8_000);
    await kept.compact(engine);
    kept.append(...codingRun(12).slice(3 + 12));
    const second = JSON.stringify(kept.messages);
    await kept.compact(engine);
    expect(transcript.compactionRecords(kept.lines)).toHaveLength(2);
    expect(() => engine.undo(kept.lines, { compactionId: 1 })).toThrow(
      new UndoRefusedError(
        { reason: 'later-compactions', compactionId: 1, later: [2] },
        'compaction #1: later compactions depend on it; undo #2 first',
      ),
    );
    const undoSecond = engine.undo(kept.lines, { compactionId: 2 });
    expect(JSON.stringify(undoSecond.entries.map((entry) => entry.message))).toBe(second);
    kept.lines.push(undoSecond.line);
    // #3 is the undo: not a compaction; #2 is undone.
    expect(() => engine.undo(kept.lines, { compactionId: 3 })).toThrow(
      new InvalidInputError('callOptions.compactionId', '#3 is an undo, not a compaction'),
    );
    expect(() => engine.undo(kept.lines, { compactionId: 2 })).toThrow(/compaction #2 is undone already \(by #3\)/);
    const undoFirst = engine.undo(kept.lines);
    expect(undoFirst.line.compaction).toBe(1);
    const restored = JSON.parse(first) as ChatMessage[];
    expect(undoFirst.entries.map((entry) => entry.message).slice(0, restored.length)).toEqual(restored);
    expect(replaySession([...kept.lines, undoFirst.line])).toEqual(undoFirst.entries.map((entry) => entry.message));
  });

  it('is refused when the restored conversation is over the context budget', async () => {
    const kept = new KeptTranscript();
    kept.append(...codingRun(10));
    const engine = compactor(2_000);
    const tokens = charCounter.count(kept.messages);
    expect(tokens).toBeGreaterThan(2_000);
    await kept.compact(engine);
    expect(() => engine.undo(kept.lines)).toThrow(
      new UndoRefusedError(
        { reason: 'window', compactionId: 1, tokens, room: 2_000 },
        `compaction #1: the restored conversation would be ${tokens} tokens, over the 2000 the window leaves`,
      ),
    );
    const error = (() => {
      try {
        engine.undo(kept.lines);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toMatchObject({ details: { reason: 'window', tokens, room: 2_000 } });
  });

  it('keeps a pin set on a message after the compaction that elided it', async () => {
    const kept = new KeptTranscript();
    kept.append(...codingRun(8));
    const engine = compactor(100_000, { ageObservations: true, ageMinChars: 100, ageReclaimMin: 500 });
    await kept.compact(engine);
    const elided = kept.lines.find((line) => line.type === 'elision');
    if (elided?.type !== 'elision') throw new Error('the compaction elided nothing');
    kept.lines.push({ type: 'pin', ids: [elided.id], pinned: true });
    const undo = engine.undo(kept.lines);
    const message = undo.entries.find((entry) => entry.id === elided.id)?.message;
    expect(message?.sticky).toBe(true);
    expect(message?.content).toMatch(/^def f\d\(\):/);
  });

  it('names a bad compaction id and unknown options', () => {
    const engine = compactor(1_000);
    expect(() => engine.undo([], { compactionId: 0 })).toThrow(
      new InvalidInputError(
        'callOptions.compactionId',
        'must be a whole number from 1 (the # of the compaction in the history), got 0',
      ),
    );
    expect(() => engine.undo([], { compaction: 1 } as never)).toThrow(/callOptions/);
    expect(() => engine.undo([], { compactionId: 1 })).toThrow(
      new InvalidInputError('callOptions.compactionId', 'no compaction #1: the history holds 0 records'),
    );
    expect(() => parseUndoInput({ compactionId: '2' })).toThrow(
      new InvalidInputError(
        'undoCompaction.compactionId',
        'must be a whole number from 1 (the # of the compaction in the history), got "2"',
      ),
    );
    expect(() => parseUndoInput({ id: 2 })).toThrow(/undoCompaction/);
    expect(parseUndoInput(undefined)).toBeUndefined();
  });
});
