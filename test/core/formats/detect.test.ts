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

  it('refuses marks of two formats, naming one of each and where it is', () => {
    const value = [
      { role: 'system', content: 'x' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] },
    ];
    expect(formatMarks(value)).toEqual([
      { format: 'openai', where: 'messages[0].role', what: 'role "system"' },
      { format: 'anthropic', where: 'messages[2].content[0].type', what: 'a "tool_use" part' },
    ]);
    expect(() => detectFormat(value)).toThrow(InvalidInputError);
    expect(() => detectFormat(value)).toThrow(
      'messages[2].content[0].type: cannot tell the message format: role "system" at messages[0].role (OpenAI chat), but a "tool_use" part at messages[2].content[0].type (Anthropic Messages); name it with --format openai|anthropic',
    );
  });
});
