// docs/design.md#truncation: a conversation still over its limit after stubs, summary and trim has
// its largest truncatable messages cut middle-out until it fits, and a transcript replays the cut.
import { describe, expect, it } from 'vitest';
import { Compactor } from '../../src/compactor.js';
import { recordCompaction, replaySession, type SessionEntry } from '../../src/core/agent/session.js';
import { compactionSteps } from '../../src/core/compaction/engine.js';
import { runCompactionSteps } from '../../corpus/fake-summarizer.js';
import { REFERENCE_EXACT, resolveOptions } from '../../src/core/compaction/options.js';
import {
  middleOut,
  TRUNCATION_COUNT_CHARS,
  TRUNCATION_MIN_KEEP,
  truncationMarker,
} from '../../src/core/compaction/truncation.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage } from '../../src/core/types.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { assistant, system, tool, user } from '../support/messages.js';

/** Distinct, readable text: the head and tail of a cut are recognisable. */
const text = (label: string, chars: number): string => {
  const line = `${label} line of output that goes on; `;
  return line.repeat(Math.ceil(chars / line.length)).slice(0, chars);
};

// A system prompt, a pinned task, one finished round, and the last turn with a 41 KB tool result.
const conversation: ChatMessage[] = [
  system('You are a careful agent.'),
  user(`Fix the failing test. ${text('task', 4000)}`, { sticky: true }),
  assistant(null, [['c1', 'bash', '{"command":"ls"}']]),
  tool('c1', text('ls', 3000)),
  assistant(null, [['c2', 'bash', '{"command":"mvn test"}']]),
  tool('c2', text('mvn', 41_000)),
];
const budget = 4000; // tokens of the default counter (characters / 4): the last result alone is ~10k

const compactor = (extra: object = {}) =>
  new Compactor({ summarizer: createExtractiveSummarizer(), contextBudget: budget, keepRecent: 2, ...extra });

describe('truncation of oversized messages', () => {
  it('cuts the oversized tool result in the last turn middle-out until the conversation fits', async () => {
    const result = await compactor().compact(conversation);
    expect(result.exhausted).toBe(false);
    expect(result.tokensAfter).toBeLessThanOrEqual(budget);
    expect(result.truncations).toEqual([{ index: 5, chars: 41_000, kept: expect.any(Number) }]);
    const [{ kept } = { kept: 0 }] = result.truncations ?? [];
    const last = result.messages.at(-1);
    const whole = conversation[5]?.content as string;
    expect(last?.content).toBe(middleOut(whole, kept));
    expect(String(last?.content)).toContain(truncationMarker(41_000 - kept));
    expect(String(last?.content).startsWith(whole.slice(0, 100))).toBe(true);
    expect(String(last?.content).endsWith(whole.slice(-100))).toBe(true);
    // Cut only as far as needed: one more character would not fit.
    const oneMore = result.messages.map((message, index) =>
      index === result.messages.length - 1 ? { ...message, content: middleOut(whole, kept + 1) } : message,
    );
    expect(defaultCounter.count(oneMore)).toBeGreaterThan(budget);
    // The sticky task and the system prompt are untouched.
    expect(result.messages[0]).toBe(conversation[0]);
    expect(result.messages[1]).toBe(conversation[1]);
    // The cut is an elision of its input position.
    expect(result.elisions.find((elision) => elision.index === 5)?.stub).toBe(last?.content);
  });

  it('is off under REFERENCE_EXACT: the result is exhausted, as the reference leaves it', async () => {
    const result = await compactor(REFERENCE_EXACT).compact(conversation);
    expect(result.exhausted).toBe(true);
    expect(result.truncations).toBeUndefined();
  });

  it('never cuts sticky or pinned messages: when they alone are too large, the result stays exhausted', async () => {
    const pinned: ChatMessage[] = [system(text('system', 30_000)), user(text('pinned task', 30_000), { sticky: true })];
    const result = await compactor().compact(pinned);
    expect(result.exhausted).toBe(true);
    expect(result.truncations).toBeUndefined();
    expect(result.messages).toEqual(pinned);
  });

  it('cuts the largest first, and a content array in its longest text part', async () => {
    const parts: ChatMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'short note' },
        { type: 'text', text: text('pasted log', 20_000) },
      ],
    };
    const messages: ChatMessage[] = [system('s'), user('Look at this.'), assistant('Sure.'), parts];
    const result = await compactor({ keepRecent: 1 }).compact(messages);
    expect(result.exhausted).toBe(false);
    expect(result.truncations?.map(({ index }) => index)).toEqual([3]);
    const cut = result.messages.at(-1)?.content;
    expect(Array.isArray(cut) && cut[0]).toEqual({ type: 'text', text: 'short note' });
    expect(Array.isArray(cut) && String(cut[1]?.text)).toContain('characters cut from the middle by the harness');
  });

  it('keeps at least the minimum of each message it cuts, and says so when even that does not fit', async () => {
    const many: ChatMessage[] = [system('s'), user('go')];
    for (let index = 0; index < 3; index += 1)
      many.push(assistant(null, [[`c${index}`, 'bash', '{}']]), tool(`c${index}`, text(`out${index}`, 8000)));
    const result = await compactor({ contextBudget: 600, keepRecent: 6 }).compact(many);
    for (const { kept } of result.truncations ?? []) expect(kept).toBeGreaterThanOrEqual(TRUNCATION_MIN_KEEP);
    expect(result.truncations?.length).toBeGreaterThan(0);
  });

  // A 1,040-character result cut to the least it may keep becomes 1,000 characters and a marker:
  // 1,084. The count would go up, so the cut is undone (found by the invariant property test).
  const barelyOver: ChatMessage[] = [
    system('s'),
    user('go'),
    assistant(null, [['c1', 'bash', '{"command":"cat big.log"}']]),
    tool('c1', text('big', 6000)),
    assistant(null, [['c2', 'bash', '{"command":"cat small.log"}']]),
    tool('c2', text('small', 1040)),
    assistant('Both logs read.'),
  ];

  it('never makes a message longer: a text barely over the least kept is left whole', async () => {
    const result = await compactor({ contextBudget: 200, keepRecent: 10, recentWindowGivesWay: false }).compact(
      barelyOver,
    );
    expect(result.exhausted).toBe(true);
    expect(result.truncations).toEqual([{ index: 3, chars: 6000, kept: TRUNCATION_MIN_KEEP }]);
    expect(result.messages[5]).toBe(barelyOver[5]);
    for (const [index, message] of result.messages.entries())
      expect(String(message.content ?? '').length).toBeLessThanOrEqual(String(barelyOver[index]?.content ?? '').length);
    const onlyTheFirstCut = barelyOver.map((message, index) =>
      index === 3 ? { ...message, content: middleOut(text('big', 6000), TRUNCATION_MIN_KEEP) } : message,
    );
    expect(result.tokensAfter).toBe(defaultCounter.count(onlyTheFirstCut));
  });

  describe('within TRUNCATION_COUNT_CHARS of cut text', () => {
    /** One result of `chars` in the recent window at `budget`; the cut text its probes count. */
    const truncate = (chars: number, budget: number) => {
      const conversation: ChatMessage[] = [
        system('You are a careful agent.'),
        user('Read the log.'),
        assistant(null, [['c1', 'bash', '{"command":"cat build.log"}']]),
        tool('c1', text('log', chars)),
      ];
      let probed = 0;
      const counter = {
        count: (messages: readonly ChatMessage[]) => {
          // The cut text of each count the truncation makes (the pass before it counts the whole text).
          const content = messages[3]?.content;
          if (content !== conversation[3]?.content) probed += String(content).length;
          return defaultCounter.count(messages);
        },
      };
      const options = resolveOptions({ contextBudget: budget, keepRecent: 10, recentWindowGivesWay: false });
      const result = runCompactionSteps(compactionSteps(conversation, options, {}, counter), () => ({
        kind: 'failed',
        reason: 'exhausted',
        message: 'nothing to summarize',
      }));
      const kept = result.truncations?.[0]?.kept ?? 0;
      // Less the final recount of the cut it keeps.
      return { result, kept, probed: probed - (kept + truncationMarker(chars - kept).length) };
    };
    /** True when the cut keeping `kept` characters is the longest that fits `budget` (one more does not). */
    const longest = (chars: number, budget: number, kept: number): boolean => {
      const withCut = (keep: number): ChatMessage[] => [tool('c1', middleOut(text('log', chars), keep))];
      const others = defaultCounter.count([
        system('You are a careful agent.'),
        user('Read the log.'),
        assistant(null, [['c1', 'bash', '{"command":"cat build.log"}']]),
      ]);
      const tokens = (keep: number) => others + defaultCounter.count(withCut(keep)) - defaultCounter.count([]);
      return tokens(kept) <= budget + 1 && tokens(kept + 1) > budget - 1;
    };

    /** What a bisection of a text of `chars` over the least kept would count: a probe per halving, each about the text. */
    const bisectionCost = (chars: number): number =>
      (Math.ceil(Math.log2(chars - TRUNCATION_MIN_KEEP)) + 1) * (chars + truncationMarker(chars).length);

    it('a text of megabytes, whose bisection would count tens of megabytes: the bounded search spends the bound on the cut it keeps', () => {
      expect(bisectionCost(3_000_000)).toBeGreaterThan(10 * TRUNCATION_COUNT_CHARS);
      const { result, kept, probed } = truncate(3_000_000, 600_000);
      expect(result.exhausted).toBe(false);
      expect(result.tokensAfter).toBeLessThanOrEqual(600_000);
      expect(probed).toBeLessThanOrEqual(TRUNCATION_COUNT_CHARS);
      // About 2.4M characters fit; the bound pays for probes of at most 2M, and nearly all of it went to the cut kept.
      expect(longest(3_000_000, 600_000, kept)).toBe(false);
      expect(kept).toBeGreaterThan(0.99 * TRUNCATION_COUNT_CHARS - truncationMarker(3_000_000).length);
    });

    it('a text whose longest cut is within the bound: the bounded search finds the longest cut, counting less than a third of what a bisection would', () => {
      for (const [chars, budget] of [
        [300_000, 60_000],
        [1_000_000, 200_000],
        [1_000_000, 40_000],
      ] as const) {
        const { kept, probed } = truncate(chars, budget);
        expect(bisectionCost(chars)).toBeGreaterThan(TRUNCATION_COUNT_CHARS);
        expect(longest(chars, budget, kept)).toBe(true);
        expect(probed).toBeLessThanOrEqual(TRUNCATION_COUNT_CHARS);
        expect(probed).toBeLessThan(bisectionCost(chars) / 3);
      }
    });

    it('a text whose bisection stays within the bound is bisected to the longest cut', () => {
      expect(bisectionCost(41_000)).toBeLessThanOrEqual(TRUNCATION_COUNT_CHARS);
      const { kept, result } = truncate(41_000, 4000);
      expect(result.tokensAfter).toBeLessThanOrEqual(4000);
      expect(longest(41_000, 4000, kept)).toBe(true);
    });
  });

  it('is replayed by a transcript byte for byte (the cut is an elision line)', async () => {
    const entries: SessionEntry[] = conversation.map((message, index) => ({ id: `m${index}`, message }));
    const result = await compactor().compact(conversation);
    const { lines } = recordCompaction(entries, result);
    const transcript = [...entries.map(({ id, message }) => ({ type: 'message' as const, id, message })), ...lines];
    expect(replaySession(transcript)).toEqual(result.messages);
    expect(lines.at(-1)).toMatchObject({ type: 'compaction', truncated: 1 });
  });
});
