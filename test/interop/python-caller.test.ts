// Callers in other languages (issue 12 §2): a Python workflow (the `temporalio` SDK, installed by
// scripts/python-sdk.mjs) starts `compactConversation` as a child workflow on our task queue,
// where our TypeScript worker serves it, and gets the messages the in-process `Compactor` returns
// for the same conversation and summaries (the built-in extractive summarizer on both sides);
// bad input reaches it as an `ApplicationError` of our type and message.
//
// Twice: with the payload store off (plain JSON, the Python side needs nothing of ours), and with
// a file store and a codec key, where the Python side reads and writes our claims and codec with
// interop/python/compactor_payloads.py — the child's input is a claim Python wrote, its result one
// TypeScript wrote — and a Python client without that module gets a clear error.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Payload } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTrajectory } from '../../corpus/index.js';
import { resolvePythonSdk } from '../../scripts/python-sdk.mjs';
import { loadConfig } from '../../src/config.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { validateMessages } from '../../src/core/schema.js';
import { Compactor, createExtractiveSummarizer, type ChatMessage } from '../../src/index.js';
import { createActivities } from '../../src/activities/index.js';
import type { CompactConversationOptions } from '../../src/workflows/compact-conversation.js';
import { CODEC_ENCODING } from '../../src/payloads/codec.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import { compactConversationInputSchema, compactionResultSchema } from '../../scripts/compact-conversation-schemas.js';
import { claimOf, metadataOf } from '../support/history-payloads.js';
import { runPythonScript } from '../support/python-script.js';
import { bundleWorkflows, testConnection, uniqueId, withWorker, type TestConnection } from '../support/temporal.js';

const CALLER = fileURLToPath(new URL('./python/caller.py', import.meta.url));
const WORKFLOWS = fileURLToPath(new URL('../../src/workflows/index.ts', import.meta.url));
const CONVERSATION = 'openhands_gpt4o_Project-MONAI__MONAI-3715';

/** `value` as JSON with every object's keys sorted: Python's JSON converter sorts them, ours keeps insertion order. */
function canonical(value: unknown): string {
  const sort = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(sort);
    if (typeof item === 'object' && item !== null) {
      return Object.fromEntries(
        Object.keys(item)
          .sort()
          .map((key) => [key, sort(Reflect.get(item, key))]),
      );
    }
    return item;
  };
  return JSON.stringify(sort(JSON.parse(JSON.stringify(value))));
}

interface PythonCall {
  name: string;
  workflowId: string;
  childId: string;
  input: unknown;
}

interface PythonError {
  class: string;
  type: string;
  message: string;
  nonRetryable: boolean;
  details: unknown[];
}

interface PythonReport {
  calls: Array<{
    name: string;
    outcome: { ok: true; result: unknown } | { ok: false; error: PythonError };
    withoutConverter:
      { ok: true; result: unknown } | { ok: false; class: string; message: string; cause: string | null } | null;
  }>;
  seconds: number;
}

type RawEvent = temporal.api.history.v1.IHistoryEvent;

async function rawEvents(t: TestConnection, workflowId: string): Promise<RawEvent[]> {
  return (await t.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
}

function startedInput(events: RawEvent[]): Payload {
  const payload = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  if (payload === undefined || payload === null) throw new Error('no workflow input in history');
  return payload as Payload;
}

/** How a payload sits in history: a claim of our store, our codec's encoding (encrypted or not), or its plain encoding. */
function form(payload: Payload): string {
  if (claimOf(payload) !== undefined) return 'claim';
  const encoding = metadataOf(payload, 'encoding');
  if (encoding !== CODEC_ENCODING) return encoding ?? '?';
  return metadataOf(payload, 'compactor')?.includes(';key=') === true ? `${encoding}, encrypted` : encoding;
}

const MODES = [
  { mode: 'off', env: (): Record<string, string> => ({}) },
  {
    mode: 'on',
    env: (dir: string): Record<string, string> => ({
      COMPACTOR_PAYLOAD_STORE: `file:${dir}`,
      COMPACTOR_CODEC_KEY: randomBytes(32).toString('base64'),
    }),
  },
] as const;

describe('a Python workflow calls compactConversation as a child workflow', () => {
  let python: string;
  let bundle: WorkflowBundleWithSourceMap;
  let messages: ChatMessage[];
  let options: CompactConversationOptions;
  let expected: unknown;
  const badInput = {
    messages: [
      { role: 'system', content: 'You are a careful agent.' },
      { role: 'tool', content: '42' },
    ],
    options: { contextBudget: 1000 },
  };
  let expectedFailure: { message: string; details: unknown };
  const stores: string[] = [];

  beforeAll(async () => {
    [python, bundle] = await Promise.all([resolvePythonSdk(), bundleWorkflows(WORKFLOWS)]);
    messages = findTrajectory(CONVERSATION).messages;
    const size = Math.ceil(JSON.stringify(messages).length / 4);
    options = {
      contextBudget: Math.ceil(size / 2),
      ageObservations: true,
      ageMinChars: 500,
      ageReclaimMin: 5000,
      keepRecent: 6,
      triggerRatio: 0.5,
      targetRatio: 0.25,
      retryBackoff: '50ms',
    };
    expected = await new Compactor({ ...options, summarizer: createExtractiveSummarizer() }).compact(messages);
    try {
      validateMessages(badInput.messages);
      throw new Error('the bad input validated');
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      expectedFailure = {
        message: error.message,
        details: { field: error.field, reason: error.reason, index: error.index },
      };
    }
  });

  afterAll(() => {
    for (const dir of stores) rmSync(dir, { recursive: true, force: true });
  });

  it.each(MODES)(
    'payload store $mode: the same result as the in-process Compactor, InvalidInput as an ApplicationError',
    async ({ mode, env: envOf }) => {
      const store = mkdtempSync(join(tmpdir(), 'compactor-python-'));
      stores.push(store);
      const env = envOf(store);
      const payloads = payloadConverterFromConfig(loadConfig({ env }));
      const t = await testConnection({ dataConverter: payloads.dataConverter });
      const calls: PythonCall[] = [
        {
          name: 'compact',
          workflowId: uniqueId(`py-parent-${mode}`),
          childId: uniqueId(`py-child-${mode}`),
          input: { messages, options },
        },
        {
          name: 'invalid',
          workflowId: uniqueId(`py-parent-bad-${mode}`),
          childId: uniqueId(`py-child-bad-${mode}`),
          input: badInput,
        },
      ];
      for (const call of calls)
        expect(
          compactConversationInputSchema.safeParse(call.input).success,
          `${call.name}: the JSON Schema's source accepts the input shape`,
        ).toBe(call.name === 'compact');

      const report = await withWorker(
        t,
        { workflowBundle: bundle, activities: createActivities({ summarizer: createExtractiveSummarizer() }) },
        () =>
          runPythonScript<PythonReport>(
            python,
            CALLER,
            {
              address: t.address,
              namespace: t.namespace,
              compactorTaskQueue: t.taskQueue,
              pythonTaskQueue: uniqueId('py-tq'),
              calls,
            },
            env,
          ),
      );
      process.stderr.write(`[python-caller] store ${mode}: caller.py ran both calls in ${report.seconds} s\n`);

      const [compacted, invalid] = report.calls;
      if (compacted?.outcome.ok !== true)
        throw new Error(`compact call failed in Python: ${JSON.stringify(compacted?.outcome)}`);
      expect(canonical(compacted.outcome.result)).toBe(canonical(expected));
      expect(compactionResultSchema.safeParse(compacted.outcome.result).success).toBe(true);
      // The case does what it says: elisions and a summary, and fewer messages.
      const result = compactionResultSchema.parse(compacted.outcome.result);
      expect(result.summary).not.toBeNull();
      expect(result.elisions.length).toBeGreaterThan(0);
      expect(result.messages.length).toBeLessThan(messages.length);

      expect(invalid?.outcome).toEqual({
        ok: false,
        error: {
          class: 'ApplicationError',
          type: 'Compaction.InvalidInput',
          message: expectedFailure.message,
          nonRetryable: true,
          details: [expectedFailure.details],
        },
      });

      // How the payloads crossed: in history, as the server keeps them.
      const child = await rawEvents(t, calls[0]?.childId ?? '');
      const completed = child.find((event) => event.workflowExecutionCompletedEventAttributes)
        ?.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0];
      const failed = await rawEvents(t, calls[1]?.childId ?? '');
      const details = failed.find((event) => event.workflowExecutionFailedEventAttributes)
        ?.workflowExecutionFailedEventAttributes?.failure?.applicationFailureInfo?.details?.payloads?.[0];
      const forms = {
        'input (written by Python)': form(startedInput(child)),
        'result (written by TypeScript)': form(completed as Payload),
        'small input (written by Python)': form(startedInput(failed)),
        'failure details (written by TypeScript)': form(details as Payload),
      };
      if (mode === 'off') {
        expect(forms).toEqual({
          'input (written by Python)': 'json/plain',
          'result (written by TypeScript)': 'json/plain',
          'small input (written by Python)': 'json/plain',
          'failure details (written by TypeScript)': 'json/plain',
        });
        // Nothing of ours is needed to read it: a plain Python client gets the same result.
        expect(canonical(compacted.withoutConverter?.ok === true ? compacted.withoutConverter.result : null)).toBe(
          canonical(expected),
        );
      } else {
        expect(forms).toEqual({
          'input (written by Python)': 'claim',
          'result (written by TypeScript)': 'claim',
          'small input (written by Python)': 'binary/compactor, encrypted',
          'failure details (written by TypeScript)': 'binary/compactor, encrypted',
        });
        // Without interop/python/compactor_payloads.py, a claim is an error, never a value.
        expect(compacted.withoutConverter).toMatchObject({ ok: false });
        expect(JSON.stringify(compacted.withoutConverter)).toMatch(/external storage is not configured/);
      }
    },
    120_000,
  );
});
