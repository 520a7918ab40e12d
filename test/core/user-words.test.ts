// keepUserMessages (docs/design.md#user-words): the user messages of the replaced middle stay
// verbatim and in place, the newest first within keepUserMessagesShare of the budget, the older
// ones summarized; the result and the transcript say how many. Properties across the OpenAI,
// Anthropic and AI SDK formats: pairs never split, the window and the sticky prefix kept as before,
// the kept messages the newest, within their share, the counts honest.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Compactor, InvalidInputError, type ChatMessage, type CompactionOptions } from '../../src/index.js';
import { isSticky } from '../../src/core/schema.js';
import { compactionResultSchema } from '../../scripts/compact-conversation-schemas.js';
import { isSummaryMessage } from '../../src/core/compaction/transcript.js';
import { findRegions, removableMask } from '../../src/core/compaction/regions.js';
import { summarizedLastRound } from '../../src/core/compaction/economics.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import { recordCompaction, replaySession, type SessionEntry } from '../../src/core/agent/session.js';
import {
  compactionRecord,
  compactionRecordsFromSession,
  renderCompactionTable,
} from '../../src/core/agent/compaction-history.js';
import type { AnthropicMessage } from '../../src/core/formats/anthropic-schema.js';
import type { AiSdkMessage } from '../../src/core/formats/ai-sdk-schema.js';
import { anthropicRequestArb } from '../support/anthropic.js';
import { aiSdkMessagesArb } from '../support/ai-sdk.js';
import {
  askers,
  conversationArb,
  createFakeSummarizer,
  filler,
  type SummarizerBehaviour,
} from '../support/conversations.js';
import { assistant, tool, user } from '../support/messages.js';

function compactor(
  behaviour: SummarizerBehaviour,
  options: Omit<CompactionOptions, 'contextBudget'> & { contextBudget: number },
): Compactor {
  return new Compactor({ summarizer: createFakeSummarizer(behaviour), retryBackoff: 0, ...options });
}

/** A task, then `rounds` rounds of: a user message, an assistant call, its 1,200-character result. */
function userRounds(rounds: number): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: 'You fix bugs.' }];
  for (let round = 0; round < rounds; round += 1) {
    messages.push(user(`request ${round}: also fix module_${round}.py ${'please '.repeat(10)}`));
    messages.push(assistant(null, [[`call_${round}`, 'fs_read', `{"path":"m${round}.py"}`]]));
    messages.push(tool(`call_${round}`, filler(1200)));
  }
  messages.push(user('now run the tests'));
  return messages;
}

/**
 * The user messages a compaction that replaced through `cutIndex` could keep, by the rule's words
 * and not the engine's code: role user, removable, not a summary, and no tool result after it
 * answers a turn before it (it is not inside a turn).
 */
function candidates(messages: readonly ChatMessage[], cutIndex: number): number[] {
  const removable = removableMask(messages);
  const asker = askers(messages);
  const found: number[] = [];
  messages.forEach((message, index) => {
    if (index > cutIndex || message.role !== 'user' || removable[index] !== 1 || isSummaryMessage(message)) return;
    const inside = asker.some((owner, at) => at > index && owner >= 0 && owner < index);
    if (!inside) found.push(index);
  });
  return found;
}

describe('keepUserMessages', () => {
  it('keeps the middle user messages verbatim in place, after the summary, and says so', async () => {
    const input = userRounds(6);
    const result = await compactor('ok', { contextBudget: 2_000, keepRecent: 2, keepUserMessages: true }).compact(
      input,
    );
    expect(result.summary).not.toBeNull();
    const kept = input.filter((message) => message.role === 'user');
    expect(kept).toHaveLength(7);
    for (const message of kept) expect(result.messages).toContain(message);
    // The summary stands where the first replaced message stood; the user's words stay in place around it.
    expect(result.messages.slice(0, 4)).toEqual([
      input[0],
      input[1],
      { role: 'user', content: result.summary },
      input[4],
    ]);
    expect(result.userMessages).toEqual({ kept: 6, summarized: 0, keptAt: [1, 4, 7, 10, 13, 16] });
    // The summary replaced only what it did not keep: five tool turns, not the user's words.
    expect(result.dropped).toBe(10);
    expect(result.summary).toMatch(/^\[Summary by the harness of 10 earlier messages\]/);
  });

  it('without it, the same conversation summarizes the user messages with the rest (regression guard)', async () => {
    const input = userRounds(6);
    const result = await compactor('ok', { contextBudget: 2_000, keepRecent: 2 }).compact(input);
    expect(result.userMessages).toBeUndefined();
    expect(result.messages).not.toContain(input[4]);
  });

  it("the result's userMessages is in compactConversation's result schema", async () => {
    const result = await compactor('ok', { contextBudget: 2_000, keepRecent: 2, keepUserMessages: true }).compact(
      userRounds(6),
    );
    expect(result.userMessages?.kept).toBe(6);
    expect(compactionResultSchema.safeParse(JSON.parse(JSON.stringify(result))).success).toBe(true);
    const wrong = { ...result, userMessages: { kept: 'six' } };
    expect(compactionResultSchema.safeParse(wrong).success).toBe(false);
  });

  it('no thrash: the user messages a summary kept after it are not growth since that summary', () => {
    const conversation: ChatMessage[] = [
      { role: 'system', content: 'You fix bugs.' },
      { role: 'user', content: '[Summary by the harness of 9 earlier messages]\n\nThe agent read m0..m4.' },
      user('request 3: also fix module_3.py'),
      user('request 4: also fix module_4.py'),
      assistant(null, [['call_5', 'fs_read', '{"path":"m5.py"}']]),
      tool('call_5', 'x'),
      assistant('done'),
    ];
    const regions = findRegions(conversation, 2);
    expect(summarizedLastRound(conversation, regions, 2, true)).toBe(true);
    expect(summarizedLastRound(conversation, regions, 2, false)).toBe(false);
  });

  it('over its share, the oldest are summarized first', async () => {
    const input = userRounds(6);
    const each = defaultCounter.count([input[4] as ChatMessage]);
    // Room for exactly two of them.
    const share = (2 * each + 1) / 2_000;
    const result = await compactor('ok', {
      contextBudget: 2_000,
      keepRecent: 2,
      keepUserMessages: true,
      keepUserMessagesShare: share,
    }).compact(input);
    expect(result.userMessages).toEqual({ kept: 2, summarized: 4, keptAt: [13, 16] });
    expect(result.messages).toContain(input[13]);
    expect(result.messages).toContain(input[16]);
    expect(result.messages).not.toContain(input[10]);
    expect(result.summary).toMatch(/^\[Summary by the harness of \d+ earlier messages\]/);
  });

  it('is a per-call option of Compactor.compact, and a bad value names the field', async () => {
    const input = userRounds(5);
    const off = compactor('ok', { contextBudget: 2_000, keepRecent: 2 });
    expect((await off.compact(input, { keepUserMessages: true })).userMessages?.kept).toBe(5);
    const on = compactor('ok', { contextBudget: 2_000, keepRecent: 2, keepUserMessages: true });
    expect((await on.compact(input, { keepUserMessages: false })).userMessages).toBeUndefined();
    // @ts-expect-error -- a string is not a boolean
    await expect(on.compact(input, { keepUserMessages: 'yes' })).rejects.toThrow(InvalidInputError);
    await expect(on.compact(input, { keepUserMessages: 'yes' } as never)).rejects.toThrow(
      'callOptions.keepUserMessages: Invalid input: expected boolean, received string',
    );
    expect(() => compactor('ok', { contextBudget: 2_000, keepUserMessagesShare: 0 })).toThrow(
      'options.keepUserMessagesShare',
    );
  });

  it('the hard trim keeps them too, and the transcript replays to the same bytes', async () => {
    const input = userRounds(6);
    const result = await compactor('failing', {
      contextBudget: 2_000,
      keepRecent: 2,
      keepUserMessages: true,
      maxAttempts: 1,
    }).compact(input);
    expect(result.fallback).toBe(true);
    expect(result.userMessages?.kept).toBeGreaterThan(0);
    for (const index of result.userMessages?.keptAt ?? []) expect(result.messages).toContain(input[index]);
    const entries: SessionEntry[] = input.map((message, index) => ({ id: `m${index}`, message }));
    const context = { round: 3, backend: 'a', target: 2_000 };
    const { lines } = recordCompaction(entries, result, context);
    const line = lines.at(-1);
    expect(line).toMatchObject({ type: 'compaction', keptUserIds: result.userMessages?.keptAt.map((i) => `m${i}`) });
    const replayed = replaySession([
      ...entries.map((entry) => ({ type: 'message' as const, id: entry.id, message: entry.message })),
      ...lines,
    ]);
    expect(JSON.stringify(replayed)).toBe(JSON.stringify(result.messages));
    const [fromLine] = compactionRecordsFromSession(lines);
    const record = compactionRecord(context, result);
    expect(fromLine?.userMessages).toEqual(record.userMessages);
    expect(renderCompactionTable([record])).toContain(
      `${result.userMessages?.kept} user messages kept (${result.userMessages?.summarized} summarized)`,
    );
  });

  it('property (OpenAI): pairs whole, kept ones the newest within their share, counts honest, replay exact', async () => {
    let keptSome = 0;
    await fc.assert(
      fc.asyncProperty(
        conversationArb({ maxBlocks: 24 }),
        fc.record({
          budget: fc.integer({ min: 300, max: 12_000 }),
          keepRecent: fc.integer({ min: 0, max: 8 }),
          share: fc.constantFrom(0.02, 0.15, 0.5, 1),
          behaviour: fc.constantFrom<SummarizerBehaviour>('ok', 'failing', 'tooLong'),
        }),
        async (input, { budget, keepRecent, share, behaviour }) => {
          const options = {
            contextBudget: budget,
            keepRecent,
            truncateOversized: false,
            keepUserMessagesShare: share,
          };
          const result = await compactor(behaviour, { ...options, keepUserMessages: true }).compact(input);
          const without = await compactor(behaviour, options).compact(input);
          // Everything but the summary is an input message, in order.
          let last = -1;
          const present = new Set<number>();
          for (const message of result.messages) {
            const index = input.indexOf(message);
            if (index < 0) {
              expect(message.role).toBe('user');
              continue;
            }
            expect(index).toBeGreaterThan(last);
            last = index;
            present.add(index);
          }
          // Pairs: a turn and its results are kept or removed together.
          askers(input).forEach((owner, index) => {
            if (owner >= 0) expect(present.has(index)).toBe(present.has(owner));
          });
          // What follows the last replaced message is as it would be without the option (the window is the same).
          const after = (messages: ChatMessage[], cut: number): ChatMessage[] =>
            messages.filter((message) => input.indexOf(message) > cut);
          if (result.cutIndex >= 0 && without.cutIndex >= 0 && !result.fallback && !without.fallback)
            expect(after(result.messages, without.cutIndex)).toEqual(after(without.messages, without.cutIndex));
          // Sticky messages stay.
          input.forEach((message, index) => {
            if (isSticky(message)) expect(present.has(index)).toBe(true);
          });
          if (result.cutIndex < 0) {
            expect(result.userMessages).toBeUndefined();
            return;
          }
          const words = result.userMessages;
          expect(words).toBeDefined();
          if (words === undefined) return;
          const could = candidates(input, result.cutIndex);
          const keptUpToCut = words.keptAt.filter((index) => index <= result.cutIndex);
          for (const index of words.keptAt) expect(present.has(index)).toBe(true);
          expect(could.filter((index) => present.has(index))).toEqual(keptUpToCut);
          expect(words.summarized).toBe(could.length - keptUpToCut.length);
          expect(words.kept).toBe(words.keptAt.length);
          // The newest: every summarized one is older than every kept one.
          const summarized = could.filter((index) => !present.has(index));
          if (words.kept > 0 && summarized.length > 0)
            expect(Math.max(...summarized)).toBeLessThan(Math.min(...words.keptAt));
          // Within their share of the budget.
          const keptTokens = words.keptAt.reduce(
            (sum, index) => sum + defaultCounter.count([input[index] as ChatMessage]),
            0,
          );
          expect(keptTokens).toBeLessThanOrEqual(share * budget);
          if (words.kept > 0) keptSome += 1;
          // The transcript replays to the same bytes.
          const entries = input.map((message, index) => ({ id: `m${index}`, message }));
          expect(() => recordCompaction(entries, result)).not.toThrow();
        },
      ),
      { numRuns: 200 },
    );
    expect(keptSome).toBeGreaterThan(10);
  });

  it('property (Anthropic): every tool_result answers the message just before, kept user messages are the input own', async () => {
    let keptSome = 0;
    await fc.assert(
      fc.asyncProperty(
        anthropicRequestArb,
        fc.record({
          budget: fc.integer({ min: 300, max: 12_000 }),
          keepRecent: fc.integer({ min: 1, max: 6 }),
          behaviour: fc.constantFrom<SummarizerBehaviour>('ok', 'failing'),
        }),
        async (input, { budget, keepRecent, behaviour }) => {
          const result = await compactor(behaviour, {
            contextBudget: budget,
            keepRecent,
            keepUserMessages: true,
            keepUserMessagesShare: 0.3,
          }).compact(input, { format: 'anthropic' });
          const output = result.messages;
          const toolUses = (message: AnthropicMessage | undefined): string[] =>
            message === undefined || typeof message.content === 'string'
              ? []
              : message.content.flatMap((block) => (block.type === 'tool_use' ? [String(block.id)] : []));
          output.forEach((message, index) => {
            if (typeof message.content === 'string') return;
            for (const block of message.content)
              if (block.type === 'tool_result') expect(toolUses(output[index - 1])).toContain(block.tool_use_id);
          });
          for (const at of result.userMessages?.keptAt ?? []) {
            const message = input.messages[at];
            expect(message?.role).toBe('user');
            expect(output).toContain(message);
            // The user's own words: no tool_result in it.
            if (message !== undefined && typeof message.content !== 'string')
              expect(message.content.some((block) => block.type === 'tool_result')).toBe(false);
          }
          if ((result.userMessages?.kept ?? 0) > 0) keptSome += 1;
        },
      ),
      { numRuns: 150 },
    );
    expect(keptSome).toBeGreaterThan(5);
  });

  it('property (AI SDK): every tool-result answers the last assistant before it, kept user messages are the input own', async () => {
    let keptSome = 0;
    await fc.assert(
      fc.asyncProperty(
        aiSdkMessagesArb,
        fc.record({
          budget: fc.integer({ min: 300, max: 12_000 }),
          keepRecent: fc.integer({ min: 1, max: 6 }),
          behaviour: fc.constantFrom<SummarizerBehaviour>('ok', 'failing'),
        }),
        async (input, { budget, keepRecent, behaviour }) => {
          const result = await compactor(behaviour, {
            contextBudget: budget,
            keepRecent,
            keepUserMessages: true,
            keepUserMessagesShare: 0.3,
          }).compact(input, { format: 'ai-sdk' });
          const output: AiSdkMessage[] = result.messages;
          let asked: string[] = [];
          for (const message of output) {
            if (message.role === 'assistant' && Array.isArray(message.content))
              asked = message.content.flatMap((part) => (part.type === 'tool-call' ? [String(part.toolCallId)] : []));
            if (message.role === 'tool' && Array.isArray(message.content))
              for (const part of message.content)
                if (typeof part !== 'string' && part.type === 'tool-result') expect(asked).toContain(part.toolCallId);
          }
          for (const at of result.userMessages?.keptAt ?? []) {
            expect(input[at]?.role).toBe('user');
            expect(output).toContain(input[at]);
          }
          if ((result.userMessages?.kept ?? 0) > 0) keptSome += 1;
        },
      ),
      { numRuns: 150 },
    );
    expect(keptSome).toBeGreaterThan(5);
  });
});
