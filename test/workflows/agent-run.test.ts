// agentRun on the dev server: the OpenAI provider with tools (fake server), the update and the
// queries, cancellation, the fallback chain, exhaustion, continue-as-new, visibility (search
// attributes and current details) and bad input. Each test runs its own worker on its own task queue.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type WorkflowHandle,
} from '@temporalio/client';
import {
  ApplicationFailure,
  CancelledFailure,
  defineSearchAttributeKey,
  SearchAttributeType,
} from '@temporalio/common';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import OpenAI from 'openai';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  agentRun,
  FailureType,
  toProviderMessages,
  type ChatMessage,
  type ContextExhaustedDetails,
} from '../../src/index.js';
import { agentRunUpdates, agentRunQueries, type AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import { replaySession } from '../../src/core/agent/session.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { pinTask } from '../../src/core/agent/agent-input.js';
import { emptyCompactionHistory, RECENT_COMPACTIONS } from '../../src/core/agent/compaction-history.js';
import { assistantReply as completion, createHold, startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import {
  failureTypeOf,
  loadTrajectory,
  openingOf,
  replayActivities,
  runAgent,
  type AgentOutcome,
} from '../support/agent.js';
import { bundleWorkflows, testConnection, uniqueId, withFileWorker, type TestConnection } from '../support/temporal.js';
import { maybeRecordHistory } from './harness.js';

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
});

const TAU = 'taubench_gpt4o_airline_task2_trial1';
const replayModel = (trajectory: string, contextWindow = 100_000) => ({
  provider: 'replay' as const,
  trajectory,
  contextWindow,
  maxOutputTokens: 1000,
});
const openaiModel = { provider: 'openai' as const, model: 'fake-agent', contextWindow: 16_000, maxOutputTokens: 500 };
const fastRetries = { maximumAttempts: 2, initialInterval: 10 };

type HistoryEvents = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>;

/** The one-line summary of a chat activity's scheduling event; undefined for other events. */
function chatSummaryOf(event: HistoryEvents[number]): string | undefined {
  const data =
    event.activityTaskScheduledEventAttributes?.activityType?.name === 'chat'
      ? event.userMetadata?.summary?.data
      : undefined;
  return data === undefined || data === null ? undefined : String(JSON.parse(Buffer.from(data).toString('utf8')));
}

/** The one-line summaries the run's chat activities carry in its history, in order. */
function chatSummaries(events: HistoryEvents): string[] {
  return events.flatMap((event) => chatSummaryOf(event) ?? []);
}

/**
 * Walks a run's history: every upsert of ContextTokens must be the first, come with a compaction
 * (CompactionCount in the same upsert) or follow a move of more than a tenth of the window; and
 * every chat request must go out with ContextTokens within a tenth of the window of its own count
 * (from its summary). Returns how many upserts and chat requests it saw.
 */
function checkContextTokensUpserts(events: HistoryEvents, contextWindow: number): { upserts: number; chats: number } {
  const tolerance = contextWindow / 10;
  let published: number | undefined;
  let upserts = 0;
  let chats = 0;
  for (const event of events) {
    const fields = event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    const value = fields?.ContextTokens?.data;
    if (value !== undefined && value !== null) {
      const tokens = Number(JSON.parse(Buffer.from(value).toString('utf8')));
      const compaction = fields?.CompactionCount !== undefined;
      if (published !== undefined && !compaction)
        expect(Math.abs(tokens - published), `upsert of ${tokens} after ${published}`).toBeGreaterThan(tolerance);
      published = tokens;
      upserts += 1;
    }
    const summary = chatSummaryOf(event);
    if (summary !== undefined) {
      const tokens = Number(/\(([\d,]+) tokens\)$/.exec(summary)?.[1]?.replaceAll(',', ''));
      expect(published, `ContextTokens before the chat of ${summary}`).toBeDefined();
      expect(Math.abs(tokens - (published ?? 0)), `ContextTokens ${published} against ${summary}`).toBeLessThanOrEqual(
        tolerance,
      );
      chats += 1;
    }
  }
  return { upserts, chats };
}

/** The ApplicationFailure a failed workflow ended with. */
async function runFailure(promise: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(WorkflowFailedError);
    if (error instanceof WorkflowFailedError && error.cause instanceof ApplicationFailure) return error.cause;
    throw error;
  }
  throw new Error('expected the run to fail');
}

describe('agentRun', { timeout: 90_000 }, () => {
  describe('with the OpenAI provider (fake server)', () => {
    let server: FakeOpenAI;
    let root: string;
    beforeEach(async () => {
      server = await startFakeOpenAI();
      root = mkdtempSync(join(tmpdir(), 'agent-root-'));
      writeFileSync(join(root, 'a.txt'), 'alpha\nbeta\n');
    });
    afterEach(async () => {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    });
    const activities = () =>
      replayActivities({
        openai: new OpenAI({ baseURL: server.baseURL, apiKey: 'test-key', maxRetries: 0 }),
        toolsRoot: root,
      });
    const opening: ChatMessage[] = [
      { role: 'system', content: 'You are a careful agent.' },
      { role: 'user', content: 'What is in a.txt?' },
    ];

    it('runs requested tools as activities and hands failures to the model as results', async () => {
      server.script(
        completion({
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'fs_read', arguments: '{"path":"a.txt"}' } },
            { id: 'call_2', type: 'function', function: { name: 'fs_read', arguments: '{"path":"../../etc/passwd"}' } },
            { id: 'call_3', type: 'function', function: { name: 'rm', arguments: '{"path":"a.txt"}' } },
          ],
        }),
        completion({ content: 'a.txt holds alpha and beta.' }),
      );
      const t = await testConnection();
      const workflowId = uniqueId('agent-tools');
      const result = await withFileWorker(t, { workflowBundle: bundle, activities: activities() }, (t) =>
        t.client.workflow.execute(agentRun, {
          taskQueue: t.taskQueue,
          workflowId,
          args: [
            {
              messages: opening,
              model: openaiModel,
              tools: ['fs_read', 'fs_list', 'grep'],
              compaction: {},
              toolActivity: fastRetries,
            },
          ],
        }),
      );
      expect(result.stopReason).toBe('completed');
      expect(result.rounds).toBe(2);
      const toolResults = result.messages.filter((message) => message.role === 'tool');
      expect(toolResults.map((message) => message.tool_call_id)).toEqual(['call_1', 'call_2', 'call_3']);
      expect(toolResults[0]?.content).toBe('     1\talpha\n     2\tbeta\n     3\t');
      expect(toolResults[1]?.content).toMatch(
        /^Error: fs_read: path "\.\.\/\.\.\/etc\/passwd" is outside the tool root /,
      );
      expect(toolResults[2]?.content).toBe('Error: there is no tool named "rm"; the tools are: fs_read, fs_list, grep');
      expect(result.messages.at(-1)).toEqual({ role: 'assistant', content: 'a.txt holds alpha and beta.' });
      const second = server.requests[1]?.body;
      expect(second).toHaveProperty('messages', toProviderMessages(result.messages.slice(0, -1)));
      expect(second).toHaveProperty('tools', [
        expect.objectContaining({ function: expect.objectContaining({ name: 'fs_read' }) }),
        expect.anything(),
        expect.anything(),
      ]);
      await maybeRecordHistory(t.client.workflow.getHandle(workflowId), 'agent-run-openai-tools');
    });

    it("runs the user's own tool activities, declared in the input and registered on the worker", async () => {
      server.script(
        completion({
          content: null,
          tool_calls: [
            { id: 'call_9', type: 'function', function: { name: 'lookup_order', arguments: '{"id":"A-17"}' } },
          ],
        }),
        completion({ content: 'Order A-17 shipped.' }),
      );
      const lookupOrder = {
        type: 'function' as const,
        function: {
          name: 'lookup_order',
          description: 'Find an order',
          parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        },
      };
      const seen: unknown[] = [];
      const lookup_order = async (args: unknown): Promise<unknown> => {
        seen.push(args);
        return { id: 'A-17', status: 'shipped' };
      };
      const t = await testConnection();
      const result = await withFileWorker(
        t,
        { workflowBundle: bundle, activities: { ...activities(), lookup_order } },
        (t) =>
          t.client.workflow.execute(agentRun, {
            taskQueue: t.taskQueue,
            workflowId: uniqueId('agent-own-tool'),
            args: [{ messages: opening, model: openaiModel, tools: [lookupOrder], compaction: {} }],
          }),
      );
      expect(seen).toEqual([{ id: 'A-17' }]);
      expect(result.messages.find((message) => message.role === 'tool')).toEqual({
        role: 'tool',
        tool_call_id: 'call_9',
        content: '{"id":"A-17","status":"shipped"}',
      });
      expect(server.requests[0]?.body).toHaveProperty('tools', [lookupOrder]);
    });

    it("records the provider's usage per round, its cached prompt tokens as reported, and the billed-input estimate", async () => {
      server.script(
        completion(
          {
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'fs_read', arguments: '{"path":"a.txt"}' } },
            ],
          },
          { prompt_tokens: 1_000, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 0 } },
        ),
        completion(
          { content: 'a.txt holds alpha and beta.' },
          { prompt_tokens: 1_200, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 900 } },
        ),
      );
      const t = await testConnection();
      const result = await withFileWorker(t, { workflowBundle: bundle, activities: activities() }, (t) =>
        t.client.workflow.execute(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-usage'),
          args: [
            {
              messages: opening,
              model: openaiModel,
              tools: ['fs_read'],
              compaction: {},
              pricing: { cachedInput: 0.5 },
            },
          ],
        }),
      );
      expect(result.compactions.usage).toEqual({
        requests: 2,
        promptTokens: 2_200,
        cachedPromptTokens: 900,
        reportedCacheRequests: 2,
        completionTokens: 30,
        summarizer: { requests: 0, promptTokens: 0, completionTokens: 0, estimated: false },
        cacheHitRate: 900 / 2_200,
        // 1,300 uncached + 0.5 × 900 cached.
        billedInput: 1_750,
        pricing: { cachedInput: 0.5, summarizerInput: 0.25 },
      });
      const lines = await readSessionLines(t.client, result.session);
      const usages = lines.flatMap((line) => (line.type === 'message' && line.usage !== undefined ? [line.usage] : []));
      expect(usages).toEqual([
        {
          backend: 'openai:fake-agent',
          promptTokens: 1_000,
          cachedPromptTokens: 0,
          cacheSource: 'reported',
          completionTokens: 20,
        },
        {
          backend: 'openai:fake-agent',
          promptTokens: 1_200,
          cachedPromptTokens: 900,
          cacheSource: 'reported',
          completionTokens: 10,
        },
      ]);
    });

    it('addUserMessage queues a user turn for the next round; the queries show the run while it waits', async () => {
      const hold = createHold();
      server.script(hold.response, completion({ content: 'Also done.' }));
      const t = await testConnection();
      await withFileWorker(t, { workflowBundle: bundle, activities: activities() }, async (t) => {
        const handle = await t.client.workflow.start(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-update'),
          args: [{ messages: opening, model: openaiModel, compaction: {} }],
        });
        await server.waitForRequests(1, 20_000);
        expect(await handle.query(agentRunQueries.conversation)).toEqual(pinTask(opening));
        // Nothing recorded yet: the two opening lines wait in the run, which the query shows.
        expect(await handle.query(agentRunQueries.session)).toEqual({
          reference: { workflowId: handle.workflowId, runId: expect.any(String), lines: 0 },
          pending: [
            { type: 'message', id: 'm1', message: opening[0] },
            { type: 'message', id: 'm2', message: { ...opening[1], sticky: true } },
          ],
        });
        expect(await handle.query(agentRunQueries.compactions)).toEqual(emptyCompactionHistory());
        expect(await handle.executeUpdate(agentRunUpdates.addUserMessage, { args: ['Also check b.txt'] })).toEqual({
          pending: 1,
        });
        const rejected = await handle
          .executeUpdate(agentRunUpdates.addUserMessage, { args: [{ content: 42 as unknown as string }] })
          .catch((error: unknown) => error);
        expect(rejected).toBeInstanceOf(WorkflowUpdateFailedError);
        expect(failureTypeOf(rejected)).toEqual({
          type: FailureType.Compaction.InvalidInput,
          message: 'message.content: must be a string, null or an array of content parts',
        });
        hold.release(completion({ content: 'a.txt holds alpha and beta.' }));
        const result = await handle.result();
        expect(result.messages).toEqual([
          ...pinTask(opening),
          { role: 'assistant', content: 'a.txt holds alpha and beta.' },
          { role: 'user', content: 'Also check b.txt' },
          { role: 'assistant', content: 'Also done.' },
        ]);
        expect(server.requests[1]?.body).toHaveProperty('messages', toProviderMessages(result.messages.slice(0, -1)));
        // Finished: every line is recorded, none pending, and the transcript replays to the result.
        expect(await handle.query(agentRunQueries.session)).toEqual({ reference: result.session, pending: [] });
        const lines = await readSessionLines(t.client, result.session);
        expect(lines).toHaveLength(result.session.lines);
        expect(replaySession(lines)).toEqual(result.messages);
        await maybeRecordHistory(handle, 'agent-run-update');
        // Finished: a late message is refused (by the server, the run being closed) rather than silently dropped.
        const late = await handle
          .executeUpdate(agentRunUpdates.addUserMessage, { args: ['too late'] })
          .catch((error: unknown) => error);
        expect(late).toBeInstanceOf(WorkflowNotFoundError);
        expect(String(late)).toContain('workflow execution already completed');
      });
    });

    it('cancellation ends the run Cancelled, as Temporal shows it, with the transcript written first', async () => {
      const hold = createHold();
      server.script(hold.response);
      const t = await testConnection();
      await withFileWorker(t, { workflowBundle: bundle, activities: activities() }, async (t) => {
        const handle = await t.client.workflow.start(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-cancel'),
          args: [{ messages: opening, model: openaiModel, compaction: {}, chatActivity: { heartbeatTimeout: '2s' } }],
        });
        await server.waitForRequests(1, 20_000);
        await handle.cancel();
        const error = await handle.result().catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(WorkflowFailedError);
        expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
        expect((await handle.describe()).status.name).toBe('CANCELLED');
        // The transcript (the opening, no answer yet) was recorded before the run ended.
        expect(replaySession(await readSessionLines(t.client, handle.workflowId))).toEqual(pinTask(opening));
        // The request in flight was aborted, not left to finish.
        await server.waitUntil(() => server.requests[0]?.outcome === 'aborted', 10_000, 'the held request aborted');
      });
    });

    it('the stop update ends the run gracefully after its round, returning the result (stopReason "stopped")', async () => {
      const hold = createHold();
      server.script(hold.response, completion({ content: 'never asked for' }));
      const t = await testConnection();
      await withFileWorker(t, { workflowBundle: bundle, activities: activities() }, async (t) => {
        const handle = await t.client.workflow.start(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-stop'),
          args: [{ messages: opening, model: openaiModel, tools: ['fs_read'], compaction: {} }],
        });
        await server.waitForRequests(1, 20_000);
        expect(await handle.executeUpdate(agentRunUpdates.stop)).toEqual({ stopping: true, rounds: 0 });
        // The round in progress finishes (its tool runs), then no further request is made.
        hold.release(
          completion({
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'fs_read', arguments: '{"path":"a.txt"}' } },
            ],
          }),
        );
        const result = await handle.result();
        expect(result.stopReason).toBe('stopped');
        expect(result.rounds).toBe(1);
        expect(result.messages.at(-1)).toMatchObject({
          role: 'tool',
          tool_call_id: 'call_1',
          content: expect.stringContaining('alpha'),
        });
        expect(server.requests).toHaveLength(1);
        expect(replaySession(await readSessionLines(t.client, result.session))).toEqual(result.messages);
      });
    });

    it('fallback chain: a backend that keeps failing hands the round to the next one, then rests for 5 rounds', async () => {
      server.setDefault({ kind: 'status', status: 503 });
      const t = await testConnection();
      const run = (cooldown?: { rounds: number }, workflowId = uniqueId('agent-fallback')) =>
        withFileWorker(t, { workflowBundle: bundle, activities: activities() }, (t) =>
          t.client.workflow.execute(agentRun, {
            taskQueue: t.taskQueue,
            workflowId,
            args: [
              {
                messages: openingOf(TAU),
                model: [openaiModel, replayModel(TAU)],
                compaction: {},
                chatActivity: fastRetries,
                maxRounds: 7,
                ...(cooldown === undefined ? {} : { backendCooldown: cooldown }),
              },
            ],
          }),
        );
      const workflowId = uniqueId('agent-fallback');
      const result = await run(undefined, workflowId);
      // Round 1 tried the failing backend (two attempts), then the replay answered; rounds 2-5 went
      // straight to the replay; round 6 tried the failing one again, and it rests until round 11.
      expect([result.stopReason, result.rounds, result.backendFallbacks]).toEqual(['maxRounds', 7, 2]);
      expect(server.requests).toHaveLength(4);
      expect(result.backends).toEqual([
        { label: 'openai:fake-agent', failedRounds: 2, restingUntilRound: 11, restingUntilTime: null },
        { label: `replay:${TAU}`, failedRounds: 0, restingUntilRound: null, restingUntilTime: null },
      ]);
      expect(toProviderMessages(result.messages)).toEqual(loadTrajectory(TAU).slice(0, result.messages.length));
      expect(result.messages.filter((message) => message.role === 'assistant')).toHaveLength(7);
      // With a choice of backends, each chat activity's summary names the one it asked.
      const summaries = chatSummaries((await t.client.workflow.getHandle(workflowId).fetchHistory()).events ?? []);
      expect(summaries.slice(0, 3)).toEqual([
        expect.stringMatching(/^chat · openai:fake-agent · \d+ messages \([\d,]+ tokens\)$/),
        expect.stringMatching(new RegExp(`^chat · replay:${TAU} · \\d+ messages`)),
        expect.stringMatching(new RegExp(`^chat · replay:${TAU} · \\d+ messages`)),
      ]);
      // Without a cooldown every round starts with the first backend again.
      server.requests.length = 0;
      const eager = await run({ rounds: 0 });
      expect([eager.rounds, eager.backendFallbacks]).toEqual([7, 7]);
      expect(server.requests).toHaveLength(14);
    });

    it('every backend failing fails the run with RunFailed.BackendsFailed, not retried', async () => {
      server.setDefault({ kind: 'status', status: 401 });
      const t = await testConnection();
      const failure = await withFileWorker(t, { workflowBundle: bundle, activities: activities() }, (t) =>
        runFailure(
          t.client.workflow.execute(agentRun, {
            taskQueue: t.taskQueue,
            workflowId: uniqueId('agent-all-fail'),
            args: [
              {
                messages: opening,
                model: [openaiModel, { ...openaiModel, model: 'fake-agent-2' }],
                compaction: {},
                chatActivity: fastRetries,
              },
            ],
          }),
        ),
      );
      expect([failure.type, failure.nonRetryable]).toEqual([FailureType.RunFailed.BackendsFailed, true]);
      expect(failure.message).toContain('401');
      // 401 is in the abort bucket: one request per backend, no retries.
      expect(server.requests.map((request) => (request.body as { model?: string }).model)).toEqual([
        'fake-agent',
        'fake-agent-2',
      ]);
    });
  });

  describe('with the replay provider', () => {
    let t: TestConnection;
    /** Runs the workflow to its end, then `inspect` while the worker still polls (queries on a closed run need one). */
    const run = (
      input: AgentRunWorkflowInput,
      workflowId = uniqueId('agent'),
      inspect: (outcome: AgentOutcome) => Promise<void> = async () => undefined,
    ) =>
      withFileWorker(t, { workflowBundle: bundle, activities: replayActivities() }, async (t) => {
        const outcome = await runAgent(t, input, workflowId);
        await inspect(outcome);
        return outcome;
      });
    beforeEach(async () => {
      t = await testConnection();
    });

    it('continue-as-new (forced every 7 rounds) carries conversation, counters, transcript and history', async () => {
      const input: AgentRunWorkflowInput = {
        messages: openingOf(TAU),
        model: replayModel(TAU),
        compaction: {},
        maxRounds: 1000,
      };
      const plain = await run(input);
      const workflowId = uniqueId('agent-can');
      const continued = await run({ ...input, continueAsNewAfterRounds: 7 }, workflowId);
      expect(continued.result?.continuedAsNew).toBe(4);
      expect(continued.rounds).toBe(30);
      expect(toProviderMessages(continued.messages)).toEqual(loadTrajectory(TAU));
      expect(continued.session).toEqual(plain.session);
      expect(continued.result?.peakContextTokens).toBe(plain.result?.peakContextTokens);
      const { executions } = await t.client.workflowService.listWorkflowExecutions({
        namespace: t.namespace,
        query: `WorkflowId = '${workflowId}'`,
      });
      expect(executions.map((execution) => execution.status)).toEqual(expect.arrayContaining([6, 6, 6, 6, 2]));
      expect(executions).toHaveLength(5);
    });

    it('exhaustion fails the run with RunFailed.ContextExhausted after writing the transcript', async () => {
      const name = 'taubench_gpt4o_airline_task46_trial3';
      const workflowId = uniqueId('agent-exhausted');
      const outcome = await run(
        { messages: openingOf(name), model: replayModel(name, 2500), compaction: {}, maxRounds: 1000 },
        workflowId,
      );
      expect([outcome.status, outcome.failureType]).toEqual(['failed', FailureType.RunFailed.ContextExhausted]);
      const last = outcome.session.at(-1);
      expect(last).toMatchObject({ type: 'compaction', exhausted: true });
      expect(outcome.compactions.at(-1)).toMatchObject({ exhausted: true });
      expect(replaySession(outcome.session)).toEqual(outcome.messages);
      const handle = t.client.workflow.getHandle(workflowId);
      const failure = await runFailure(handle.result());
      expect(failure.nonRetryable).toBe(true);
      const [details] = failure.details ?? [];
      expect(details).toMatchObject({
        room: 1500,
        backend: `replay:${name}`,
      } satisfies Partial<ContextExhaustedDetails>);
      const description = await handle.describe();
      expect(
        description.typedSearchAttributes.get(defineSearchAttributeKey('ContextExhausted', SearchAttributeType.BOOL)),
      ).toBe(true);
      await maybeRecordHistory(handle, `agent-run-exhausted-${name}`);
    });

    it('a contextBudget below the room is what compaction aims at, not a limit: the run completes (regression)', async () => {
      // The recent window alone is over 1,500 tokens: judged against contextBudget that was "exhausted"
      // and failed the run, though every request fits the backend's 5,300-token room.
      const outcome = await run({
        messages: openingOf(TAU),
        model: replayModel(TAU, 6300),
        compaction: { contextBudget: 1_500, keepRecent: 4 },
        maxRounds: 1000,
      });
      expect(outcome.status).toBe('completed');
      expect(outcome.rounds).toBe(30);
      expect(outcome.compactions.length).toBeGreaterThan(0);
      expect(outcome.compactions.every((record) => !record.exhausted)).toBe(true);
      expect(outcome.result?.peakContextTokens).toBeLessThanOrEqual(5_300);
    });

    it('accounts for what the run cost: cache hits modelled from the shared prefix, the summarizer, the billed-input estimate per compaction', async () => {
      const workflowId = uniqueId('agent-cost');
      const outcome = await run(
        { messages: openingOf(TAU), model: replayModel(TAU, 6300), compaction: { keepRecent: 4 }, maxRounds: 1000 },
        workflowId,
        async () => {
          const metadata: unknown = await t.client.workflow.getHandle(workflowId).query('__temporal_workflow_metadata');
          expect(String(Reflect.get(Object(metadata), 'currentDetails'))).toMatch(
            /Cost so far: [\d,]+ prompt tokens in 30 requests, \d+% from the cache \(modelled\); billed input ≈ [\d,]+ \(summarizer [\d,]+ prompt tokens, estimated\)/,
          );
        },
      );
      expect(outcome.status).toBe('completed');
      const usage = outcome.history.usage;
      const rounds = outcome.session.flatMap((line) =>
        line.type === 'message' && line.usage !== undefined ? [line.usage] : [],
      );
      expect(rounds).toHaveLength(30);
      expect(usage.requests).toBe(30);
      expect(usage.promptTokens).toBe(rounds.reduce((sum, round) => sum + round.promptTokens, 0));
      expect(usage.cachedPromptTokens).toBe(rounds.reduce((sum, round) => sum + round.cachedPromptTokens, 0));
      expect(
        rounds.every((round) => round.cacheSource === 'modelled' && round.cachedPromptTokens <= round.promptTokens),
      ).toBe(true);
      // The first request has nothing before it; the second shares all of the first.
      expect(rounds[0]?.cachedPromptTokens).toBe(0);
      expect(rounds[1]?.cachedPromptTokens).toBeGreaterThan(0);
      // A summary rewrites the conversation below its prefix: the request after it is served less from the cache.
      const summarized = outcome.compactions.filter((record) => record.kind === 'summary');
      expect(summarized.length).toBeGreaterThan(0);
      for (const record of summarized) {
        const after = rounds[record.round - 1];
        const before = rounds[record.round - 2];
        expect(after?.cachedPromptTokens ?? 0).toBeLessThan(before?.promptTokens ?? 0);
        expect(record.summarizerTokens).toBeGreaterThan(0);
      }
      expect(usage.summarizer.promptTokens).toBe(
        outcome.compactions.reduce((sum, record) => sum + record.summarizerTokens, 0),
      );
      expect(usage.summarizer.estimated).toBe(true);
      expect(usage.billedInput).toBe(
        Math.round(
          usage.promptTokens -
            usage.cachedPromptTokens +
            0.1 * usage.cachedPromptTokens +
            0.25 * usage.summarizer.promptTokens,
        ),
      );
      // Every record says what the run had cost by then, growing.
      const billed = outcome.compactions.map((record) => record.billedInput ?? -1);
      expect(billed.every((value, index) => value > 0 && (index === 0 || value >= (billed[index - 1] ?? 0)))).toBe(
        true,
      );
    });

    it('upserts ContextTokens only when it moved by a tenth of the window or at a compaction; a lone backend goes unnamed in the chat summaries', async () => {
      const workflowId = uniqueId('agent-context-tokens');
      await run(
        { messages: openingOf(TAU), model: replayModel(TAU, 4000), compaction: { keepRecent: 4 }, maxRounds: 12 },
        workflowId,
        async (outcome) => {
          expect(outcome.status).toBe('completed');
          expect(outcome.compactions.length).toBeGreaterThanOrEqual(1);
          const handle = t.client.workflow.getHandle(workflowId);
          const events = (await handle.fetchHistory()).events ?? [];
          const summaries = chatSummaries(events);
          expect(summaries.length).toBe(outcome.rounds);
          for (const summary of summaries) expect(summary).toMatch(/^chat · \d+ messages \([\d,]+ tokens\)$/);
          const { upserts, chats } = checkContextTokensUpserts(events, 4000);
          expect(chats).toBe(outcome.rounds);
          expect(upserts).toBeLessThan(chats);
        },
      );
    });

    it('keeps the task (the first user message) verbatim by default; keepTask: false lets it be summarized', async () => {
      const pinned = await run({
        messages: openingOf(TAU),
        model: replayModel(TAU, 4000),
        compaction: { keepRecent: 4 },
        maxRounds: 1000,
      });
      const task = openingOf(TAU).find((message) => message.role === 'user');
      expect(pinned.compactions.some((record) => record.kind === 'summary')).toBe(true);
      expect(pinned.messages).toContainEqual({ ...task, sticky: true });
      const loose = await run({
        messages: openingOf(TAU),
        model: replayModel(TAU, 4000),
        compaction: { keepRecent: 4 },
        maxRounds: 1000,
        keepTask: false,
      });
      expect(loose.compactions.some((record) => record.kind === 'summary')).toBe(true);
      expect(loose.messages.some((message) => message.role === 'user' && message.content === task?.content)).toBe(
        false,
      );
    });

    it('compacts several times across continue-as-new (the last run is recorded for replay)', async () => {
      const workflowId = uniqueId('agent-compacting');
      const outcome = await run(
        {
          messages: openingOf(TAU),
          model: replayModel(TAU, 6300),
          compaction: { keepRecent: 4 },
          maxRounds: 1000,
          continueAsNewAfterRounds: 12,
        },
        workflowId,
      );
      expect(outcome.status).toBe('completed');
      expect(outcome.result?.continuedAsNew).toBe(2);
      expect(outcome.compactions.length).toBeGreaterThanOrEqual(3);
      expect(outcome.compactions.some((record) => record.kind === 'summary')).toBe(true);
      expect(replaySession(outcome.session)).toEqual(outcome.messages);
      await maybeRecordHistory(t.client.workflow.getHandle(workflowId), `agent-run-compactions-${TAU}`);
    });

    it('shows its compactions in search attributes and in the current details (a Markdown table)', async () => {
      // A generated coding run with parallel tool calls (corpus/generate.ts): compacts several times in 14,000 tokens.
      const name = 'generated_parallel-calls';
      const workflowId = uniqueId('agent-visible');
      await run(
        { messages: openingOf(name), model: replayModel(name, 14_000), compaction: { keepRecent: 4 }, maxRounds: 1000 },
        workflowId,
        async (outcome) => {
          expect(outcome.status).toBe('completed');
          expect(outcome.compactions.length).toBeGreaterThanOrEqual(2);
          const handle = t.client.workflow.getHandle(workflowId);
          const attributes = (await handle.describe()).typedSearchAttributes;
          expect(attributes.get(defineSearchAttributeKey('CompactionCount', SearchAttributeType.INT))).toBe(
            outcome.compactions.length,
          );
          expect(attributes.get(defineSearchAttributeKey('CompactionFallbacks', SearchAttributeType.INT))).toBe(
            outcome.compactions.filter((record) => record.fallback).length,
          );
          expect(attributes.get(defineSearchAttributeKey('ContextExhausted', SearchAttributeType.BOOL))).toBe(false);
          expect(attributes.get(defineSearchAttributeKey('ContextTokens', SearchAttributeType.INT))).toBeGreaterThan(0);
          const listed = await t.client.workflowService.countWorkflowExecutions({
            namespace: t.namespace,
            query: `WorkflowId = '${workflowId}' AND CompactionCount >= 2`,
          });
          expect(Number(listed.count)).toBe(1);
          expect(outcome.compactions.filter((record) => record.kind === 'summary').length).toBeGreaterThan(0);
          // What the UI shows as "current details": the totals and a line per recent compaction.
          const metadata: unknown = await handle.query('__temporal_workflow_metadata');
          const details = String(Reflect.get(Object(metadata), 'currentDetails'));
          expect(details).toContain(`**${outcome.compactions.length} compactions**`);
          expect(details.split('\n').filter((line) => /^- #\d+ round \d+ · /.test(line))).toHaveLength(
            Math.min(outcome.compactions.length, RECENT_COMPACTIONS),
          );
          // The run keeps totals and recent records; the transcript holds every one, and they agree.
          expect(outcome.history.totals.compactions).toBe(outcome.compactions.length);
          expect(outcome.history.recent).toEqual(outcome.compactions.slice(-RECENT_COMPACTIONS));
        },
      );
    });
  });

  describe('bad input gets a clear non-retryable Compaction.InvalidInput', () => {
    let t: TestConnection;
    // Each run fails in its first task, on the worker of the file's other runs.
    beforeAll(async () => {
      t = await testConnection();
    });
    const valid = { messages: [{ role: 'user', content: 'hi' }], model: replayModel(TAU), compaction: {} };
    it.each([
      ['no messages', { model: replayModel(TAU), compaction: {} }, 'input.messages: required'],
      [
        'a model without contextWindow',
        { ...valid, model: { provider: 'replay', trajectory: TAU, maxOutputTokens: 10 } },
        'input.model.contextWindow: required',
      ],
      [
        'an unknown provider',
        { ...valid, model: { provider: 'anthropic', model: 'x', contextWindow: 1000, maxOutputTokens: 10 } },
        'input.model.provider: must be "openai" or "replay", got "anthropic"',
      ],
      [
        'a window with no room left',
        { ...valid, model: [replayModel(TAU), { ...replayModel(TAU), maxOutputTokens: 100_000 }] },
        'input.model[1].contextWindow: 100000 leaves no room',
      ],
      ['an unknown built-in tool', { ...valid, tools: ['rm'] }, 'input.tools[0]: "rm" is not a built-in tool'],
      ['a bad compaction option', { ...valid, compaction: { keepRecent: -1 } }, 'input.compaction.keepRecent'],
      [
        'a bad message',
        { ...valid, messages: [{ role: 'tool', content: 'x' }] },
        'messages[0].tool_call_id: required for role "tool"',
      ],
      ['a misspelt field', { ...valid, maxRound: 3 }, 'input.maxRound: unknown field'],
      [
        'a bad activity timeout',
        { ...valid, chatActivity: { startToCloseTimeout: 'soon' } },
        'input.chatActivity.startToCloseTimeout: must be milliseconds or a duration',
      ],
      ['a hand-made carried state', { ...valid, carried: { session: 'x' } }, 'input.carried.version: must be 1'],
      [
        'a carried state with a broken conversation',
        {
          ...valid,
          carried: {
            version: 1,
            live: [{ id: 'm1', message: { role: 'tool', content: 'x' } }],
            sessionLines: 0,
            compactions: { recent: [], totals: {}, usage: {}, undone: [] },
            rounds: 0,
            nextId: 2,
            counters: [],
            pendingUserMessages: [],
            backendFallbacks: 0,
            backends: [],
            previousRequest: null,
            peakContextTokens: 0,
            continuedAsNew: 0,
            tokenCounts: {},
            pins: { ids: [], facts: [] },
          },
        },
        'input.carried.live[0].message.tool_call_id: required for role "tool"',
      ],
      [
        'a bad summarize heartbeat',
        { ...valid, compaction: { heartbeatTimeout: 0 } },
        'input.compaction.heartbeatTimeout: must be longer than zero',
      ],
      [
        'carried token counts that do not match the conversation',
        {
          ...valid,
          carried: {
            ...{
              version: 1,
              live: [{ id: 'm1', message: { role: 'user', content: 'x' } }],
              sessionLines: 0,
              compactions: { recent: [], totals: {}, usage: {}, undone: [] },
              rounds: 0,
              nextId: 2,
              counters: [],
              pendingUserMessages: [],
              backendFallbacks: 0,
              backends: [],
              previousRequest: null,
              peakContextTokens: 0,
              continuedAsNew: 0,
              pins: { ids: [], facts: [] },
            },
            tokenCounts: { o200k_base: [1, 2] },
          },
        },
        'input.carried.tokenCounts.o200k_base: must list a count or null for each of the 1 texts',
      ],
      [
        'a carried token count that is not one',
        {
          ...valid,
          carried: {
            ...{
              version: 1,
              live: [{ id: 'm1', message: { role: 'user', content: 'x' } }],
              sessionLines: 0,
              compactions: { recent: [], totals: {}, usage: {}, undone: [] },
              rounds: 0,
              nextId: 2,
              counters: [],
              pendingUserMessages: [],
              backendFallbacks: 0,
              backends: [],
              previousRequest: null,
              peakContextTokens: 0,
              continuedAsNew: 0,
              pins: { ids: [], facts: [] },
            },
            tokenCounts: { o200k_base: [-3] },
          },
        },
        'input.carried.tokenCounts.o200k_base[0]: must be a non-negative integer or null',
      ],
    ])('%s', async (_case, input, message) => {
      const failure = await withFileWorker(t, { workflowBundle: bundle, activities: replayActivities() }, (t) =>
        runFailure(
          t.client.workflow.execute('agentRun', {
            taskQueue: t.taskQueue,
            workflowId: uniqueId('agent-bad'),
            args: [input],
          }),
        ),
      );
      expect([failure.type, failure.nonRetryable]).toEqual([FailureType.Compaction.InvalidInput, true]);
      expect(failure.message).toContain(message);
      expect(failure.details?.[0]).toHaveProperty('field', message.split(':')[0]);
    });
  });
});
