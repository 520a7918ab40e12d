// What one chat request cost (src/core/agent/request-cost.ts): the provider's cached tokens when it
// reports them, else the prefix shared with the previous request (same ids, same sizes), counted.
import { describe, expect, it } from 'vitest';
import { requestCost } from '../../src/core/agent/request-cost.js';
import type { ChatMessage } from '../../src/core/types.js';

const sent: ChatMessage[] = [
  { role: 'system', content: 'sys' },
  { role: 'user', content: 'task' },
  { role: 'assistant', content: 'answer' },
];
/** Ten tokens a message. */
const count = (messages: readonly ChatMessage[]) => messages.length * 10;

describe('requestCost', () => {
  it('models the cached prefix: the messages shared from the start with the previous request', () => {
    const usage = requestCost({
      backend: 'b',
      sent,
      shape: { ids: ['m1', 'm2', 'm3'], sizes: [1, 2, 3] },
      previous: { ids: ['m1', 'm2'], sizes: [1, 2] },
      tokens: 30,
      reported: undefined,
      count,
    });
    expect(usage).toEqual({
      backend: 'b',
      promptTokens: 30,
      cachedPromptTokens: 20,
      cacheSource: 'modelled',
      completionTokens: null,
    });
  });

  it('stops the prefix at a message whose size changed (an elided result is not served from cache)', () => {
    const usage = requestCost({
      backend: 'b',
      sent,
      shape: { ids: ['m1', 'm2', 'm3'], sizes: [1, 5, 3] },
      previous: { ids: ['m1', 'm2', 'm3'], sizes: [1, 2, 3] },
      tokens: 30,
      reported: undefined,
      count,
    });
    expect(usage.cachedPromptTokens).toBe(10);
  });

  it('never models more cached tokens than the provider billed', () => {
    const usage = requestCost({
      backend: 'b',
      sent,
      shape: { ids: ['m1', 'm2'], sizes: [1, 2] },
      previous: { ids: ['m1', 'm2'], sizes: [1, 2] },
      tokens: 30,
      reported: { promptTokens: 12 },
      count,
    });
    expect(usage).toMatchObject({ promptTokens: 12, cachedPromptTokens: 12, cacheSource: 'modelled' });
  });

  it('takes what the provider reported, and nothing cached on the first request', () => {
    const shape = { ids: ['m1'], sizes: [1] };
    expect(
      requestCost({
        backend: 'b',
        sent,
        shape,
        previous: shape,
        tokens: 30,
        reported: { promptTokens: 31, cachedPromptTokens: 7, completionTokens: 4 },
        count,
      }),
    ).toEqual({
      backend: 'b',
      promptTokens: 31,
      cachedPromptTokens: 7,
      cacheSource: 'reported',
      completionTokens: 4,
    });
    expect(
      requestCost({ backend: 'b', sent, shape, previous: null, tokens: 30, reported: undefined, count })
        .cachedPromptTokens,
    ).toBe(0);
  });
});
