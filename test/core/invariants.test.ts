// Property tests: the invariants of docs/design.md#invariants over random conversations, options and
// summarizer behaviour, through the synchronous step driver and the async `Compactor`.
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  Compactor,
  REFERENCE_EXACT,
  type ChatMessage,
  type CompactionOptions,
  type CompactionResult,
  type SummarizeRequest,
  type TokenCounter,
} from '../../src/index.js';
import { createCharCounter, defaultCounter } from '../../src/core/counting/tokens.js';
import type { ElisionEndsPass, ElisionEpochs } from '../../src/core/compaction/options.js';
import { compactionSteps, type SummarizeOutcome, type SummarizeStep } from '../../src/core/compaction/engine.js';
import { runCompactionSteps } from '../../corpus/fake-summarizer.js';
import { hardTrim } from '../../src/core/compaction/hard-trim.js';
import { needsCompactionCore } from '../../src/core/compaction/needs-compaction.js';
import { findRegions } from '../../src/core/compaction/regions.js';
import { resolveOptions, type ResolvedOptions, type SummaryCoverage } from '../../src/core/compaction/options.js';
import { startPass } from '../../src/core/compaction/pass.js';
import { CARRIED_FACTS_PREFIX } from '../../src/core/compaction/coverage.js';
import { summarizerMessages, summaryContent } from '../../src/core/compaction/transcript.js';
import {
  SUMMARIZER_BEHAVIOURS,
  assertCompactionInvariants,
  conversationArb,
  createFakeSummarizer,
  expectedTrim,
  fakeOutcome,
  isProviderStrict,
  purposeOf,
  referenceRegions,
  type SummarizerBehaviour,
} from '../support/conversations.js';

// Memoised: the same string objects are counted many times per case (a Map lookup of the same
// string is a pointer comparison; V8 caches string hashes).
const wordCounts = new Map<string, number>();
function wordsIn(text: string): number {
  let words = wordCounts.get(text);
  if (words === undefined) {
    if (wordCounts.size > 50_000) wordCounts.clear();
    words = 0;
    let inWord = false;
    for (let index = 0; index < text.length; index += 1) {
      const code = text.charCodeAt(index);
      const space = code === 32 || code === 10 || code === 9 || code === 13;
      if (!space && !inWord) words += 1;
      inWord = !space;
    }
    wordCounts.set(text, words);
  }
  return words;
}

const counters = {
  default: defaultCounter,
  dense: createCharCounter({ charsPerToken: 2, perMessage: 0 }),
  // A complete-request adapter: the backend's tool declarations and framing on top of the estimate.
  framed: { count: (messages: readonly ChatMessage[]) => defaultCounter.count(messages) + 57 },
  // Not proportional to characters (like a real tokenizer on unusual text): one token per word.
  words: {
    count: (messages: readonly ChatMessage[]) =>
      messages.reduce((sum, message) => {
        let words = 4;
        if (typeof message.content === 'string') words += wordsIn(message.content);
        else for (const part of message.content ?? []) words += typeof part.text === 'string' ? wordsIn(part.text) : 0;
        for (const call of message.tool_calls ?? [])
          words += wordsIn(call.function.name) + wordsIn(call.function.arguments);
        return sum + words;
      }, 0),
  },
} satisfies Record<string, TokenCounter>;
type CounterName = keyof typeof counters;
const counterNames = Object.keys(counters) as CounterName[];

type StepBehaviour = SummarizerBehaviour | 'cancelled';

/**
 * Every message, field and nested array/part by reference: comparing two snapshots with
 * `isDeepStrictEqual` detects any mutation of the input down to content parts and tool calls,
 * without copying the (large) strings.
 */
function shallowSnapshot(messages: readonly ChatMessage[]): unknown[] {
  return messages.map((message) => [
    message,
    Object.entries(message).map(([key, value]) => [
      key,
      value,
      Array.isArray(value)
        ? value.map((item: unknown) => (typeof item === 'object' && item !== null ? { ...item } : item))
        : undefined,
    ]),
  ]);
}

/** Options relative to the conversation's size, so that every branch of the engine is reached. */
interface SetupSpec {
  keepRecent: number;
  triggerRatio: number;
  targetShare: number;
  budgetShare: number;
  toolResultCap: number;
  ageObservations: boolean;
  ageMinChars: number;
  ageReclaimMin: number;
  targetOfTokens: number | undefined;
  driverCounter: CounterName;
  callCounter: CounterName | undefined;
  first: StepBehaviour;
  second: StepBehaviour;
  /** The economic rules of docs/design.md#economics: all off (the reference), the defaults, or each one at random. */
  rules: Partial<CompactionOptions>;
}

const rulesArb: fc.Arbitrary<Partial<CompactionOptions>> = fc.oneof(
  fc.constant<Partial<CompactionOptions>>({ ...REFERENCE_EXACT }),
  fc.constant<Partial<CompactionOptions>>({}),
  fc.record({
    recentWindowGivesWay: fc.boolean(),
    truncateOversized: fc.boolean(),
    elisionEndsPass: fc.constantFrom<ElisionEndsPass>('under-trigger', 'at-mark', 'never'),
    elisionEpochs: fc.constantFrom<ElisionEpochs>('batch', 'paying', 'never'),
    deferShallowCompactions: fc.boolean(),
    stubsShorterOnly: fc.boolean(),
    trimBeatsOverflow: fc.boolean(),
    cachedInputPrice: fc.constantFrom(0.1, 0.5, 1),
    summaryCoverage: fc.constantFrom<SummaryCoverage>('retry', 'carry', 'off'),
  }),
);

const ratioArb = fc.oneof(fc.constantFrom(1, 0.8, 0.5), fc.double({ min: 0.05, max: 1, noNaN: true }));
// Weighted towards answers, so that the proof and the tighter retry are exercised as often as the failures.
const behaviourArb = (withCancel: boolean): fc.Arbitrary<StepBehaviour> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom<StepBehaviour>('ok', 'tooLong') },
    { weight: 1, arbitrary: fc.constant<StepBehaviour>('dense') },
    {
      weight: withCancel ? 4 : 3,
      arbitrary: fc.constantFrom<StepBehaviour>(
        ...SUMMARIZER_BEHAVIOURS,
        ...(withCancel ? (['cancelled'] as const) : []),
      ),
    },
  );

const setupArb = (withCancel = true): fc.Arbitrary<SetupSpec> =>
  fc.record({
    keepRecent: fc.integer({ min: 0, max: 12 }),
    triggerRatio: ratioArb,
    targetShare: fc.oneof(fc.constant(1), fc.double({ min: 0.01, max: 1, noNaN: true })),
    budgetShare: fc.oneof(fc.constantFrom(0.05, 0.5, 1, 2), fc.double({ min: 0.002, max: 2.5, noNaN: true })),
    toolResultCap: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 41, max: 3000 })),
    ageObservations: fc.boolean(),
    ageMinChars: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3000 })),
    ageReclaimMin: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 3001, max: 30_000 })),
    // A caller's target on a third of the runs.
    targetOfTokens: fc.oneof(
      { weight: 2, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1.5, noNaN: true })) },
    ),
    driverCounter: fc.constantFrom(...counterNames),
    callCounter: fc.option(fc.constantFrom(...counterNames), { nil: undefined, freq: 2 }),
    first: behaviourArb(withCancel),
    second: behaviourArb(withCancel),
    rules: rulesArb,
  });

interface Setup {
  options: ResolvedOptions;
  target: number | undefined;
  driverCounter: TokenCounter;
  callCounter: TokenCounter | undefined;
  /** The counter every count must use. */
  counter: TokenCounter;
  behaviourFor: (step: SummarizeStep) => StepBehaviour;
}

function materialise(messages: readonly ChatMessage[], spec: SetupSpec): Setup {
  const driverCounter = counters[spec.driverCounter];
  const callCounter = spec.callCounter === undefined ? undefined : counters[spec.callCounter];
  const counter = callCounter ?? driverCounter;
  const tokens = counter.count(messages);
  const options = resolveOptions({
    contextBudget: Math.max(1, Math.round(tokens * spec.budgetShare)),
    triggerRatio: spec.triggerRatio,
    targetRatio: spec.triggerRatio * spec.targetShare,
    keepRecent: spec.keepRecent,
    toolResultCap: spec.toolResultCap,
    ageObservations: spec.ageObservations,
    ageMinChars: spec.ageMinChars,
    ageReclaimMin: spec.ageReclaimMin,
    retryBackoff: 0,
    ...spec.rules,
  });
  const target = spec.targetOfTokens === undefined ? undefined : Math.floor(tokens * spec.targetOfTokens);
  return {
    options,
    target,
    driverCounter,
    callCounter,
    counter,
    behaviourFor: (step) => (step.purpose === 'summary' ? spec.first : spec.second),
  };
}

interface SyncRun {
  result: CompactionResult;
  steps: SummarizeStep[];
  texts: string[];
}

function runSync(messages: readonly ChatMessage[], setup: Setup): SyncRun {
  const steps: SummarizeStep[] = [];
  const texts: string[] = [];
  const overrides = { target: setup.target, counter: setup.callCounter };
  const result = runCompactionSteps(
    compactionSteps(messages, setup.options, overrides, setup.driverCounter),
    (step) => {
      steps.push(step);
      const behaviour = setup.behaviourFor(step);
      const outcome = behaviour === 'cancelled' ? ({ kind: 'cancelled' } as const) : fakeOutcome(step, behaviour);
      if (outcome.kind === 'summary') texts.push(outcome.text);
      return outcome;
    },
  );
  return { result, steps, texts };
}

type Branch = 'no-op' | 'elision-only' | 'summary' | 'summary after retry' | 'trim' | 'trim dropping nothing';

function branchOf({ result, steps }: SyncRun): Branch {
  if (result.summary !== null) return steps.length === 2 ? 'summary after retry' : 'summary';
  if (result.fallback) return result.dropped === 0 ? 'trim dropping nothing' : 'trim';
  return result.elisions.length > 0 ? 'elision-only' : 'no-op';
}

describe('compaction invariants (sync step driver)', () => {
  it('hold for random conversations, options and summarizer behaviour; results are deterministic', () => {
    const branches = new Map<Branch, number>();
    let elided = 0;
    let strictInputs = 0;
    fc.assert(
      fc.property(conversationArb(), setupArb(), (messages, spec) => {
        const setup = materialise(messages, spec);
        const snapshot = shallowSnapshot(messages);
        const run = runSync(messages, setup);

        assertCompactionInvariants({
          input: messages,
          options: setup.options,
          target: setup.target,
          counter: setup.counter,
          requests: run.steps.map((step) => step.request),
          texts: run.texts,
          result: run.result,
          uniqueContent: true,
        });
        // Never more than the first request and one retry (tighter, or for coverage), in that order.
        const purposes = run.steps.map((step) => step.purpose);
        expect(purposes[0] ?? 'summary').toBe('summary');
        expect(purposes.length).toBeLessThanOrEqual(2);
        if (purposes[1] === 'coverage') expect(setup.options.summaryCoverage).toBe('retry');
        for (const step of run.steps) expect(purposeOf(step.request)).toBe(step.purpose);
        // The summary as written, without the carried-facts line (docs/design.md#coverage).
        const carriedAt = run.result.summary?.lastIndexOf(`\n\n${CARRIED_FACTS_PREFIX} `) ?? -1;
        const written = carriedAt < 0 ? run.result.summary : (run.result.summary?.slice(0, carriedAt) ?? null);
        // The tighter retry is accepted only if it is shorter than the first attempt (docs/design.md#proof).
        if (written !== null && purposes[1] === 'tighter' && run.texts.length === 2) {
          const [firstText = '', secondText = ''] = run.texts.map((text) => text.trim());
          expect(written.endsWith(secondText)).toBe(true);
          expect(secondText.length).toBeLessThan(firstText.length);
        }
        // After a coverage retry the summary is one of the two answers, the retry only when it left out less.
        if (written !== null && purposes[1] === 'coverage') {
          const [firstText = '', secondText = ''] = run.texts.map((text) => text.trim());
          expect(written.endsWith(firstText) || (secondText !== '' && written.endsWith(secondText))).toBe(true);
        }
        // The input is not mutated.
        expect(isDeepStrictEqual(shallowSnapshot(messages), snapshot), 'the input is unchanged').toBe(true);
        // Same input → deep-equal result and the same requests (node's comparison: vitest's is slower on big strings).
        const again = runSync(messages, setup);
        expect(isDeepStrictEqual(again.result, run.result), 'the same result twice').toBe(true);
        expect(isDeepStrictEqual(again.steps, run.steps), 'the same requests twice').toBe(true);
        // needsCompaction is true whenever the input is over the trigger (or the target) — with
        // deferShallowCompactions (docs/design.md#no-thrash), whenever it is over contextBudget (or the target).
        const over =
          run.result.tokensBefore > (setup.target ?? setup.options.triggerRatio * setup.options.contextBudget);
        const overLimit = run.result.tokensBefore > (setup.target ?? setup.options.contextBudget);
        const needs = needsCompactionCore(
          messages,
          setup.options,
          { target: setup.target, counter: setup.callCounter },
          setup.driverCounter,
        );
        if (over && (!setup.options.deferShallowCompactions || overLimit)) expect(needs).toBe(true);
        // Below the trigger it is an elision epoch, which elisionEpochs 'never' never starts (docs/design.md#elision-that-pays).
        if (!over && (!setup.options.ageObservations || setup.options.elisionEpochs === 'never'))
          expect(needs).toBe(false);

        const branch = branchOf(run);
        branches.set(branch, (branches.get(branch) ?? 0) + 1);
        if (run.result.elisions.length > 0) elided += 1;
        if (isProviderStrict(messages)) strictInputs += 1;
      }),
      { numRuns: 1500 },
    );
    // The generator must reach every branch, or the properties above prove little.
    for (const branch of [
      'no-op',
      'elision-only',
      'summary',
      'summary after retry',
      'trim',
      'trim dropping nothing',
    ] as const) {
      expect(branches.get(branch) ?? 0, `runs that ended in "${branch}"`).toBeGreaterThan(10);
    }
    expect(elided).toBeGreaterThan(150);
    expect(strictInputs).toBeGreaterThan(150);
  }, 60_000);

  it('the proof is exact at its boundary: a summary is accepted iff tokensAfter < tokensBefore and ≤ target', () => {
    let probed = 0;
    fc.assert(
      fc.property(conversationArb(), setupArb(false), fc.integer({ min: -2, max: 2 }), (messages, spec, delta) => {
        // `words` does not grow with the length of one word: a summary cannot be aimed at a count with it.
        if ((spec.callCounter ?? spec.driverCounter) === 'words') return;
        // The reference's proof: the docs/design.md#economics rules add conditions (and move the window) on purpose.
        const setup = materialise(messages, { ...spec, rules: { ...REFERENCE_EXACT } });
        const overrides = { target: setup.target, counter: setup.callCounter };
        const run = (answer: (step: SummarizeStep) => SummarizeOutcome) =>
          runCompactionSteps(compactionSteps(messages, setup.options, overrides, setup.driverCounter), answer);
        // A failing first answer tells us whether there is a summarize step and what was elided before it.
        let steps = 0;
        const probe = run(() => {
          steps += 1;
          return { kind: 'failed', reason: 'exhausted', message: 'probe' };
        });
        if (steps === 0) return;
        const regions = referenceRegions(messages, setup.options.keepRecent, setup.options.keepTask);
        const stubs = new Map(probe.elisions.map(({ index, stub }) => [index, stub]));
        const first = regions.middle[0];
        const assembled = (text: string): ChatMessage[] =>
          messages.flatMap((message, index): ChatMessage[] => {
            if (index === first) return [{ role: 'user', content: summaryContent(text, regions.middle.length) }];
            if (regions.inMiddle[index] === true) return [];
            const stub = stubs.get(index);
            return [stub === undefined ? message : { ...message, content: stub }];
          });
        // Accepted iff the count is at most `limit`; aim a summary at limit + delta tokens.
        const limit = Math.min(probe.tokensBefore - 1, setup.target ?? Infinity);
        const wanted = limit + delta;
        const countWith = (length: number): number => setup.counter.count(assembled('x'.repeat(length)));
        if (countWith(1) > wanted) return;
        let low = 1;
        let high = 1;
        while (countWith(high) < wanted) high *= 2;
        while (low < high) {
          const middle = (low + high) >> 1;
          if (countWith(middle) >= wanted) high = middle;
          else low = middle + 1;
        }
        if (countWith(low) !== wanted) return;
        probed += 1;
        const texts: string[] = [];
        const requests: SummarizeRequest[] = [];
        const result = run((step) => {
          requests.push(step.request);
          if (step.purpose === 'tighter') return { kind: 'failed', reason: 'exhausted', message: 'no retry here' };
          texts.push('x'.repeat(low));
          return { kind: 'summary', text: 'x'.repeat(low) };
        });
        expect(result.summary !== null).toBe(delta <= 0);
        if (result.summary !== null) expect(result.tokensAfter).toBe(wanted);
        assertCompactionInvariants({
          input: messages,
          options: setup.options,
          target: setup.target,
          counter: setup.counter,
          requests,
          texts,
          result,
        });
      }),
      { numRuns: 500 },
    );
    expect(probed).toBeGreaterThan(100);
  });

  it('keep a provider-strict conversation provider-strict', () => {
    fc.assert(
      fc.property(conversationArb({ tidy: true }), setupArb(), (messages, spec) => {
        expect(isProviderStrict(messages)).toBe(true);
        const setup = materialise(messages, spec);
        const { result } = runSync(messages, setup);
        expect(isProviderStrict(result.messages)).toBe(true);
      }),
      { numRuns: 600 },
    );
  });

  it('the hard trim never throws and drops the shortest pair-aligned prefix of the middle that fits', () => {
    fc.assert(
      fc.property(
        conversationArb(),
        fc.integer({ min: 0, max: 12 }),
        fc.constantFrom(...counterNames),
        fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1.2, noNaN: true })),
        (messages, keepRecent, counterName, share) => {
          const counter = counters[counterName];
          const options = resolveOptions({ contextBudget: Math.max(1, counter.count(messages)), keepRecent });
          const { aim } = startPass(
            messages,
            options,
            { target: Math.floor(counter.count(messages) * share) },
            counter,
          );
          const regions = findRegions(messages, keepRecent);
          const trim = hardTrim(messages, regions, aim);
          const reference = referenceRegions(messages, keepRecent);
          expect(regions.middle).toEqual(reference.middle);
          expect(regions.cut).toBe(reference.cut);
          expect(trim.dropped).toBe(expectedTrim(messages, reference, counter, aim.trimTo));
          const removed = new Set(reference.middle.slice(0, trim.dropped));
          expect(trim.messages).toEqual(messages.filter((_, index) => !removed.has(index)));
          expect(trim.cutIndex).toBe(trim.dropped === 0 ? -1 : reference.middle[trim.dropped - 1]);
          const fits = counter.count(trim.messages) <= aim.trimTo;
          expect(fits || trim.dropped === reference.middle.length).toBe(true);
        },
      ),
      { numRuns: 1000 },
    );
  });
});

/** A result without `fallbackReason`, whose message says how the driver retried. */
function withoutReason(result: CompactionResult): Omit<CompactionResult, 'fallbackReason'> {
  const { fallbackReason: _reason, ...decided } = result;
  return decided;
}

describe('compaction invariants (async Compactor)', () => {
  /** The async driver's summarizer: the behaviour per request purpose, as in the sync runs. */
  function compactorFor(setup: Setup, spec: SetupSpec, maxAttempts: number) {
    const plan = { summary: asAsync(spec.first), tighter: asAsync(spec.second) };
    const summarizer = createFakeSummarizer(plan);
    const compactor = new Compactor({
      summarizer,
      counter: setup.driverCounter,
      contextBudget: setup.options.contextBudget,
      triggerRatio: setup.options.triggerRatio,
      targetRatio: setup.options.targetRatio,
      keepRecent: setup.options.keepRecent,
      toolResultCap: setup.options.toolResultCap,
      ageObservations: setup.options.ageObservations,
      ageMinChars: setup.options.ageMinChars,
      ageReclaimMin: setup.options.ageReclaimMin,
      recentWindowGivesWay: setup.options.recentWindowGivesWay,
      truncateOversized: setup.options.truncateOversized,
      elisionEndsPass: setup.options.elisionEndsPass,
      elisionEpochs: setup.options.elisionEpochs,
      deferShallowCompactions: setup.options.deferShallowCompactions,
      stubsShorterOnly: setup.options.stubsShorterOnly,
      trimBeatsOverflow: setup.options.trimBeatsOverflow,
      cachedInputPrice: setup.options.cachedInputPrice,
      summaryCoverage: setup.options.summaryCoverage,
      maxAttempts,
      retryBackoff: 0,
    });
    return { compactor, summarizer };
  }
  const asAsync = (behaviour: StepBehaviour): SummarizerBehaviour =>
    behaviour === 'cancelled' ? 'failing' : behaviour;

  it('produce the same result as the sync driver, and the invariants hold', async () => {
    await fc.assert(
      fc.asyncProperty(
        conversationArb({ maxBlocks: 20 }),
        setupArb(false),
        fc.integer({ min: 1, max: 3 }),
        async (messages, spec, maxAttempts) => {
          const setup = materialise(messages, spec);
          const { compactor, summarizer } = compactorFor(setup, spec, maxAttempts);
          const result = await compactor.compact(messages, { target: setup.target, counter: setup.callCounter });
          assertCompactionInvariants({
            input: messages,
            options: setup.options,
            target: setup.target,
            counter: setup.counter,
            requests: summarizer.requests,
            texts: summarizer.texts,
            result,
            uniqueContent: true,
          });
          const sync = runSync(messages, setup);
          // The decision is the engine's and the same; the reason's words are each driver's own (its retries).
          expect(withoutReason(result)).toEqual(withoutReason(sync.result));
          // Retries: a failing or empty answer is asked maxAttempts times, a rejection once.
          const expectedRequests = sync.steps.reduce((sum, step) => {
            const behaviour = setup.behaviourFor(step);
            return sum + (behaviour === 'failing' || behaviour === 'empty' ? maxAttempts : 1);
          }, 0);
          expect(summarizer.requests.length).toBe(expectedRequests);
          expect(summarizer.requests.map((request: SummarizeRequest) => summarizerMessages(request))).toEqual(
            sync.steps.flatMap((step) => {
              const behaviour = setup.behaviourFor(step);
              return Array.from({ length: behaviour === 'failing' || behaviour === 'empty' ? maxAttempts : 1 }, () =>
                summarizerMessages(step.request),
              );
            }),
          );
        },
      ),
      { numRuns: 300 },
    );
  }, 60_000);

  it('resolve with the hard trim when cancelled before the request, without calling the summarizer', async () => {
    await fc.assert(
      fc.asyncProperty(conversationArb({ maxBlocks: 20 }), setupArb(false), async (messages, spec) => {
        const setup = materialise(messages, spec);
        const { compactor, summarizer } = compactorFor(setup, spec, 3);
        const controller = new AbortController();
        controller.abort();
        const result = await compactor.compact(messages, {
          target: setup.target,
          counter: setup.callCounter,
          signal: controller.signal,
        });
        expect(summarizer.requests).toHaveLength(0);
        const sync = runSync(messages, { ...setup, behaviourFor: () => 'cancelled' });
        expect(result).toEqual(sync.result);
        assertCompactionInvariants({
          input: messages,
          options: setup.options,
          target: setup.target,
          counter: setup.counter,
          requests: [],
          texts: [],
          result,
          uniqueContent: true,
        });
        if (sync.steps.length > 0) expect(result.fallback).toBe(true);
      }),
      { numRuns: 200 },
    );
  }, 60_000);
});
