// `counters`, the counters as a caller picks them: the same counts as the counters themselves, and
// a usage counter that survives its JSON state.
import { describe, expect, it } from 'vitest';
import { createBpeCounter } from '../../src/core/counting/bpe-counter.js';
import { counters } from '../../src/core/counting/counters.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage, TokenCounter } from '../../src/core/types.js';

const messages: ChatMessage[] = [
  { role: 'system', content: 'You fix bugs.' },
  { role: 'user', content: 'The parser drops the last line of every file it reads.' },
  { role: 'assistant', content: 'I will read parser.py first.' },
];

describe('counters', () => {
  it('chars() is the default counter, bpe() the BPE counter', () => {
    expect(counters.chars().count(messages)).toBe(defaultCounter.count(messages));
    expect(counters.bpe({ encoding: 'cl100k_base' }).count(messages)).toBe(
      createBpeCounter({ encoding: 'cl100k_base' }).count(messages),
    );
  });

  it('usage(): calibrated by a billed request; usageFromJSON restores it, over the default estimator unless given one', () => {
    const counter = counters.usage();
    counter.calibrate(messages.slice(0, 2), 500);
    const state: unknown = JSON.parse(JSON.stringify(counter));
    const restored = counters.usageFromJSON(state);
    expect(restored.count(messages)).toBe(counter.count(messages));
    expect(restored.count(messages)).toBe(500 + defaultCounter.count(messages.slice(2)) - defaultCounter.count([]));
    const fixed: TokenCounter = { count: (list) => 7 * list.length };
    expect(counters.usageFromJSON(state, fixed).count(messages)).toBe(500 + 7);
  });

  it('withRequestFraming adds the tool declarations to every count', () => {
    const tools = [{ type: 'function' as const, function: { name: 'fs_read', parameters: { type: 'object' } } }];
    const framed = counters.withRequestFraming(counters.chars(), { tools });
    expect(framed.count(messages)).toBeGreaterThan(counters.chars().count(messages));
  });
});
