// The `anthropic` format through the in-process Compactor: round trips, the rules in Anthropic's own
// terms as property tests (pairs never split, a result right after its call's message, the system
// prompt and other request fields untouched, the current tool-use turn and its thinking verbatim,
// kept messages the input's own objects), and a corpus trajectory converted to Anthropic compacting
// to the converted form of what its OpenAI form compacts to.
import { ANTHROPIC_UNKNOWN_IMAGE_TOKENS, anthropicImageTokens } from '../../../src/core/counting/image-size.js';
import { base64, pngBytes } from '../../support/images.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { repositoryCorpus } from '../../../corpus/index.js';
import { Compactor, InvalidInputError, type CompactionOptions } from '../../../src/index.js';
import { defaultCounter } from '../../../src/core/counting/tokens.js';
import type { AnthropicMessage, AnthropicRequest } from '../../../src/core/formats/anthropic-schema.js';
import type { AnthropicCompactionResult } from '../../../src/core/formats/anthropic.js';
import { anthropicView } from '../../../src/core/formats/anthropic.js';
import {
  regionsAt,
  removableMask,
  toolGroups,
  trimBoundaries,
  windowStarts,
} from '../../../src/core/compaction/regions.js';
import { anthropicRequestArb, normalizeArguments, toAnthropic } from '../../support/anthropic.js';
import { createFakeSummarizer, type SummarizerBehaviour } from '../../support/conversations.js';

// An elision's stub, or a truncation's head and tail around its marker (docs/design.md#truncation).
const STUB =
  /^\[elided by the harness: \d+-char .+ result; re-run the call if you need it again\]$|\n» \[\d+ characters cut from the middle by the harness to fit the context window\] «\n/;

function compactor(
  behaviour: SummarizerBehaviour,
  options: Omit<CompactionOptions, 'contextBudget'> & { contextBudget: number },
): Compactor {
  return new Compactor({ summarizer: createFakeSummarizer(behaviour), retryBackoff: 0, ...options });
}

function toolUseIds(message: AnthropicMessage | undefined): string[] {
  if (message === undefined || typeof message.content === 'string') return [];
  return message.content.flatMap((block) =>
    block.type === 'tool_use' && typeof block.id === 'string' ? [block.id] : [],
  );
}

function toolResultIds(message: AnthropicMessage): string[] {
  if (typeof message.content === 'string') return [];
  return message.content.flatMap((block) =>
    block.type === 'tool_result' && typeof block.tool_use_id === 'string' ? [block.tool_use_id] : [],
  );
}

/** Every rule of docs/compaction.md#formats, in Anthropic's terms; throws naming the first that fails. */
function assertAnthropicInvariants(
  input: AnthropicRequest,
  result: AnthropicCompactionResult,
  keepRecent: number,
): void {
  const { messages } = input;
  const output = result.messages;
  const summaries = output.filter(
    (message) => message.role === 'user' && result.summary !== null && message.content === result.summary,
  );
  expect(summaries.length).toBe(result.summary === null ? 0 : 1);
  // Kept messages are the input's own objects, in order; a rebuilt one differs only in stubbed tool_result contents.
  let position = -1;
  for (const message of output) {
    if (summaries.includes(message)) continue;
    const same = messages.indexOf(message);
    if (same >= 0) {
      expect(same).toBeGreaterThan(position);
      position = same;
      continue;
    }
    const index = messages.findIndex(
      (original, at) =>
        at > position &&
        original.role === message.role &&
        Array.isArray(original.content) &&
        Array.isArray(message.content) &&
        original.content.length === message.content.length,
    );
    const original = messages[index];
    expect(original, 'a rebuilt message has its input message').toBeDefined();
    if (original === undefined || typeof original.content === 'string' || typeof message.content === 'string') return;
    const blocks = original.content;
    message.content.forEach((block, at) => {
      const before = blocks[at];
      if (block === before) return;
      expect(block.type).toBe('tool_result');
      expect(block).toEqual({ ...before, content: expect.stringMatching(STUB) });
    });
    position = index;
  }
  // Pairs: every tool_result answers a tool_use of the message just before; every answered tool_use stays answered.
  output.forEach((message, index) => {
    const asked = toolUseIds(output[index - 1]);
    for (const id of toolResultIds(message)) expect(asked).toContain(id);
    const answeredInInput =
      messages.indexOf(message) >= 0
        ? toolResultIds(messages[messages.indexOf(message) + 1] ?? { role: 'user', content: '' })
        : [];
    if (answeredInInput.length > 0)
      expect(toolResultIds(output[index + 1] ?? { role: 'user', content: '' })).toEqual(answeredInInput);
  });
  // The current tool-use turn — the last message asks for tools, or answers the assistant message just
  // before it — is kept as it came, thinking blocks and all (with any recent window at all: keepRecent ≥ 1).
  const last = messages.length - 1;
  const current =
    toolUseIds(messages[last]).length > 0
      ? last
      : toolResultIds(messages[last] ?? { role: 'user', content: '' }).length > 0
        ? last - 1
        : -1;
  if (current >= 0 && keepRecent > 0) expect(output).toContain(messages[current]);
  // A request body comes back with its other fields untouched (the same values).
  expect(result.request).toBeDefined();
  for (const [key, value] of Object.entries(input)) if (key !== 'messages') expect(result.request?.[key]).toBe(value);
  expect(result.request?.messages).toBe(output);
}

describe('anthropic format: round trips', () => {
  it('a conversation under its budget comes back as it came: the same objects, the same body', async () => {
    const input: AnthropicRequest = {
      model: 'claude-sonnet-4-5',
      system: 'You fix bugs.',
      messages: [
        { role: 'user', content: 'Fix app.py' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Read it first.', signature: 'sig' },
            { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'app.py' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'print(1)' }] },
      ],
    };
    const result = await compactor('ok', { contextBudget: 100_000 }).compact(input, { format: 'anthropic' });
    expect(result.messages).toEqual(input.messages);
    result.messages.forEach((message, index) => expect(message).toBe(input.messages[index]));
    expect(result.request).toEqual(input);
    expect([result.dropped, result.cutIndex, result.summary, result.elisions]).toEqual([0, -1, null, []]);
  });

  it('a bare message array comes back as an array, with no request', async () => {
    const input: AnthropicMessage[] = [
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: [{ type: 'text', text: 'hi' }] },
    ];
    const result = await compactor('ok', { contextBudget: 100_000 }).compact(input, { format: 'anthropic' });
    expect(result.messages).toEqual(input);
    expect(result.request).toBeUndefined();
  });

  it('property: with any budget, window and summarizer, every rule holds in Anthropic terms', async () => {
    await fc.assert(
      fc.asyncProperty(
        anthropicRequestArb,
        fc.record({
          budget: fc.integer({ min: 200, max: 20_000 }),
          keepRecent: fc.integer({ min: 0, max: 8 }),
          ageObservations: fc.boolean(),
          behaviour: fc.constantFrom<SummarizerBehaviour>('ok', 'failing', 'tooLong'),
        }),
        async (input, { budget, keepRecent, ageObservations, behaviour }) => {
          const result = await compactor(behaviour, {
            contextBudget: budget,
            keepRecent,
            ageObservations,
            ageReclaimMin: 500,
          }).compact(input, { format: 'anthropic' });
          assertAnthropicInvariants(input, result, keepRecent);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('property: no window start and no trim boundary of the engine falls inside one Anthropic message', () => {
    fc.assert(
      fc.property(anthropicRequestArb, (input) => {
        const view = anthropicView(input);
        const { messages } = view;
        const inside = (at: number): boolean =>
          at > 0 && at < messages.length && view.sourceOf(at) === view.sourceOf(at - 1);
        const groups = toolGroups(messages);
        for (const start of windowStarts(messages, -1, messages.length, groups)) expect(inside(start)).toBe(false);
        // With the whole conversation as the middle, every prefix the hard trim may drop ends between messages.
        const regions = regionsAt(messages.length, groups, removableMask(messages, groups));
        for (const boundary of trimBoundaries(regions)) {
          const next = regions.middle[boundary];
          if (next !== undefined) expect(inside(next)).toBe(false);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('a user message of text and several tool_results maps to one user message before its tool messages', () => {
    const view = anthropicView([
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'a', name: 'f', input: {} },
          { type: 'tool_use', id: 'b', name: 'f', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'a', content: 'A' },
          { type: 'tool_result', tool_use_id: 'b', content: 'B' },
          { type: 'text', text: 'and?' },
        ],
      },
    ]);
    expect(view.messages.map((message) => [message.role, message.tool_call_id, message.content])).toEqual([
      ['assistant', undefined, null],
      ['user', undefined, [{ type: 'text', text: 'and?' }]],
      ['tool', 'a', 'A'],
      ['tool', 'b', 'B'],
    ]);
    expect([0, 1, 2, 3].map((index) => view.sourceOf(index))).toEqual([0, 1, 1, 1]);
    expect(windowStarts(view.messages, -1, 4, toolGroups(view.messages))).toEqual([0, 4]);
  });
});

describe('anthropic format: what is counted', () => {
  it('an image block counts by the Anthropic rule from its header; unknown blocks by their size, never 0', () => {
    // 1280×800 by Anthropic's rule: scaled to a long edge of 1568 at most (it is under), w × h / 750 = 1,366.
    const png = base64(pngBytes(1280, 800, 40_000));
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } };
    const unreadable = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(40_000) } };
    const withUnreadable = anthropicView([{ role: 'user', content: [{ type: 'text', text: 'look' }, unreadable] }]);
    const plain = anthropicView([{ role: 'user', content: [{ type: 'text', text: 'look' }] }]);
    const withImage = anthropicView([{ role: 'user', content: [{ type: 'text', text: 'look' }, image] }]);
    const unknown = anthropicView([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'container_upload', file_id: 'f'.repeat(400) },
        ],
      },
    ]);
    const count = (view: typeof plain): number => defaultCounter.count(view.messages);
    expect(count(withImage) - count(plain)).toBe(anthropicImageTokens(1280, 800));
    expect(anthropicImageTokens(1280, 800)).toBe(1366);
    // A header that cannot be read: the most an image costs, never its base64 length (10,000 tokens here).
    expect(count(withUnreadable) - count(plain)).toBe(ANTHROPIC_UNKNOWN_IMAGE_TOKENS);
    expect(count(unknown)).toBeGreaterThan(count(plain) + 100);
  });

  it('a conversation that is mostly screenshots is compacted (it would count as text alone)', async () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(20_000) } };
    const messages: AnthropicMessage[] = [{ role: 'user', content: 'Click through the settings.' }];
    for (let round = 0; round < 12; round += 1) {
      messages.push({
        role: 'assistant',
        content: [{ type: 'tool_use', id: `toolu_${round}`, name: 'screenshot', input: {} }],
      });
      messages.push({
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: `toolu_${round}`, content: [image] }],
      });
    }
    // Twelve images of an unreadable header at 1,600 tokens each: over the trigger of a 15,000 budget.
    const tool = compactor('ok', { contextBudget: 15_000 });
    expect(tool.needsCompaction(messages, { format: 'anthropic' })).toBe(true);
    const result = await tool.compact(messages, { format: 'anthropic' });
    expect(result.tokensAfter).toBeLessThan(result.tokensBefore);
    expect(result.summary).not.toBeNull();
  });
});

describe('anthropic format: malformed input names the path', () => {
  const valid = (): AnthropicMessage[] => [
    { role: 'user', content: 'Fix app.py' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'app.py' } }] },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'here' },
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' },
      ],
    },
  ];
  const cases: Array<[string, unknown, string, RegExp]> = [
    ['not an array', 'hello', 'messages', /array/],
    ['a request body without messages', { model: 'm' }, 'messages', /required/],
    ['a system role', [{ role: 'system', content: 'x' }], 'messages[0].role', /"system"/],
    ['an unknown role', [{ role: 'bot', content: 'x' }], 'messages[0].role', /user, assistant/],
    ['missing content', [{ role: 'user' }], 'messages[0].content', /required/],
    ['a block without type', [{ role: 'user', content: [{ text: 'x' }] }], 'messages[0].content[0].type', /required/],
    [
      'a text block without text',
      [{ role: 'user', content: [{ type: 'text' }] }],
      'messages[0].content[0].text',
      /required/,
    ],
    [
      'a tool_result answering nothing',
      valid().map((message, index) =>
        index === 2 ? { ...message, content: [{ type: 'tool_result', tool_use_id: 'toolu_9' }] } : message,
      ),
      'messages[2].content[0].tool_use_id',
      /answers no tool_use of messages\[1\]/,
    ],
    [
      'a tool_result without tool_use_id',
      valid().map((message, index) =>
        index === 2 ? { ...message, content: [{ type: 'text', text: 'x' }, { type: 'tool_result' }] } : message,
      ),
      'messages[2].content[1].tool_use_id',
      /required/,
    ],
    [
      'a tool_use in a user message',
      [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'b', input: {} }] }],
      'messages[0].content[0].type',
      /only allowed in an assistant message/,
    ],
    [
      'a tool_use whose input is not an object',
      [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'b', input: 'x' }] }],
      'messages[0].content[0].input',
      /object|record/i,
    ],
    [
      'two tool_use blocks with one id',
      [
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'a', name: 'b', input: {} },
            { type: 'tool_use', id: 'a', name: 'c', input: {} },
          ],
        },
      ],
      'messages[0].content[1].id',
      /also the id of content\[0\]/,
    ],
    [
      'a thinking block without signature',
      [{ role: 'assistant', content: [{ type: 'thinking', thinking: 'hm' }] }],
      'messages[0].content[0].signature',
      /required/,
    ],
    [
      'a tool_result nested in a tool_result',
      [
        { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'b', input: {} }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'a', content: [{ type: 'tool_result', tool_use_id: 'a' }] }],
        },
      ],
      'messages[1].content[0].content[0].type',
      /not allowed inside a tool_result/,
    ],
    ['a system prompt of the wrong type', { system: 5, messages: [] }, 'system', /string or an array of text blocks/],
    ['a system block not text', { system: [{ type: 'image' }], messages: [] }, 'system[0].type', /"text"/],
  ];
  it.each(cases)('%s', (_name, value, field, reason) => {
    let error: unknown;
    try {
      anthropicView(value);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({ field });
    expect(error instanceof InvalidInputError ? error.reason : '').toMatch(reason);
  });

  it('an unknown block type is valid and kept verbatim', async () => {
    const block = {
      type: 'web_search_tool_result',
      tool_use_id: 'srv',
      content: [{ type: 'web_search_result', url: 'u' }],
    };
    const input: AnthropicMessage[] = [
      { role: 'user', content: 'search' },
      { role: 'assistant', content: [block] },
    ];
    const result = await compactor('ok', { contextBudget: 100_000 }).compact(input, { format: 'anthropic' });
    expect(result.messages[1]).toBe(input[1]);
  });

  it('the Compactor refuses an unknown format, naming the option', async () => {
    await expect(compactor('ok', { contextBudget: 100 }).compact([], { format: 'gemini' as 'openai' })).rejects.toThrow(
      'callOptions.format: must be one of openai, anthropic, ai-sdk, got "gemini"',
    );
  });
});

describe('anthropic format: a corpus trajectory compacts to the converted form of its OpenAI compaction', () => {
  const trajectories = repositoryCorpus().filter(({ messages }) =>
    messages.every(
      (message, index) =>
        message.sticky === undefined && message.depth === undefined && (index === 0 || message.role !== 'system'),
    ),
  );
  const cases = trajectories.flatMap((trajectory) =>
    ([4_000, 16_000] as const).flatMap((budget) =>
      (['ok', 'failing'] as const).flatMap((behaviour) =>
        [false, true].map((ageObservations): [string, number, SummarizerBehaviour, boolean] => [
          trajectory.name,
          budget,
          behaviour,
          ageObservations,
        ]),
      ),
    ),
  );
  it('covers at least four trajectories', () => expect(trajectories.length).toBeGreaterThanOrEqual(4));
  it.each(cases)(
    '%s at %i tokens, summarizer %s, ageObservations %s',
    async (name, budget, behaviour, ageObservations) => {
      const trajectory = trajectories.find((candidate) => candidate.name === name);
      if (trajectory === undefined) throw new Error(name);
      const openai = normalizeArguments(trajectory.messages);
      const anthropic = toAnthropic(openai);
      const options = { contextBudget: budget, ageObservations, ageReclaimMin: 4_000, keepRecent: 6 };
      const expected = await compactor(behaviour, options).compact(openai);
      const result = await compactor(behaviour, options).compact(anthropic, { format: 'anthropic' });
      expect(result.request).toEqual(toAnthropic(expected.messages));
      expect(result).toMatchObject({
        tokensBefore: expected.tokensBefore,
        tokensAfter: expected.tokensAfter,
        summary: expected.summary,
        fallback: expected.fallback,
        exhausted: expected.exhausted,
      });
      expect(result.elisions.length).toBe(expected.elisions.length);
      // At the small budget every trajectory is over its trigger: the comparison is of a real compaction.
      if (budget === 4_000) expect(expected.tokensAfter).toBeLessThan(expected.tokensBefore);
      assertAnthropicInvariants(anthropic, result, options.keepRecent);
    },
  );
});
