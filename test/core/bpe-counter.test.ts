import fc from 'fast-check';
import { encode as encodeCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { encode as encodeO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { BPE_RUN_SLICE, countTextTokens, createBpeCounter } from '../../src/core/counting/bpe-counter.js';
import { InvalidInputError } from '../../src/core/errors.js';
import type { ChatMessage } from '../../src/core/types.js';

/** gpt-tokenizer's own token count, special-token strings taken as ordinary text. */
const ordinary = { disallowedSpecial: new Set<string>() };
const o200k = (text: string): number => encodeO200k(text, ordinary).length;
const cl100k = (text: string): number => encodeCl100k(text, ordinary).length;

const samples = [
  'Hello world',
  'The quick brown fox jumps over the lazy dog.',
  'def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n',
  '{"path":"src/core/counting/usage-counter.ts","line":42}',
  'Ünïcödé, 日本語のテキスト, and emoji 🎉👩‍💻',
  'a literal <|endoftext|> and <|im_start|> in a tool result',
  '    indented\n\n\n\ttabs   and   spaces   ',
  '1234567890 3.14159 -42',
];

describe('countTextTokens', () => {
  it('equals gpt-tokenizer encode(...).length, for both encodings', () => {
    for (const text of samples) {
      expect(countTextTokens(text), text).toBe(o200k(text));
      expect(countTextTokens(text, 'o200k_base'), text).toBe(o200k(text));
      expect(countTextTokens(text, 'cl100k_base'), text).toBe(cl100k(text));
    }
    expect(countTextTokens('')).toBe(0);
    // the two vocabularies do differ on some of these
    expect(samples.some((text) => o200k(text) !== cl100k(text))).toBe(true);
  });

  it('is exact on long texts made of ordinary words', () => {
    const text = samples.join(' ').repeat(200);
    expect(text.length).toBeGreaterThan(10 * BPE_RUN_SLICE);
    expect(countTextTokens(text)).toBe(o200k(text));
  });

  it('counts pathological runs in linear time and close to the exact count', () => {
    const run = 'abcdefghij'.repeat(300); // 3,000 letters: one pre-tokenizer piece
    const text = `before ${run} after`;
    const slices = Math.ceil(run.length / BPE_RUN_SLICE);
    expect(Math.abs(countTextTokens(text) - o200k(text))).toBeLessThanOrEqual(slices);
    for (const pathological of ['a'.repeat(100_000), '='.repeat(100_000), ' '.repeat(100_000), '/\n'.repeat(50_000)]) {
      // gpt-tokenizer alone takes tens of seconds on 100,000 letters (quadratic merges): the four
      // strings would outlast the test's timeout. Sliced, each piece costs the same.
      const tokens = countTextTokens(pathological);
      expect(tokens).toBeGreaterThan(0);
      expect(tokens).toBeLessThanOrEqual(pathological.length);
    }
  });
});

describe('createBpeCounter', () => {
  const counter = createBpeCounter();

  it('counts a message like the OpenAI cookbook: 3 + role + content per message, 3 per request', () => {
    expect(counter.count([])).toBe(3);
    expect(counter.count([{ role: 'user', content: 'Hello world' }])).toBe(
      3 + 3 + o200k('user') + o200k('Hello world'),
    );
    const system: ChatMessage = { role: 'system', content: samples[1]! };
    const user: ChatMessage = { role: 'user', content: samples[2]! };
    expect(counter.count([system, user])).toBe(
      3 + 3 + o200k('system') + o200k(samples[1]!) + 3 + o200k('user') + o200k(samples[2]!),
    );
    expect(counter.count([{ role: 'assistant', content: null }])).toBe(3 + 3 + o200k('assistant'));
  });

  it('counts a name as its tokens plus one', () => {
    const named: ChatMessage = { role: 'user', name: 'example_user', content: 'hi' };
    const anonymous: ChatMessage = { role: 'user', content: 'hi' };
    expect(counter.count([named]) - counter.count([anonymous])).toBe(o200k('example_user') + 1);
  });

  it('counts tool calls: their function name and arguments, plus a framing per call', () => {
    const args = '{"path":"src/core/counting/digest.ts","encoding":"utf8"}';
    const call = { id: 'call_abc', type: 'function' as const, function: { name: 'read_file', arguments: args } };
    const asking: ChatMessage = { role: 'assistant', content: null, tool_calls: [call] };
    const bare: ChatMessage = { role: 'assistant', content: null };
    expect(counter.count([asking]) - counter.count([bare])).toBe(3 + o200k('read_file') + o200k(args));
    const twice: ChatMessage = { ...asking, tool_calls: [call, { ...call, id: 'call_def' }] };
    expect(counter.count([twice]) - counter.count([bare])).toBe(2 * (3 + o200k('read_file') + o200k(args)));
    // the tool result is counted by its content; the tool_call_id is not counted
    const result: ChatMessage = { role: 'tool', tool_call_id: 'call_abc', content: 'file body' };
    expect(counter.count([result])).toBe(3 + 3 + o200k('tool') + o200k('file body'));
  });

  it('tokenizes text parts, counts an image by its rule, and charges a fixed amount per non-text part when told', () => {
    const parts: ChatMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this image?' },
        // an unreadable header: the most a high-detail image costs
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        { type: 'text', text: ' Be brief.' },
      ],
    };
    expect(counter.count([parts])).toBe(
      3 + 3 + o200k('user') + o200k('What is in this image?') + 1445 + o200k(' Be brief.'),
    );
    expect(createBpeCounter({ perNonTextPart: 1000 }).count([parts]) - counter.count([parts])).toBe(1000 - 1445);
    expect(createBpeCounter({ perNonTextPart: 85 }).count([parts]) - counter.count([parts])).toBe(85 - 1445);
  });

  it('takes its framing and encoding from the options', () => {
    const message: ChatMessage = { role: 'user', content: samples[4]! };
    expect(createBpeCounter({ perMessage: 0, perRequest: 0 }).count([message])).toBe(
      o200k('user') + o200k(samples[4]!),
    );
    expect(createBpeCounter({ encoding: 'cl100k_base' }).count([message])).toBe(
      3 + 3 + cl100k('user') + cl100k(samples[4]!),
    );
  });

  it('remembers counts by text, so in-place edits are recounted', () => {
    const long = samples.join(' ');
    const messages: ChatMessage[] = [{ role: 'tool', tool_call_id: 'call', content: long }];
    const first = counter.count(messages);
    expect(counter.count(messages)).toBe(first);
    messages[0]!.content = `${long} and a little more text at the end`;
    expect(counter.count(messages)).toBe(3 + 3 + o200k('tool') + o200k(`${long} and a little more text at the end`));
    messages[0]!.content = long;
    expect(counter.count(messages)).toBe(first);
  });

  it('rejects bad options', () => {
    expect(() => createBpeCounter({ encoding: 'p50k_base' as 'o200k_base' })).toThrow(InvalidInputError);
    expect(() => createBpeCounter({ encoding: 'p50k_base' as 'o200k_base' })).toThrow(/options\.encoding/);
    expect(() => createBpeCounter({ perMessage: -1 })).toThrow(/options\.perMessage/);
    expect(() => createBpeCounter({ perRequest: Number.NaN })).toThrow(/options\.perRequest/);
  });

  const message: fc.Arbitrary<ChatMessage> = fc.oneof(
    fc.record({
      role: fc.constantFrom('system' as const, 'user' as const, 'assistant' as const),
      content: fc.string({ maxLength: 80 }),
    }),
    fc.record({
      role: fc.constant('user' as const),
      content: fc.string({ unit: 'grapheme', maxLength: 40 }),
      name: fc.string({ minLength: 1, maxLength: 10 }),
    }),
    fc.record({
      role: fc.constant('assistant' as const),
      content: fc.constant(null),
      tool_calls: fc.array(
        fc.record({
          id: fc.constant('call'),
          type: fc.constant('function' as const),
          function: fc.record({
            name: fc.string({ minLength: 1, maxLength: 12 }),
            arguments: fc.json({ maxDepth: 2 }),
          }),
        }),
        { minLength: 1, maxLength: 3 },
      ),
    }),
    fc.record({
      role: fc.constant('tool' as const),
      tool_call_id: fc.constant('call'),
      content: fc.array(
        fc.oneof(
          fc.record({ type: fc.constant('text'), text: fc.string({ maxLength: 30 }) }),
          fc.record({ type: fc.constant('input_audio') }),
        ),
        { maxLength: 3 },
      ),
    }),
  );

  it('is deterministic and additive over messages', () => {
    const other = createBpeCounter();
    fc.assert(
      fc.property(fc.array(message, { maxLength: 8 }), fc.array(message, { maxLength: 8 }), (a, b) => {
        const whole = counter.count([...a, ...b]);
        expect(counter.count([...a, ...b])).toBe(whole);
        expect(other.count([...a, ...b])).toBe(whole);
        expect(whole).toBe(counter.count(a) + counter.count(b) - counter.count([]));
      }),
      { numRuns: 300 },
    );
  });

  it('never grows when messages are removed', () => {
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 10 }),
        fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }),
        (messages, keep) => {
          const kept = messages.filter((_, index) => keep[index]);
          expect(counter.count(kept)).toBeLessThanOrEqual(counter.count(messages));
          expect(counter.count(messages.slice(1))).toBeLessThan(counter.count(messages));
        },
      ),
      { numRuns: 300 },
    );
  });
});
