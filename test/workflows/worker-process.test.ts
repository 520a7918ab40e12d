// The worker as a process (`tsx src/worker/create-worker.ts`, configured only by its environment): a worker
// SIGKILLed while the fake server holds its summarize request loses nothing — a second worker
// takes the retry after the heartbeat timeout and the workflow completes with the summary. Also:
// configuration errors name the variable, and SIGTERM shuts the worker down gracefully.
import { temporal } from '@temporalio/proto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import { createOpenAISummarizer } from '../../src/index.js';
import { createActivities } from '../../src/activities/index.js';
import type { CompactConversationOptions } from '../../src/workflows/compact-conversation.js';
import { loadWorkerConfig } from '../../src/worker/create-worker.js';
import type { compactConversation } from '../../src/workflows/index.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { toolRounds } from '../support/messages.js';
import { testConnection, uniqueId, withWorker } from '../support/temporal.js';
import {
  killWorkerProcesses,
  spawnWorkerProcess,
  writeProductionBundle,
  type WorkerProcess,
} from '../support/worker-process.js';
import { eventTypes } from './harness.js';

const SUMMARY = '## Goals\nFix app.py.\n## Decisions\nNone.\n## Files and commands\nf*.py\n## Unresolved\nNone.';

async function waitForOutput(worker: WorkerProcess, pattern: RegExp, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!pattern.test(worker.output())) {
    if (worker.child.exitCode !== null)
      throw new Error(`the worker exited (${worker.child.exitCode}):\n${worker.output()}`);
    if (performance.now() > deadline)
      throw new Error(`no ${pattern} from the worker within ${timeoutMs} ms:\n${worker.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('worker process', () => {
  let bundle: Awaited<ReturnType<typeof writeProductionBundle>>;
  let server: FakeOpenAI;
  const spawned: WorkerProcess[] = [];

  beforeAll(async () => {
    bundle = await writeProductionBundle('compactor-worker-');
  });
  afterAll(() => bundle.remove());
  beforeEach(async () => {
    server = await startFakeOpenAI();
  });
  afterEach(async () => {
    killWorkerProcesses(spawned);
    await server.close();
  });

  function workerEnv(address: string, namespace: string, taskQueue: string): Record<string, string> {
    return {
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      COMPACTOR_TASK_QUEUE: taskQueue,
      COMPACTOR_WORKFLOW_BUNDLE: bundle.bundlePath,
      COMPACTOR_SUMMARIZER_MODEL: 'fake-summarizer',
      OPENAI_BASE_URL: server.baseURL,
      OPENAI_API_KEY: 'test-key',
    };
  }

  it('SIGKILLed while its request is held: a second worker completes the compaction with the summary', async () => {
    const t = await testConnection();
    server.script({ kind: 'hang' }, { kind: 'summary', text: SUMMARY });
    const first = spawnWorkerProcess('src/worker/create-worker.ts', workerEnv(t.address, t.namespace, t.taskQueue));
    spawned.push(first);
    // Without a prebuilt bundle the worker bundles its workflows at start: on a loaded machine that takes a while.
    await waitForOutput(first, /polling task queue/, 90_000);

    const options: CompactConversationOptions = {
      contextBudget: 4000,
      retryBackoff: '100ms',
      heartbeatTimeout: '2s',
      startToCloseTimeout: '60s',
    };
    const handle = await t.client.workflow.start<typeof compactConversation>('compactConversation', {
      taskQueue: t.taskQueue,
      workflowId: uniqueId('worker-crash'),
      args: [{ messages: toolRounds(20, 400), options }],
    });
    await server.waitForRequests(1, 20_000);
    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await server.waitUntil(
      () => server.requests[0]?.outcome === 'aborted',
      5000,
      'the killed worker’s request to drop',
    );

    const summarizer = createOpenAISummarizer({
      model: 'fake-summarizer',
      baseURL: server.baseURL,
      apiKey: 'test-key',
    });
    const result = await withWorker(
      t,
      { workflowBundle: { codePath: bundle.bundlePath }, activities: createActivities({ summarizer }) },
      () => handle.result(),
    );
    expect(result.fallback).toBe(false);
    expect(result.summary).toContain(SUMMARY);
    expect(server.requests).toHaveLength(2);
    const events = await eventTypes(handle);
    expect(events.filter((type) => type === 'ActivityTaskScheduled')).toHaveLength(1);
    expect(events).toContain('ActivityTaskCompleted');
    // The heartbeat timeout (2 s), not the 60 s startToCloseTimeout, ended the dead attempt: the
    // attempt that completed is the second, and the failure it carries is a heartbeat timeout.
    const started = ((await handle.fetchHistory()).events ?? []).flatMap((event) =>
      event.activityTaskStartedEventAttributes ? [event.activityTaskStartedEventAttributes] : [],
    );
    expect(started.map(({ attempt }) => attempt)).toEqual([2]);
    expect(started[0]?.lastFailure?.timeoutFailureInfo?.timeoutType).toBe(
      temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT,
    );
  }, 180_000);

  it('SIGTERM: shuts down gracefully and exits 0', async () => {
    const t = await testConnection();
    const worker = spawnWorkerProcess('src/worker/create-worker.ts', workerEnv(t.address, t.namespace, t.taskQueue));
    spawned.push(worker);
    // Without a prebuilt bundle the worker bundles its workflows at start: on a loaded machine that takes a while.
    await waitForOutput(worker, /polling task queue/, 90_000);
    // The start line is the one the plugin and createWorker print, with what only the command adds.
    expect(worker.output()).toContain(
      `temporal-compactor worker: polling task queue "${t.taskQueue}" (all); OpenAI-compatible summarizer: model fake-summarizer at ${server.baseURL}, timeout 60000 ms; chat: model server at ${server.baseURL}; payloads inline (no store, no codec); stop with Ctrl-C`,
    );
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
    expect(worker.output()).toContain('worker: stopped');
  }, 120_000);

  it('a configuration error exits 1 naming the variable', async () => {
    const worker = spawnWorkerProcess('src/worker/create-worker.ts', {
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      COMPACTOR_MAX_CONCURRENT_ACTIVITIES: 'lots',
      COMPACTOR_SUMMARIZER_MODEL: 'm',
    });
    spawned.push(worker);
    expect((await worker.exited).code).toBe(1);
    expect(worker.output()).toContain(
      'configuration error: COMPACTOR_MAX_CONCURRENT_ACTIVITIES: expected a positive integer, got "lots"',
    );
  }, 30_000);
});

describe('loadWorkerConfig (the environment through src/config.ts)', () => {
  function errorOf(env: Record<string, string>): ConfigError {
    try {
      loadWorkerConfig(env);
    } catch (error) {
      if (error instanceof ConfigError) return error;
      throw error;
    }
    throw new Error('expected a ConfigError');
  }

  it('defaults: task queue "compactor" for everything, mode "all", the offline summarizer without an OpenAI endpoint', () => {
    const config = loadWorkerConfig({});
    expect(config).toMatchObject({
      taskQueue: 'compactor',
      summarizerTaskQueue: 'compactor',
      mode: 'all',
      namespace: 'default',
      shutdownGraceTime: 10_000,
    });
    expect(config.describeSummarizer).toMatch(/extractive/);
  });

  it('maps every worker setting', () => {
    const config = loadWorkerConfig({
      TEMPORAL_NAMESPACE: 'agents',
      COMPACTOR_TASK_QUEUE: 'agents',
      COMPACTOR_SUMMARIZER_TASK_QUEUE: 'summaries',
      COMPACTOR_WORKER_MODE: 'activities',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      COMPACTOR_SUMMARIZER_MODEL: 'small',
      COMPACTOR_MAX_CONCURRENT_ACTIVITIES: '8',
      COMPACTOR_MAX_CONCURRENT_WORKFLOW_TASKS: '4',
      COMPACTOR_SHUTDOWN_GRACE_TIME: '30s',
      COMPACTOR_SUMMARIZER_CONTEXT_WINDOW: '128000',
    });
    expect(config).toMatchObject({
      namespace: 'agents',
      taskQueue: 'agents',
      summarizerTaskQueue: 'summaries',
      mode: 'activities',
      maxConcurrentActivityTaskExecutions: 8,
      maxConcurrentWorkflowTaskExecutions: 4,
      shutdownGraceTime: 30_000,
      summarizerContextWindow: 128_000,
    });
    expect(config.describeSummarizer).toBe(
      'OpenAI-compatible summarizer: model small at http://127.0.0.1:9/v1, timeout 60000 ms',
    );
    expect(config.temporalEnv?.TEMPORAL_NAMESPACE).toBe('agents');
  });

  it('names the variable at fault', () => {
    expect(errorOf({ COMPACTOR_WORKER_MODE: 'both' }).setting).toBe('COMPACTOR_WORKER_MODE');
    expect(errorOf({ COMPACTOR_SUMMARIZER_TIMEOUT: '-5' }).setting).toBe('COMPACTOR_SUMMARIZER_TIMEOUT');
    expect(errorOf({ COMPACTOR_WORKFLOW_BUNDLE: '/nonexistent/bundle.js' }).message).toMatch(
      /^COMPACTOR_WORKFLOW_BUNDLE: expected the path of an existing workflow bundle/,
    );
    expect(errorOf({ COMPACTOR_SHUTDOWN_GRACE_TIME: 'a while' }).setting).toBe('COMPACTOR_SHUTDOWN_GRACE_TIME');
  });
});
