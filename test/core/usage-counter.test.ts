import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createBpeCounter } from '../../src/core/counting/bpe-counter.js';
import { digestMessagePrefix } from '../../src/core/counting/digest.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { withRequestFraming } from '../../src/core/counting/request-counter.js';
import { createCharCounter, defaultCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage, TokenCounter } from '../../src/core/types.js';
import { UsageCounter, type UsageCounterState } from '../../src/core/counting/usage-counter.js';

function conversation(length: number, seed = 'm'): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: 'You are a careful assistant.', sticky: true }];
  for (let i = 1; i < length; i++) {
    if (i % 3 === 1) messages.push({ role: 'user', content: `${seed} question ${i}: ${'why '.repeat(i % 7)}` });
    else if (i % 3 === 2) {
      messages.push({
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: `call_${i}`,
            type: 'function',
            function: { name: 'read_file', arguments: `{"path":"src/${seed}${i}.ts"}` },
          },
        ],
      });
    } else messages.push({ role: 'tool', tool_call_id: `call_${i - 1}`, content: `file ${i} ${'x'.repeat(40 + i)}` });
  }
  return messages;
}

/** Counts 10 per message plus 1000 per request: makes the formula visible. */
const framedEstimator: TokenCounter = { count: (messages) => 1000 + 10 * messages.length };

describe('UsageCounter', () => {
  it('counts with the estimator until it is calibrated', () => {
    const messages = conversation(12);
    expect(new UsageCounter().count(messages)).toBe(defaultCounter.count(messages));
    expect(new UsageCounter({ estimator: framedEstimator }).count(messages)).toBe(1120);
  });

  it('counts the calibrated prefix as billed, plus the estimate of the rest', () => {
    const sent = conversation(10);
    const counter = new UsageCounter();
    counter.calibrate(sent, 5_000);
    expect(counter.count(sent)).toBe(5_000);
    expect(counter.count([...sent])).toBe(5_000);
    const reply: ChatMessage = { role: 'assistant', content: 'Here is what I found in the file, in detail.' };
    const next: ChatMessage = { role: 'user', content: 'And then?' };
    const grown = [...sent, reply, next];
    expect(counter.count(grown)).toBe(5_000 + defaultCounter.count([reply, next]));
  });

  it('charges the rest its per-message overhead but not the per-request framing again', () => {
    const sent = conversation(10);
    const counter = new UsageCounter({ estimator: framedEstimator });
    counter.calibrate(sent, 7_777);
    const grown = [...sent, ...conversation(4, 'rest').slice(1)];
    expect(counter.count(grown)).toBe(7_777 + 3 * 10);
    // the same with a real complete-request estimator: BPE + tool declarations
    const estimator = withRequestFraming(createBpeCounter(), {
      tools: [
        {
          type: 'function',
          function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
        },
      ],
    });
    const bpeCounter = new UsageCounter({ estimator });
    bpeCounter.calibrate(sent, 7_777);
    const rest = grown.slice(sent.length);
    expect(bpeCounter.count(grown)).toBe(7_777 + estimator.count(rest) - estimator.count([]));
    expect(bpeCounter.count(grown)).toBe(7_777 + createBpeCounter({ perRequest: 0 }).count(rest));
  });

  it('treats a calibration of no messages as a prefix of everything', () => {
    const counter = new UsageCounter({ estimator: framedEstimator });
    counter.calibrate([], 1_200);
    expect(counter.count([])).toBe(1_200);
    expect(counter.count(conversation(3))).toBe(1_200 + 30);
  });

  describe('falls back to the estimator on any change below the prefix', () => {
    const sent = conversation(20);
    const grown = [...sent, { role: 'user', content: 'next' } satisfies ChatMessage];
    const changes: Record<string, ChatMessage[]> = {
      'content of message 0': [{ ...sent[0]!, content: 'You are a careless assistant.' }, ...grown.slice(1)],
      'an elision stub': grown.map((message, index) =>
        index === 3 ? { ...message, content: '[elided: 83 chars of read_file output]' } : message,
      ),
      'a removed message': [...grown.slice(0, 5), ...grown.slice(6)],
      'an inserted message': [...grown.slice(0, 5), { role: 'user', content: 'inserted' }, ...grown.slice(5)],
      'a compaction': [sent[0]!, { role: 'user', content: 'Summary: the user asked questions.' }, ...grown.slice(-4)],
      'a shorter conversation': sent.slice(0, -1),
      'a changed tool-call argument': grown.map((message, index) =>
        index === 2 && message.tool_calls
          ? {
              ...message,
              tool_calls: [
                { ...message.tool_calls[0]!, function: { name: 'read_file', arguments: '{"path":"other.ts"}' } },
              ],
            }
          : message,
      ),
      'an added provider field': grown.map((message, index) =>
        index === 4 ? { ...message, reasoning_content: 'hmm' } : message,
      ),
      'a reordered message': [sent[0]!, sent[2]!, sent[1]!, ...grown.slice(3)],
    };
    for (const [name, messages] of Object.entries(changes)) {
      it(name, () => {
        const counter = new UsageCounter({ estimator: framedEstimator });
        counter.calibrate(sent, 99_999);
        expect(counter.count(grown)).toBe(99_999 + 10);
        expect(counter.count(messages)).toBe(framedEstimator.count(messages));
        // and a restored counter (digest path) agrees
        const restored = UsageCounter.fromJSON(JSON.parse(JSON.stringify(counter)), framedEstimator);
        expect(restored.count(messages)).toBe(framedEstimator.count(messages));
        expect(restored.count(grown)).toBe(99_999 + 10);
      });
    }
  });

  it('ignores the harness flags, so calibrating with provider messages matches the harness conversation', () => {
    const harness = conversation(8);
    harness[3] = { ...harness[3]!, sticky: true };
    harness[5] = { ...harness[5]!, depth: 1 };
    const providerMessages = harness.map(({ sticky: _sticky, depth: _depth, ...rest }) => rest);
    const counter = new UsageCounter({ estimator: framedEstimator });
    counter.calibrate(providerMessages, 4_321);
    expect(counter.count(harness)).toBe(4_321);
  });

  it('is not fooled by callers that mutate the arrays or the messages in place', () => {
    const sent = conversation(10);
    const counter = new UsageCounter({ estimator: framedEstimator });
    counter.calibrate(sent, 5_000);
    expect(counter.count(sent)).toBe(5_000);
    // the caller elides in place: same array, same length, same message object
    const original = sent[3]!.content;
    sent[3]!.content = '[elided]';
    expect(counter.count(sent)).toBe(framedEstimator.count(sent));
    sent[3]!.content = original;
    expect(counter.count(sent)).toBe(5_000);
    // the caller swaps a message object in the same array
    const swapped = sent[4]!;
    sent[4] = { ...swapped, content: 'changed' };
    expect(counter.count(sent)).toBe(framedEstimator.count(sent));
    sent[4] = swapped;
    // mutating a nested tool call
    sent[2]!.tool_calls![0]!.function.arguments = '{}';
    expect(counter.count(sent)).toBe(framedEstimator.count(sent));
  });

  it('recalibrates: the next billed request replaces the calibration', () => {
    const first = conversation(10);
    const counter = new UsageCounter({ estimator: framedEstimator });
    counter.calibrate(first, 5_000);
    const compacted: ChatMessage[] = [first[0]!, { role: 'user', content: 'Summary.' }, ...first.slice(-3)];
    expect(counter.count(compacted)).toBe(framedEstimator.count(compacted));
    counter.calibrate(compacted, 900);
    expect(counter.count(compacted)).toBe(900);
    expect(counter.count([...compacted, { role: 'user', content: 'more' }])).toBe(910);
    expect(counter.count(first)).toBe(framedEstimator.count(first));
    counter.reset();
    expect(counter.count(compacted)).toBe(framedEstimator.count(compacted));
  });

  it('round-trips through JSON.stringify/parse and counts identically', () => {
    const sent = conversation(30);
    const estimator = createCharCounter({ perMessage: 5 });
    const counter = new UsageCounter({ estimator });
    expect(counter.toJSON()).toEqual({ version: 1, calibration: null });
    counter.calibrate(sent, 12_345);
    const state: UsageCounterState = JSON.parse(JSON.stringify(counter));
    expect(state).toEqual({
      version: 1,
      calibration: { messageCount: 30, digest: digestMessagePrefix(sent), billedPromptTokens: 12_345 },
    });
    const restored = UsageCounter.fromJSON(state, estimator);
    const probes = [
      sent,
      [...sent, ...conversation(5, 'later')],
      sent.slice(0, 29),
      [{ ...sent[0]!, content: 'other' }, ...sent.slice(1)],
      [],
      conversation(40),
    ];
    for (const probe of probes) expect(restored.count(probe)).toBe(counter.count(probe));
    expect(restored.toJSON()).toEqual(counter.toJSON());
    expect(UsageCounter.fromJSON(JSON.parse(JSON.stringify(restored)), estimator).toJSON()).toEqual(state);
    // defaultCounter when no estimator is given
    expect(UsageCounter.fromJSON(state).count(sent.slice(1))).toBe(defaultCounter.count(sent.slice(1)));
  });

  it('handles messages that are not plain JSON data through the digest', () => {
    const when = new Date(Date.UTC(2024, 0, 2));
    const sent: ChatMessage[] = [{ role: 'user', content: 'hi', sent_at: when }];
    const counter = new UsageCounter({ estimator: framedEstimator });
    counter.calibrate(sent, 50);
    expect(counter.toJSON().calibration?.digest).toBe(digestMessagePrefix(sent, 1));
    // JSON turns the Date into its ISO string: the same serialization, so the same prefix
    expect(counter.count([{ role: 'user', content: 'hi', sent_at: when.toISOString() }])).toBe(50);
    expect(counter.count([{ role: 'user', content: 'hi', sent_at: new Date(0) }])).toBe(10 + 1000);
    // and the other way round: a plain calibration compared with a Date
    counter.calibrate([{ role: 'user', content: 'hi', sent_at: when.toISOString() }], 60);
    expect(counter.count(sent)).toBe(60);
  });

  it('agrees with the digest definition on random conversations and random edits', () => {
    const jsonLeaf = fc.oneof(
      fc.string({ maxLength: 8 }),
      fc.integer(),
      fc.constant(-0),
      fc.double({ noNaN: true }),
      fc.boolean(),
      fc.constant(null),
    );
    const extra = fc.dictionary(
      fc.constantFrom('reasoning_content', 'refusal', 'x', '__proto__', '1', 'meta'),
      fc.oneof(jsonLeaf, fc.array(jsonLeaf, { maxLength: 3 })),
      {
        maxKeys: 2,
      },
    );
    const message: fc.Arbitrary<ChatMessage> = fc
      .record({
        role: fc.constantFrom('system', 'user', 'assistant', 'tool'),
        content: fc.oneof(
          fc.string({ maxLength: 20 }),
          fc.constant(null),
          fc.array(
            fc.oneof(
              fc.record({ type: fc.constant('text'), text: fc.string({ maxLength: 10 }) }),
              fc.record({
                type: fc.constant('image_url'),
                image_url: fc.record({ url: fc.string({ maxLength: 10 }) }),
              }),
            ),
            { maxLength: 2 },
          ),
        ),
        extra,
      })
      .map(({ role, content, extra }) => ({ role, content, ...extra }));
    type Edit = (messages: ChatMessage[], index: number) => ChatMessage[];
    const replaceAt = (messages: ChatMessage[], index: number, replacement: ChatMessage) =>
      messages.map((m, i) => (i === index ? replacement : m));
    const edits: Record<string, Edit> = {
      none: (messages) => messages,
      clone: (messages, index) => replaceAt(messages, index, structuredClone(messages[index]!)),
      undefinedKey: (messages, index) => replaceAt(messages, index, { ...messages[index]!, ghost: undefined }),
      sticky: (messages, index) => replaceAt(messages, index, { ...messages[index]!, sticky: true, depth: 3 }),
      content: (messages, index) =>
        replaceAt(messages, index, { ...messages[index]!, content: `${JSON.stringify(messages[index]!.content)}!` }),
      reorder: (messages, index) => {
        const { role, ...rest } = messages[index]!;
        return replaceAt(messages, index, { ...rest, role });
      },
      addKey: (messages, index) => replaceAt(messages, index, { ...messages[index]!, name: 'n' }),
      dropKey: (messages, index) => {
        const { content: _content, ...rest } = messages[index]!;
        return replaceAt(messages, index, { ...rest, content: null });
      },
      remove: (messages, index) => messages.filter((_, i) => i !== index),
      append: (messages) => [...messages, { role: 'user', content: 'appended' }],
      dateField: (messages, index) => replaceAt(messages, index, { ...messages[index]!, at: new Date(0) }),
      negativeZero: (messages, index) => replaceAt(messages, index, { ...messages[index]!, n: -0 }),
      nan: (messages, index) => replaceAt(messages, index, { ...messages[index]!, n: Number.NaN }),
    };
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 6 }),
        fc.constantFrom(...Object.keys(edits)),
        fc.nat(),
        fc.boolean(),
        (sent, editName, at, restore) => {
          const digestAtCalibration = digestMessagePrefix(sent);
          let counter = new UsageCounter({ estimator: framedEstimator });
          counter.calibrate(sent, 42_000);
          if (restore) counter = UsageCounter.fromJSON(JSON.parse(JSON.stringify(counter)), framedEstimator);
          const edited = edits[editName]!(sent, at % sent.length);
          const matches =
            edited.length >= sent.length && digestMessagePrefix(edited, sent.length) === digestAtCalibration;
          const expected = matches ? 42_000 + 10 * (edited.length - sent.length) : framedEstimator.count(edited);
          expect(counter.count(edited)).toBe(expected);
          // twice: the second count may use the copy taken by the first
          expect(counter.count(edited)).toBe(expected);
          expect(counter.count(sent)).toBe(42_000);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('rejects a bad state, naming the field', () => {
    const good: UsageCounterState = {
      version: 1,
      calibration: { messageCount: 2, digest: 'a'.repeat(64), billedPromptTokens: 10 },
    };
    expect(() => UsageCounter.fromJSON(good)).not.toThrow();
    const cases: [unknown, RegExp][] = [
      [null, /^state: /],
      ['{"version":1}', /^state: /],
      [{ version: 2, calibration: null }, /^state\.version: /],
      [{ calibration: null }, /^state\.version: /],
      [{ version: 1 }, /^state\.calibration: /],
      [{ version: 1, calibration: null, extra: true }, /^state\.extra: unknown field/],
      [{ version: 1, calibration: { ...good.calibration, messageCount: -1 } }, /^state\.calibration\.messageCount: /],
      [{ version: 1, calibration: { ...good.calibration, messageCount: 1.5 } }, /^state\.calibration\.messageCount: /],
      [
        { version: 1, calibration: { ...good.calibration, digest: 'A'.repeat(64) } },
        /^state\.calibration\.digest: must be 64 lowercase hex digits/,
      ],
      [{ version: 1, calibration: { ...good.calibration, digest: 'abc' } }, /^state\.calibration\.digest: /],
      [
        { version: 1, calibration: { messageCount: 2, digest: 'a'.repeat(64) } },
        /^state\.calibration\.billedPromptTokens: /,
      ],
      [
        { version: 1, calibration: { ...good.calibration, billedPromptTokens: '10' } },
        /^state\.calibration\.billedPromptTokens: /,
      ],
    ];
    for (const [state, message] of cases) {
      let error: unknown;
      try {
        UsageCounter.fromJSON(state);
      } catch (caught) {
        error = caught;
      }
      expect(error, JSON.stringify(state)).toBeInstanceOf(InvalidInputError);
      expect(error instanceof Error ? error.message : '').toMatch(message);
    }
  });

  it('rejects a bad calibration', () => {
    const counter = new UsageCounter();
    expect(() => counter.calibrate(conversation(2), -1)).toThrow(/billedPromptTokens: must be a non-negative integer/);
    expect(() => counter.calibrate(conversation(2), 1.5)).toThrow(InvalidInputError);
    expect(() => counter.calibrate(conversation(2), Number.NaN)).toThrow(InvalidInputError);
    expect(() => counter.calibrate('nope' as unknown as ChatMessage[], 1)).toThrow(/messagesSent/);
  });
});
