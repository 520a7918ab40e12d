// The `ai-sdk` format (ModelMessage, and a middleware's prompt) through the in-process Compactor:
// round trips, the rules in the AI SDK's own terms as property tests (tool-call↔tool-result never
// split, a result in a tool message after its call's message, system messages in place, the
// current tool-use turn verbatim, kept messages the input's own objects), malformed paths, and a
// corpus trajectory converted to AI SDK messages compacting to the converted form of what its
// OpenAI form compacts to.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { repositoryCorpus } from '../../../corpus/index.js';
import { Compactor, InvalidInputError, type CompactionOptions } from '../../../src/index.js';
import type { AiSdkMessage } from '../../../src/core/formats/ai-sdk-schema.js';
import { aiSdkView, type AiSdkCompactionResult } from '../../../src/core/formats/ai-sdk.js';
import {
  regionsAt,
  removableMask,
  toolGroups,
  trimBoundaries,
  windowStarts,
} from '../../../src/core/compaction/regions.js';
import { aiSdkMessagesArb, toAiSdk } from '../../support/ai-sdk.js';
import { normalizeArguments } from '../../support/anthropic.js';
import { createFakeSummarizer, type SummarizerBehaviour } from '../../support/conversations.js';

// An elision's stub, or a truncation's head and tail around its marker (docs/design.md#truncation).
const STUB =
  /^\[elided by the harness: \d+-char .+ result; re-run the call if you need it again\]$|\n» \[\d+ characters cut from the middle by the harness to fit the context window\] «\n/;

function compactor(behaviour: SummarizerBehaviour, options: CompactionOptions): Compactor {
  return new Compactor({ summarizer: createFakeSummarizer(behaviour), retryBackoff: 0, ...options });
}

function calls(message: AiSdkMessage | undefined): string[] {
  if (message?.role !== 'assistant' || typeof message.content === 'string') return [];
  return message.content.flatMap((part) =>
    part.type === 'tool-call' && typeof part.toolCallId === 'string' ? [part.toolCallId] : [],
  );
}

function results(message: AiSdkMessage | undefined): string[] {
  if (message?.role !== 'tool' || typeof message.content === 'string') return [];
  return message.content.flatMap((part) =>
    part.type === 'tool-result' && typeof part.toolCallId === 'string' ? [part.toolCallId] : [],
  );
}

/** The tool-call ids the tool messages right after `index` answer. */
function answeredAfter(messages: readonly AiSdkMessage[], index: number): string[] {
  const answered: string[] = [];
  for (let at = index + 1; messages[at]?.role === 'tool'; at += 1) answered.push(...results(messages[at]));
  return answered;
}

/** Every rule of docs/compaction.md#formats in the AI SDK's terms; fails naming the first that does not hold. */
function assertAiSdkInvariants(
  input: readonly AiSdkMessage[],
  result: AiSdkCompactionResult,
  keepRecent: number,
): void {
  const output = result.messages;
  const summaries = output.filter((message) => result.summary !== null && message.content === result.summary);
  expect(summaries.length).toBe(result.summary === null ? 0 : 1);
  let position = -1;
  for (const message of output) {
    if (summaries.includes(message)) continue;
    const same = input.indexOf(message);
    if (same >= 0) {
      expect(same).toBeGreaterThan(position);
      position = same;
      continue;
    }
    // A rebuilt tool message: the same parts but tool results whose output is now a stub.
    const index = input.findIndex(
      (original, at) => at > position && original.role === 'tool' && original.content.length === message.content.length,
    );
    const original = input[index];
    if (original === undefined || typeof original.content === 'string' || typeof message.content === 'string')
      throw new Error('a rebuilt message has no input message');
    const parts = original.content;
    message.content.forEach((part, at) => {
      const before = parts[at];
      if (part === before) return;
      expect(part.type).toBe('tool-result');
      expect(part).toEqual({
        ...before,
        output: { type: expect.stringMatching(/^(error-)?text$/), value: expect.stringMatching(STUB) },
      });
    });
    position = index;
  }
  // System messages are sticky: every one is in the output.
  for (const message of input) if (message.role === 'system') expect(output).toContain(message);
  // Pairs: a tool result answers a call of the last assistant message before it; an answered call stays answered.
  output.forEach((message, index) => {
    let asker = index - 1;
    while (output[asker]?.role === 'tool') asker -= 1;
    for (const id of results(message)) expect(calls(output[asker])).toContain(id);
    const inInput = input.indexOf(message);
    if (inInput >= 0 && calls(message).length > 0)
      expect(answeredAfter(output, index)).toEqual(answeredAfter(input, inInput));
  });
  // The current tool-use turn (the last message calls tools, or answers the assistant message before it) is kept.
  let current = input.length - 1;
  while (input[current]?.role === 'tool') current -= 1;
  if (calls(input[current]).length > 0 && keepRecent > 0) expect(output).toContain(input[current]);
}

describe('ai-sdk format: round trips', () => {
  it('a conversation under its budget comes back as it came: the same objects', async () => {
    const input: AiSdkMessage[] = [
      { role: 'system', content: 'You fix bugs.' },
      { role: 'user', content: 'Fix app.py' },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'Read it first.' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: { path: 'app.py' } },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: { type: 'text', value: 'x' } },
        ],
      },
    ];
    const result = await compactor('ok', { contextBudget: 100_000 }).compact(input, { format: 'ai-sdk' });
    result.messages.forEach((message, index) => expect(message).toBe(input[index]));
    expect(result.messages).toHaveLength(input.length);
  });

  it('an elided result keeps its part and call, its output a text stub (an error stays an error)', async () => {
    const big = 'x'.repeat(9000);
    const input: AiSdkMessage[] = [{ role: 'user', content: 'go' }];
    for (let round = 0; round < 8; round += 1) {
      input.push({
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: `c${round}`, toolName: 'bash', input: { n: round } }],
      });
      input.push({
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: `c${round}`,
            toolName: 'bash',
            output: { type: round === 0 ? 'error-text' : 'text', value: big },
            providerOptions: { cache: round },
          },
        ],
      });
    }
    const result = await compactor('ok', {
      contextBudget: 200_000,
      ageObservations: true,
      ageReclaimMin: 1000,
      keepRecent: 4,
    }).compact(input, { format: 'ai-sdk' });
    expect(result.elisions.length).toBeGreaterThan(0);
    expect(result.elisions[0]).toMatchObject({ index: 2, block: 0 });
    expect(result.messages[2]).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c0',
          toolName: 'bash',
          output: {
            type: 'error-text',
            value: '[elided by the harness: 9000-char bash result; re-run the call if you need it again]',
          },
          providerOptions: { cache: 0 },
        },
      ],
    });
    assertAiSdkInvariants(input, result, 4);
  });

  it('property: with any budget, window and summarizer, every rule holds in AI SDK terms', async () => {
    await fc.assert(
      fc.asyncProperty(
        aiSdkMessagesArb,
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
          }).compact(input, { format: 'ai-sdk' });
          assertAiSdkInvariants(input, result, keepRecent);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('property: no window start and no trim boundary of the engine falls inside one AI SDK message', () => {
    fc.assert(
      fc.property(aiSdkMessagesArb, (input) => {
        const view = aiSdkView(input);
        const { messages } = view;
        const inside = (at: number): boolean =>
          at > 0 && at < messages.length && view.sourceOf(at) === view.sourceOf(at - 1);
        const groups = toolGroups(messages);
        for (const start of windowStarts(messages, -1, messages.length, groups)) expect(inside(start)).toBe(false);
        const regions = regionsAt(messages.length, groups, removableMask(messages, groups));
        for (const boundary of trimBoundaries(regions)) {
          const next = regions.middle[boundary];
          if (next !== undefined) expect(inside(next)).toBe(false);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('ai-sdk format: malformed input names the path', () => {
  const turn = (): AiSdkMessage[] => [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'f', input: {} }] },
  ];
  const cases: Array<[string, unknown, string, RegExp]> = [
    ['not an array', { messages: [] }, 'messages', /array/],
    ['an unknown role', [{ role: 'bot', content: 'x' }], 'messages[0].role', /system, user, assistant, tool/],
    [
      'a system message of parts',
      [{ role: 'system', content: [{ type: 'text', text: 'x' }] }],
      'messages[0].content',
      /string/,
    ],
    ['a tool message of text', [{ role: 'tool', content: 'x' }], 'messages[0].content', /tool-result parts/],
    ['a part without type', [{ role: 'user', content: [{ text: 'x' }] }], 'messages[0].content[0].type', /required/],
    [
      'a tool-call without toolName',
      [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c', input: {} }] }],
      'messages[0].content[0].toolName',
      /required/,
    ],
    [
      'a tool-call in a user message',
      [{ role: 'user', content: [{ type: 'tool-call', toolCallId: 'c', toolName: 'f', input: {} }] }],
      'messages[0].content[0].type',
      /only allowed in an assistant message/,
    ],
    [
      'a tool-result answering nothing',
      [
        ...turn(),
        {
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: 'c9', toolName: 'f', output: { type: 'text', value: '' } }],
        },
      ],
      'messages[2].content[0].toolCallId',
      /answers no tool-call/,
    ],
    [
      'a tool-result without output',
      [...turn(), { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'f' }] }],
      'messages[2].content[0].output',
      /required/,
    ],
    [
      'two calls with one id',
      [
        {
          role: 'assistant',
          content: [
            { type: 'tool-call', toolCallId: 'c', toolName: 'f', input: {} },
            { type: 'tool-call', toolCallId: 'c', toolName: 'g', input: {} },
          ],
        },
      ],
      'messages[0].content[1].toolCallId',
      /also the toolCallId of content\[0\]/,
    ],
  ];
  it.each(cases)('%s', (_name, value, field, reason) => {
    let error: unknown;
    try {
      aiSdkView(value);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({ field });
    expect(error instanceof InvalidInputError ? error.reason : '').toMatch(reason);
  });
});

describe('ai-sdk format: a corpus trajectory compacts to the converted form of its OpenAI compaction', () => {
  const trajectories = repositoryCorpus().filter(({ messages }) =>
    messages.every((message) => message.sticky === undefined && message.depth === undefined),
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
  it.each(cases)(
    '%s at %i tokens, summarizer %s, ageObservations %s',
    async (name, budget, behaviour, ageObservations) => {
      const trajectory = trajectories.find((candidate) => candidate.name === name);
      if (trajectory === undefined) throw new Error(name);
      const openai = normalizeArguments(trajectory.messages);
      const aiSdk = toAiSdk(openai);
      const options = { contextBudget: budget, ageObservations, ageReclaimMin: 4_000, keepRecent: 6 };
      const expected = await compactor(behaviour, options).compact(openai);
      const result = await compactor(behaviour, options).compact(aiSdk, { format: 'ai-sdk' });
      expect(result.messages).toEqual(toAiSdk(expected.messages));
      expect(result).toMatchObject({
        tokensBefore: expected.tokensBefore,
        tokensAfter: expected.tokensAfter,
        summary: expected.summary,
        fallback: expected.fallback,
        exhausted: expected.exhausted,
      });
      if (budget === 4_000) expect(expected.tokensAfter).toBeLessThan(expected.tokensBefore);
      assertAiSdkInvariants(aiSdk, result, options.keepRecent);
    },
  );
});
