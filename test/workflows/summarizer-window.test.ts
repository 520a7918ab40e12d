// summarizerContextWindow under Temporal (docs/design.md#summarizer-window): a middle over the
// summarizer's window is summarized in pieces, one summarize activity per piece, each within the window.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { Compactor, type SummarizeRequest, type Summarizer } from '../../src/index.js';
import type { CompactConversationOptions } from '../../src/workflows/compact-conversation.js';
import { SUMMARY_OUTPUT_SHARE } from '../../src/core/compaction/options.js';
import { requestFor, summarizerMessages } from '../../src/core/compaction/transcript.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage } from '../../src/core/types.js';
import { createActivities } from '../../src/activities/index.js';
import { toolRounds, transcriptOf } from '../support/messages.js';
import { testConnection, withWorker as withWorkerOn } from '../support/temporal.js';
import {
  bundleTestWorkflows,
  cancelledEventTypes,
  eventTypes,
  maybeRecordHistory,
  uniqueId,
  withWorker,
} from './harness.js';
import type { compactConversation } from './test-workflows.js';

const WINDOW = 4096;
const options: CompactConversationOptions = {
  contextBudget: 16_000,
  summarizerContextWindow: WINDOW,
  summaryCoverage: 'off',
  maxAttempts: 2,
  retryBackoff: '100ms',
  heartbeatTimeout: '3s',
  startToCloseTimeout: '20s',
};

/** Deterministic: which files the request's transcript read, so the workflow and in-process runs agree. */
function filesSummarizer(): Summarizer & { requests: SummarizeRequest[] } {
  const requests: SummarizeRequest[] = [];
  return {
    requests,
    summarize(request) {
      requests.push(request);
      const transcript = transcriptOf(request);
      const files = [...transcript.matchAll(/"path":"(f\d+\.py)"/g)].map((match) => match[1]);
      return Promise.resolve({ text: `## Goals\nFix app.py.\n## Decisions\nRead ${files.join(', ')}.` });
    },
  };
}

describe('summaries within the summarizer window, on a dev server', () => {
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  it('runs one summarize activity per piece, each request within the window, and keeps the summary', async () => {
    const messages: ChatMessage[] = toolRounds(30, 2000);
    const summarizer = filesSummarizer();
    const { result, events, inputs, summaries } = await withWorker(
      bundle,
      { summarizer },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start<typeof compactConversation>('compactConversation', {
          taskQueue,
          workflowId: uniqueId('summarizer-window'),
          args: [{ messages, options }],
        });
        const done = await handle.result();
        await maybeRecordHistory(handle, 'compact-conversation-summarizer-window');
        const history = await handle.fetchHistory();
        const scheduled = (history.events ?? []).flatMap((event) =>
          event.activityTaskScheduledEventAttributes ? [event] : [],
        );
        const decode = (data: Uint8Array | null | undefined): unknown =>
          JSON.parse(Buffer.from(data ?? []).toString('utf8'));
        return {
          result: done,
          events: await eventTypes(handle),
          inputs: scheduled.map((event) =>
            decode(event.activityTaskScheduledEventAttributes?.input?.payloads?.[0]?.data),
          ),
          summaries: scheduled.map((event) => decode(event.userMetadata?.summary?.data)),
        };
      },
    );

    expect(result.fallback).toBe(false);
    expect(result.summary).toContain('## Goals');
    const pieces = result.summaryPieces ?? 0;
    expect(pieces).toBeGreaterThan(3);
    expect(events.filter((type) => type === 'ActivityTaskScheduled')).toHaveLength(pieces);
    expect(summarizer.requests).toHaveLength(pieces);
    // The activity input is the usual { instruction, middle, maxTokens }; the request it renders is within the window.
    for (const input of inputs) {
      const { instruction, middle } = input as { instruction: string; middle: ChatMessage[] };
      expect(Object.keys(input as object).sort()).toEqual(['instruction', 'maxTokens', 'middle']);
      expect(defaultCounter.count(summarizerMessages(requestFor(instruction, middle)))).toBeLessThanOrEqual(
        WINDOW * (1 - SUMMARY_OUTPUT_SHARE),
      );
    }
    expect(summaries.map(String)).toEqual(
      summaries.map((_, index) => expect.stringMatching(new RegExp(`, piece ${index + 1} of ${pieces}$`))),
    );
    // The same engine in-process: the same pieces, the same result.
    const inProcess = filesSummarizer();
    const { summarizerContextWindow, contextBudget, summaryCoverage } = options;
    const local = await new Compactor({
      summarizer: inProcess,
      contextBudget,
      summarizerContextWindow,
      summaryCoverage,
    }).compact(messages);
    expect(inProcess.requests).toEqual(summarizer.requests);
    expect(local).toEqual(result);
  });
  it('a cancellation during a piece stops the fold: the piece in flight cancelled, no later piece scheduled', async () => {
    const messages: ChatMessage[] = toolRounds(30, 2000);
    let asked = 0;
    let aborted = false;
    const hanging: Summarizer = {
      summarize(_request, callOptions) {
        asked += 1;
        if (asked < 3) return Promise.resolve({ text: `## Goals\npiece ${asked}` });
        // The third piece hangs until the activity is cancelled.
        return new Promise((_, reject) => {
          callOptions?.signal?.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          });
        });
      },
    };
    await withWorker(bundle, { summarizer: hanging }, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start<typeof compactConversation>('compactConversation', {
        taskQueue,
        workflowId: uniqueId('summarizer-window-cancel'),
        args: [{ messages, options: { ...options, heartbeatTimeout: '2s' } }],
      });
      const deadline = performance.now() + 20_000;
      while (asked < 3 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(asked).toBe(3);
      const events = await cancelledEventTypes(handle);
      expect(events.filter((type) => type === 'ActivityTaskScheduled')).toHaveLength(3);
      expect(events).toContain('ActivityTaskCancelRequested');
      // The worker keeps polling (the file's worker): the cancellation reaches the piece in flight
      // through its heartbeat, not through a worker shutdown.
      await vi.waitFor(() => expect(aborted).toBe(true), { timeout: 10_000, interval: 50 });
    });
    expect(asked).toBe(3);
  });
  it('a worker gone between pieces: the next worker redoes none of the finished ones', async () => {
    const messages: ChatMessage[] = toolRounds(30, 2000);
    const first = filesSummarizer();
    const hangAfter = 2;
    let hung = false;
    const dying: Summarizer = {
      summarize(request, callOptions) {
        if (first.requests.length < hangAfter) return first.summarize(request);
        hung = true;
        // The third piece is in flight when the worker goes away.
        return new Promise((_, reject) =>
          callOptions?.signal?.addEventListener('abort', () => reject(new Error('gone'))),
        );
      },
    };
    const t = await testConnection();
    const workflows = { workflowBundle: bundle, shutdownGraceTime: '100ms' };
    const handle = await withWorkerOn(
      t,
      { ...workflows, activities: createActivities({ summarizer: dying }) },
      async () => {
        const started = await t.client.workflow.start<typeof compactConversation>('compactConversation', {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('summarizer-window-worker-gone'),
          args: [{ messages, options: { ...options, maxAttempts: 3 } }],
        });
        const deadline = performance.now() + 20_000;
        while (!hung && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
        return started;
      },
    );
    expect(hung).toBe(true);
    const second = filesSummarizer();
    const result = await withWorkerOn(t, { ...workflows, activities: createActivities({ summarizer: second }) }, () =>
      handle.result(),
    );
    const pieces = result.summaryPieces ?? 0;
    expect(result.fallback).toBe(false);
    expect(pieces).toBeGreaterThan(hangAfter + 1);
    expect(first.requests).toHaveLength(hangAfter);
    // The second worker starts at the third piece, carrying the second piece's summary: its requests
    // are the rest of an uninterrupted run's, and the result is that run's.
    const uninterrupted = filesSummarizer();
    const { summarizerContextWindow, contextBudget, summaryCoverage } = options;
    const local = await new Compactor({
      summarizer: uninterrupted,
      contextBudget,
      summarizerContextWindow,
      summaryCoverage,
    }).compact(messages);
    expect(first.requests).toEqual(uninterrupted.requests.slice(0, hangAfter));
    expect(second.requests).toEqual(uninterrupted.requests.slice(hangAfter));
    expect(result).toEqual(local);
  });

  it('a workflow started without the option, on a worker with its window: the activity refuses the whole middle with its window, and the workflow cuts it to fit', async () => {
    const messages: ChatMessage[] = toolRounds(30, 2000);
    const summarizer = filesSummarizer();
    const { summarizerContextWindow: _window, ...unwindowed } = options;
    const { result, scheduled, failed } = await withWorker(
      bundle,
      { summarizer, summarizerContextWindow: WINDOW },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start<typeof compactConversation>('compactConversation', {
          taskQueue,
          workflowId: uniqueId('summarizer-window-worker'),
          args: [{ messages, options: unwindowed }],
        });
        const done = await handle.result();
        const events = await eventTypes(handle);
        const count = (type: string): number => events.filter((event) => event === type).length;
        return { result: done, scheduled: count('ActivityTaskScheduled'), failed: count('ActivityTaskFailed') };
      },
    );
    // docs/design.md#summarizer-overflow One activity refused unsent (Summarizer.ContextOverflow, not
    // retried), then one per piece, each request within the window.
    expect(failed).toBe(1);
    expect(summarizer.requests.length).toBeGreaterThan(3);
    expect(scheduled).toBe(summarizer.requests.length + 1);
    for (const request of summarizer.requests)
      expect(defaultCounter.count(summarizerMessages(request))).toBeLessThanOrEqual(
        WINDOW * (1 - SUMMARY_OUTPUT_SHARE),
      );
    expect(result.fallback).toBe(false);
    expect(result.summary).toContain('## Goals');
    expect(result.summaryPieces).toBe(summarizer.requests.length);
  });
});
