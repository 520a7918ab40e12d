// Nothing a workflow sends may exceed what the server accepts inline unless a payload store takes
// it: a workflow task that fails on PAYLOADS_TOO_LARGE is retried forever (the run neither goes on
// nor fails). Without a store, each case below must either complete or end promptly with a
// documented non-retryable type, and no workflow task may fail along the way.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agentRun,
  compactConversation,
  createExtractiveSummarizer,
  FailureType,
  toProviderMessages,
  type ChatMessage,
  type PayloadTooLargeDetails,
} from '../../src/index.js';
import { createActivities } from '../../src/activities/index.js';
import { replaySession } from '../../src/core/agent/session.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { failureTypeOf } from '../support/agent.js';
import {
  bundleWorkflows,
  chainHistories,
  testConnection,
  uniqueId,
  withFileWorker,
  type TestConnection,
} from '../support/temporal.js';

/** Lines of log-like text, `bytes` long: what a user pastes, or a tool prints. */
function logText(bytes: number, seed: string): string {
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i += 1) {
    const line = `${seed} ${String(i).padStart(6, '0')} INFO worker/pool.go:${(i * 37) % 900} task=${(i * 7919) % 100_000} state=done took=${(i % 97) + 3}ms`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join('\n').slice(0, bytes);
}

function assistant(content: string | null, calls: Array<[string, string, string]> = []): ChatMessage {
  return calls.length === 0
    ? { role: 'assistant', content: content ?? '' }
    : {
        role: 'assistant',
        content,
        tool_calls: calls.map(([id, name, args]) => ({ id, type: 'function', function: { name, arguments: args } })),
      };
}

/** Every event of the run's continue-as-new chain, first run first. */
async function eventsOf(t: TestConnection, workflowId: string) {
  return (await chainHistories(t.client, workflowId)).flat();
}

/** Workflow tasks of the run's chain that failed (each would be retried: a wedge when it cannot succeed). */
async function workflowTaskFailures(t: TestConnection, workflowId: string): Promise<number> {
  return (await eventsOf(t, workflowId)).filter((event) => event.workflowTaskFailedEventAttributes).length;
}

/** Two pasted logs of 60 KB: each line fits 100 KB, the chat request with both does not. */
const twoLogs: ChatMessage[] = [
  { role: 'system', content: 'You investigate logs.' },
  { role: 'user', content: `First log:\n${logText(60_000, 'first')}` },
  { role: 'user', content: `Second log:\n${logText(60_000, 'second')}` },
];

describe('payloads over the server limit, without a payload store', { timeout: 240_000 }, () => {
  let t: TestConnection;
  let bundle: WorkflowBundleWithSourceMap;
  let dir: string;
  const activities = () => createActivities({ summarizer: createExtractiveSummarizer(), trajectoryDir: dir });

  beforeAll(async () => {
    t = await testConnection();
    bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
    dir = mkdtempSync(join(tmpdir(), 'payload-limits-'));
    // A 1.2 MB opening (a pasted log) and three short rounds: the result used to hold the
    // conversation twice (messages and the transcript), 2.4 MB, and the run wedged at its end.
    const big: ChatMessage[] = [
      { role: 'system', content: 'You investigate logs.' },
      { role: 'user', content: `Why did the pool stall? Here is the log:\n${logText(1_200_000, 'pool')}` },
      assistant('Looking at the stall window.', [['c1', 'grep', '{"pattern":"stall"}']]),
      { role: 'tool', tool_call_id: 'c1', content: 'pool 000311 WARN stall detected' },
      assistant('One stall at 000311.', [['c2', 'grep', '{"pattern":"000311"}']]),
      { role: 'tool', tool_call_id: 'c2', content: 'pool 000311 WARN stall detected after 3 retries' },
      assistant('The pool stalled once, after three retries at line 000311.'),
    ];
    writeFileSync(join(dir, 'big-opening.json'), JSON.stringify(big));
    writeFileSync(join(dir, 'two-logs.json'), JSON.stringify([...twoLogs, assistant('Two quiet logs.')]));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a 1.2 MB conversation completes: the result carries it once, the transcript leaves in batches (regression)', async () => {
    const workflowId = uniqueId('agent-big-opening');
    const opening = JSON.parse(
      JSON.stringify([
        { role: 'system', content: 'You investigate logs.' },
        { role: 'user', content: `Why did the pool stall? Here is the log:\n${logText(1_200_000, 'pool')}` },
      ]),
    ) as ChatMessage[];
    const result = await withFileWorker(t, { workflowBundle: bundle, activities: activities() }, (t) =>
      t.client.workflow.execute(agentRun, {
        taskQueue: t.taskQueue,
        workflowId,
        args: [
          {
            messages: opening,
            model: { provider: 'replay', trajectory: 'big-opening', contextWindow: 1_000_000, maxOutputTokens: 4_000 },
            compaction: {},
          },
        ],
      }),
    );
    expect(result.stopReason).toBe('completed');
    expect(result.rounds).toBe(3);
    expect(JSON.stringify(result).length).toBeLessThan(1_300_000);
    expect(replaySession(await readSessionLines(t.client, result.session))).toEqual(result.messages);
    expect(await workflowTaskFailures(t, workflowId)).toBe(0);
    // The 1.2 MB of new text was counted outside the workflow, in one request, once in the whole
    // chain: a run continued as new starts with the counts (it used to count the conversation again).
    const scheduled = (await eventsOf(t, workflowId)).flatMap(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
    );
    expect(scheduled.filter((name) => name === 'countTokens')).toHaveLength(1);
  });

  it('a chat request over maxPayloadBytes ends the run with RunFailed.PayloadTooLarge naming it', async () => {
    const workflowId = uniqueId('agent-too-large');
    const error = await withFileWorker(t, { workflowBundle: bundle, activities: activities() }, (t) =>
      t.client.workflow
        .execute(agentRun, {
          taskQueue: t.taskQueue,
          workflowId,
          args: [
            {
              messages: twoLogs,
              model: { provider: 'replay', trajectory: 'two-logs', contextWindow: 1_000_000, maxOutputTokens: 4_000 },
              compaction: {},
              maxPayloadBytes: 100_000,
            },
          ],
        })
        .catch((caught: unknown) => caught),
    );
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect(failureTypeOf(error)).toMatchObject({ type: FailureType.RunFailed.PayloadTooLarge });
    expect(failureTypeOf(error).message).toMatch(
      /^the chat request of round 1 is 12\d,\d{3} bytes, over the 100,000-byte payload limit/,
    );
    const cause = (error as WorkflowFailedError).cause;
    expect(cause).toMatchObject({ nonRetryable: true });
    const [details] = (cause as { details?: unknown[] }).details ?? [];
    expect(details).toMatchObject({
      payload: 'the chat request of round 1',
      limit: 100_000,
    } satisfies Partial<PayloadTooLargeDetails>);
    expect(await workflowTaskFailures(t, workflowId)).toBe(0);
    // The transcript was written before it failed, in batches under the limit.
    const lines = await readSessionLines(t.client, workflowId);
    expect(toProviderMessages(replaySession(lines))).toEqual(twoLogs);
    expect(replaySession(lines)[1]).toMatchObject({ role: 'user', sticky: true });
    const batches = (await eventsOf(t, workflowId)).filter(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'recordSession',
    );
    expect(batches).toHaveLength(2);
  });

  it('compactConversation: a result over maxPayloadBytes fails with Compaction.PayloadTooLarge; a summarize request over it falls back to the hard trim', async () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: logText(60_000, 'one') },
      { role: 'assistant', content: logText(60_000, 'two') },
      { role: 'user', content: 'last' },
    ];
    await withFileWorker(t, { workflowBundle: bundle, activities: activities() }, async (t) => {
      // Nothing to remove (keepRecent covers it all): the result is as large as the input.
      const failed = await t.client.workflow
        .execute(compactConversation, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('cc-too-large'),
          args: [{ messages, options: { contextBudget: 1_000, keepRecent: 8, maxPayloadBytes: 50_000 } }],
        })
        .catch((caught: unknown) => caught);
      expect(failureTypeOf(failed)).toMatchObject({ type: FailureType.Compaction.PayloadTooLarge });
      expect(failureTypeOf(failed).message).toMatch(
        /^the compaction result is \d+ bytes, over the 50000-byte payload limit/,
      );
      // The middle's transcript (120 KB, uncapped assistant text) is over the limit: no request, the hard trim.
      const trimmed = await t.client.workflow.execute(compactConversation, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('cc-request-too-large'),
        args: [{ messages, options: { contextBudget: 20_000, keepRecent: 1, maxPayloadBytes: 100_000 } }],
      });
      expect(trimmed).toMatchObject({ fallback: true, summary: null });
      expect(trimmed.messages.at(-1)).toEqual({ role: 'user', content: 'last' });
    });
  });
});
