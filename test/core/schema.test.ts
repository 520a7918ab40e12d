import { describe, expect, it } from 'vitest';
import { InvalidInputError, toProviderMessages, validateMessages } from '../../src/index.js';
import { z } from 'zod';
import { checkWith, isSticky } from '../../src/core/schema.js';
import { parseDuration, resolveOptions } from '../../src/core/compaction/options.js';

function errorOf(run: () => unknown): InvalidInputError {
  try {
    run();
  } catch (error) {
    if (error instanceof InvalidInputError) return error;
    throw error;
  }
  throw new Error('expected an InvalidInputError');
}

describe('validateMessages', () => {
  it.each([
    [[{ role: 'bogus', content: 'x' }], 'messages[0].role', 'must be one of system, developer, user, assistant, tool'],
    [
      [
        { role: 'user', content: 'ok' },
        { role: 'tool', content: 'x' },
      ],
      'messages[1].tool_call_id',
      'required for role "tool"',
    ],
    [[{ role: 'user', content: 5 }], 'messages[0].content', 'must be a string, null or an array of content parts'],
    [[{ role: 'user', content: null }], 'messages[0].content', 'must not be null for role "user"'],
    [
      [{ role: 'assistant', content: null }],
      'messages[0].content',
      'must not be null for an assistant message without tool_calls',
    ],
    [
      [{ role: 'user', content: [{ type: 'text' }] }],
      'messages[0].content[0].text',
      'must be a string for a "text" part',
    ],
    [
      [{ role: 'user', content: 'x', tool_call_id: 'c' }],
      'messages[0].tool_call_id',
      'only allowed for role "tool", not "user"',
    ],
    [
      [{ role: 'user', content: 'x', sticky: 'yes' }],
      'messages[0].sticky',
      'Invalid input: expected boolean, received string',
    ],
    [[{ role: 'user', content: 'x', depth: -1 }], 'messages[0].depth', 'Too small: expected number to be >=0'],
    [
      [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f' } }] }],
      'messages[0].tool_calls[0].function.arguments',
      'required',
    ],
    [[null], 'messages[0]', 'must be an object'],
  ])('rejects %j naming %s', (messages, field, reason) => {
    const error = errorOf(() => validateMessages(messages));
    expect(error.field).toBe(field);
    expect(error.reason).toBe(reason);
    expect(error.message).toBe(`${field}: ${reason}`);
    expect(error.type).toBe('Compaction.InvalidInput');
  });

  it('rejects a non-array', () => {
    expect(errorOf(() => validateMessages({ role: 'user' })).message).toBe(
      'messages: must be an array of chat messages',
    );
  });

  it('accepts a reused tool-call id (well-formed, unusual): a result answers the latest turn that asked', () => {
    const call = (name: string) => ({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c', type: 'function', function: { name, arguments: '{}' } }],
    });
    expect(validateMessages([call('f'), { role: 'tool', tool_call_id: 'c', content: 'r' }, call('g')])).toHaveLength(3);
  });

  it('rejects two tool calls with one id in the same assistant turn, naming the second (regression)', () => {
    const call = (id: string, name: string) => ({ id, type: 'function', function: { name, arguments: '{}' } });
    const messages = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, tool_calls: [call('c1', 'f'), call('c2', 'g'), call('c1', 'h')] },
      { role: 'tool', tool_call_id: 'c1', content: 'r' },
    ];
    const error = errorOf(() => validateMessages(messages));
    expect(error.field).toBe('messages[1].tool_calls[2].id');
    expect(error.reason).toBe(
      '"c1" is also the id of tool_calls[0]: the ids of one assistant turn must differ (a result could not say which call it answers)',
    );
    expect(error.index).toBe(1);
  });

  it('returns the caller’s own objects and keeps unknown provider fields', () => {
    const messages = [{ role: 'assistant', content: 'x', reasoning_content: 'kept', refusal: null }];
    const [valid] = validateMessages(messages);
    expect(valid).toBe(messages[0]);
  });
});

describe('checkWith', () => {
  const schema = z.strictObject({
    version: z.literal(1),
    calibration: z.strictObject({ ratio: z.number() }).nullable(),
  });

  it.each([
    [{ version: 1, calibration: null, verison: 1 }, 'state.verison: unknown field; did you mean version?'],
    [
      { version: 1, calibration: { ratio: 1, ration: 2 } },
      'state.calibration.ration: unknown field; did you mean ratio?',
    ],
    [{ version: 1, calibration: null, zzz: 1 }, 'state.zzz: unknown field; the fields are version, calibration'],
    [{ version: 1 }, 'state.calibration: required'],
  ])('names the field of %j and what is wrong', (value, message) => {
    expect(errorOf(() => checkWith(schema, value, 'state')).message).toBe(message);
  });

  it('says no more than "unknown field" where the schema declares no keys (inside a list)', () => {
    const list = z.array(z.strictObject({ a: z.number() }));
    expect(errorOf(() => checkWith(list, [{ a: 1, c: 2 }], 'items')).message).toBe('items[0].c: unknown field');
  });
});

describe('isSticky and toProviderMessages', () => {
  it('system, developer, sticky: true and depth are sticky; nothing else is', () => {
    expect(isSticky({ role: 'system', content: '' })).toBe(true);
    expect(isSticky({ role: 'developer', content: '' })).toBe(true);
    expect(isSticky({ role: 'user', content: '', sticky: true })).toBe(true);
    expect(isSticky({ role: 'user', content: '', depth: 0 })).toBe(true);
    expect(isSticky({ role: 'user', content: '', sticky: false })).toBe(false);
    expect(isSticky({ role: 'tool', content: '', tool_call_id: 'c' })).toBe(false);
  });

  it('strips the harness flags and nothing else', () => {
    const stripped = toProviderMessages([{ role: 'user', content: 'x', sticky: true, depth: 2, name: 'n' }]);
    expect(stripped).toEqual([{ role: 'user', content: 'x', name: 'n' }]);
  });
});

describe('options', () => {
  it('applies the documented defaults', () => {
    expect(resolveOptions({ contextBudget: 128_000 })).toEqual({
      contextBudget: 128_000,
      triggerRatio: 0.8,
      targetRatio: 0.5,
      keepRecent: 8,
      keepTask: false,
      toolResultCap: 2000,
      ageObservations: false,
      ageMinChars: 2000,
      ageReclaimMin: 40_000,
      maxAttempts: 3,
      retryBackoffMs: 2000,
      recentWindowGivesWay: true,
      truncateOversized: true,
      elisionEndsPass: 'never',
      elisionEpochs: 'paying',
      deferShallowCompactions: true,
      stubsShorterOnly: true,
      trimBeatsOverflow: true,
      summaryTokenCap: true,
      cachedInputPrice: 0.1,
      summaryCoverage: 'retry',
      keepUserMessages: false,
      keepUserMessagesShare: 0.15,
    });
  });

  it('parses durations in milliseconds or as strings', () => {
    expect(parseDuration(250, 'd')).toBe(250);
    expect(parseDuration('2s', 'd')).toBe(2000);
    expect(parseDuration('500ms', 'd')).toBe(500);
    expect(parseDuration('1.5m', 'd')).toBe(90_000);
    expect(() => parseDuration('soon', 'options.retryBackoff')).toThrow(
      'options.retryBackoff: must be milliseconds or a duration like',
    );
    expect(() => parseDuration(-1, 'd')).toThrow(InvalidInputError);
  });

  it('names the option that is wrong', () => {
    expect(() => resolveOptions({})).toThrow('options.contextBudget: required');
    expect(() => resolveOptions({ contextBudget: 10, triggerRatio: 2 })).toThrow(/^options\.triggerRatio: /);
    expect(() => resolveOptions({ contextBudget: 10, maxAttempts: 0 })).toThrow(/^options\.maxAttempts: /);
  });
});
