// Which format a parsed conversation is in: the marks only one format makes, refusal of two, openai for none.
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../src/core/errors.js';
import { detectFormat, formatMarks } from '../../../src/core/formats/detect.js';

describe('detectFormat', () => {
  it.each([
    ['a tool role', [{ role: 'tool', tool_call_id: 'a', content: 'x' }], 'openai'],
    ['tool_calls', [{ role: 'assistant', content: null, tool_calls: [] }], 'openai'],
    ['an image_url part', [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'u' } }] }], 'openai'],
    [
      'a system field beside messages',
      { system: 'Be brief.', messages: [{ role: 'user', content: 'hi' }] },
      'anthropic',
    ],
    [
      'a tool_use block',
      [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] }],
      'anthropic',
    ],
    [
      'a thinking block',
      [{ role: 'assistant', content: [{ type: 'thinking', thinking: 'h', signature: 's' }] }],
      'anthropic',
    ],
    [
      'plain text turns (no mark: the same in every format)',
      [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
      ],
      'openai',
    ],
    ['a request body of plain turns', { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, 'openai'],
  ])('%s: %s', (_name, value, format) => {
    expect(detectFormat(value)).toBe(format);
  });

  it.each([
    [
      'a tool message of parts',
      [
        {
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'f', output: { type: 'text', value: '' } }],
        },
      ],
      'ai-sdk',
    ],
    ['a reasoning part', [{ role: 'assistant', content: [{ type: 'reasoning', text: 'h' }] }], 'ai-sdk'],
    ['an AI SDK image (image field)', [{ role: 'user', content: [{ type: 'image', image: 'data:...' }] }], 'ai-sdk'],
    [
      'an Anthropic image (source field)',
      [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'u' } }] }],
      'anthropic',
    ],
    [
      'a system message then tool-call parts (both allow a system role)',
      [
        { role: 'system', content: 'x' },
        { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'f', input: {} }] },
      ],
      'ai-sdk',
    ],
  ])('%s: %s', (_name, value, format) => {
    expect(detectFormat(value)).toBe(format);
  });

  it('refuses marks no one format allows, naming the one that narrowed it and the one that disagreed', () => {
    const value = [
      { role: 'system', content: 'x' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] },
    ];
    expect(formatMarks(value)).toEqual([
      { where: 'messages[0].role', what: 'role "system"', formats: ['openai', 'ai-sdk'] },
      { where: 'messages[2].content[0].type', what: 'a "tool_use" part', formats: ['anthropic'] },
    ]);
    expect(() => detectFormat(value)).toThrow(InvalidInputError);
    expect(() => detectFormat(value)).toThrow(
      'messages[2].content[0].type: cannot tell the message format: role "system" at messages[0].role (OpenAI chat or AI SDK messages), but a "tool_use" part at messages[2].content[0].type (Anthropic Messages); name it with --format openai|anthropic|ai-sdk',
    );
    expect(() =>
      detectFormat([
        { role: 'tool', tool_call_id: 'a', content: 'x' },
        { role: 'assistant', content: [{ type: 'reasoning', text: 'r' }] },
      ]),
    ).toThrow(
      'role "tool" at messages[0].role (OpenAI chat), but a "reasoning" part at messages[1].content[0].type (AI SDK messages)',
    );
  });
});
