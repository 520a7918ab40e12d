// A hostile model against agentRun on a dev server (docs/design.md#tools): what it asks of the tools
// is bounded — too many parallel calls, arguments too large, too deep, not JSON, unknown tools, a
// catastrophic grep pattern — each ends as a tool result the model reads, the run completes, the
// worker stays responsive (another workflow on it finishes meanwhile), and the history replays.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import fc from 'fast-check';
import OpenAI from 'openai';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createBuiltInTools } from '../../src/activities/tools.js';
import { agentRun, type ChatMessage, type CompactionResult } from '../../src/index.js';
import {
  jsonDepth,
  MAX_TOOL_ARGUMENT_CHARS,
  MAX_TOOL_ARGUMENT_DEPTH,
  MAX_TOOL_CALLS_PER_TURN,
  TOOL_CALL_CONCURRENCY,
} from '../../src/workflows/tool-dispatch.js';
import { assistantReply as completion, startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import {
  hostileClasses,
  hostileInput,
  hostileProblems,
  hostileResponder,
  writeHostileToolRoot,
} from '../support/hostile-model.js';
import { replayActivities, replayTokens } from '../support/agent.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { toolRounds } from '../support/messages.js';
import { bundleWorkflows, replayHistories, testConnection, uniqueId, withFileWorker } from '../support/temporal.js';

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
});

const openaiModel = { provider: 'openai' as const, model: 'fake-agent', contextWindow: 200_000, maxOutputTokens: 500 };
const opening: ChatMessage[] = [
  { role: 'system', content: 'You are a careful agent.' },
  { role: 'user', content: 'Look around.' },
];

const call = (id: string, name: string, args: string) => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});

/** The most tool activities one workflow task scheduled (the events after each WorkflowTaskCompleted). */
async function mostToolActivitiesPerTask(handle: WorkflowHandle): Promise<number> {
  const events = (await handle.fetchHistory()).events ?? [];
  let most = 0;
  let current = 0;
  for (const event of events) {
    if (event.workflowTaskCompletedEventAttributes) current = 0;
    const name = event.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name === 'fs_read' || name === 'fs_list' || name === 'grep') {
      current += 1;
      most = Math.max(most, current);
    }
  }
  return most;
}

/** Where the run's grep activity stands: running (a worker holds it: its started event is only written at its end), or done. */
async function grepState(handle: WorkflowHandle): Promise<'waiting' | 'running' | 'done'> {
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.find((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'grep');
  if (scheduled === undefined) return 'waiting';
  const id = String(scheduled.eventId);
  const answered = events.some((event) => {
    const attributes = event.activityTaskCompletedEventAttributes ?? event.activityTaskFailedEventAttributes;
    return attributes !== null && attributes !== undefined && String(attributes.scheduledEventId) === id;
  });
  if (answered) return 'done';
  const { raw } = await handle.describe();
  const pending = raw.pendingActivities?.find((activity) => activity.activityType?.name === 'grep');
  return pending?.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
    ? 'running'
    : 'waiting';
}

/**
 * The workers' grep deadline, 10 s and not less: the limits class's grep must find its 1,000
 * matches before it, in a thread at nice 19 on a machine that may be saturated (it did not in 2 s
 * beside a second test run). Only the catastrophic class waits it out.
 */
const GREP_SECONDS = 10;

describe('agentRun against a hostile model', { timeout: 120_000 }, () => {
  let server: FakeOpenAI;
  let root: string;
  beforeEach(async () => {
    server = await startFakeOpenAI();
    root = mkdtempSync(join(tmpdir(), 'hostile-root-'));
    writeFileSync(join(root, 'a.txt'), 'alpha\n');
    writeFileSync(join(root, 'evil.txt'), `${'a'.repeat(42)}!\n`);
  });
  afterEach(async () => {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  });
  const activities = (grepTimeoutMs = GREP_SECONDS * 1000, toolsRoot = root) => ({
    ...replayActivities({
      openai: new OpenAI({ baseURL: server.baseURL, apiKey: 'test-key', maxRetries: 0 }),
      toolsRoot,
    }),
    grep: createBuiltInTools({ root: toolsRoot, grepTimeoutMs }).grep,
  });

  it('measures depth outside strings, and stops counting past the limit', () => {
    expect(jsonDepth('{"a":[1,{"b":"[[[["}]}', 100)).toBe(3);
    expect(jsonDepth('"\\"[["', 100)).toBe(0);
    expect(jsonDepth('['.repeat(100_000), 64)).toBe(65);
  });

  it('too many calls, oversized, too deep, not JSON, unknown: each answered, the rest run in waves, the run completes and replays', async () => {
    const many = Array.from({ length: 100 }, (_, index) => call(`c${index}`, 'fs_read', '{"path":"a.txt"}'));
    const hostile = [
      call('big', 'fs_read', `{"path":"${'x'.repeat(MAX_TOOL_ARGUMENT_CHARS)}"}`),
      call('deep', 'fs_read', `${'['.repeat(10_000)}${']'.repeat(10_000)}`),
      call('bad', 'fs_read', '{"path": "a.txt"'),
      call('nul', 'fs_read', '{"path":"a\\u0000.txt"}'),
      call('who', 'rm_rf', '{}'),
    ];
    server.script(completion({ content: null, tool_calls: [...hostile, ...many] }), completion({ content: 'Done.' }));
    const t = await testConnection();
    const workflowId = uniqueId('hostile-calls');
    const result = await withFileWorker(t, { workflowBundle: bundle, activities: activities() }, (t) =>
      t.client.workflow.execute(agentRun, {
        taskQueue: t.taskQueue,
        workflowId,
        args: [{ messages: opening, model: openaiModel, tools: ['fs_read', 'fs_list', 'grep'], compaction: {} }],
      }),
    );
    expect(result.stopReason).toBe('completed');
    const results = new Map(
      result.messages
        .filter((message) => message.role === 'tool')
        .map((message) => [message.tool_call_id, message.content]),
    );
    expect(results.size).toBe(105);
    expect(results.get('big')).toMatch(
      /^Error: the arguments of fs_read are \d+ characters, more than a tool call may carry/,
    );
    expect(results.get('deep')).toBe(
      `Error: the arguments of fs_read nest deeper than ${MAX_TOOL_ARGUMENT_DEPTH} levels`,
    );
    expect(results.get('bad')).toMatch(/^Error: the arguments of fs_read are not valid JSON/);
    expect(results.get('nul')).toMatch(/^Error: fs_read: /);
    expect(results.get('who')).toMatch(/^Error: there is no tool named "rm_rf"/);
    // The first MAX_TOOL_CALLS_PER_TURN calls of the turn were looked at; the rest did not run.
    const ran = [...results.entries()].filter(([, content]) => content === '     1\talpha\n     2\t');
    expect(ran).toHaveLength(MAX_TOOL_CALLS_PER_TURN - hostile.length);
    expect(results.get('c99')).toMatch(/^Error: this turn asked for 105 tool calls; at most 64 run per turn/);
    const handle = t.client.workflow.getHandle(workflowId);
    expect(await mostToolActivitiesPerTask(handle)).toBeLessThanOrEqual(TOOL_CALL_CONCURRENCY);
    await Worker.runReplayHistory({ workflowBundle: bundle }, await handle.fetchHistory(), workflowId);
  });

  it('a model that calls compact_context every round does not thrash: the cooldown and the minimum reclaim bound its compactions', async () => {
    const rounds = 24;
    // Every turn: a long note, compact_context (with a focus), and a file read.
    server.setDefault((request) => {
      const { messages } = request.body as { messages: ChatMessage[] };
      const turn = messages.filter((message) => message.role === 'assistant').length;
      // Billed what the request holds, so the run's counters stay calibrated.
      const prompt = replayTokens(messages);
      return completion(
        {
          content: `Turn ${turn}: ${'I looked at the parser and the tests again, and noted what I saw. '.repeat(12)}`,
          tool_calls: [
            call(`k${turn}`, 'compact_context', JSON.stringify({ focus: 'Keep the parser findings.' })),
            call(`r${turn}`, 'fs_read', '{"path":"a.txt"}'),
          ],
        },
        { prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 },
      );
    });
    const t = await testConnection();
    const workflowId = uniqueId('hostile-compact-context');
    const model = { ...openaiModel, contextWindow: 60_000 };
    const { result, details } = await withFileWorker(
      t,
      { workflowBundle: bundle, activities: activities() },
      async (t) => {
        const ended = await t.client.workflow.execute(agentRun, {
          taskQueue: t.taskQueue,
          workflowId,
          args: [
            {
              messages: opening,
              model,
              tools: ['fs_read'],
              maxRounds: rounds,
              compaction: { keepRecent: 4, agentTool: { cooldownRounds: 3, minReclaim: 1_500 } },
            },
          ],
        });
        // The UI's current details (a query: while the worker polls).
        const metadata: unknown = await t.client.workflow.getHandle(workflowId).query('__temporal_workflow_metadata');
        return { result: ended, details: String(Reflect.get(Object(metadata), 'currentDetails')) };
      },
    );
    expect(result.stopReason).toBe('maxRounds');
    expect(result.rounds).toBe(rounds);
    const answers = result.messages.filter(
      (message) => message.role === 'tool' && message.tool_call_id?.startsWith('k'),
    );
    const { compactions } = result;
    // Far under the trigger of a 60,000-token window: every compaction is the tool's.
    const counted = compactions.totals.compactions;
    // Measured: 4 summaries in 24 rounds (before rounds 9, 14, 19 and 24): the first calls are
    // refused for too little to reclaim; after each compaction the cooldown refuses three calls and
    // the minimum reclaim the next one. The bound: one compaction in cooldownRounds + 1 rounds.
    expect(counted).toBeGreaterThanOrEqual(2);
    expect(counted).toBeLessThanOrEqual(Math.ceil(rounds / 4));
    const rounds_ = compactions.recent.map((record) => record.round);
    for (let index = 1; index < rounds_.length; index += 1)
      expect((rounds_[index] ?? 0) - (rounds_[index - 1] ?? 0)).toBeGreaterThanOrEqual(4);
    for (const record of compactions.recent) {
      expect(record.tokensReclaimed).toBeGreaterThan(0);
      expect(record.askedBy).toBe('agent');
    }
    expect(details).toContain('asked by the agent');
    // Every call was answered by the run: accepted, or refused with the reason the model reads.
    const lines = await readSessionLines(t.client, result.session);
    const callAnswers = lines.flatMap((line) =>
      line.type === 'message' && line.message.role === 'tool' && line.message.tool_call_id?.startsWith('k')
        ? [String(line.message.content)]
        : [],
    );
    expect(callAnswers).toHaveLength(rounds);
    const accepted = callAnswers.filter((text) => text.startsWith('compact_context: accepted'));
    expect(accepted).toHaveLength(counted);
    expect(
      callAnswers.filter((text) => /^compact_context: refused; your context was compacted/.test(text)).length,
    ).toBeGreaterThan(0);
    expect(
      callAnswers.filter((text) => /^compact_context: refused; a compaction now would reclaim at most about/.test(text))
        .length,
    ).toBeGreaterThan(0);
    expect(answers.length).toBeLessThanOrEqual(rounds);
    // The focus reached the summarizer as the compaction's instructions.
    const summarizeInputs = ((await t.client.workflow.getHandle(workflowId).fetchHistory()).events ?? []).flatMap(
      (event) => {
        const scheduled = event.activityTaskScheduledEventAttributes;
        if (scheduled?.activityType?.name !== 'summarize') return [];
        return [
          JSON.parse(Buffer.from(scheduled.input?.payloads?.[0]?.data ?? []).toString('utf8')) as {
            instructions?: string;
          },
        ];
      },
    );
    expect(summarizeInputs.length).toBeGreaterThanOrEqual(1);
    // The focus leads the instructions; the identifiers coverage requires may follow (docs/design.md#coverage).
    for (const input of summarizeInputs) expect(input.instructions?.split('\n')[0]).toBe('Keep the parser findings.');
  });

  it('one tool result larger than the whole window: cut middle-out to fit, recorded, and the run completes (no ContextExhausted)', async () => {
    const line =
      'at com.fasterxml.jackson.databind.deser.BeanDeserializer.deserializeFromObject(BeanDeserializer.java:351)\n';
    writeFileSync(join(root, 'huge.log'), line.repeat(900));
    server.script(
      completion({ content: null, tool_calls: [call('h', 'fs_read', '{"path":"huge.log"}')] }),
      completion({ content: 'The log is one repeated frame.' }),
    );
    const t = await testConnection();
    const workflowId = uniqueId('oversized-result');
    const result = await withFileWorker(t, { workflowBundle: bundle, activities: activities() }, (t) =>
      t.client.workflow.execute(agentRun, {
        taskQueue: t.taskQueue,
        workflowId,
        args: [
          {
            messages: opening,
            model: { ...openaiModel, contextWindow: 8000 },
            tools: ['fs_read'],
            compaction: {},
          },
        ],
      }),
    );
    expect(result.stopReason).toBe('completed');
    const cut = result.messages.find((message) => message.role === 'tool');
    expect(String(cut?.content)).toContain('characters cut from the middle by the harness to fit the context window');
    expect(result.compactions.recent.some((record) => (record.truncated ?? 0) > 0)).toBe(true);
    const handle = t.client.workflow.getHandle(workflowId);
    await Worker.runReplayHistory({ workflowBundle: bundle }, await handle.fetchHistory(), workflowId);
  });

  it('a catastrophic grep: the run goes on, and a compaction started on the same worker meanwhile completes first', async () => {
    server.script(
      completion({ content: null, tool_calls: [call('g', 'grep', '{"pattern":"(a+)+$","path":"evil.txt"}')] }),
      completion({ content: 'That pattern was a bad idea.' }),
    );
    const t = await testConnection();
    const workflowId = uniqueId('hostile-grep');
    const { result, compacted } = await withFileWorker(
      t,
      { workflowBundle: bundle, activities: activities(4000) },
      async (t) => {
        const run = await t.client.workflow.start(agentRun, {
          taskQueue: t.taskQueue,
          workflowId,
          args: [{ messages: opening, model: openaiModel, tools: ['grep'], compaction: {} }],
        });
        // Wait until the grep is running, then ask the same worker for a whole compaction.
        while ((await grepState(run)) !== 'running') await new Promise((resolve) => setTimeout(resolve, 100));
        const compaction = await t.client.workflow.execute('compactConversation', {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('beside-grep'),
          args: [{ messages: toolRounds(20, 400), options: { contextBudget: 2000 } }],
        });
        const grepDone = (await grepState(run)) === 'done';
        return {
          result: await run.result(),
          compacted: { result: compaction as CompactionResult, grepDoneBefore: grepDone },
        };
      },
    );
    expect(compacted.result.tokensAfter).toBeLessThan(compacted.result.tokensBefore);
    // The compaction finished while the grep was still held by its pattern (the grep ends at 4 s).
    expect(compacted.grepDoneBefore).toBe(false);
    expect(result.stopReason).toBe('completed');
    const grepResult = result.messages.find((message) => message.role === 'tool')?.content;
    expect(grepResult).toMatch(
      /^no matches for \/\(a\+\)\+\$\/ in evil\.txt\n\[stopped after 4 s: the search took too long/,
    );
  });

  it('every class of hostile model at once on one worker: each run ends as its class must, every call answered once, no workflow task failed, every history replays', async () => {
    const hostileRoot = mkdtempSync(join(tmpdir(), 'hostile-classes-'));
    try {
      writeHostileToolRoot(hostileRoot);
      // The classes' expected notes name the worker's grep deadline (GREP_SECONDS).
      const classes = hostileClasses(GREP_SECONDS);
      server.setDefault(hostileResponder(classes));
      const t = await testConnection();
      const tools = activities(GREP_SECONDS * 1000, hostileRoot);
      const runs = await withFileWorker(t, { workflowBundle: bundle, activities: tools }, (t) =>
        Promise.all(
          classes.map(async (hostile) => {
            const workflowId = uniqueId(`hostile-${hostile.name}`);
            const handle = await t.client.workflow.start(agentRun, {
              taskQueue: t.taskQueue,
              workflowId,
              args: [hostileInput(hostile)],
            });
            const outcome = await handle.result().then(
              (result) => ({ status: 'completed' as const, stopReason: result.stopReason, messages: result.messages }),
              (error: unknown) => {
                if (!(error instanceof WorkflowFailedError) || !(error.cause instanceof ApplicationFailure))
                  throw error;
                return { status: 'failed' as const, failure: `${error.cause.type ?? ''}: ${error.cause.message}` };
              },
            );
            return { hostile, handle, outcome };
          }),
        ),
      );
      const problems = runs.flatMap(({ hostile, outcome }) =>
        hostileProblems(hostile, outcome).map((problem) => `${hostile.name}: ${problem}`),
      );
      expect(problems).toEqual([]);
      const histories: Array<{ workflowId: string; history: temporal.api.history.v1.IHistory }> = [];
      for (const { handle } of runs) {
        const history = await handle.fetchHistory();
        const failedTasks = (history.events ?? []).filter((event) => event.workflowTaskFailedEventAttributes);
        expect(failedTasks, handle.workflowId).toEqual([]);
        histories.push({ workflowId: handle.workflowId, history });
      }
      await replayHistories(bundle, histories);
    } finally {
      rmSync(hostileRoot, { recursive: true, force: true });
    }
  });

  it(
    'random hostile turns (fast-check): every call answered once and in order, the bound honoured, the run completes and replays',
    { timeout: 300_000 },
    async () => {
      const names = fc.constantFrom('fs_read', 'fs_list', 'grep', 'rm_rf', '__proto__', 'toString');
      const args = fc.oneof(
        fc
          .record({ path: fc.constantFrom('a.txt', 'evil.txt', '..', '/etc', 'a\u0000b', '') })
          .map((value) => JSON.stringify(value)),
        fc.record({ pattern: fc.constantFrom('alpha', '(a+)+$', '(', '.') }).map((value) => JSON.stringify(value)),
        fc.jsonValue().map((value) => JSON.stringify(value)),
        fc.string({ maxLength: 30 }),
        fc.integer({ min: 60, max: 70 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
      );
      const turn = fc.array(fc.record({ name: names, args }), { minLength: 1, maxLength: 90 });
      const t = await testConnection();
      const histories: Array<{ workflowId: string; history: temporal.api.history.v1.IHistory }> = [];
      await withFileWorker(t, { workflowBundle: bundle, activities: activities(300) }, async (t) => {
        await fc.assert(
          fc.asyncProperty(turn, async (asked) => {
            const calls = asked.map(({ name, args: text }, index) => call(`f${index}`, name, text));
            server.script(completion({ content: null, tool_calls: calls }), completion({ content: 'Done.' }));
            const workflowId = uniqueId('hostile-fuzz');
            const result = await t.client.workflow.execute(agentRun, {
              taskQueue: t.taskQueue,
              workflowId,
              args: [{ messages: opening, model: openaiModel, tools: ['fs_read', 'fs_list', 'grep'], compaction: {} }],
            });
            expect(result.stopReason).toBe('completed');
            const answers = result.messages.filter((message) => message.role === 'tool');
            expect(answers.map((message) => message.tool_call_id)).toEqual(calls.map((asking) => asking.id));
            for (const [index, answer] of answers.entries())
              if (index >= MAX_TOOL_CALLS_PER_TURN)
                expect(answer.content).toMatch(/^Error: this turn asked for \d+ tool calls; at most 64 run per turn/);
            const handle = t.client.workflow.getHandle(workflowId);
            const history = await handle.fetchHistory();
            expect((history.events ?? []).filter((event) => event.workflowTaskFailedEventAttributes)).toEqual([]);
            expect(await mostToolActivitiesPerTask(handle)).toBeLessThanOrEqual(TOOL_CALL_CONCURRENCY);
            histories.push({ workflowId, history });
          }),
          { numRuns: 4, seed: 20_261_202 },
        );
      });
      // Every run's history, on one replay worker.
      await replayHistories(bundle, histories);
    },
  );
});
