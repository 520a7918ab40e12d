// Unknown option keys (issue 18 item 6): every options object and input refuses a key it does not
// know, naming its path and the closest known name, instead of running as if it were not there.
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { Compactor } from '../../src/compactor.js';
import { planAgentRun } from '../../src/core/agent/agent-input.js';
import { COMPACTION_OPTION_KEYS, resolveOptions } from '../../src/core/compaction/options.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { closestName, editDistance, unknownKeyReason } from '../../src/core/unknown-keys.js';
import { compactorPlugin } from '../../src/worker/plugin.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { createOpenAISummarizer } from '../../src/summarizers/openai.js';
import { createWorker } from '../../src/worker/create-worker.js';
import { compactConversation } from '../../src/workflows/compact-conversation.js';
import { needsCompaction } from '../../src/workflows/compact.js';
import { toolRounds } from '../support/messages.js';

const summarizer = createExtractiveSummarizer();
const messages = toolRounds(2);

/** The field and reason of the `InvalidInputError` `fn` throws. */
function refusal(fn: () => unknown): { field: string; reason: string } {
  try {
    fn();
  } catch (error) {
    if (error instanceof InvalidInputError) return { field: error.field, reason: error.reason };
    throw error;
  }
  throw new Error('accepted');
}

async function asyncRefusal(fn: () => Promise<unknown>): Promise<{ field: string; reason: string }> {
  const error: unknown = await fn().then(
    () => new Error('accepted'),
    (reason: unknown) => reason,
  );
  if (error instanceof InvalidInputError) return { field: error.field, reason: error.reason };
  throw error;
}

/** The `Compaction.InvalidInput` failure workflow code raises, as field and message. */
async function workflowRefusal(
  fn: () => unknown,
): Promise<{ type: string | undefined | null; nonRetryable: boolean; message: string }> {
  const error: unknown = await Promise.resolve()
    .then(fn)
    .then(
      () => new Error('accepted'),
      (reason: unknown) => reason,
    );
  if (error instanceof ApplicationFailure)
    return { type: error.type, nonRetryable: error.nonRetryable === true, message: error.message };
  throw error;
}

describe('the closest name', () => {
  it.each([
    ['keepRecnt', 'keepRecent'],
    ['keepRecnet', 'keepRecent'],
    ['keep_recent', 'keepRecent'],
    ['KeepRecent', 'keepRecent'],
    ['triggerratio', 'triggerRatio'],
    ['contextBudjet', 'contextBudget'],
    ['ageObservation', 'ageObservations'],
    ['retryBackof', 'retryBackoff'],
  ])('%s → %s', (typo, meant) => {
    expect(closestName(typo, COMPACTION_OPTION_KEYS)).toBe(meant);
  });

  it('none for a name far from every known one, and the message then lists them', () => {
    expect(closestName('temperature', COMPACTION_OPTION_KEYS)).toBeUndefined();
    expect(closestName('ab', ['xy', 'cd'])).toBeUndefined();
    expect(unknownKeyReason('temperature', ['target', 'counter'])).toBe(
      'unknown option; the options are target, counter',
    );
    expect(unknownKeyReason('tagret', ['target', 'counter'], 'field')).toBe('unknown field; did you mean target?');
  });

  it('edit distance counts a swap of neighbours as one edit', () => {
    expect([
      editDistance('keepRecent', 'keepRecent'),
      editDistance('keepRecnet', 'keepRecent'),
      editDistance('kitten', 'sitting'),
      editDistance('', 'abc'),
    ]).toEqual([0, 1, 3, 3]);
  });
});

describe('options objects', () => {
  it('resolveOptions', () => {
    expect(refusal(() => resolveOptions({ contextBudget: 1000, keepRecnt: 3 }))).toEqual({
      field: 'options.keepRecnt',
      reason: 'unknown option; did you mean keepRecent?',
    });
    expect(refusal(() => resolveOptions({ contextBudget: 1000, keep_recent: 3 }, 'input.compaction'))).toEqual({
      field: 'input.compaction.keep_recent',
      reason: 'unknown option; did you mean keepRecent?',
    });
  });

  describe('Compactor', () => {
    it('its options (the issue: new Compactor({ contextBudget: 1000, keepRecnt: 3 }))', () => {
      const options: Record<string, unknown> = { summarizer, contextBudget: 1000, keepRecnt: 3 };
      expect(refusal(() => Reflect.construct(Compactor, [options]))).toEqual({
        field: 'options.keepRecnt',
        reason: 'unknown option; did you mean keepRecent?',
      });
      expect(refusal(() => Reflect.construct(Compactor, [{ sumarizer: summarizer, contextBudget: 1000 }]))).toEqual({
        field: 'options.sumarizer',
        reason: 'unknown option; did you mean summarizer?',
      });
      // A per-call option in the constructor would be ignored: refused, not taken.
      expect(
        refusal(() => Reflect.construct(Compactor, [{ summarizer, contextBudget: 1000, target: 500 }])).field,
      ).toBe('options.target');
    });

    it("accepts the workflow compact's activity settings (no effect in-process), so one options object serves both drivers", () => {
      const shared = {
        contextBudget: 1000,
        keepRecent: 3,
        taskQueue: 'summaries',
        startToCloseTimeout: '1m',
        heartbeatTimeout: '5s',
        summarizerModel: 'm',
        maxPayloadBytes: 4096,
        payloadStore: false,
      };
      expect(new Compactor({ ...shared, summarizer }).options).toEqual(
        new Compactor({ contextBudget: 1000, keepRecent: 3, summarizer }).options,
      );
    });

    it('its per-call options', async () => {
      const compactor = new Compactor({ summarizer, contextBudget: 1000 });
      const call: Record<string, unknown> = { keepRecent: 3 };
      expect(await asyncRefusal(() => compactor.compact(messages, call))).toEqual({
        field: 'callOptions.keepRecent',
        reason:
          'unknown option; the options are target, counter, signal, summaryInstructions, summaryPrompt, keepUserMessages, onProgress, format',
      });
      expect(await asyncRefusal(() => compactor.compact(messages, { targt: 10 } as Record<string, unknown>))).toEqual({
        field: 'callOptions.targt',
        reason: 'unknown option; did you mean target?',
      });
    });
  });

  it('the summarizer factories', () => {
    expect(
      refusal(() =>
        createOpenAISummarizer({ model: 'm', apiKey: 'k', baseUrl: 'http://127.0.0.1:1' } as Parameters<
          typeof createOpenAISummarizer
        >[0]),
      ),
    ).toEqual({
      field: 'options.baseUrl',
      reason: 'unknown option; did you mean baseURL?',
    });
    expect(refusal(() => createExtractiveSummarizer({ maxChar: 1000 } as Record<string, unknown>))).toEqual({
      field: 'options.maxChar',
      reason: 'unknown option; did you mean maxChars?',
    });
  });

  it('compactorPlugin, and its activities', () => {
    const base = { summarizer, dataConverter: {}, tracing: 'off' } as const;
    expect(refusal(() => compactorPlugin({ ...base, regster: 'activities' } as Record<string, unknown>))).toEqual({
      field: 'options.regster',
      reason: 'unknown option; did you mean register?',
    });
    expect(
      refusal(() => compactorPlugin({ ...base, activities: { toolRoot: '/tmp' } as Record<string, unknown> })),
    ).toEqual({
      field: 'options.activities.toolRoot',
      reason: 'unknown option; did you mean toolsRoot?',
    });
    expect(
      refusal(() =>
        compactorPlugin({
          ...base,
          activities: { chatServer: { baseUrl: 'http://127.0.0.1:1' } as Record<string, unknown> },
        }),
      ),
    ).toEqual({
      field: 'options.activities.chatServer.baseUrl',
      reason: 'unknown option; did you mean baseURL?',
    });
  });

  it('createWorker, before it connects', async () => {
    // An address nothing listens on: the refusal must come first.
    const temporalEnv = { TEMPORAL_ADDRESS: '127.0.0.1:1' };
    expect(
      await asyncRefusal(() =>
        createWorker({ summarizer, temporalEnv, taskQueu: 'q' } as Parameters<typeof createWorker>[0]),
      ),
    ).toEqual({
      field: 'config.taskQueu',
      reason: 'unknown option; did you mean taskQueue?',
    });
    expect(
      await asyncRefusal(() =>
        createWorker({ summarizer, temporalEnv, chatServer: { apikey: 'k' } as Record<string, unknown> }),
      ),
    ).toEqual({
      field: 'config.chatServer.apikey',
      reason: 'unknown option; did you mean apiKey?',
    });
  });
});

describe('workflow input (the workflow functions outside a worker)', () => {
  it('compact and needsCompaction: their options, activity settings included', async () => {
    expect(
      await workflowRefusal(() =>
        needsCompaction(messages, { contextBudget: 1000, keepRecnt: 3 } as Parameters<typeof needsCompaction>[1]),
      ),
    ).toEqual({
      type: 'Compaction.InvalidInput',
      nonRetryable: true,
      message: 'options.keepRecnt: unknown option; did you mean keepRecent?',
    });
    expect(
      (
        await workflowRefusal(() =>
          needsCompaction(messages, { contextBudget: 1000, summarizerModl: 'm' } as Parameters<
            typeof needsCompaction
          >[1]),
        )
      ).message,
    ).toBe('options.summarizerModl: unknown option; did you mean summarizerModel?');
  });

  it('compactConversation: its input and its options', async () => {
    const run = (input: Record<string, unknown>) => () => Reflect.apply(compactConversation, undefined, [input]);
    expect((await workflowRefusal(run({ messages, options: { contextBudget: 1000, maxAttempt: 2 } }))).message).toBe(
      'options.maxAttempt: unknown option; did you mean maxAttempts?',
    );
    expect((await workflowRefusal(run({ messages, options: { contextBudget: 1000 }, messagse: [] }))).message).toBe(
      'input.messagse: unknown field; did you mean messages?',
    );
  });

  describe('agentRun', () => {
    const model = { provider: 'replay', trajectory: 't', contextWindow: 16_000, maxOutputTokens: 500 };
    const valid = { messages, model, compaction: {} };

    it.each([
      [
        'its compaction settings',
        { ...valid, compaction: { keepRecnt: 3 } },
        'input.compaction.keepRecnt',
        'unknown option; did you mean keepRecent?',
      ],
      [
        "its compaction's activity settings",
        { ...valid, compaction: { heartbeatTimout: '5s' } },
        'input.compaction.heartbeatTimout',
        'unknown option; did you mean heartbeatTimeout?',
      ],
      ['a field of its input', { ...valid, maxRound: 3 }, 'input.maxRound', 'unknown field; did you mean maxRounds?'],
      [
        'a model entry',
        { ...valid, model: [model, { ...model, contextWindw: 8000 }] },
        'input.model[1].contextWindw',
        'unknown field; did you mean contextWindow?',
      ],
      [
        'an openai model entry',
        {
          ...valid,
          model: { provider: 'openai', model: 'gpt-4o', contextWindow: 16_000, maxOutputTokens: 500, temprature: 0 },
        },
        'input.model.temprature',
        'unknown field; did you mean temperature?',
      ],
      [
        'the activity settings',
        { ...valid, chatActivity: { maximumAttempt: 2 } },
        'input.chatActivity.maximumAttempt',
        'unknown field; did you mean maximumAttempts?',
      ],
      [
        'the backend cooldown',
        { ...valid, backendCooldown: { round: 2 } },
        'input.backendCooldown.round',
        'unknown field; did you mean rounds?',
      ],
      [
        'the pricing',
        { ...valid, pricing: { cachedInputs: 0.1 } },
        'input.pricing.cachedInputs',
        'unknown field; did you mean cachedInput?',
      ],
    ])('%s', (_name, input, field, reason) => {
      expect(refusal(() => planAgentRun(input))).toEqual({ field, reason });
    });
  });
});
