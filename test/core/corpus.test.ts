// Agent trajectories compacted at several budgets through the public `Compactor`, with a fake
// summarizer that answers or fails: the repository set (the MIT recordings and the generated ones,
// corpus/) always, the rest of the extended corpus when it is present (else one skipped test says so).
import { describe, expect, it } from 'vitest';
import { benchmarkCorpus, EXTENDED_CORPUS_ENV, findTrajectory, type Trajectory } from '../../corpus/index.js';
import {
  Compactor,
  toProviderMessages,
  validateMessages,
  type ChatMessage,
  type CompactionResult,
} from '../../src/index.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import { REFERENCE_EXACT, resolveOptions, type CompactionOptions } from '../../src/core/compaction/options.js';
import {
  askers,
  assertCompactionInvariants,
  createFakeSummarizer,
  isProviderStrict,
  purposeOf,
  referenceRegions,
  renderedText,
  type FakeSummarizer,
  type SummarizerBehaviour,
} from '../support/conversations.js';
import { testCorpus } from '../support/corpus.js';
import { transcriptOf } from '../support/messages.js';

const corpus = testCorpus();
const budgets = [8_000, 32_000, 128_000] as const;
const behaviours = ['ok', 'failing'] as const satisfies readonly SummarizerBehaviour[];

/**
 * The same trajectory as a harness would hold it: the task pinned with `sticky: true` and a
 * reminder injected at a fixed depth a third of the way in (before a turn, so no pair is split).
 */
function withHarnessFlags(messages: readonly ChatMessage[]): ChatMessage[] {
  const flagged = [...messages];
  const task = flagged.findIndex((message) => message.role === 'user');
  const taskMessage = flagged[task];
  if (taskMessage !== undefined) flagged[task] = { ...taskMessage, sticky: true };
  let at = Math.floor(flagged.length / 3);
  while (at < flagged.length && flagged[at]?.role === 'tool') at += 1;
  flagged.splice(at, 0, { role: 'user', content: 'Reminder: run the tests before you submit.', depth: 2 });
  return flagged;
}

interface Compaction {
  input: ChatMessage[];
  options: CompactionOptions;
  summarizer: FakeSummarizer;
  result: CompactionResult;
}

async function compactWith(
  input: ChatMessage[],
  behaviour: SummarizerBehaviour,
  options: CompactionOptions,
): Promise<Compaction> {
  const summarizer = createFakeSummarizer(behaviour);
  const compactor = new Compactor({ summarizer, retryBackoff: 0, ...options });
  const result = await compactor.compact(input);
  return { input, options, summarizer, result };
}

function assertSane({ input, options, summarizer, result }: Compaction, behaviour: SummarizerBehaviour): void {
  assertCompactionInvariants({
    input,
    options: resolveOptions(options),
    counter: defaultCounter,
    requests: summarizer.requests,
    texts: summarizer.texts,
    result,
    uniqueContent: true,
  });
  const output = result.messages;
  expect(validateMessages(output)).toHaveLength(output.length);
  // A valid provider conversation: every tool message answers a call of an earlier assistant turn, no harness flags.
  const asker = askers(output);
  output.forEach((message, index) => {
    if (message.role === 'tool')
      expect(asker[index], `output[${index}] answers an earlier call`).toBeGreaterThanOrEqual(0);
  });
  for (const message of toProviderMessages(output)) {
    expect(message).not.toHaveProperty('sticky');
    expect(message).not.toHaveProperty('depth');
  }
  if (isProviderStrict(input)) expect(isProviderStrict(output)).toBe(true);

  const elisionOnly = result.summary === null && !result.fallback && result.elisions.length > 0;
  const noOp = result.summary === null && !result.fallback && result.elisions.length === 0;
  const resolved = resolveOptions(options);
  // Removing messages always shrinks the conversation. An elision-only pass is proved by construction
  // against the trigger only: it may elide a duplicate smaller than its stub (see the finding below).
  if (result.dropped > 0) expect(result.tokensAfter).toBeLessThan(result.tokensBefore);
  if (elisionOnly) expect(result.tokensAfter).toBeLessThanOrEqual(resolved.triggerRatio * resolved.contextBudget);
  expect(result.exhausted).toBe(result.tokensAfter > options.contextBudget);
  if (noOp) {
    expect(result.messages).toEqual(input);
    expect(referenceRegions(input, resolved.keepRecent, resolved.keepTask).middle).toHaveLength(0);
  }
  if (behaviour === 'ok' && !noOp && !elisionOnly) {
    expect(result.summary).not.toBeNull();
    // One request, and one coverage retry when the summary left out identifiers (docs/design.md#coverage).
    const [first, second] = summarizer.requests;
    const retried = summarizer.requests.length === 2 && second !== undefined && purposeOf(second) === 'coverage';
    expect(summarizer.requests).toHaveLength(retried ? 2 : 1);
    if (retried && first !== undefined) expect(purposeOf(first)).toBe('summary');
  }
  if (behaviour === 'failing' && !noOp && !elisionOnly) {
    expect(result.fallback).toBe(true);
    // Three attempts (the default maxAttempts) at the first request, then the hard trim.
    expect(summarizer.requests).toHaveLength(3);
    const fits = result.tokensAfter <= resolved.targetRatio * resolved.contextBudget;
    // Short of fitting, the trim drops the whole middle: the reference's, or more when the recent window gave way (docs/design.md#window-gives-way).
    expect(
      fits || result.dropped >= referenceRegions(input, resolved.keepRecent, resolved.keepTask).middle.length,
    ).toBe(true);
  }
}

describe.each(corpus)('corpus: $name', ({ messages }) => {
  describe.each(budgets)('contextBudget %i', (contextBudget) => {
    describe.each([false, true])('ageObservations %s', (ageObservations) => {
      it.each(behaviours)('summarizer %s: valid, invariant-preserving, sane numbers', async (behaviour) => {
        for (const input of [messages, withHarnessFlags(messages)]) {
          const compaction = await compactWith(input, behaviour, { contextBudget, ageObservations });
          assertSane(compaction, behaviour);
        }
      });
    });
  });
});

/**
 * A trajectory whose one tool result is bigger than any window: jackson-databind-4304's 666,865-char
 * `find` (extended corpus), and the generated run built the same way (repository set).
 */
const hugeResultCases: Array<{ trajectory: Trajectory; length: number | undefined }> = [
  { trajectory: findTrajectory('generated_huge-result'), length: undefined },
  ...corpus
    .filter(({ name }) => name === 'sweagent_doubao_fasterxml__jackson-databind-4304')
    .map((trajectory) => ({ trajectory, length: 666_865 })),
];

describe.each(hugeResultCases)('corpus: the huge tool result of $trajectory.name', ({ trajectory, length }) => {
  const { messages } = trajectory;
  const lengths = messages.map((message) => (message.role === 'tool' ? renderedText(message.content).length : 0));
  const hugeIndex = lengths.indexOf(Math.max(...lengths));
  const huge = renderedText(messages[hugeIndex]?.content ?? null);

  it('is where the corpus notes say: the last real step, before the cost-limit exit', () => {
    expect(hugeIndex).toBe(messages.length - 3);
    // jackson-databind-4304's is pinned to its recorded size; the generated one is at least 600,000 characters.
    if (length === undefined) expect(huge.length).toBeGreaterThanOrEqual(600_000);
    else expect(huge).toHaveLength(length);
  });

  /** What the transcript may hold at most: every tool result and argument string capped, plus framing. */
  function transcriptBound(middle: readonly ChatMessage[], cap: number): number {
    let bound = 0;
    for (const message of middle) {
      const text = renderedText(message.content);
      bound += (message.role === 'tool' ? Math.min(text.length, cap) + 64 : text.length) + 64;
      for (const call of message.tool_calls ?? [])
        bound += call.function.name.length + call.id.length + Math.min(call.function.arguments.length, cap) + 64 + 16;
    }
    return bound;
  }

  describe.each([2000, 500])('toolResultCap %i', (toolResultCap) => {
    it.each(['ok', 'failing'] as const)(
      'summarizer %s: no request holds more than toolResultCap characters of it',
      async (behaviour) => {
        const options = { contextBudget: 32_000, keepRecent: 2, toolResultCap };
        const compaction = await compactWith(messages, behaviour, options);
        assertSane(compaction, behaviour);
        const regions = referenceRegions(messages, 2);
        expect(regions.middle).toContain(hugeIndex);
        expect(compaction.summarizer.requests.length).toBeGreaterThan(0);
        const middle = regions.middle.flatMap((index) => messages[index] ?? []);
        for (const request of compaction.summarizer.requests) {
          const transcript = transcriptOf(request);
          expect(transcript).toContain(
            `${huge.slice(0, toolResultCap)}» [truncated by the harness: ${huge.length - toolResultCap} more characters]`,
          );
          expect(transcript).not.toContain(huge.slice(0, toolResultCap + 1));
          expect(transcript.length).toBeLessThanOrEqual(transcriptBound(middle, toolResultCap));
          expect(transcript.length).toBeLessThan(150_000);
        }
      },
    );
  });

  it('with ageObservations and no trailing grace, the summarizer sees the stub instead', async () => {
    // 16k: still over the trigger once the result is stubbed, so the summarizer runs over the stubbed middle.
    const compaction = await compactWith(messages, 'ok', {
      contextBudget: 16_000,
      keepRecent: 2,
      ageObservations: true,
      ageReclaimMin: 0,
    });
    assertSane(compaction, 'ok');
    const { result, summarizer } = compaction;
    expect(result.elisions).toContainEqual({
      index: hugeIndex,
      stub: `[elided by the harness: ${huge.length}-char bash result; re-run the call if you need it again]`,
    });
    expect(result.summary).not.toBeNull();
    const transcript = transcriptOf(summarizer.requests[0]);
    expect(transcript).toContain(
      `[elided by the harness: ${huge.length}-char bash result; re-run the call if you need it again]`,
    );
    expect(transcript).not.toContain(huge.slice(0, 200));
  });

  it('reference rules: in the recent window it cannot be trimmed, the result says exhausted', async () => {
    const compaction = await compactWith(messages, 'failing', { contextBudget: 32_000, ...REFERENCE_EXACT });
    assertSane(compaction, 'failing');
    expect(compaction.result.messages).toContain(messages[hugeIndex]);
    expect(compaction.result.exhausted).toBe(true);
    expect(compaction.result.fallback).toBe(true);
  });

  it('defaults: the recent window gives way to the last complete turn (docs/design.md#window-gives-way), so the trim drops it and the result fits', async () => {
    const compaction = await compactWith(messages, 'failing', { contextBudget: 32_000 });
    assertSane(compaction, 'failing');
    expect(compaction.result.messages).not.toContain(messages[hugeIndex]);
    expect(compaction.result.messages.slice(-2)).toEqual(messages.slice(-2));
    expect(compaction.result.exhausted).toBe(false);
    expect(compaction.result.fallback).toBe(true);
  });
});

describe('corpus: small older duplicates', () => {
  // An MIT recording the repository carries (examples/trajectories/).
  const trajectory = corpus.find(({ name }) => name === 'taubench_gpt4o_airline_task46_trial3');

  // Message 39 is a 72-char `book_reservation` error the agent retried with the same arguments.
  // The reference makes older copies of a repeated call eligible "whatever their size"
  // (docs/design.md#elision), so it gets the 94-char stub; docs/design.md#never-worse (`stubsShorterOnly`, on by default) never
  // writes a stub longer than what it replaces. Pinned both ways so a change to either is a decision.
  it('reference rules: stubs the small older duplicate even though the stub is longer than the result', async () => {
    expect(trajectory).toBeDefined();
    const messages = trajectory?.messages ?? [];
    const { result } = await compactWith(messages, 'ok', {
      contextBudget: 8_000,
      ageObservations: true,
      ...REFERENCE_EXACT,
    });
    const small = result.elisions.find(({ index }) => index === 39);
    expect(small?.stub).toMatch(/^\[elided by the harness: 72-char book_reservation result;/);
    expect(small?.stub.length).toBe(94);
    expect(result.tokensAfter).toBeLessThanOrEqual(0.8 * 8_000);
  });

  it('defaults: never stubs the small older duplicate', async () => {
    const messages = trajectory?.messages ?? [];
    const { result } = await compactWith(messages, 'ok', { contextBudget: 8_000, ageObservations: true });
    expect(result.elisions.find(({ index }) => index === 39)).toBeUndefined();
    // Nothing else in the middle is worth a stub, so this manual compaction (below the trigger) summarizes.
    expect(result.elisions).toEqual([]);
    expect(result.summary).not.toBeNull();
  });
});

describe("the benchmarks' command line (benchmarkCorpus)", () => {
  it('refuses an argument it does not know, and --corpus without a directory, before any measuring', () => {
    expect(() => benchmarkCorpus(['--help'])).toThrow('unknown argument "--help" (known: --corpus DIR)');
    expect(() => benchmarkCorpus(['--corpus', '../shared/corpus', 'extra'])).toThrow('unknown argument "extra"');
    expect(() => benchmarkCorpus(['--corpus'])).toThrow('--corpus: expected a directory of *.json trajectories');
  });

  it('without arguments or COMPACTOR_EXTENDED_CORPUS: the repository set, whatever stands beside the clone', () => {
    const named = process.env[EXTENDED_CORPUS_ENV];
    delete process.env[EXTENDED_CORPUS_ENV];
    try {
      const { label, extendedDir } = benchmarkCorpus([]);
      expect(label).toMatch(/^the repository set \(\d+ MIT recordings, \d+ generated runs\)$/);
      expect(extendedDir).toBeUndefined();
    } finally {
      if (named !== undefined) process.env[EXTENDED_CORPUS_ENV] = named;
    }
  });
});
