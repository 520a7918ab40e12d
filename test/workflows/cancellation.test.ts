// Cancellation on a dev server (docs/design.md#cancellation, docs/design.md#temporal): the in-flight summarize request and any retry
// backoff stop at once; compactConversation ends cancelled; compact() in a user's workflow
// resolves with the hard trim and the caller's next timer rejects with CancelledFailure.
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Compactor, createOpenAISummarizer, type Summarizer } from '../../src/index.js';
import type { CompactConversationOptions } from '../../src/workflows/compact-conversation.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { toolRounds } from '../support/messages.js';
import {
  bundleTestWorkflows,
  cancelledEventTypes,
  eventTypes,
  maybeRecordHistory,
  uniqueId,
  withWorker,
} from './harness.js';
import type { compactConversation, compactInWorkflow } from './test-workflows.js';

const messages = toolRounds(20, 400);
const options: CompactConversationOptions = {
  contextBudget: 4000,
  maxAttempts: 3,
  // The longest backoff there is: a cancellation must not wait for it.
  retryBackoff: '30s',
  heartbeatTimeout: '2s',
  startToCloseTimeout: '60s',
};

/** Polls `describe()` until the summarize activity has failed once and waits in its retry backoff. */
async function untilInBackoff(handle: WorkflowHandle): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline) {
    const { raw } = await handle.describe();
    const pending = raw.pendingActivities?.[0];
    if (pending !== undefined && (pending.attempt ?? 0) >= 2) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the summarize activity never reached its retry backoff');
}

describe('cancellation on a dev server', () => {
  let bundle: WorkflowBundleWithSourceMap;
  let server: FakeOpenAI;
  let summarizer: Summarizer;

  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });
  beforeEach(async () => {
    server = await startFakeOpenAI();
    summarizer = createOpenAISummarizer({
      model: 'fake-summarizer',
      baseURL: server.baseURL,
      apiKey: 'test-key',
      timeout: 50_000,
    });
  });
  afterEach(() => server.close());

  describe('compactConversation ends cancelled', () => {
    it('while the request hangs: the activity cancelled and the request aborted, before any timeout', async () => {
      server.script({ kind: 'hang' });
      await withWorker(bundle, { summarizer }, async ({ client, taskQueue }) => {
        const handle = await client.workflow.start<typeof compactConversation>('compactConversation', {
          taskQueue,
          workflowId: uniqueId('cancel-hang'),
          args: [{ messages, options }],
        });
        await server.waitForRequests(1, 10_000);
        const events = await cancelledEventTypes(handle);
        expect(events).toContain('ActivityTaskCancelRequested');
        expect(events).not.toContain('ActivityTaskTimedOut');
        // The worker learns of it on its next heartbeat and aborts the HTTP request.
        await server.waitUntil(
          () => server.requests[0]?.outcome === 'aborted',
          10_000,
          'the hanging request to be aborted',
        );
        expect(server.requests).toHaveLength(1);
        await maybeRecordHistory(handle, 'cancel-while-request-hangs');
      });
    });

    it('while a 30 s retry backoff waits: the activity cancelled, no second request', async () => {
      server.script({ kind: 'status', status: 503 });
      server.setDefault({ kind: 'summary', text: 'never asked for' });
      await withWorker(bundle, { summarizer }, async ({ client, taskQueue }) => {
        const handle = await client.workflow.start<typeof compactConversation>('compactConversation', {
          taskQueue,
          workflowId: uniqueId('cancel-backoff'),
          args: [{ messages, options }],
        });
        await untilInBackoff(handle);
        await handle.cancel();
        const error = await handle.result().then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error instanceof WorkflowFailedError ? error.cause : error).toBeInstanceOf(CancelledFailure);
        const events = await eventTypes(handle);
        // TRY_CANCEL: the workflow asks for the cancellation and ends without waiting for it; the
        // scheduled retry dies with the workflow, so no second request is ever made.
        expect(events).toContain('ActivityTaskCancelRequested');
        expect((await handle.describe()).raw.pendingActivities ?? []).toHaveLength(0);
        expect(events.at(-1)).toBe('WorkflowExecutionCanceled');
        expect(server.requests).toHaveLength(1);
        await maybeRecordHistory(handle, 'cancel-during-backoff');
      });
    });
  });

  describe('compact() in a caller workflow', () => {
    /** What the in-process driver returns when the summarizer cannot help: the hard trim. */
    const hardTrim = () =>
      new Compactor({
        ...options,
        summarizer: { summarize: () => Promise.reject(Object.assign(new Error('no'), { status: 401 })) },
      }).compact(messages);

    it.each(['hang', 'backoff'] as const)(
      'cancelled during the %s: resolves with the hard trim, the next timer rejects with CancelledFailure',
      async (phase) => {
        if (phase === 'hang') server.script({ kind: 'hang' });
        else server.script({ kind: 'status', status: 503 });
        await withWorker(bundle, { summarizer }, async ({ client, taskQueue }) => {
          const handle = await client.workflow.start<typeof compactInWorkflow>('compactInWorkflow', {
            taskQueue,
            workflowId: uniqueId(`compact-cancel-${phase}`),
            args: [{ messages, options }],
          });
          if (phase === 'hang') await server.waitForRequests(1, 10_000);
          else await untilInBackoff(handle);
          await handle.cancel();
          const { result, nextStep } = await handle.result();
          expect(nextStep).toBe('cancelled');
          expect(result.fallback).toBe(true);
          expect(result.summary).toBeNull();
          expect(result).toEqual({
            ...(await hardTrim()),
            fallbackReason: { cause: 'cancelled', message: 'the summary request was cancelled' },
          });
          const events = await eventTypes(handle);
          expect(events).toContain('ActivityTaskCancelRequested');
          // The caller's scope is cancelled: its timer rejects without ever being scheduled.
          expect(events).not.toContain('TimerStarted');
          expect(server.requests).toHaveLength(1);
          await maybeRecordHistory(handle, `compact-in-workflow-cancel-during-${phase}`);
        });
      },
    );
  });
});
