// compactConversation and compact() against a real dev server and the real openai client talking
// to a scripted fake OpenAI server: the summarizer scenarios of docs/design.md#pass under Temporal.
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  Compactor,
  createOpenAISummarizer,
  FailureType,
  REFERENCE_EXACT,
  type ChatMessage,
  type CompactionResult,
  type FallbackReason,
  type Summarizer,
} from '../../src/index.js';
import { createActivities } from '../../src/activities/index.js';
import type { CompactConversationOptions } from '../../src/workflows/compact-conversation.js';
import { SUMMARY_INSTRUCTION, SUMMARY_INSTRUCTIONS_HEADING } from '../../src/core/compaction/transcript.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { toolRounds } from '../support/messages.js';
import { testConnection } from '../support/temporal.js';
import { bundleTestWorkflows, eventTypes, maybeRecordHistory, uniqueId, withWorker } from './harness.js';
import type { compactConversation } from './test-workflows.js';

/** The rounds of a second `toolRounds` call with call ids and paths of their own. */
function relabel(message: ChatMessage): ChatMessage {
  const rename = (id: string): string => `late_${id}`;
  if (message.role === 'tool' && message.tool_call_id !== undefined)
    return { ...message, tool_call_id: rename(message.tool_call_id) };
  if (message.tool_calls === undefined) return message;
  return {
    ...message,
    tool_calls: message.tool_calls.map((call) => ({
      ...call,
      id: rename(call.id),
      function: { ...call.function, arguments: call.function.arguments.replace('"f', '"late_f') },
    })),
  };
}

const SHORT_SUMMARY =
  '## Goals\nFix app.py.\n## Decisions\nRead f0..f19.\n## Files and commands\nf*.py\n## Unresolved\nNone.';
const options: CompactConversationOptions = {
  contextBudget: 4000,
  maxAttempts: 3,
  retryBackoff: '100ms',
  heartbeatTimeout: '3s',
  startToCloseTimeout: '20s',
  summarizerModel: 'fake-summarizer',
};

describe('compactConversation on a dev server', () => {
  let bundle: WorkflowBundleWithSourceMap;
  let server: FakeOpenAI;
  let summarizer: Summarizer;
  const messages: ChatMessage[] = toolRounds(20, 400);

  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });
  beforeEach(async () => {
    server = await startFakeOpenAI();
    summarizer = createOpenAISummarizer({
      model: 'fake-summarizer',
      baseURL: server.baseURL,
      apiKey: 'test-key',
      timeout: 10_000,
    });
  });
  afterEach(() => server.close());

  async function run(
    name: string,
    input: { messages: ChatMessage[]; options: CompactConversationOptions } = { messages, options },
    record = true,
  ) {
    return withWorker(bundle, { summarizer }, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start<typeof compactConversation>('compactConversation', {
        taskQueue,
        workflowId: uniqueId(name),
        args: [input],
      });
      const result = await handle.result();
      if (record) await maybeRecordHistory(handle, `compact-conversation-${name}`);
      return { result, handle, events: await eventTypes(handle) };
    });
  }

  /** What the in-process driver concludes when the summarizer fails: the hard trim. */
  /** The hard trim of `input`, with the reason the workflow's result must give for it. */
  async function hardTrimOf(input: ChatMessage[], fallbackReason: FallbackReason): Promise<CompactionResult> {
    const rejecting: Summarizer = { summarize: () => Promise.reject(Object.assign(new Error('no'), { status: 401 })) };
    return { ...(await new Compactor({ ...options, summarizer: rejecting }).compact(input)), fallbackReason };
  }

  it('success: one request, the summary replaces the middle, the activity carries its UI summary', async () => {
    server.script({ kind: 'summary', text: SHORT_SUMMARY });
    const { result, handle, events } = await run('success');
    expect(server.requests).toHaveLength(1);
    expect(result.fallback).toBe(false);
    expect(result.summary).toContain(SHORT_SUMMARY);
    expect(result.messages).toHaveLength(messages.length - result.dropped + 1);
    expect(result.tokensAfter).toBeLessThan(result.tokensBefore);
    expect(events.filter((type) => type === 'ActivityTaskScheduled')).toHaveLength(1);
    // The request is the capped transcript with the fixed instruction, sent with the worker's model.
    const body = server.requests[0]?.body;
    expect(body).toMatchObject({
      model: 'fake-summarizer',
      messages: [{ role: 'system', content: SUMMARY_INSTRUCTION }, { role: 'user' }],
    });
    const history = await handle.fetchHistory();
    const scheduled = history.events?.find((event) => event.activityTaskScheduledEventAttributes);
    const summary = scheduled?.userMetadata?.summary?.data;
    expect(summary && Buffer.from(summary).toString('utf8')).toMatch(
      /^"summarize \d+ messages \([\d,]+ chars\) · fake-summarizer"$/,
    );
    // docs/design.md#summarizer-request: the activity is sent the instruction and the cut middle as
    // messages, not the rendered text; it renders the model's request.
    const sent = scheduled?.activityTaskScheduledEventAttributes?.input?.payloads?.[0]?.data;
    const input: unknown = JSON.parse(Buffer.from(sent ?? []).toString('utf8'));
    expect(Object.keys(input as object).sort()).toEqual(['instruction', 'maxTokens', 'middle']);
    expect(input).toMatchObject({ instruction: SUMMARY_INSTRUCTION, middle: messages.slice(1, result.dropped + 1) });
  });

  it('instructions: the activity input carries them, and the model gets them after the fixed instruction', async () => {
    server.script({ kind: 'summary', text: SHORT_SUMMARY });
    const instructed = { ...options, summaryInstructions: 'Keep f3.py and f17.py.' };
    const { result, handle } = await run('instructions', { messages, options: instructed });
    expect(result.fallback).toBe(false);
    const history = await handle.fetchHistory();
    const scheduled = history.events?.find((event) => event.activityTaskScheduledEventAttributes);
    const sent = scheduled?.activityTaskScheduledEventAttributes?.input?.payloads?.[0]?.data;
    const input: unknown = JSON.parse(Buffer.from(sent ?? []).toString('utf8'));
    expect(Object.keys(input as object).sort()).toEqual(['instruction', 'instructions', 'maxTokens', 'middle']);
    const instruction = `${SUMMARY_INSTRUCTION}\n\n${SUMMARY_INSTRUCTIONS_HEADING}\nKeep f3.py and f17.py.`;
    expect(input).toMatchObject({ instruction, instructions: 'Keep f3.py and f17.py.' });
    expect(server.requests[0]?.body).toMatchObject({
      messages: [{ role: 'system', content: instruction }, { role: 'user' }],
    });
  });

  it('coverage retry: a summary that left out identifiers the run still uses is asked once more', async () => {
    server.script(
      { kind: 'summary', text: SHORT_SUMMARY },
      { kind: 'summary', text: `${SHORT_SUMMARY}\nf3.py and f5.py were read first.` },
    );
    const referring = [...messages, { role: 'assistant' as const, content: 'Back to f3.py and f5.py now.' }];
    const { result, handle, events } = await run('coverage-retry', { messages: referring, options });
    expect(events.filter((type) => type === 'ActivityTaskScheduled')).toHaveLength(2);
    expect(result.summary).toContain('f3.py and f5.py were read first.');
    expect(result.coverage).toEqual({ required: 2, kept: 2, carried: 0, missing: [] });
    const history = await handle.fetchHistory();
    const inputs = (history.events ?? [])
      .flatMap((event) => event.activityTaskScheduledEventAttributes?.input?.payloads?.[0]?.data ?? [])
      .map((data): unknown => JSON.parse(Buffer.from(data).toString('utf8')));
    expect(inputs[1]).toMatchObject({ instructions: 'Keep these identifiers: `f3.py`, `f5.py`' });
    const summaries = (history.events ?? []).flatMap((event) =>
      event.activityTaskScheduledEventAttributes
        ? [Buffer.from(event.userMetadata?.summary?.data ?? []).toString('utf8')]
        : [],
    );
    expect(summaries[1]).toContain('coverage retry');
  });

  it('5xx then success: retried by Temporal, the summary is accepted', async () => {
    server.script(
      { kind: 'status', status: 503 },
      { kind: 'status', status: 500 },
      { kind: 'summary', text: SHORT_SUMMARY },
    );
    const { result } = await run('5xx-then-success');
    expect(server.requests).toHaveLength(3);
    expect(result.fallback).toBe(false);
    expect(result.summary).toContain(SHORT_SUMMARY);
  });

  it.each([400, 401, 402, 403, 404])('HTTP %i: exactly one request, then the hard trim', async (status) => {
    server.script({ kind: 'status', status });
    server.setDefault({ kind: 'summary', text: SHORT_SUMMARY });
    // One of the five is enough for the replay suite: their histories differ only in the status.
    const { result } = await run(`status-${status}`, undefined, status === 401);
    expect(server.requests).toHaveLength(1);
    expect(result.fallback).toBe(true);
    expect(result.summary).toBeNull();
    // The caller learns why from the result: the activity's failure, refused and not retried.
    expect(result).toEqual(
      await hardTrimOf(messages, {
        cause: 'summarizer-failed',
        message: expect.stringMatching(
          new RegExp(
            `^the summarizer failed the summary request \\(refused, not retried\\): summarizer: HTTP ${status}`,
          ),
        ),
      }),
    );
  });

  it('429 with Retry-After: the retry waits at least that long', async () => {
    server.script(
      { kind: 'status', status: 429, headers: { 'retry-after': '2' } },
      { kind: 'summary', text: SHORT_SUMMARY },
    );
    const { result } = await run('429-retry-after');
    expect(server.requests).toHaveLength(2);
    const [first, second] = server.requests;
    const gap = (second?.receivedAt ?? 0) - (first?.receivedAt ?? 0);
    expect(gap).toBeGreaterThanOrEqual(2000);
    expect(gap).toBeLessThan(10_000);
    expect(result.fallback).toBe(false);
  });

  it('empty summary: retried, never accepted', async () => {
    server.script({ kind: 'empty' }, { kind: 'empty', content: '  \n ' }, { kind: 'summary', text: SHORT_SUMMARY });
    const { result } = await run('empty-then-summary');
    expect(server.requests).toHaveLength(3);
    expect(result.fallback).toBe(false);
    expect(result.summary).toContain(SHORT_SUMMARY);
  });

  it('too long: a second, tighter request; its shorter summary is accepted', async () => {
    const tooLong = `## Goals\n${'a very detailed account of everything. '.repeat(1000)}`;
    server.script({ kind: 'summary', text: tooLong }, { kind: 'summary', text: SHORT_SUMMARY });
    const { result, events } = await run('too-long-then-tighter');
    expect(server.requests).toHaveLength(2);
    expect(JSON.stringify(server.requests[1]?.body)).toContain('Your last attempt was too long');
    expect(events.filter((type) => type === 'ActivityTaskScheduled')).toHaveLength(2);
    expect(result.fallback).toBe(false);
    expect(result.summary).toContain(SHORT_SUMMARY);
  });

  it('too long twice: the hard trim', async () => {
    const tooLong = `## Goals\n${'a very detailed account of everything. '.repeat(1000)}`;
    server.script({ kind: 'summary', text: tooLong }, { kind: 'summary', text: tooLong.slice(0, -10) });
    const { result } = await run('too-long-twice');
    expect(server.requests).toHaveLength(2);
    expect(result.fallback).toBe(true);
    expect(result).toEqual(
      await hardTrimOf(messages, { cause: 'summary-too-long', message: expect.stringContaining('tighter retry') }),
    );
  });

  it('every attempt failing: maxAttempts requests, then the hard trim with fallback', async () => {
    server.setDefault({ kind: 'status', status: 502 });
    const { result, events } = await run('all-attempts-fail');
    expect(server.requests).toHaveLength(3);
    expect(result.fallback).toBe(true);
    expect(result).toEqual(
      await hardTrimOf(messages, {
        cause: 'summarizer-failed',
        message: expect.stringMatching(
          /^the summarizer failed the summary request \(every attempt\): summarizer: HTTP 502/,
        ),
      }),
    );
    expect(events).toContain('ActivityTaskFailed');
  });

  it('an elision-only compaction schedules no activity at all', async () => {
    const big = toolRounds(12, 5000);
    const elisionOptions: CompactConversationOptions = {
      ...options,
      contextBudget: 100_000,
      ageObservations: true,
      ageMinChars: 1000,
      ageReclaimMin: 10_000,
    };
    const { result, events } = await run('elision-only', { messages: big, options: elisionOptions });
    expect(result.dropped).toBe(0);
    expect(result.elisions.length).toBeGreaterThan(0);
    expect(result.summary).toBeNull();
    expect(server.requests).toHaveLength(0);
    expect(events).not.toContain('ActivityTaskScheduled');
    expect(events.at(-1)).toBe('WorkflowExecutionCompleted');
  });

  // Recorded (compact-conversation-economics-window-gives-way.json) so that the replay suite holds a
  // history whose commands differ from the reference's: under REFERENCE_EXACT this input is an
  // elision-only pass (no activity); under the economic rules elision does not end a pass over the
  // trigger and the summary runs.
  it('economic rules: elision rides on the summary; the recent window gives way', async () => {
    // Six old 3,000-character results the stubs take away, then four rounds of 2,400-character results
    // (~2,450 tokens: over the low-water mark of 2,000 on their own).
    const heavy: ChatMessage[] = [
      ...toolRounds(6, 3000),
      ...toolRounds(4, 2400)
        .slice(2)
        .map((message) => relabel(message)),
    ];
    const economics: CompactConversationOptions = {
      ...options,
      ageObservations: true,
      ageMinChars: 1000,
      ageReclaimMin: 2000,
    };
    server.script({ kind: 'summary', text: SHORT_SUMMARY });
    const { result, events } = await run('economics-window-gives-way', { messages: heavy, options: economics });
    expect(events.filter((type) => type === 'ActivityTaskScheduled')).toHaveLength(1);
    expect(result.summary).toContain(SHORT_SUMMARY);
    expect(result.elisions).toHaveLength(6);
    expect(result.tokensAfter).toBeLessThanOrEqual(0.5 * economics.contextBudget);
    expect(result.aboveMark).toBeUndefined();
    const fixed = { summarize: () => Promise.resolve({ text: SHORT_SUMMARY }) };
    // The reference stops after the stubs, with the four heavy rounds in place.
    const reference = await new Compactor({ ...economics, ...REFERENCE_EXACT, summarizer: fixed }).compact(heavy);
    expect(reference.summary).toBeNull();
    expect(reference.elisions).toHaveLength(6);
    expect(reference.messages.slice(-8)).toEqual(heavy.slice(-8));
    const inProcess = await new Compactor({ ...economics, summarizer: fixed }).compact(heavy);
    expect(JSON.stringify(result)).toBe(JSON.stringify(inProcess));
  });

  it('options.taskQueue: the summarize activity runs on its own queue, served by an activities-only worker', async () => {
    server.script({ kind: 'summary', text: SHORT_SUMMARY });
    const { nativeConnection, namespace, taskQueue: summarizerQueue } = await testConnection();
    const summarizerWorker = await Worker.create({
      connection: nativeConnection,
      namespace,
      taskQueue: summarizerQueue,
      activities: createActivities({ summarizer }),
    });
    // The workflow worker's own summarizer would reject: only the other queue can produce the summary.
    const rejecting: Summarizer = {
      summarize: () => Promise.reject(Object.assign(new Error('wrong queue'), { status: 401 })),
    };
    const { result, handle } = await summarizerWorker.runUntil(
      withWorker(bundle, { summarizer: rejecting }, async ({ client, taskQueue }) => {
        const started = await client.workflow.start<typeof compactConversation>('compactConversation', {
          taskQueue,
          workflowId: uniqueId('summarizer-queue'),
          args: [{ messages, options: { ...options, taskQueue: summarizerQueue } }],
        });
        return { result: await started.result(), handle: started };
      }),
    );
    expect(result.fallback).toBe(false);
    expect(result.summary).toContain(SHORT_SUMMARY);
    const history = await handle.fetchHistory();
    const scheduled = history.events?.find(
      (event) => event.activityTaskScheduledEventAttributes,
    )?.activityTaskScheduledEventAttributes;
    expect(scheduled?.taskQueue?.name).toBe(summarizerQueue);
  });

  describe('bad input', () => {
    async function failureOf(input: unknown): Promise<ApplicationFailure> {
      return withWorker(bundle, { summarizer }, async ({ client, taskQueue }) => {
        const handle = await client.workflow.start('compactConversation', {
          taskQueue,
          workflowId: uniqueId('bad-input'),
          args: [input],
        });
        const error = await handle.result().then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).toBeInstanceOf(WorkflowFailedError);
        const cause = error instanceof WorkflowFailedError ? error.cause : undefined;
        expect(cause).toBeInstanceOf(ApplicationFailure);
        if (!(cause instanceof ApplicationFailure)) throw error;
        return cause;
      });
    }

    it('a malformed message → non-retryable Compaction.InvalidInput naming index and field', async () => {
      const bad = [...messages.slice(0, 5), { role: 'tool', content: 'orphan without id' }, ...messages.slice(5)];
      const failure = await failureOf({ messages: bad, options });
      expect(failure.type).toBe(FailureType.Compaction.InvalidInput);
      expect(failure.nonRetryable).toBe(true);
      expect(failure.message).toContain('messages[5].tool_call_id');
      expect(failure.details).toEqual([expect.objectContaining({ field: 'messages[5].tool_call_id', index: 5 })]);
      expect(server.requests).toHaveLength(0);
    });

    it('a bad option → Compaction.InvalidInput naming the option', async () => {
      const failure = await failureOf({ messages, options: { ...options, keepRecent: -1 } });
      expect(failure.type).toBe(FailureType.Compaction.InvalidInput);
      expect(failure.message).toContain('options.keepRecent');
    });

    it('a bad activity setting → Compaction.InvalidInput naming it', async () => {
      const failure = await failureOf({ messages, options: { ...options, heartbeatTimeout: 'soon' } });
      expect(failure.type).toBe(FailureType.Compaction.InvalidInput);
      expect(failure.message).toContain('options.heartbeatTimeout');
    });
  });
});
