// The economic rules of docs/design.md#economics, one describe per option, each against its off switch; and the
// no-thrash property over replayed and generated runs. (The reference's rules, with every one of
// these off, are test/core/engine-rules.test.ts.)
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  Compactor,
  REFERENCE_EXACT,
  type ChatMessage,
  type CompactionOptions,
  type CompactionResult,
  type TokenCounter,
} from '../../src/index.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import { extractiveSummary } from '../../src/summarizers/extractive.js';
import { SUMMARY_ROOM_SHARE } from '../../src/core/compaction/economics.js';
import { compactionSteps } from '../../src/core/compaction/engine.js';
import { runCompactionSteps } from '../../corpus/fake-summarizer.js';
import { needsCompactionCore } from '../../src/core/compaction/needs-compaction.js';
import { resolveOptions } from '../../src/core/compaction/options.js';
import { summaryContent } from '../../src/core/compaction/transcript.js';
import { conversationArb } from '../support/conversations.js';
import { repositoryCorpus } from '../../corpus/index.js';
import { extendedCases } from '../support/corpus.js';
import {
  assistant,
  charCounter,
  scriptedSummarizer,
  system,
  tool,
  toolRounds,
  transcriptOf,
  user,
} from '../support/messages.js';

const fast = { retryBackoff: 1 } as const;

function compactor(
  options: Partial<ConstructorParameters<typeof Compactor>[0]> = {},
  summarizer = scriptedSummarizer('short summary'),
) {
  return new Compactor({ summarizer, counter: charCounter, contextBudget: 1000, keepRecent: 8, ...fast, ...options });
}

/** `rounds` tool rounds whose results are `sizes[i]` characters (the last size is the newest round). */
function roundsOf(sizes: readonly number[]): ChatMessage[] {
  const messages: ChatMessage[] = [system('You are an agent.'), user('Fix the bug in app.py.')];
  sizes.forEach((size, round) => {
    messages.push(assistant(`step ${round}`, [[`call_${round}`, 'fs_read', JSON.stringify({ path: `f${round}.py` })]]));
    messages.push(tool(`call_${round}`, String(round % 10).repeat(size)));
  });
  return messages;
}

describe('recentWindowGivesWay: the recent window gives way to the low-water mark (docs/design.md#window-gives-way)', () => {
  // contextBudget 1000 → mark 500 and room for the summary ceil(0.25 × 500) = 125: sticky messages
  // and the window may weigh 375 characters.
  it('keeps keepRecent messages when they fit the mark with room for the summary', async () => {
    const messages = roundsOf([400, 400, 60, 60, 60, 60]);
    const result = await compactor().compact(messages);
    expect(result.messages.slice(-8)).toEqual(messages.slice(-8));
    expect(result.dropped).toBe(messages.length - 8 - 1);
  });

  it('over the mark, gives way one valid window start at a time: the largest window that fits, turns kept whole', async () => {
    // The newest two rounds weigh 2 × 129; a third (329) would be over 375 with the system prompt.
    const messages = roundsOf([40, 40, 40, 300, 100, 100]);
    const result = await compactor().compact(messages);
    expect(result.messages.slice(-4)).toEqual(messages.slice(-4));
    expect(result.messages).toHaveLength(1 + 1 + 4);
    expect(result.tokensAfter).toBeLessThanOrEqual(500);
    expect(result.aboveMark).toBeUndefined();
    // The reference keeps its 8 messages and ends far above the mark.
    const reference = await compactor({ ...REFERENCE_EXACT }).compact(messages);
    expect(reference.messages.slice(-8)).toEqual(messages.slice(-8));
    expect(reference.tokensAfter).toBeGreaterThan(500);
  });

  it('down to the last complete turn at most, and says so when even that leaves no room: aboveMark recent-window', async () => {
    const messages = [...roundsOf([40, 40, 40, 300, 300, 600]), user('and?')];
    const result = await compactor().compact(messages);
    // The last complete turn: the last assistant message and everything after it.
    expect(result.messages.slice(-3)).toEqual(messages.slice(-3));
    expect(result.messages).toHaveLength(1 + 1 + 3);
    expect(result.aboveMark).toEqual({ mark: 500, reason: 'recent-window' });
  });

  it('says summary-length when the window fitted but the summary took more than its room', async () => {
    const messages = roundsOf([40, 40, 40, 300, 300, 100]);
    const result = await compactor({}, scriptedSummarizer('x'.repeat(400))).compact(messages);
    expect(result.tokensAfter).toBeGreaterThan(500);
    expect(result.aboveMark).toEqual({ mark: 500, reason: 'summary-length' });
  });

  it('aims at the caller target when it is lower than targetRatio × contextBudget', async () => {
    const messages = roundsOf([40, 40, 40, 100, 100, 100]);
    const result = await compactor({ contextBudget: 10_000 }).compact(messages, { target: 400 });
    expect(result.tokensAfter).toBeLessThanOrEqual(400);
    expect(result.summary).not.toBeNull();
    expect(result.messages.slice(-2)).toEqual(messages.slice(-2));
    expect(Math.ceil(SUMMARY_ROOM_SHARE * 400)).toBe(100);
  });
});

describe('elisionEndsPass: when elision alone ends a pass over the trigger (docs/design.md#elision-that-pays)', () => {
  // Over the trigger (800) before eliding; the old results stubbed bring it to about 650 characters.
  const messages = roundsOf([300, 300, 300, 40, 40, 40, 40, 40]);
  const options = { ageObservations: true, ageMinChars: 100, ageReclaimMin: 100, keepRecent: 2 } as const;

  it('under-trigger (the reference): stops once under the trigger', async () => {
    const summarizer = scriptedSummarizer('never');
    const result = await compactor({ ...options, elisionEndsPass: 'under-trigger' }, summarizer).compact(messages);
    expect(charCounter.count(messages)).toBeGreaterThan(800);
    expect(result.elisions.length).toBe(3);
    expect(result.summary).toBeNull();
    expect(result.tokensAfter).toBeGreaterThan(500);
    expect(summarizer.requests).toHaveLength(0);
  });

  it('at-mark: only when that reaches the low-water mark; otherwise the summary, over the stubbed middle', async () => {
    const summarizer = scriptedSummarizer('short summary');
    const result = await compactor({ ...options, elisionEndsPass: 'at-mark' }, summarizer).compact(messages);
    expect(result.summary).not.toBeNull();
    expect(summarizer.requests).toHaveLength(1);
    const transcript = transcriptOf(summarizer.requests[0]);
    expect(transcript).toContain('[elided by the harness: 300-char fs_read result');
    // At a 1,600 budget the stubbed conversation (729) is under the mark (800): elision alone ends the pass.
    const reaching = await compactor(
      { ...options, elisionEndsPass: 'at-mark', contextBudget: 1600 },
      scriptedSummarizer('never'),
    ).compact(messages);
    expect(charCounter.count(messages)).toBeGreaterThan(0.8 * 1600);
    expect(reaching.summary).toBeNull();
    expect(reaching.tokensAfter).toBeLessThanOrEqual(800);
  });

  it('never (the default): the pass always summarizes; the stubs only lighten its transcript', async () => {
    const summarizer = scriptedSummarizer('short summary');
    const result = await compactor(
      { ...options, contextBudget: 1400, triggerRatio: 0.5, targetRatio: 0.5 },
      summarizer,
    ).compact(messages);
    expect(result.elisions.length).toBe(3);
    expect(result.summary).not.toBeNull();
    expect(resolveOptions({ contextBudget: 1 }).elisionEndsPass).toBe('never');
  });
});

describe('elisionEpochs: which elision-only epochs needsCompaction starts below the trigger (docs/design.md#elision-that-pays)', () => {
  const messages = toolRounds(12, 500);
  const options = {
    contextBudget: 1_000_000,
    ageObservations: true,
    ageMinChars: 100,
    ageReclaimMin: 1000,
    keepRecent: 2,
  } as const;

  it("'batch' (the reference): whenever the eligible pool reaches ageReclaimMin; 'never': never", () => {
    expect(compactor({ ...options, elisionEpochs: 'batch' }).needsCompaction(messages)).toBe(true);
    expect(compactor({ ...options, elisionEpochs: 'never' }).needsCompaction(messages)).toBe(false);
  });

  it("'paying' (the default): not when a summary at the trigger would do the job — the epoch would only move it later", () => {
    expect(compactor({ ...options, contextBudget: 20_000 }).needsCompaction(messages)).toBe(false);
    expect(compactor({ ...options, contextBudget: 20_000, cachedInputPrice: 0.5 }).needsCompaction(messages)).toBe(
      false,
    );
  });

  it("'paying': yes when no summary can get the conversation down (a large sticky prefix), so the stubs' saving lasts", () => {
    const pinned = [system('r'.repeat(6000)), ...messages.slice(1)];
    const budget = Math.ceil(charCounter.count(pinned) / 0.79);
    expect(charCounter.count(pinned)).toBeLessThanOrEqual(0.8 * budget);
    expect(compactor({ ...options, contextBudget: budget }).needsCompaction(pinned)).toBe(true);
    expect(compactor({ ...options, contextBudget: budget, elisionEpochs: 'never' }).needsCompaction(pinned)).toBe(
      false,
    );
  });
});

describe('deferShallowCompactions: a compaction is started only when it is worth its cache miss (docs/design.md#no-thrash)', () => {
  // Budget 1000: the trigger is 800, the mark 500. The last turn alone (679) cannot leave room for a summary under the mark.
  const hugeLastTurn = roundsOf([40, 40, 40, 40, 650]);

  it('over the trigger but within the limit, a compaction that cannot reach the mark waits', () => {
    expect(charCounter.count(hugeLastTurn)).toBeGreaterThan(800);
    expect(charCounter.count(hugeLastTurn)).toBeLessThanOrEqual(1000);
    expect(compactor().needsCompaction(hugeLastTurn)).toBe(false);
    expect(compactor({ deferShallowCompactions: false }).needsCompaction(hugeLastTurn)).toBe(true);
  });

  it('over contextBudget (or the target) it is no longer optional', () => {
    const over = roundsOf([40, 40, 40, 40, 40, 40, 700]);
    expect(charCounter.count(over)).toBeGreaterThan(1000);
    expect(compactor().needsCompaction(over)).toBe(true);
    expect(compactor().needsCompaction(hugeLastTurn)).toBe(false);
    // A caller's target is the limit: over it, the compaction is started whatever it can reclaim.
    expect(
      needsCompactionCore(hugeLastTurn, resolveOptions({ contextBudget: 5000 }), { target: 900 }, charCounter),
    ).toBe(true);
  });

  it('never two compactions in consecutive rounds within the limit: a summary written last round defers the next', () => {
    // What a compaction left one round ago: the summary, the window it kept, and a new round.
    const afterCompaction = [
      system('You are an agent.'),
      { role: 'user' as const, content: summaryContent('s'.repeat(100), 30) },
      ...roundsOf([700]).slice(2),
    ];
    const oneRoundLater = [
      ...afterCompaction,
      assistant('step 9', [['call_9', 'fs_read', '{"path":"g.py"}']]),
      tool('call_9', 'z'.repeat(60)),
    ];
    expect(charCounter.count(oneRoundLater)).toBeGreaterThan(800);
    expect(charCounter.count(oneRoundLater)).toBeLessThanOrEqual(1000);
    expect(compactor({ keepRecent: 2 }).needsCompaction(oneRoundLater)).toBe(false);
    // Without a summary in sight the same conversation is compacted (the giant result is not in the last turn).
    const noSummary = oneRoundLater.filter(
      (message) => !(typeof message.content === 'string' && message.content.startsWith('[Summary by the harness')),
    );
    expect(compactor({ keepRecent: 2 }).needsCompaction(noSummary)).toBe(charCounter.count(noSummary) > 800);
  });
});

describe('trimBeatsOverflow off: the reference accepts a summary that shrinks the conversation, over budget or not (docs/design.md#never-worse)', () => {
  it('is accepted with exhausted: true', async () => {
    const messages = [
      system('rules'),
      ...toolRounds(6, 480).slice(1),
      user('one more thing'),
      assistant('sure, doing it now'),
    ];
    const summarizer = scriptedSummarizer('s'.repeat(1500));
    const result = await compactor({ keepRecent: 2, trimBeatsOverflow: false }, summarizer).compact(messages);
    expect(result.summary).not.toBeNull();
    expect(result.exhausted).toBe(true);
    expect(summarizer.requests).toHaveLength(1);
  });
});

describe('REFERENCE_EXACT', () => {
  it('turns every docs/design.md#economics rule off, and each of them defaults to on', () => {
    const reference = resolveOptions({ contextBudget: 1000, ...REFERENCE_EXACT });
    const defaults = resolveOptions({ contextBudget: 1000 });
    expect(reference).toMatchObject({
      recentWindowGivesWay: false,
      elisionEndsPass: 'under-trigger',
      elisionEpochs: 'batch',
      deferShallowCompactions: false,
      stubsShorterOnly: false,
      trimBeatsOverflow: false,
    });
    expect(defaults).toMatchObject({
      recentWindowGivesWay: true,
      elisionEndsPass: 'never',
      elisionEpochs: 'paying',
      deferShallowCompactions: true,
      stubsShorterOnly: true,
      trimBeatsOverflow: true,
      cachedInputPrice: 0.1,
    });
  });

  it('rejects bad values naming the option', () => {
    expect(() => resolveOptions({ contextBudget: 1000, elisionEpochs: 'sometimes' })).toThrow(/options\.elisionEpochs/);
    expect(() => resolveOptions({ contextBudget: 1000, cachedInputPrice: 0 })).toThrow(/options\.cachedInputPrice/);
  });
});

// ---------------------------------------------------------------------------------------------
// No thrash, over whole runs (docs/design.md#no-thrash)
// ---------------------------------------------------------------------------------------------

interface RunOutcome {
  compactions: number[];
  thrash: Array<{ round: number; tokens: number }>;
  /** The thrash that follows a summarizing compaction. */
  afterSummary: Array<{ round: number; tokens: number }>;
  summarized: number;
}

/**
 * A driver's loop, as bench/cost.ts runs it: each round appends what was recorded up to the next
 * assistant turn and compacts when `needsCompaction` says so (offline summaries). Thrash: a
 * compaction in the round after another while the conversation is within `contextBudget`.
 */
function runRounds(
  trajectory: readonly ChatMessage[],
  options: CompactionOptions,
  counter: TokenCounter = defaultCounter,
): RunOutcome {
  const resolved = resolveOptions(options);
  const ends = trajectory.flatMap((message, index) => (message.role === 'assistant' && index > 0 ? [index] : []));
  let conversation: ChatMessage[] = [];
  let seen = 0;
  let last = -2;
  let lastSummary = -2;
  const outcome: RunOutcome = { compactions: [], thrash: [], afterSummary: [], summarized: 0 };
  ends.forEach((end, round) => {
    conversation = conversation.concat(trajectory.slice(seen, end));
    seen = end;
    if (!needsCompactionCore(conversation, resolved, {}, counter)) return;
    const tokens = counter.count(conversation);
    const result: CompactionResult = runCompactionSteps(
      compactionSteps(conversation, resolved, {}, counter),
      (step) => ({ kind: 'summary', text: extractiveSummary(step.request) }),
    );
    if (result.dropped === 0 && result.elisions.length === 0) return;
    if (last === round - 1 && tokens <= resolved.contextBudget) outcome.thrash.push({ round, tokens });
    if (lastSummary === round - 1 && tokens <= resolved.contextBudget) outcome.afterSummary.push({ round, tokens });
    outcome.compactions.push(round);
    last = round;
    if (result.summary !== null) {
      lastSummary = round;
      outcome.summarized += 1;
    }
    conversation = result.messages;
  });
  return outcome;
}

const repository = repositoryCorpus();
describe('no thrash (docs/design.md#no-thrash): never two compactions in consecutive rounds within contextBudget', () => {
  const budgets = [8_000, 16_000, 32_000] as const;

  it.each(repository.map(({ name, messages }) => [name, messages] as const))(
    '%s at several budgets, ageObservations off and on',
    (_, messages) => {
      let compacted = 0;
      // A third of its own size too, so a short trajectory (tau-bench task 46 is ~8,000 tokens) compacts as well.
      for (const contextBudget of [...budgets, Math.max(2_000, Math.floor(defaultCounter.count(messages) / 3))]) {
        for (const ageObservations of [false, true]) {
          const { compactions, thrash } = runRounds(messages, { contextBudget, ageObservations });
          expect(thrash).toEqual([]);
          compacted += compactions.length;
        }
      }
      expect(compacted).toBeGreaterThan(0);
    },
  );

  it('(control) the reference rules do thrash on the repository trajectory the demo replays', () => {
    const monai = repository.find(({ name }) => name.startsWith('openhands_gpt4o_Project-MONAI__MONAI-3715'));
    expect(monai).toBeDefined();
    const { thrash } = runRounds(monai?.messages ?? [], { contextBudget: 8_000, ...REFERENCE_EXACT });
    expect(thrash.length).toBeGreaterThan(0);
    expect(runRounds(monai?.messages ?? [], { contextBudget: 8_000 }).thrash).toEqual([]);
  });

  it.each([...repository, ...extendedCases()].map(({ name, messages }) => [name, messages] as const))(
    '%s at the bench:cost window, ageObservations off and on',
    (_, messages) => {
      const half = Math.floor(defaultCounter.count(messages) / 2);
      for (const ageObservations of [false, true])
        expect(runRounds(messages, { contextBudget: Math.max(8_000, half), ageObservations }).thrash).toEqual([]);
    },
  );

  // The engine keeps no state between calls: it recognises a compaction of the previous round by
  // the summary it left. A hard trim or an elision epoch leaves no such trace, so on generated runs
  // the property is the summary's: the round after a summary compacts only over contextBudget.
  // 300 generated runs: about 8 s here, past 30 s on a machine busy with other work.
  it(
    'generated runs with random options: the round after a summary compacts only over contextBudget',
    { timeout: 120_000 },
    () => {
      let summaries = 0;
      fc.assert(
        fc.property(
          conversationArb({ tidy: true, maxBlocks: 40 }),
          fc.double({ min: 0.1, max: 0.9, noNaN: true }),
          fc.integer({ min: 1, max: 10 }),
          fc.boolean(),
          (messages, share, keepRecent, ageObservations) => {
            const contextBudget = Math.max(50, Math.floor(charCounter.count(messages) * share));
            const { afterSummary, summarized } = runRounds(
              messages,
              { contextBudget, keepRecent, ageObservations, ageMinChars: 50, ageReclaimMin: 200 },
              charCounter,
            );
            summaries += summarized;
            expect(afterSummary).toEqual([]);
          },
        ),
        { numRuns: 300 },
      );
      expect(summaries).toBeGreaterThan(300);
    },
  );
});
