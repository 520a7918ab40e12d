// The workflows on a dev server against a real llama.cpp `llama-server` with SmolLM2-135M-Instruct
// (test/support/llama-server.ts), started with a 4,096-token context: `compactConversation` with
// its worker process SIGKILLed mid-summary, a cancellation that reaches the server, an `agentRun`
// whose chat and summarizer are both the real model. What the server did is read from its own log: each
// request it takes logs "processing task", one it finishes logs its timings ("prompt eval time"),
// and every request it lets go logs "stop processing: n_tokens = N".
// `npm run test:llm` runs this file.
import { temporal } from '@temporalio/proto';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findTrajectory } from '../../../corpus/index.js';
import { createActivities } from '../../../src/activities/index.js';
import type { ChatMessage } from '../../../src/core/types.js';
import { createOpenAISummarizer } from '../../../src/summarizers/openai.js';
import { agentRun } from '../../../src/workflows/agent-run.js';
import type { CompactConversationOptions } from '../../../src/workflows/compact-conversation.js';
import type { compactConversation } from '../../../src/workflows/index.js';
import { realSummarizerEnv, startLlamaServer, type LlamaServer } from '../../support/llama-server.js';
import { testConnection, uniqueId, withWorker } from '../../support/temporal.js';
import {
  killWorkerProcesses,
  spawnWorkerProcess,
  writeProductionBundle,
  type WorkerProcess,
} from '../../support/worker-process.js';
import { until } from '../../support/until.js';

const CONTEXT_SIZE = 4096;
/**
 * The summarizer's window the kill test plans with: half the server's, so a short middle (the first
 * 26 messages of a tau-bench run) is cut into pieces of about 1,000 of the server's tokens.
 */
const SUMMARIZER_WINDOW = 2048;
/** A bound on each summary, so a piece takes seconds of generation on two shared cores. */
const MAX_TOKENS = 64;
const TASK_STARTED = 'processing task';
const TASK_TIMINGS = 'prompt eval time';
const TASK_RELEASED = 'stop processing';

let llama: LlamaServer;
let bundle: Awaited<ReturnType<typeof writeProductionBundle>>;
const spawned: WorkerProcess[] = [];

beforeAll(async () => {
  [llama, bundle] = await Promise.all([
    startLlamaServer({ contextSize: CONTEXT_SIZE }),
    writeProductionBundle('llm-workflows-'),
  ]);
});

afterEach(() => killWorkerProcesses(spawned));

afterAll(async () => {
  await llama.stop();
  bundle.remove();
});

function occurrences(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

/** What the server logged since `offset` (a length of its log). */
async function logSince(offset: number): Promise<string> {
  return (await llama.log()).slice(offset);
}

/** The summarizer every in-process worker of this file uses: the real model, bounded, greedy. */
const realSummarizer = (maxTokens = MAX_TOKENS) =>
  createOpenAISummarizer({
    baseURL: llama.baseURL,
    apiKey: 'unused',
    model: llama.model,
    maxTokens,
    temperature: 0,
    timeout: 240_000,
  });

/** The first `count` messages of a tau-bench airline run: a system prompt, the customer, tool calls and results. */
function tauBench(name: string, count?: number): ChatMessage[] {
  return findTrajectory(name).messages.slice(0, count);
}

describe('compactConversation against llama-server', () => {
  it('a worker SIGKILLed mid-summary: the pieces already summarized are kept, a second worker finishes with a summary', async () => {
    const t = await testConnection();
    const first = spawnWorkerProcess('src/worker/create-worker.ts', {
      TEMPORAL_ADDRESS: t.address,
      TEMPORAL_NAMESPACE: t.namespace,
      COMPACTOR_TASK_QUEUE: t.taskQueue,
      COMPACTOR_WORKFLOW_BUNDLE: bundle.bundlePath,
      ...realSummarizerEnv(llama, MAX_TOKENS),
      COMPACTOR_SUMMARIZER_CONTEXT_WINDOW: String(SUMMARIZER_WINDOW),
    });
    spawned.push(first);
    await until(() => first.output().includes('polling task queue'), 90_000, `the worker to poll:\n${first.output()}`);

    const offset = (await llama.log()).length;
    const options: CompactConversationOptions = {
      contextBudget: 2000,
      summarizerContextWindow: SUMMARIZER_WINDOW,
      retryBackoff: '100ms',
      heartbeatTimeout: '5s',
      startToCloseTimeout: '240s',
    };
    const handle = await t.client.workflow.start<typeof compactConversation>('compactConversation', {
      taskQueue: t.taskQueue,
      workflowId: uniqueId('llm-worker-kill'),
      args: [{ messages: tauBench('taubench_gpt4o_airline_task46_trial3', 26), options }],
    });
    // Piece 1 finished (its timings are logged) and piece 2 is on the server: kill the worker now.
    await until(
      async () => {
        const log = await logSince(offset);
        return occurrences(log, TASK_TIMINGS) >= 1 && occurrences(log, TASK_STARTED) >= 2;
      },
      240_000,
      'piece 2 to reach the server',
    );
    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    // The dead worker's connection closed: the server lets its task go without finishing it.
    await until(
      async () => occurrences(await logSince(offset), TASK_RELEASED) >= 2,
      // As for a cancelled request below: a minute and more when the machine is loaded.
      180_000,
      'the server to release the killed request',
    );
    expect(occurrences(await logSince(offset), TASK_TIMINGS)).toBe(1);

    const result = await withWorker(
      t,
      {
        workflowBundle: { codePath: bundle.bundlePath },
        activities: createActivities({ summarizer: realSummarizer(), summarizerContextWindow: SUMMARIZER_WINDOW }),
      },
      () => handle.result(),
    );
    expect(result.fallback).toBe(false);
    expect(result.summary?.length).toBeGreaterThan(0);
    expect(result.summaryPieces).toBeGreaterThanOrEqual(2);

    const started = ((await handle.fetchHistory()).events ?? []).flatMap((event) =>
      event.activityTaskStartedEventAttributes ? [event.activityTaskStartedEventAttributes] : [],
    );
    // The request in flight died with the worker: its activity's second attempt (after the heartbeat
    // timeout) is the new worker's. Every other request, those finished before the kill included,
    // ran once.
    const retried = started.filter(({ attempt }) => attempt !== 1);
    expect(retried.map(({ attempt }) => attempt)).toEqual([2]);
    expect(retried[0]?.lastFailure?.timeoutFailureInfo?.timeoutType).toBe(
      temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT,
    );
    expect(started.indexOf(retried[0] as (typeof started)[number])).toBeGreaterThan(0);
    // The server saw piece 1 once: every request after the kill is the new worker's.
    const log = await logSince(offset);
    expect(occurrences(log, TASK_STARTED)).toBe(started.length + 1);
  });

  it('cancelled mid-summary: the server lets the request go unfinished', async () => {
    const t = await testConnection();
    const offset = (await llama.log()).length;
    // One request (the middle fits the window) whose summary may run to 1,500 tokens: minutes of
    // generation here, so the cancellation lands while the server is still writing it.
    const maxTokens = 1500;
    const result = await withWorker(
      t,
      {
        workflowBundle: { codePath: bundle.bundlePath },
        activities: createActivities({ summarizer: realSummarizer(maxTokens) }),
      },
      async () => {
        const handle: WorkflowHandle<typeof compactConversation> = await t.client.workflow.start<
          typeof compactConversation
        >('compactConversation', {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('llm-cancel'),
          args: [
            {
              messages: tauBench('taubench_gpt4o_airline_task2_trial1', 24),
              options: { contextBudget: 1500, heartbeatTimeout: '5s', startToCloseTimeout: '240s' },
            },
          ],
        });
        await until(
          async () => occurrences(await logSince(offset), TASK_STARTED) >= 1,
          60_000,
          'the summarize request to reach the server',
        );
        await handle.cancel();
        return handle.result().then(
          () => undefined,
          (error: unknown) => error,
        );
      },
    );
    expect(result).toBeInstanceOf(WorkflowFailedError);
    expect((result as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    await until(
      async () => occurrences(await logSince(offset), TASK_RELEASED) >= 1,
      // The server sees the closed connection after the prompt batch it is evaluating: a minute and
      // more when the machine is loaded.
      180_000,
      'the server to release the cancelled request',
    );
    const log = await logSince(offset);
    console.info(
      `[llama-server] after the cancellation:\n${log
        .split('\n')
        .filter((line) => line.includes('slot'))
        .join('\n')}`,
    );
    expect(occurrences(log, TASK_STARTED)).toBe(1);
    // Released without its timings: the server did not finish it, and never generated its 1,500 tokens.
    expect(occurrences(log, TASK_TIMINGS)).toBe(0);
    const released = Number(/stop processing: n_tokens = (\d+)/.exec(log)?.[1]);
    expect(released).toBeLessThan(CONTEXT_SIZE);
    const slots: unknown = await (await fetch(`${llama.url}/slots`)).json();
    expect(slots).toEqual([expect.objectContaining({ is_processing: false })]);
  });
});

describe('agentRun against llama-server', () => {
  /** The chat backend: the server's model, greedy, with the server's window. */
  const chatModel = () => ({
    provider: 'openai' as const,
    model: llama.model,
    contextWindow: CONTEXT_SIZE,
    maxOutputTokens: 64,
    temperature: 0,
  });
  const chatClient = () => new OpenAI({ baseURL: llama.baseURL, apiKey: 'unused', maxRetries: 0 });

  it('chat and summarizer both the real model: the opening is compacted with its summary, then the model answers', async () => {
    const t = await testConnection();
    const offset = (await llama.log()).length;
    // The first 20 messages of a tau-bench run (about 2,800 tokens, ending with the customer's turn):
    // over 0.7 of the room a 4,096-token window leaves, so the run compacts before its first chat,
    // aiming at that much: its middle fits one summarizer request (and the coverage retry).
    const messages = tauBench('taubench_gpt4o_airline_task46_trial3', 20);
    const result = await withWorker(
      t,
      {
        workflowBundle: { codePath: bundle.bundlePath },
        activities: createActivities({
          summarizer: realSummarizer(),
          summarizerContextWindow: CONTEXT_SIZE,
          openai: chatClient(),
          chatTimeoutMs: 240_000,
        }),
      },
      () =>
        t.client.workflow.execute(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('llm-agent'),
          args: [
            {
              messages,
              model: chatModel(),
              compaction: {
                summarizerContextWindow: CONTEXT_SIZE,
                heartbeatTimeout: '30s',
                triggerRatio: 0.7,
                targetRatio: 0.7,
              },
              maxRounds: 1,
            },
          ],
        }),
    );
    console.info(
      `[llama-server] agentRun: ${result.rounds} round(s), usage ${JSON.stringify(result.compactions.usage)}, last ${JSON.stringify(result.messages.at(-1))}`,
    );
    expect(result.rounds).toBe(1);
    expect(result.messages.at(-1)?.role).toBe('assistant');
    const { usage } = result.compactions;
    expect(usage.requests).toBe(1);
    expect(usage.promptTokens).toBeGreaterThan(0);
    expect(usage.promptTokens).toBeLessThan(CONTEXT_SIZE);
    expect(usage.summarizer.requests).toBeGreaterThanOrEqual(1);
    expect(usage.summarizer.estimated).toBe(false);
    expect(result.compactions.totals.summaries).toBeGreaterThanOrEqual(1);
    expect(result.compactions.totals.fallbacks).toBe(0);
    expect(result.messages.some((message) => JSON.stringify(message).includes('[Summary by the harness of'))).toBe(
      true,
    );
    const log = await logSince(offset);
    expect(log).not.toContain('exceeds the available context size');
    expect(occurrences(log, TASK_STARTED)).toBe(usage.requests + usage.summarizer.requests);
    // The summary's request and the chat: each takes seconds to tens of seconds on two shared cores,
    // over a minute under a load average of 20.
  }, 600_000);
});
