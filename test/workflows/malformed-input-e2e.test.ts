// Malformed input on the dev server (issue 11 §3): a sample of every class of
// test/support/malformed.ts runs through the real workflows on a worker. Each must end the
// workflow in its first workflow task with a non-retryable `Compaction.InvalidInput` naming the
// field — no workflow task failure (which Temporal retries for ever), no activity (nothing half
// done). Malformed updates are refused by the validator and leave no trace in history; oversized
// messages end in their documented failures; random mutations of valid inputs end completed or
// in a documented failure, never with a failed workflow task.
import { WorkflowFailedError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import fc from 'fast-check';
import OpenAI from 'openai';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailureType } from '../../src/index.js';
import { agentRunUpdates } from '../../src/shared/agent-run.js';
import { replayActivities, startBackgroundWorker } from '../support/agent.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import {
  MALFORMED_CLASSES,
  fieldFor,
  inputFor,
  mutatedInputArb,
  validAgentInput,
  verdictOf,
  workflowsOf,
  type FuzzWorkflow,
  type MalformedClass,
} from '../support/malformed.js';
import { bundleWorkflows, testConnection, uniqueId, type TestConnection } from '../support/temporal.js';

const TRAJECTORY_DIR = fileURLToPath(new URL('../../examples/trajectories/', import.meta.url));
const TAU = 'taubench_gpt4o_airline_task2_trial1';
/** Workflows in flight at once. */
const CONCURRENCY = 8;
const SEED = 11;

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The kind of each event: the name of its attributes field, e.g. `workflowTaskFailed`. */
function kindsOf(events: readonly HistoryEvent[]): string[] {
  return events.map((event) => {
    const key = Object.keys(event).find((name) => name.endsWith('EventAttributes') && Reflect.get(event, name) != null);
    return key === undefined ? 'unknown' : key.slice(0, -'EventAttributes'.length);
  });
}

function millis(event: HistoryEvent | undefined): number {
  const time = event?.eventTime;
  if (!time) return Number.NaN;
  return Number(time.seconds ?? 0) * 1000 + Math.floor((time.nanos ?? 0) / 1e6);
}

interface Closed {
  status: 'completed' | 'failed' | 'running';
  failure?: ApplicationFailure;
  kinds: string[];
  /** From the start to the close (or the last event), by the server's clock. */
  ms: number;
}

async function closeOf(handle: WorkflowHandle, deadlineMs = 60_000): Promise<Closed> {
  let status: Closed['status'] = 'running';
  let failure: ApplicationFailure | undefined;
  const outcome = await Promise.race([
    handle.result().then(
      () => 'completed' as const,
      (error: unknown) => error,
    ),
    new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), deadlineMs)),
  ]);
  if (outcome === 'completed') status = 'completed';
  else if (outcome !== 'timeout') {
    if (!(outcome instanceof WorkflowFailedError)) throw outcome;
    status = 'failed';
    if (outcome.cause instanceof ApplicationFailure) failure = outcome.cause;
  }
  const events = (await handle.fetchHistory()).events ?? [];
  return { status, failure, kinds: kindsOf(events), ms: millis(events.at(-1)) - millis(events[0]) };
}

/** Runs `tasks` with at most `limit` in flight. */
async function pooled<T>(tasks: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  const results: T[] = new Array<T>(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < tasks.length) {
        const index = next++;
        const task = tasks[index];
        if (task) results[index] = await task();
      }
    }),
  );
  return results;
}

/** The failure's `details[0].field`. */
function fieldOf(failure: ApplicationFailure | undefined): unknown {
  return Reflect.get(Object(failure?.details?.[0]), 'field');
}

/**
 * A case of the class that stays malformed, on the same field, once it travels as JSON (NaN and
 * infinities become null, undefined disappears): the first such case of a seeded sample.
 */
async function sampleOf(malformed: MalformedClass, workflow: FuzzWorkflow): Promise<{ input: unknown; field: string }> {
  for (const { value, field } of fc.sample(malformed.cases, { seed: SEED, numRuns: 40 })) {
    const input: unknown = inputFor(malformed, workflow, value);
    const text = JSON.stringify(input);
    if (text === undefined) continue;
    const travelled: unknown = JSON.parse(text);
    const expected = fieldFor(malformed, workflow, field);
    const verdict = await verdictOf(workflow, travelled);
    if (verdict.kind === 'rejected' && fieldOf(verdict.failure) === expected)
      return { input: travelled, field: expected };
  }
  throw new Error(`${malformed.name}: no case of the sample survives JSON`);
}

const START_AND_FAIL = [
  'workflowExecutionStarted',
  'workflowTaskScheduled',
  'workflowTaskStarted',
  'workflowTaskCompleted',
  'workflowExecutionFailed',
];
/** Commands of the first task that schedule nothing: a patch marker (docs/compatibility.md), the search attributes. */
const BOOKKEEPING = new Set(['markerRecorded', 'upsertWorkflowSearchAttributes']);

let bundle: WorkflowBundleWithSourceMap;
let t: TestConnection;
let fake: FakeOpenAI;
beforeAll(async () => {
  bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
  t = await testConnection();
  fake = await startFakeOpenAI();
  // The openai backend of a mutated run answers at once, without tools: its run completes.
  fake.setDefault({ kind: 'summary', text: 'Done.' });
  await startBackgroundWorker(t, {
    workflowBundle: bundle,
    activities: replayActivities({
      trajectoryDir: TRAJECTORY_DIR,
      openai: new OpenAI({ baseURL: fake.baseURL, apiKey: 'test-key', maxRetries: 0 }),
    }),
  });
});
afterAll(async () => {
  await fake?.close();
});

describe('malformed input on a worker (dev server)', { timeout: 240_000 }, () => {
  it('a sample of every class ends in its first workflow task: non-retryable Compaction.InvalidInput naming the field, nothing scheduled', async () => {
    const pairs = MALFORMED_CLASSES.filter((malformed) => malformed.scope !== 'update').flatMap((malformed) =>
      workflowsOf(malformed).map((workflow) => ({ malformed, workflow })),
    );
    const samples = await Promise.all(
      pairs.map(async ({ malformed, workflow }) => ({ malformed, workflow, ...(await sampleOf(malformed, workflow)) })),
    );
    const results = await pooled(
      samples.map(({ malformed, workflow, input, field }) => async () => {
        const handle = await t.client.workflow.start(workflow, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId(`bad-${malformed.name}`),
          args: [input],
        });
        return { name: `${malformed.name} → ${workflow}`, field, closed: await closeOf(handle) };
      }),
      CONCURRENCY,
    );
    const wrong = results.filter(
      ({ field, closed }) =>
        closed.status !== 'failed' ||
        closed.failure?.type !== FailureType.Compaction.InvalidInput ||
        closed.failure.nonRetryable !== true ||
        fieldOf(closed.failure) !== field ||
        !closed.failure.message.startsWith(`${field}: `) ||
        closed.kinds.filter((kind) => !BOOKKEEPING.has(kind)).join() !== START_AND_FAIL.join(),
    );
    expect(
      wrong.map(({ name, field, closed }) => ({
        name,
        field,
        status: closed.status,
        type: closed.failure?.type,
        message: closed.failure?.message,
        kinds: closed.kinds,
      })),
    ).toEqual([]);
    const durations = results.map(({ closed }) => closed.ms).sort((a, b) => a - b);
    process.stderr.write(
      `[malformed] ${results.length} samples of ${new Set(samples.map(({ malformed }) => malformed.name)).size} classes failed in their first workflow task; start → failed by the server's clock: median ${durations[Math.floor(durations.length / 2)]} ms, max ${durations.at(-1)} ms\n`,
    );
  });

  it.each([
    [
      'agentRun',
      'a chat retry interval over the 30 s maximum',
      { ...validAgentInput(), chatActivity: { initialInterval: '1m' } },
      'input.chatActivity.initialInterval',
    ],
    [
      'agentRun',
      'a chat task queue name over the server limit',
      { ...validAgentInput(), chatActivity: { taskQueue: 'q'.repeat(1001) } },
      'input.chatActivity.taskQueue',
    ],
    [
      'compactConversation',
      'a summarizer task queue name over the server limit',
      {
        messages: [
          { role: 'user', content: 'x'.repeat(4000) },
          { role: 'user', content: 'go on' },
        ],
        options: { contextBudget: 100, keepRecent: 1, taskQueue: 'q'.repeat(1001) },
      },
      'options.taskQueue',
    ],
  ])(
    '%s: %s fails the run, not its workflow task (regression: the task failed and was retried for ever)',
    async (workflow, _name, input, field) => {
      const handle = await t.client.workflow.start(workflow, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('bad-schedule'),
        args: [input],
      });
      const closed = await closeOf(handle, 15_000);
      if (closed.status === 'running') await handle.terminate('wedged');
      expect({
        status: closed.status,
        type: closed.failure?.type,
        field: fieldOf(closed.failure),
        workflowTaskFailed: closed.kinds.includes('workflowTaskFailed'),
      }).toEqual({
        status: 'failed',
        type: FailureType.Compaction.InvalidInput,
        field,
        workflowTaskFailed: false,
      });
    },
  );

  it('malformed addUserMessage updates are refused by the validator, leave no trace in history, and the run goes on', async () => {
    const updates = MALFORMED_CLASSES.filter((malformed) => malformed.scope === 'update');
    // A run parked on its first chat (a queue nobody polls), so it is running while the updates arrive.
    const handle = await t.client.workflow.start('agentRun', {
      taskQueue: t.taskQueue,
      workflowId: uniqueId('bad-update'),
      args: [{ ...validAgentInput(), chatActivity: { taskQueue: uniqueId('nobody-polls') } }],
    });
    const cases = updates.flatMap((malformed) =>
      fc.sample(malformed.cases, { seed: SEED, numRuns: 20 }).map((found) => ({ malformed, ...found })),
    );
    const unique = [...new Map(cases.map((found) => [JSON.stringify(found.value), found])).values()];
    for (const { value, field } of unique) {
      const refused: unknown = await handle
        .executeUpdate(agentRunUpdates.addUserMessage, { args: [JSON.parse(JSON.stringify(value))] })
        .catch((error: unknown) => error);
      expect(refused, JSON.stringify(value)).toBeInstanceOf(WorkflowUpdateFailedError);
      const cause = refused instanceof WorkflowUpdateFailedError ? refused.cause : undefined;
      expect(cause).toBeInstanceOf(ApplicationFailure);
      if (!(cause instanceof ApplicationFailure)) continue;
      expect([cause.type, cause.nonRetryable, fieldOf(cause)]).toEqual([
        FailureType.Compaction.InvalidInput,
        true,
        field,
      ]);
      expect(cause.message.startsWith(`${field}: `)).toBe(true);
    }
    expect(await handle.executeUpdate(agentRunUpdates.addUserMessage, { args: ['A valid one.'] })).toEqual({
      pending: 1,
    });
    const kinds = kindsOf((await handle.fetchHistory()).events ?? []);
    expect(kinds).not.toContain('workflowTaskFailed');
    // Only the valid update was accepted and recorded.
    expect(kinds.filter((kind) => kind === 'workflowExecutionUpdateAccepted')).toHaveLength(1);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    await handle.terminate('malformed-input test done');
    process.stderr.write(
      `[malformed] ${unique.length} malformed updates refused by the validator; 0 recorded in history\n`,
    );
  });

  it('oversized single messages end in their documented failures, not a wedge', async () => {
    // compactConversation: a message in the recent window larger than the payload limit. By default it
    // is cut middle-out to fit (docs/design.md#truncation) and the compaction completes; without
    // truncation (the reference) the result stays over the payload limit and the workflow says so.
    const oversized = [
      { role: 'user', content: 'Summarize the log.' },
      { role: 'tool', tool_call_id: 'c', content: 'x' },
      { role: 'user', content: 'y'.repeat(200_000) },
    ];
    const truncated = await t.client.workflow.execute('compactConversation', {
      taskQueue: t.taskQueue,
      workflowId: uniqueId('oversized-truncated'),
      args: [{ messages: oversized, options: { contextBudget: 1_000, keepRecent: 1, maxPayloadBytes: 65_536 } }],
    });
    expect(truncated).toMatchObject({ exhausted: false, truncations: [{ index: 2, chars: 200_000 }] });
    const compactHandle = await t.client.workflow.start('compactConversation', {
      taskQueue: t.taskQueue,
      workflowId: uniqueId('oversized-compact'),
      args: [
        {
          messages: oversized,
          options: { contextBudget: 1_000, keepRecent: 1, maxPayloadBytes: 65_536, truncateOversized: false },
        },
      ],
    });
    const compactClosed = await closeOf(compactHandle);
    expect([compactClosed.status, compactClosed.failure?.type, compactClosed.failure?.nonRetryable]).toEqual([
      'failed',
      FailureType.Compaction.PayloadTooLarge,
      true,
    ]);
    expect(compactClosed.failure?.message).toMatch(
      /^the compaction result is \d+ bytes, over the 65536-byte payload limit/,
    );
    expect(compactClosed.kinds).not.toContain('workflowTaskFailed');

    // agentRun: a last message larger than the whole window: no compaction can make it fit.
    const agentHandle = await t.client.workflow.start('agentRun', {
      taskQueue: t.taskQueue,
      workflowId: uniqueId('oversized-agent'),
      args: [
        {
          messages: [
            { role: 'system', content: 'You help.' },
            { role: 'user', content: 'word '.repeat(20_000) },
          ],
          model: { provider: 'replay', trajectory: TAU, contextWindow: 4_000, maxOutputTokens: 500 },
          compaction: {},
        },
      ],
    });
    const agentClosed = await closeOf(agentHandle);
    expect([agentClosed.status, agentClosed.failure?.type, agentClosed.failure?.nonRetryable]).toEqual([
      'failed',
      FailureType.RunFailed.ContextExhausted,
      true,
    ]);
    expect(agentClosed.failure?.message).toMatch(
      /^context exhausted before round 1: [\d,]+ tokens after compaction, 3,500 usable on replay:/,
    );
    expect(agentClosed.kinds).not.toContain('workflowTaskFailed');
    // The transcript was written before the run failed; no chat was attempted.
    expect(agentClosed.kinds).toContain('activityTaskScheduled');
  });

  it('random mutations of valid inputs: completed or a documented failure, never a failed workflow task', async () => {
    const documented = new Set<string>([
      FailureType.Compaction.InvalidInput,
      FailureType.Compaction.PayloadTooLarge,
      FailureType.RunFailed.ContextExhausted,
      FailureType.RunFailed.BackendsFailed,
      FailureType.RunFailed.PayloadTooLarge,
    ]);
    const inputs = (['agentRun', 'compactConversation'] as const).flatMap((workflow) =>
      fc.sample(mutatedInputArb(workflow), { seed: SEED, numRuns: 20 }).map((input) => ({ workflow, input })),
    );
    const results = await pooled(
      inputs.map(({ workflow, input }) => async () => {
        const text = JSON.stringify(input);
        const travelled: unknown = text === undefined ? null : JSON.parse(text);
        const expected = await verdictOf(workflow, travelled);
        const handle = await t.client.workflow.start(workflow, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId(`mutated-${workflow}`),
          args: [travelled],
        });
        const closed = await closeOf(handle);
        if (closed.status === 'running') await handle.terminate('still running at the deadline');
        return { workflow, input: text?.slice(0, 300), expected, closed };
      }),
      CONCURRENCY,
    );
    for (const { input, expected, closed } of results) {
      expect(closed.kinds, input).not.toContain('workflowTaskFailed');
      expect(closed.status, input).not.toBe('running');
      if (closed.status === 'failed')
        expect(documented.has(closed.failure?.type ?? ''), `${closed.failure?.type}: ${closed.failure?.message}`).toBe(
          true,
        );
      // The validators outside the worker and the workflow on it agree.
      if (expected.kind === 'rejected')
        expect([closed.failure?.type, fieldOf(closed.failure)], input).toEqual([
          FailureType.Compaction.InvalidInput,
          fieldOf(expected.failure),
        ]);
    }
    const counts = results.reduce<Record<string, number>>((tally, { closed }) => {
      const key = closed.status === 'failed' ? (closed.failure?.type ?? 'failed') : closed.status;
      tally[key] = (tally[key] ?? 0) + 1;
      return tally;
    }, {});
    process.stderr.write(`[malformed] ${results.length} mutated inputs on the worker: ${JSON.stringify(counts)}\n`);
  });
});
