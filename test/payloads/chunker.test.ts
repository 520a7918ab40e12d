import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chunkBoundaries, DEFAULT_CHUNKER_LIMITS } from '../../src/payloads/chunker.js';
import { chatInputSequence } from '../../corpus/chat-inputs.js';

const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

function chunksOf(data: Uint8Array): string[] {
  const chunks: string[] = [];
  let start = 0;
  for (const end of chunkBoundaries(data)) {
    chunks.push(Buffer.from(data.subarray(start, end)).toString('latin1'));
    start = end;
  }
  return chunks;
}

describe('chunkBoundaries', () => {
  it('covers the data exactly, ascending, within the size limits (JSON, binary, empty)', () => {
    const inputs = [
      new Uint8Array(0),
      encode({ a: 1 }),
      randomBytes(200_000),
      ...chatInputSequence({ rounds: 30 }).map((step) => step.data),
    ];
    for (const data of inputs) {
      const cuts = chunkBoundaries(data);
      expect(cuts.at(-1) ?? 0).toBe(data.length);
      let previous = 0;
      cuts.forEach((cut, index) => {
        expect(cut).toBeGreaterThan(previous);
        expect(cut - previous).toBeLessThanOrEqual(DEFAULT_CHUNKER_LIMITS.maxChunk);
        // Shorter chunks are the last, or end where a big object begins, or at an element's end.
        if (index < cuts.length - 1 && cut - previous < DEFAULT_CHUNKER_LIMITS.minChunk)
          expect([data[cut], data[cut - 1]]).toSatisfy(
            ([next, last]) => next === 0x7b || last === 0x7d || last === 0x5d,
          );
        previous = cut;
      });
    }
  });

  it('cuts a message of 512 bytes or more at its own first and last byte; smaller ones group', () => {
    const big = { role: 'tool', tool_call_id: 'c1', content: 'r'.repeat(5000) };
    const call = { role: 'assistant', content: 'a'.repeat(300) };
    const system = { role: 'system', content: 's'.repeat(3000) };
    const user = { role: 'user', content: 'u'.repeat(2500) };
    const data = encode({ messages: [system, call, big, user], turn: 1 });
    expect(chunksOf(data)).toEqual([
      '{"messages":[',
      JSON.stringify(system),
      `,${JSON.stringify(call)},`,
      JSON.stringify(big),
      ',',
      JSON.stringify(user),
      '],"turn":1}',
    ]);
  });

  it('gives a message the same chunks wherever it sits: a chat input, alone (a tool result), a transcript line', () => {
    fc.assert(
      fc.property(
        fc.record({
          role: fc.constantFrom('assistant', 'tool'),
          content: fc.string({ minLength: 500, maxLength: 40_000 }),
          tool_call_id: fc.string({ maxLength: 30 }),
        }),
        fc.string({ maxLength: 2000 }),
        (message, before) => {
          const alone = chunksOf(encode(message));
          const inChat = chunksOf(encode({ messages: [{ role: 'user', content: before }, message], tools: [] }));
          const inLine = chunksOf(encode({ from: 3, lines: [{ type: 'message', id: 'm4', message }] }));
          expect(inChat).toEqual(expect.arrayContaining(alone));
          expect(inLine).toEqual(expect.arrayContaining(alone));
        },
      ),
      { numRuns: 100 },
    );
  });

  it('keeps every chunk of a prefix when messages are appended, except the open group at its end', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            role: fc.constantFrom('user', 'assistant', 'tool'),
            content: fc.string({ minLength: 0, maxLength: 6000 }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        fc.array(
          fc.record({
            role: fc.constantFrom('assistant', 'tool'),
            content: fc.string({ minLength: 0, maxLength: 6000 }),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        (messages, appended) => {
          const before = chunksOf(encode({ messages, tools: [], turn: 1 }));
          const after = new Set(chunksOf(encode({ messages: [...messages, ...appended], tools: [], turn: 2 })));
          const lost = before.filter((chunk) => !after.has(chunk));
          // What is lost: the final chunk (it holds `"turn":1`) and at most the open group before it
          // (under groupMax bytes), plus the one rolling-hash chunk it may have been cut from.
          expect(lost.length).toBeLessThanOrEqual(3);
          expect(lost.slice(0, -1).reduce((sum, chunk) => sum + chunk.length, 0)).toBeLessThanOrEqual(
            DEFAULT_CHUNKER_LIMITS.groupMax + DEFAULT_CHUNKER_LIMITS.maxChunk,
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('resynchronises after the middle is replaced by a summary (a compaction)', () => {
    const sequence = chatInputSequence({ rounds: 40, compactEvery: 20 });
    const before = sequence[18];
    const after = sequence[19];
    if (before === undefined || after === undefined || !after.compacted)
      throw new Error('the fixture has a compaction at round 20');
    const known = new Set(chunksOf(before.data));
    const afterChunks = chunksOf(after.data);
    const newBytes = afterChunks.filter((chunk) => !known.has(chunk)).reduce((sum, chunk) => sum + chunk.length, 0);
    // New: the summary, this round's messages, and the chunks around the two seams.
    expect(newBytes).toBeLessThan(after.newContentBytes + 2 * DEFAULT_CHUNKER_LIMITS.maxChunk);
    expect(newBytes).toBeLessThan(after.data.length / 2);
  });

  it('is not fooled by brackets and quotes inside strings', () => {
    const tricky = encode({
      messages: [
        { role: 'tool', content: '["not", {"an": "element"}] \\" ] } [' + 'x'.repeat(3000) },
        { role: 'user', content: 'y'.repeat(3000) },
      ],
    });
    const cuts = chunkBoundaries(tricky);
    expect(cuts.at(-1)).toBe(tricky.length);
    // The only element ends are the two messages: the cut after the first falls right after its closing brace.
    const firstEnd = Buffer.from(tricky).indexOf('},{"role":"user"') + 1;
    expect(cuts).toContain(firstEnd);
  });
});
