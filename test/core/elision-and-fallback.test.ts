// Three edges of elision and fallback, each pinned by a test: an elision epoch under a calibrated
// UsageCounter, a stub never longer than the result it replaces, and a summary left over
// contextBudget losing to a hard trim that fits.
import { describe, expect, it } from 'vitest';
import { Compactor, type ChatMessage } from '../../src/index.js';
import { UsageCounter } from '../../src/core/counting/usage-counter.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import { applyElisions, planElisions } from '../../src/core/compaction/elision.js';
import { findRegions } from '../../src/core/compaction/regions.js';
import {
  assistant,
  charCounter,
  scriptedSummarizer,
  system,
  tool,
  toolRounds,
  user,
  httpError,
} from '../support/messages.js';

describe('an elision epoch under a calibrated UsageCounter', () => {
  // The provider billed far less than the estimator says: the calibrated count of the conversation
  // is under the trigger, while the estimator's count of the stubbed conversation (the digest no
  // longer matches after an elision) is over it.
  const messages = toolRounds(12, 3000);
  const elisionOptions = { ageObservations: true, ageMinChars: 100, ageReclaimMin: 1000, keepRecent: 2 } as const;
  const { elisions } = planElisions(messages, findRegions(messages, 2), elisionOptions);
  const stubbedEstimate = defaultCounter.count(applyElisions(messages, elisions));
  const billed = Math.floor(0.3 * stubbedEstimate);
  const contextBudget = Math.floor((0.6 * stubbedEstimate) / 0.8);

  function calibrated(): UsageCounter {
    const counter = new UsageCounter({ estimator: defaultCounter });
    counter.calibrate(messages, billed);
    return counter;
  }

  it('is entered below the trigger, and the estimator would say the stubbed conversation is over it', () => {
    expect(elisions.length).toBeGreaterThan(0);
    expect(calibrated().count(messages)).toBe(billed);
    expect(billed).toBeLessThan(0.8 * contextBudget);
    expect(calibrated().count(applyElisions(messages, elisions))).toBeGreaterThan(0.8 * contextBudget);
  });

  // The reference's batch rule and the defaults: an epoch is elision only, whatever the recount says.
  it.each([
    ['the reference rules', { elisionEpochs: 'batch', elisionEndsPass: 'under-trigger' }],
    ['the defaults', {}],
  ] as const)('with %s: never summarizes, never calls a backend, never drops a message', async (_, rules) => {
    const summarizer = scriptedSummarizer(httpError(503));
    const compactor = new Compactor({
      summarizer,
      counter: calibrated(),
      contextBudget,
      retryBackoff: 0,
      ...elisionOptions,
      ...rules,
    });
    const result = await compactor.compact(messages);
    expect(summarizer.requests).toHaveLength(0);
    expect(result).toMatchObject({ dropped: 0, summary: null, fallback: false, cutIndex: -1, tokensBefore: billed });
    expect(result.elisions.map(({ index }) => index)).toEqual(elisions.map(({ index }) => index));
    expect(result.messages).toHaveLength(messages.length);
  });
});

describe('a stub longer than the result it replaces is never written', () => {
  // The same call twice; its older, 2-character result would get a ~90-character stub.
  const messages: ChatMessage[] = [
    system('You are an agent.'),
    user('Check the flag.'),
    assistant(null, [['c1', 'read_flag', '{"name":"x"}']]),
    tool('c1', 'ok'),
    assistant(null, [['c2', 'read_flag', '{"name":"x"}']]),
    tool('c2', 'ok'),
    assistant(null, [['c3', 'fs_read', '{"path":"big.txt"}']]),
    tool('c3', 'b'.repeat(3000)),
    assistant('Reading more.'),
    user('go on'),
  ];

  it('the older duplicate keeps its content; a result its stub does shorten is still elided', async () => {
    const compactor = new Compactor({
      summarizer: scriptedSummarizer('never'),
      counter: charCounter,
      contextBudget: 100_000,
      keepRecent: 2,
      ageObservations: true,
      ageMinChars: 100,
      ageReclaimMin: 10,
    });
    const result = await compactor.compact(messages);
    expect(result.elisions.map(({ index }) => index)).toEqual([7]);
    expect(result.messages[3]).toBe(messages[3]);
    for (const { index, stub } of result.elisions)
      expect(stub.length).toBeLessThan(String(messages[index]?.content).length);
  });
});

describe('without a target, a summary left over contextBudget loses to a hard trim that fits', () => {
  // keepRecent 2: the recent window is 40 characters; the middle holds 3,000. Each summary shrinks
  // the conversation but leaves it over the 1,000 budget; dropping the middle fits.
  const messages: ChatMessage[] = [
    system('rules'),
    ...toolRounds(6, 480).slice(1),
    user('one more thing'),
    assistant('sure, doing it now'),
  ];

  it('the summary is refused (a tighter retry, then the trim), so the result fits', async () => {
    const summarizer = scriptedSummarizer('s'.repeat(1500), 't'.repeat(1400));
    const compactor = new Compactor({
      summarizer,
      counter: charCounter,
      contextBudget: 1000,
      keepRecent: 2,
      retryBackoff: 0,
    });
    expect(charCounter.count(messages)).toBeGreaterThan(3000);
    const result = await compactor.compact(messages);
    expect(summarizer.requests).toHaveLength(2);
    expect(result.summary).toBeNull();
    expect(result.fallback).toBe(true);
    expect(result.exhausted).toBe(false);
    expect(result.tokensAfter).toBeLessThanOrEqual(500);
  });
});
