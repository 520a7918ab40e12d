import { describe, expect, it } from 'vitest';
import { createBpeCounter } from '../../src/core/counting/bpe-counter.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { type ToolDeclaration, withRequestFraming } from '../../src/core/counting/request-counter.js';
import { createCharCounter, defaultCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage } from '../../src/core/types.js';
import { UsageCounter } from '../../src/core/counting/usage-counter.js';

const tools: ToolDeclaration[] = [
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a file of the workspace.',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string', description: 'Relative path' } },
        required: ['path'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'run',
      description: 'Run a shell command.',
      parameters: { type: 'object', properties: { command: { type: 'string' } } },
      strict: true,
    },
  },
];

const messages: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'List the files.' },
];

describe('withRequestFraming', () => {
  it('adds nothing with no tools and no framing', () => {
    const framed = withRequestFraming(defaultCounter);
    expect(framed.toolTokens).toBe(0);
    expect(framed.perRequest).toBe(0);
    expect(framed.count(messages)).toBe(defaultCounter.count(messages));
    expect(withRequestFraming(defaultCounter, { tools: [] }).count(messages)).toBe(defaultCounter.count(messages));
  });

  it('counts the tools as one pseudo-message through the wrapped counter, once, plus the framing', () => {
    const bpe = createBpeCounter();
    const framed = withRequestFraming(bpe, { tools, perRequest: 7 });
    const toolsMessage: ChatMessage = { role: 'system', content: JSON.stringify(tools) };
    expect(framed.toolTokens).toBe(bpe.count([toolsMessage]) - bpe.count([]));
    expect(framed.toolTokens).toBeGreaterThan(JSON.stringify(tools).length / 8);
    expect(framed.count(messages)).toBe(bpe.count(messages) + framed.toolTokens + 7);
    expect(framed.count([])).toBe(bpe.count([]) + framed.toolTokens + 7);
    // with the character estimator: characters / 4 plus its per-message overhead
    const chars = createCharCounter();
    expect(withRequestFraming(chars, { tools }).toolTokens).toBe(Math.ceil(JSON.stringify(tools).length / 4) + 4);
  });

  it('grows with the tool declarations', () => {
    const bpe = createBpeCounter();
    const one = withRequestFraming(bpe, { tools: tools.slice(0, 1) });
    const two = withRequestFraming(bpe, { tools });
    expect(two.toolTokens).toBeGreaterThan(one.toolTokens);
    expect(two.count(messages)).toBeGreaterThan(one.count(messages));
  });

  it('is the estimator a UsageCounter calibrates against without charging the framing twice', () => {
    const estimator = withRequestFraming(createBpeCounter(), { tools, perRequest: 5 });
    const usage = new UsageCounter({ estimator });
    expect(usage.count(messages)).toBe(estimator.count(messages));
    usage.calibrate(messages, 321);
    const reply: ChatMessage = { role: 'assistant', content: 'a.txt b.txt' };
    expect(usage.count([...messages, reply])).toBe(321 + createBpeCounter({ perRequest: 0 }).count([reply]));
  });

  it('rejects bad options', () => {
    expect(() => withRequestFraming(defaultCounter, { perRequest: -1 })).toThrow(/options\.perRequest/);
    expect(() =>
      withRequestFraming(defaultCounter, { tools: [{ type: 'function' } as unknown as ToolDeclaration] }),
    ).toThrow(/options\.tools\[0\]/);
    expect(() =>
      withRequestFraming(defaultCounter, {
        tools: [tools[0]!, { type: 'function', function: { name: 42 } } as unknown as ToolDeclaration],
      }),
    ).toThrow(/options\.tools\[1\]\.function\.name/);
    expect(() => withRequestFraming(defaultCounter, { tools: 'read_file' as unknown as ToolDeclaration[] })).toThrow(
      InvalidInputError,
    );
  });
});
