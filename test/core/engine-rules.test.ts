// One test (or a few) per numbered rule of docs/design.md#pass and per behaviour the reference states. Every
// compactor here runs with REFERENCE_EXACT — the economic rules of docs/design.md#economics off — so these are the
// reference's rules exactly (docs/design.md#reference-exact); test/core/economics.test.ts covers the defaults.
import { describe, expect, it } from 'vitest';
import { Compactor, InvalidInputError, REFERENCE_EXACT, type ChatMessage } from '../../src/index.js';
import { SUMMARY_INSTRUCTION, summarizerMessages } from '../../src/core/compaction/transcript.js';
import { elisionStub } from '../../src/core/compaction/elision.js';
import { findCut } from '../../src/core/compaction/regions.js';
import {
  assistant,
  charCounter,
  httpError,
  scriptedSummarizer,
  system,
  tool,
  toolRounds,
  user,
  transcriptOf,
} from '../support/messages.js';

const fast = { retryBackoff: 1 } as const;
const big = (char: string, length: number): string => char.repeat(length);

function compactor(
  summarizer = scriptedSummarizer('short summary'),
  options: Partial<ConstructorParameters<typeof Compactor>[0]> = {},
) {
  return new Compactor({
    summarizer,
    counter: charCounter,
    contextBudget: 1000,
    keepRecent: 2,
    ...REFERENCE_EXACT,
    ...fast,
    ...options,
  });
}

describe('regions: the cut (docs/design.md#cut)', () => {
  it('starts keepRecent messages from the end', () => {
    const messages = [user('a'), assistant('b'), user('c'), assistant('d')];
    expect(findCut(messages, 2)).toBe(2);
    expect(findCut(messages, 10)).toBe(0);
    expect(findCut(messages, 0)).toBe(4);
  });

  it('moves backwards while the window starts with a tool result (reference: the cut, and why it moves)', () => {
    const messages = [
      user('task'),
      assistant(null, [
        ['c1', 'fs_read', '{}'],
        ['c2', 'fs_read', '{"a":1}'],
        ['c3', 'grep', '{}'],
      ]),
      tool('c1', 'r1'),
      tool('c2', 'r2'),
      tool('c3', 'r3'),
      assistant('done'),
    ];
    // keepRecent 2 lands on tool c3; the window grows back to the assistant turn that asked.
    expect(findCut(messages, 2)).toBe(1);
  });

  it('never lets a turn straddle the cut when something sits between its results', () => {
    const messages = [
      user('task'),
      assistant(null, [
        ['c1', 'fs_read', '{}'],
        ['c2', 'fs_read', '{"a":1}'],
      ]),
      tool('c1', 'r1'),
      user('injected', { depth: 0 }),
      tool('c2', 'r2'),
      assistant('done'),
    ];
    expect(findCut(messages, 3)).toBe(1);
  });
});

describe('needsCompaction (docs/design.md#needs-compaction)', () => {
  const messages = toolRounds(10, 100);
  const tokens = charCounter.count(messages);

  it('is true only when the count is over triggerRatio × contextBudget', () => {
    expect(compactor(undefined, { contextBudget: tokens, triggerRatio: 0.8 }).needsCompaction(messages)).toBe(true);
    expect(
      compactor(undefined, { contextBudget: Math.ceil(tokens / 0.8), triggerRatio: 0.8 }).needsCompaction(messages),
    ).toBe(false);
    expect(
      compactor(undefined, { contextBudget: Math.floor(tokens / 0.8) - 1, triggerRatio: 0.8 }).needsCompaction(
        messages,
      ),
    ).toBe(true);
  });

  it('with ageObservations, is true below the trigger once the eligible pool reaches ageReclaimMin', () => {
    const options = { contextBudget: 1_000_000, ageObservations: true, ageMinChars: 50, keepRecent: 2 };
    expect(compactor(undefined, { ...options, ageReclaimMin: 500 }).needsCompaction(messages)).toBe(true);
    expect(compactor(undefined, { ...options, ageReclaimMin: 5000 }).needsCompaction(messages)).toBe(false);
    expect(
      compactor(undefined, { ...options, ageReclaimMin: 500, ageObservations: false }).needsCompaction(messages),
    ).toBe(false);
  });
});

describe('no-op (docs/design.md#no-op)', () => {
  it('with nothing in the middle: dropped 0, no summarizer call, messages unchanged, cutIndex -1', async () => {
    const summarizer = scriptedSummarizer('never');
    const messages = [system('rules'), user('hi'), assistant('hello')];
    const result = await compactor(summarizer, { keepRecent: 8 }).compact(messages);
    expect(summarizer.requests).toHaveLength(0);
    expect(result).toMatchObject({
      dropped: 0,
      cutIndex: -1,
      fallback: false,
      summary: null,
      elisions: [],
      exhausted: false,
    });
    expect(result.messages).toEqual(messages);
    result.messages.forEach((message, index) => expect(message).toBe(messages[index]));
  });

  it('is exhausted when the input is already over contextBudget (reference: exhausted no-op)', async () => {
    const messages = [system('rules'), user(big('x', 2000))];
    const result = await compactor(undefined, { contextBudget: 1000, keepRecent: 8 }).compact(messages);
    expect(result).toMatchObject({ dropped: 0, exhausted: true, tokensBefore: result.tokensAfter });
  });

  it('is not exhausted when merely over the trigger', async () => {
    const messages = [system('rules'), user(big('x', 900))];
    const result = await compactor(undefined, { contextBudget: 1000, keepRecent: 8 }).compact(messages);
    expect(result).toMatchObject({ dropped: 0, exhausted: false });
  });

  it('judges exhaustion against target when one is given', async () => {
    const messages = [system('rules'), user(big('x', 600))];
    const result = await compactor(undefined, { contextBudget: 1000, keepRecent: 8 }).compact(messages, {
      target: 500,
    });
    expect(result.exhausted).toBe(true);
  });
});

describe('elision eligibility (docs/design.md#elision)', () => {
  // Middle: [asst c0, tool c0, asst c1, tool c1, ...]; the recent window is the last two messages.
  const options = {
    contextBudget: 1_000_000,
    ageObservations: true,
    ageMinChars: 100,
    ageReclaimMin: 300,
    keepRecent: 2,
  };

  it('elides a fat result in the middle with enough content after it; the stub is a pure function of (length, tool name)', async () => {
    const messages = toolRounds(6, 200);
    const result = await compactor(scriptedSummarizer('never'), options).compact(messages);
    // 6 results of 200 chars: rounds 0..4 are in the middle (round 5 is the recent window); the grace
    // of 300 chars excludes round 4 (its followers hold 7+7+16+200 = 230 chars) and keeps round 3.
    expect(result.elisions.map(({ index }) => index)).toEqual([3, 5, 7, 9]);
    for (const { index, stub } of result.elisions) {
      expect(stub).toBe(elisionStub(200, 'fs_read'));
      expect(result.messages[index]).toEqual({ ...messages[index], content: stub });
    }
    expect(elisionStub(41062, 'fs_read')).toBe(
      '[elided by the harness: 41062-char fs_read result; re-run the call if you need it again]',
    );
  });

  it('skips results not longer than ageMinChars', async () => {
    const messages = toolRounds(6, 100);
    const result = await compactor(scriptedSummarizer('never'), options).compact(messages);
    expect(result.elisions).toEqual([]);
  });

  it('skips results outside the middle: sticky ones and the recent window', async () => {
    const messages = toolRounds(6, 200);
    messages[3] = { ...messages[3]!, sticky: true };
    const result = await compactor(scriptedSummarizer('never'), options).compact(messages);
    expect(result.elisions.map(({ index }) => index)).not.toContain(3);
    expect(result.elisions.map(({ index }) => index)).not.toContain(13);
  });

  it('never elides a stub again', async () => {
    const messages = toolRounds(6, 200);
    const first = await compactor(scriptedSummarizer('never'), options).compact(messages);
    const again = await compactor(scriptedSummarizer('never'), options).compact(first.messages);
    expect(again.elisions).toEqual([]);
  });

  describe('call identity and the loop breaker', () => {
    const readTwice = (): ChatMessage[] => [
      system('agent'),
      user('task'),
      assistant(null, [['a1', 'fs_read', '{"path":"x.py","lines":[1,2]}']]),
      tool('a1', 'old copy'),
      assistant(null, [['a2', 'fs_read', '{ "lines": [1, 2], "path": "x.py" }']]),
      tool('a2', big('n', 150)),
      user(big('u', 1000)),
      assistant('recent 1'),
      user('recent 2'),
    ];

    it('elides older copies of a repeated identity whatever their size or grace; protects the newest', async () => {
      const result = await compactor(scriptedSummarizer('never'), {
        ...options,
        ageMinChars: 100,
        ageReclaimMin: 300,
      }).compact(readTwice());
      // a1 and a2 are the same call (canonical JSON); 'old copy' is tiny but an older duplicate; a2 is the newest: protected
      // even though it is over ageMinChars with 1000+ chars after it.
      expect(result.elisions).toEqual([{ index: 3, stub: elisionStub(8, 'fs_read') }]);
    });

    it('a result whose assistant turn is gone has no identity and follows the ordinary rules', async () => {
      const messages = readTwice().filter((_, index) => index !== 2);
      // now 'old copy' (index 2) is an orphan: too small for the ordinary rules; a2 (index 4) is unique: eligible
      const result = await compactor(scriptedSummarizer('never'), options).compact(messages);
      expect(result.elisions).toEqual([{ index: 4, stub: elisionStub(150, 'fs_read') }]);
    });
  });

  it('with ageObservations off, behaviour is byte-identical to a compactor without elision', async () => {
    const messages = toolRounds(12, 500);
    const plain = new Compactor({
      summarizer: scriptedSummarizer('sum'),
      counter: charCounter,
      contextBudget: 2000,
      keepRecent: 2,
      ...REFERENCE_EXACT,
    });
    const off = new Compactor({
      ...REFERENCE_EXACT,
      summarizer: scriptedSummarizer('sum'),
      counter: charCounter,
      contextBudget: 2000,
      keepRecent: 2,
      ageObservations: false,
      ageMinChars: 1,
      ageReclaimMin: 1,
    });
    expect(JSON.stringify(await off.compact(messages))).toBe(JSON.stringify(await plain.compact(messages)));
    expect(off.needsCompaction(toolRounds(3, 10))).toBe(false);
  });
});

describe('elision-only epoch (docs/design.md#epochs)', () => {
  it('below the trigger with a full pool: elides the whole pool; never summarizes, drops or calls a backend', async () => {
    const summarizer = scriptedSummarizer('never');
    const messages = toolRounds(10, 500);
    const c = compactor(summarizer, {
      contextBudget: 100_000,
      ageObservations: true,
      ageMinChars: 100,
      ageReclaimMin: 1000,
    });
    expect(c.needsCompaction(messages)).toBe(true);
    const result = await c.compact(messages);
    expect(summarizer.requests).toHaveLength(0);
    expect(result).toMatchObject({ dropped: 0, summary: null, cutIndex: -1, fallback: false, exhausted: false });
    expect(result.elisions.length).toBeGreaterThan(0);
    expect(result.messages).toHaveLength(messages.length);
    expect(result.tokensAfter).toBeLessThan(result.tokensBefore);
    // the pool is spent: the next epoch is a long way off
    expect(c.needsCompaction(result.messages)).toBe(false);
  });
});

describe('over the trigger (docs/design.md#over-trigger)', () => {
  const messages = toolRounds(10, 500);
  const tokens = charCounter.count(messages);

  it('elides first and stops when that brought the conversation under the trigger: no summary', async () => {
    const summarizer = scriptedSummarizer('never');
    const result = await compactor(summarizer, {
      contextBudget: Math.floor(tokens / 0.8) - 10,
      ageObservations: true,
      ageMinChars: 100,
      ageReclaimMin: 600,
    }).compact(messages);
    expect(summarizer.requests).toHaveLength(0);
    expect(result.elisions.length).toBeGreaterThan(0);
    expect(result).toMatchObject({ dropped: 0, summary: null, fallback: false });
  });

  it('stops after eliding when the result is under the caller target', async () => {
    const summarizer = scriptedSummarizer('never');
    const result = await compactor(summarizer, {
      contextBudget: 100_000,
      ageObservations: true,
      ageMinChars: 100,
      ageReclaimMin: 600,
    }).compact(messages, { target: tokens - 1000 });
    expect(summarizer.requests).toHaveLength(0);
    expect(result.tokensAfter).toBeLessThanOrEqual(tokens - 1000);
  });

  it('summarizes the stubbed middle when eliding was not enough', async () => {
    const summarizer = scriptedSummarizer('short summary');
    const result = await compactor(summarizer, {
      contextBudget: 1000,
      ageObservations: true,
      ageMinChars: 100,
      ageReclaimMin: 600,
    }).compact(messages);
    expect(summarizer.requests).toHaveLength(1);
    const transcript = transcriptOf(summarizer.requests[0]);
    expect(transcript).toContain(elisionStub(500, 'fs_read'));
    expect(result.summary).toContain('short summary');
    expect(result.elisions.length).toBeGreaterThan(0);
  });

  it('compact does not re-check the trigger: a manual compaction below it summarizes', async () => {
    const summarizer = scriptedSummarizer('short summary');
    const c = compactor(summarizer, { contextBudget: 1_000_000 });
    expect(c.needsCompaction(messages)).toBe(false);
    const result = await c.compact(messages);
    expect(summarizer.requests).toHaveLength(1);
    expect(result.dropped).toBe(messages.length - 1 - 2);
  });
});

describe('the summarizer request (docs/design.md#summarizer-request)', () => {
  it('is one chat completion with the fixed instruction: four sections in order, no preamble, no invented facts, exact identifiers', async () => {
    const summarizer = scriptedSummarizer('s');
    await compactor(summarizer).compact(toolRounds(4, 10));
    const [request] = summarizer.requests;
    expect(request?.instruction).toBe(SUMMARY_INSTRUCTION);
    const sent = request === undefined ? [] : summarizerMessages(request);
    expect(sent.map((message) => message.role)).toEqual(['system', 'user']);
    expect(sent[0]).toEqual({ role: 'system', content: SUMMARY_INSTRUCTION });
    const positions = ['Goals', 'Decisions', 'Files and commands', 'Unresolved'].map((heading) =>
      SUMMARY_INSTRUCTION.indexOf(`## ${heading}`),
    );
    expect(positions.every((position) => position >= 0)).toBe(true);
    expect([...positions].sort((left, right) => left - right)).toEqual(positions);
    expect(SUMMARY_INSTRUCTION).toMatch(/no preamble/i);
    expect(SUMMARY_INSTRUCTION).toMatch(/never invent facts/i);
    expect(SUMMARY_INSTRUCTION).toMatch(/identifiers exactly/i);
  });

  it('caps every tool result and every tool-call argument string, with a marker saying how much was cut; other text stays whole', async () => {
    const summarizer = scriptedSummarizer('s');
    const messages = [
      system('agent'),
      user(big('u', 300)),
      assistant('reading', [['c1', 'fs_write', JSON.stringify({ body: big('b', 250) })]]),
      tool('c1', big('r', 400)),
      assistant('recent'),
      user('recent too'),
    ];
    const result = await compactor(summarizer, { toolResultCap: 100 }).compact(messages);
    const transcript = transcriptOf(summarizer.requests[0]);
    expect(transcript).toContain(`${big('r', 100)}» [truncated by the harness: 300 more characters]`);
    const argsLength = JSON.stringify({ body: big('b', 250) }).length;
    expect(transcript).toContain(`» [truncated by the harness: ${argsLength - 100} more characters]`);
    expect(transcript).toContain(big('u', 300));
    expect(transcript).not.toContain(big('r', 101));
    // the cap applies to the summarizer's input only
    expect(result.messages.at(-2)).toBe(messages[4]);
  });
});

describe('assembly (docs/design.md#assembly)', () => {
  it('keeps sticky messages in place, puts one user summary where the first removed message stood, keeps the recent window verbatim', async () => {
    const messages = [
      system('rules'),
      user(`task ${big('t', 200)}`),
      assistant(`thinking ${big('h', 200)}`),
      user('pinned note', { sticky: true }),
      assistant(`more ${big('m', 200)}`),
      user('injected at depth', { depth: 2 }),
      assistant(null, [['c1', 'grep', '{}']]),
      tool('c1', 'hits'),
      assistant('recent'),
    ];
    const result = await compactor(scriptedSummarizer('the summary')).compact(messages);
    expect(result.messages).toEqual([
      messages[0],
      { role: 'user', content: result.summary },
      messages[3],
      messages[5],
      messages[6],
      messages[7],
      messages[8],
    ]);
    expect(result.summary).toContain('the summary');
    expect(result.messages[1]?.sticky).toBeUndefined();
    expect(result).toMatchObject({ dropped: 3, cutIndex: 4, fallback: false });
  });

  it('summaries of summaries: the synthetic message is not sticky, so a later compaction folds it in', async () => {
    const first = await compactor(scriptedSummarizer('first summary')).compact(toolRounds(6, 50));
    const grown = [...first.messages, ...toolRounds(4, 50).slice(2)];
    const summarizer = scriptedSummarizer('second summary');
    const second = await compactor(summarizer).compact(grown);
    expect(transcriptOf(summarizer.requests[0])).toContain('first summary');
    expect(second.messages.filter((message) => String(message.content).includes('first summary'))).toHaveLength(0);
    expect(second.summary).toContain('second summary');
  });
});

describe('the proof (docs/design.md#proof)', () => {
  const messages = toolRounds(6, 50);
  const tokens = charCounter.count(messages);

  it('a summary that does not shrink the conversation gets one tighter retry, accepted when it fits and is shorter', async () => {
    const summarizer = scriptedSummarizer(big('l', tokens), 'tight');
    const result = await compactor(summarizer).compact(messages);
    expect(summarizer.requests).toHaveLength(2);
    expect(String(summarizer.requests[1]?.instruction)).toMatch(/last attempt was too long/);
    expect(result).toMatchObject({ fallback: false });
    expect(result.summary).toContain('tight');
    expect(result.tokensAfter).toBeLessThan(result.tokensBefore);
  });

  it('too long twice: hard trim', async () => {
    const summarizer = scriptedSummarizer(big('l', tokens), big('m', tokens - 1));
    const result = await compactor(summarizer).compact(messages);
    expect(summarizer.requests).toHaveLength(2);
    expect(result).toMatchObject({ fallback: true, summary: null });
  });

  it('a retry that fits but is not shorter than the first attempt is refused', async () => {
    // The first attempt fits the conversation but not the target; the second would fit the target only
    // because the counter is told so — it is longer than the first, so it is refused.
    const summarizer = scriptedSummarizer(big('a', 40), big('b', 60));
    const result = await compactor(summarizer).compact(messages, {
      target: 10,
      counter: { count: (list) => (list.some((m) => String(m.content).includes('bbb')) ? 1 : charCounter.count(list)) },
    });
    expect(summarizer.requests).toHaveLength(2);
    expect(result.fallback).toBe(true);
  });

  it('with a target, a summary that shrank the conversation but does not fit the target is not an answer', async () => {
    const summarizer = scriptedSummarizer(big('s', 100));
    const result = await compactor(summarizer).compact(messages, { target: 60 });
    expect(summarizer.requests).toHaveLength(2);
    expect(result.fallback).toBe(true);
    expect(result.tokensAfter).toBeLessThan(tokens);
  });

  it('the retry tightens with words only: both requests carry the same transcript and no completion limit', async () => {
    const summarizer = scriptedSummarizer(big('l', tokens), 'tight');
    await compactor(summarizer).compact(messages);
    const [first, second] = summarizer.requests;
    expect(transcriptOf(second)).toEqual(transcriptOf(first));
    expect(second?.middle).toEqual(first?.middle);
    // No completion limit and nothing else: the instruction and the middle the transcript is rendered from.
    expect(Object.keys(second ?? {})).toEqual(['instruction', 'middle']);
  });
});

describe('failures (docs/design.md#failures)', () => {
  const messages = toolRounds(6, 50);

  it.each([400, 401, 402, 403, 404])('HTTP %i is the abort bucket: one request, then the hard trim', async (status) => {
    const summarizer = scriptedSummarizer(httpError(status), 'never reached');
    const result = await compactor(summarizer, { maxAttempts: 5 }).compact(messages);
    expect(summarizer.requests).toHaveLength(1);
    expect(result).toMatchObject({ fallback: true, summary: null });
  });

  it.each([408, 409, 422, 429, 500, 502, 503])('HTTP %i is retried, up to maxAttempts in total', async (status) => {
    const summarizer = scriptedSummarizer(httpError(status));
    const result = await compactor(summarizer, { maxAttempts: 4 }).compact(messages);
    expect(summarizer.requests).toHaveLength(4);
    expect(result.fallback).toBe(true);
  });

  it('a transient failure followed by success is a summary', async () => {
    const summarizer = scriptedSummarizer(httpError(503), new Error('socket hang up'), 'recovered');
    const result = await compactor(summarizer, { maxAttempts: 3 }).compact(messages);
    expect(summarizer.requests).toHaveLength(3);
    expect(result).toMatchObject({ fallback: false });
    expect(result.summary).toContain('recovered');
  });

  it('an empty summary is a failure, retried, never accepted', async () => {
    const summarizer = scriptedSummarizer('', '   \n');
    const result = await compactor(summarizer, { maxAttempts: 3 }).compact(messages);
    expect(summarizer.requests).toHaveLength(3);
    expect(result).toMatchObject({ fallback: true, summary: null });
  });

  it('honours a Retry-After hint instead of the backoff', async () => {
    // retryBackoff of an hour: the test only finishes because the 5 ms hint is used instead
    const summarizer = scriptedSummarizer(httpError(429, 5), 'after the wait');
    const result = await compactor(summarizer, { retryBackoff: '1h' }).compact(messages);
    expect(result.summary).toContain('after the wait');
  });
});

describe('hard trim (docs/design.md#hard-trim)', () => {
  it('drops the oldest non-sticky messages, a turn together with all its results, until the conversation fits targetRatio × budget', async () => {
    const messages = [
      system('rules'),
      user('task'),
      assistant(null, [
        ['p1', 'fs_read', '{}'],
        ['p2', 'grep', '{}'],
      ]),
      tool('p1', big('1', 100)),
      tool('p2', big('2', 100)),
      assistant('middle note'),
      assistant(null, [['p3', 'fs_read', '{"x":1}']]),
      tool('p3', big('3', 100)),
      user('recent'),
      assistant('recent answer'),
    ];
    const tokens = charCounter.count(messages);
    const result = await compactor(scriptedSummarizer(httpError(401)), { contextBudget: 2 * (tokens - 219) }).compact(
      messages,
    );
    // the first two units (the user message, the two-result turn) must go: 4 + 15 + 200 = 219 chars; one is not enough
    expect(result.messages).toEqual([messages[0], messages[5], messages[6], messages[7], messages[8], messages[9]]);
    expect(result).toMatchObject({ fallback: true, dropped: 4, cutIndex: 4, exhausted: false });
    expect(result.tokensAfter).toBe(tokens - 219);
  });

  it('is bounded by the cut: never touches the recent window, and reports exhausted when that is not enough', async () => {
    const messages = [system('rules'), user('old'), assistant('old answer'), user(big('x', 3000)), assistant('recent')];
    const result = await compactor(scriptedSummarizer(httpError(500)), { contextBudget: 1000, maxAttempts: 1 }).compact(
      messages,
    );
    expect(result.messages).toEqual([messages[0], messages[3], messages[4]]);
    expect(result).toMatchObject({ fallback: true, exhausted: true, dropped: 2 });
  });

  it('keeps the elisions already made', async () => {
    const messages = toolRounds(10, 500);
    const result = await compactor(scriptedSummarizer(httpError(403)), {
      contextBudget: 2000,
      targetRatio: 0.79,
      ageObservations: true,
      ageMinChars: 100,
      ageReclaimMin: 600,
    }).compact(messages);
    expect(result.fallback).toBe(true);
    const kept = result.elisions.filter(({ index }) => index > result.cutIndex);
    expect(kept.length).toBeGreaterThan(0);
    for (const { stub } of kept) expect(result.messages.some((message) => message.content === stub)).toBe(true);
  });
});

describe('cancellation (docs/design.md#cancellation)', () => {
  const messages = toolRounds(6, 50);

  it('stops the in-flight request at once and resolves with the hard trim', async () => {
    const controller = new AbortController();
    let sawSignal: AbortSignal | undefined;
    const summarizer = scriptedSummarizer((_request, signal) => {
      sawSignal = signal;
      setTimeout(() => controller.abort(new Error('user cancelled')), 5);
      return new Promise<string>(() => undefined); // hangs and ignores the signal: we must not wait for it
    });
    const result = await compactor(summarizer).compact(messages, { signal: controller.signal });
    expect(sawSignal?.aborted).toBe(true);
    expect(result).toMatchObject({ fallback: true, summary: null });
    expect(summarizer.requests).toHaveLength(1);
  });

  it('stops a backoff wait at once', async () => {
    const controller = new AbortController();
    const summarizer = scriptedSummarizer(async () => {
      setTimeout(() => controller.abort(), 5);
      throw httpError(503);
    });
    const result = await compactor(summarizer, { retryBackoff: '1h', maxAttempts: 3 }).compact(messages, {
      signal: controller.signal,
    });
    expect(summarizer.requests).toHaveLength(1);
    expect(result.fallback).toBe(true);
  });

  it('an already-aborted signal makes no request', async () => {
    const summarizer = scriptedSummarizer('never');
    const result = await compactor(summarizer).compact(messages, { signal: AbortSignal.abort() });
    expect(summarizer.requests).toHaveLength(0);
    expect(result.fallback).toBe(true);
  });
});

describe('overrides (docs/design.md#overrides)', () => {
  const messages = toolRounds(8, 100);

  it('target: the trim aims at it and exhaustion is judged against it', async () => {
    const result = await compactor(scriptedSummarizer(httpError(400)), { contextBudget: 100_000 }).compact(messages, {
      target: 400,
    });
    expect(result.tokensAfter).toBeLessThanOrEqual(400);
    expect(result.exhausted).toBe(false);
    const tight = await compactor(scriptedSummarizer(httpError(400)), { contextBudget: 100_000 }).compact(messages, {
      target: 10,
    });
    expect(tight.exhausted).toBe(true);
  });

  it('counter: every count, including the returned ones, uses the call counter', async () => {
    const doubled = { count: (list: readonly ChatMessage[]) => 2 * charCounter.count(list) };
    const c = compactor(scriptedSummarizer(httpError(400)), { contextBudget: 100_000 });
    const result = await c.compact(messages, { counter: doubled, target: 600 });
    expect(result.tokensBefore).toBe(2 * charCounter.count(messages));
    expect(result.tokensAfter).toBe(doubled.count(result.messages));
    expect(result.tokensAfter).toBeLessThanOrEqual(600);
    // the same call with the compactor's own counter trims less
    const own = await c.compact(messages, { target: 600 });
    expect(own.dropped).toBeLessThan(result.dropped);
  });

  it('without overrides every number is the compactor’s own', async () => {
    const result = await compactor(scriptedSummarizer(httpError(400)), {
      contextBudget: 1000,
      targetRatio: 0.5,
    }).compact(messages);
    expect(result.tokensAfter).toBeLessThanOrEqual(500);
    expect(result.tokensBefore).toBe(charCounter.count(messages));
  });
});

describe('input validation', () => {
  it('rejects structurally invalid messages naming the index and field, and never compacts half-way', async () => {
    const summarizer = scriptedSummarizer('never');
    const messages: unknown[] = [...toolRounds(3, 10)];
    messages[5] = { role: 'tool', content: 'result without id' };
    const run = compactor(summarizer).compact(messages as ChatMessage[]);
    await expect(run).rejects.toBeInstanceOf(InvalidInputError);
    await expect(run).rejects.toThrow('messages[5].tool_call_id: required for role "tool"');
    expect(summarizer.requests).toHaveLength(0);
  });

  it('rejects bad options naming the option', () => {
    expect(() => compactor(undefined, { contextBudget: -1 })).toThrow(/options\.contextBudget/);
    expect(() => compactor(undefined, { retryBackoff: 'soon' })).toThrow(/options\.retryBackoff/);
    expect(() => compactor(undefined, { targetRatio: 0.9, triggerRatio: 0.8 })).toThrow(/options\.targetRatio/);
  });

  it('accepts well-formed but unusual input and never makes it worse: an unanswered call and an orphan result', async () => {
    const messages = [
      system('rules'),
      tool('gone', 'orphan result from a call that was compacted away'),
      user('task'),
      assistant(null, [['open', 'fs_read', '{}']]),
      user('recent'),
      assistant(null, [['pending', 'fs_read', '{"p":1}']]),
    ];
    const result = await compactor(scriptedSummarizer(httpError(401)), { contextBudget: 100, keepRecent: 2 }).compact(
      messages,
    );
    expect(result.messages.slice(-2)).toEqual(messages.slice(-2));
    expect(result.messages.filter((message) => message.role === 'tool')).toHaveLength(0);
  });
});

describe('the result object', () => {
  it('has exactly the fields docs/design.md#result pins', async () => {
    const result = await compactor().compact(toolRounds(4, 10));
    expect(Object.keys(result).sort()).toEqual(
      [
        'messages',
        'dropped',
        'tokensBefore',
        'tokensAfter',
        'fallback',
        'exhausted',
        'elisions',
        'summary',
        'cutIndex',
      ].sort(),
    );
  });
});
