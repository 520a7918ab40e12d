// Steering a running agentRun on the dev server (docs/design.md#steering): the `compact` update
// answered with the compaction's record (or why there was none), `pin`/`unpin` keeping a message
// through compactions and letting it go again, pinned facts carried across continue-as-new, the
// pins in the UI's current details, and bad input refused naming the field or id.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowUpdateFailedError, WorkflowUpdateStage, type Client, type WorkflowHandle } from '@temporalio/client';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  agentRun,
  FailureType,
  toProviderMessages,
  type ChatMessage,
  type CompactionProposal,
} from '../../src/index.js';
import { agentRunUpdates, agentRunQueries, type AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import { replaySession } from '../../src/core/agent/session.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { NOTHING_TO_COMPACT } from '../../src/core/agent/steering.js';
import { SearchAttributeKeys } from '../../src/shared/search-attributes.js';
import { assistantReply as completion, createHold, type ScriptedResponse } from '../support/fake-openai.js';
import { failureTypeOf, fakeModelAndToolRoot, replayTokens } from '../support/agent.js';
import { capturedCliIo } from '../support/cli-process.js';
import { bundleWorkflows, testConnection, uniqueId, withFileWorker, withWorker } from '../support/temporal.js';
import { main } from '../../src/cli/main.js';
import { maybeRecordHistory } from './harness.js';

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
});

const openaiModel = { provider: 'openai' as const, model: 'fake-agent', contextWindow: 16_000, maxOutputTokens: 500 };

/** A long note on one subject: enough text that a summary of a few of them is shorter than they are. */
function notes(subject: string): string {
  return Array.from(
    { length: 12 },
    (_, step) =>
      `Step ${step + 1} on ${subject}: looked at case ${step * 7 + 3}, and it behaved as logged in run ${step + 40}.`,
  ).join(' ');
}

/** A conversation with a middle to compact: the task, then turns the run did before. */
const opening: ChatMessage[] = [
  { role: 'system', content: 'You are a careful agent.' },
  { role: 'user', content: 'Find out why the parser test fails.' },
  { role: 'assistant', content: `The failing test is test_parse_empty. ${notes('the test suite')}` },
  { role: 'user', content: `Go on, and keep notes as you go. ${notes('the logs')}` },
  { role: 'assistant', content: `parser.py line 42 returns None for an empty string. ${notes('parser.py')}` },
  { role: 'user', content: 'Read a.txt next, please.' },
];

/**
 * An assistant reply billed about what its request holds (o200k of its messages): the run's
 * counters are calibrated by what was billed, and a compaction is accepted only when it shrinks
 * the conversation as they count it.
 */
const reply =
  (message: Record<string, unknown>): ScriptedResponse =>
  (request) => {
    const { messages } = request.body as { messages: ChatMessage[] };
    const prompt = replayTokens(messages);
    return completion(message, { prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 });
  };

const readCall = (id: string) =>
  reply({
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'fs_read', arguments: '{"path":"a.txt"}' } }],
  });

/** The ids of the live conversation, in order. */
async function liveIds(handle: WorkflowHandle): Promise<string[]> {
  return (await handle.query(agentRunQueries.conversationEntries)).map((entry) => entry.id);
}

/** Waits until the run has a compaction waiting for review, and returns it. */
async function proposalOf(handle: WorkflowHandle): Promise<CompactionProposal> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const proposal = await handle.query(agentRunQueries.pendingCompaction);
    if (proposal !== null) return proposal;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('no compaction came up for review');
}

/**
 * Waits until the run's `CompactionPending` search attribute is `value`, both in its description and
 * in a visibility list query (which may lag it), and returns what describe() showed last.
 */
async function pendingAttributeBecomes(
  client: Client,
  handle: WorkflowHandle,
  value: boolean,
): Promise<{ described: boolean | undefined; listed: number }> {
  let described: boolean | undefined;
  let listed = 0;
  for (let attempt = 0; attempt < 100; attempt += 1) {
    described = (await handle.describe()).typedSearchAttributes.get(SearchAttributeKeys.CompactionPending);
    listed = 0;
    const query = `WorkflowId = '${handle.workflowId}' AND CompactionPending = ${String(value)}`;
    for await (const _ of client.workflow.list({ query })) listed += 1;
    if (described === value && listed === 1) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { described, listed };
}

/** The UI's current details of a run. */
async function currentDetails(handle: WorkflowHandle): Promise<string> {
  const metadata: unknown = await handle.query('__temporal_workflow_metadata');
  return String(Reflect.get(Object(metadata), 'currentDetails'));
}

/** The input of every summarize activity the run scheduled, read from its history. */
async function summarizeActivityInputs(handle: WorkflowHandle): Promise<Array<{ instructions?: string }>> {
  return ((await handle.fetchHistory()).events ?? []).flatMap((event) => {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name !== 'summarize') return [];
    const data = scheduled.input?.payloads?.[0]?.data;
    return [JSON.parse(Buffer.from(data ?? []).toString('utf8')) as { instructions?: string }];
  });
}

describe('steering agentRun', { timeout: 120_000 }, () => {
  const world = fakeModelAndToolRoot('agent-steer-', { 'a.txt': 'alpha\nbeta\n' });
  const input = (overrides: Partial<AgentRunWorkflowInput> = {}): AgentRunWorkflowInput => ({
    messages: opening,
    model: openaiModel,
    tools: ['fs_read'],
    // The conversation is far under the trigger: only the compact update compacts it.
    compaction: { keepRecent: 2 },
    ...overrides,
  });

  it('compact compacts before the next chat request, under the trigger, and answers with the record', async () => {
    const hold = createHold();
    world.server.script(hold.response, reply({ content: 'Done: the parser returns None.' }));
    const t = await testConnection();
    await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
      const handle = await t.client.workflow.start(agentRun, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('agent-compact-update'),
        args: [input()],
      });
      await world.server.waitForRequests(1, 20_000);
      const refused = await handle
        .executeUpdate(agentRunUpdates.compact, { args: [{ instructions: 42 as unknown as string }] })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(failureTypeOf(refused)).toEqual({
        type: FailureType.Compaction.InvalidInput,
        message: 'compact.instructions: must be a string, got 42',
      });
      // Accepted now, answered once the loop has compacted: after the request in flight, before the next.
      const update = await handle.startUpdate(agentRunUpdates.compact, {
        args: [{ instructions: 'Keep the failing test name.' }],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      expect(await handle.query(agentRunQueries.compactions)).toMatchObject({ totals: { compactions: 0 } });
      hold.release(readCall('call_1'));
      const record = await update.result();
      expect(record).toMatchObject({ round: 2, kind: 'summary', fallback: false, exhausted: false });
      expect('compacted' in record).toBe(false);
      const result = await handle.result();
      expect(result.compactions.recent).toEqual([record]);
      // What the second request carried: the summary where the middle was, the task and the recent window kept.
      const sent = world.server.requests[1]?.body as { messages: ChatMessage[] };
      expect(sent.messages[1]).toEqual({ role: 'user', content: opening[1]?.content });
      expect(sent.messages).toHaveLength(5);
      expect(sent.messages[2]?.content).toMatch(/^\[Summary by the harness of 4 earlier messages\]/);
      expect(sent.messages).toEqual(toProviderMessages(result.messages.slice(0, -1)));
      expect(replaySession(await readSessionLines(t.client, result.session))).toEqual(result.messages);
      // The update's instructions reached the summarizer: the summarize activity's instructions,
      // before the identifiers the coverage check requires (docs/design.md#coverage).
      const summarizeInputs = await summarizeActivityInputs(handle);
      expect(summarizeInputs.length).toBeGreaterThanOrEqual(1);
      for (const summarizeInput of summarizeInputs)
        expect(summarizeInput.instructions).toMatch(/^Keep the failing test name\.(\nKeep these identifiers: .+)?$/);
      await maybeRecordHistory(handle, 'agent-run-compact-update');
    });
  });

  it('compact answers why when there is nothing to compact, and when the run finished first', async () => {
    const first = createHold();
    const second = createHold();
    world.server.script(first.response, second.response);
    const t = await testConnection();
    await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
      const handle = await t.client.workflow.start(agentRun, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('agent-compact-nothing'),
        args: [input({ messages: opening.slice(0, 2) })],
      });
      await world.server.waitForRequests(1, 20_000);
      const nothing = await handle.startUpdate(agentRunUpdates.compact, {
        args: [{}],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      first.release(readCall('call_1'));
      // The system prompt and the task are sticky, the tool turn is the recent window: nothing between.
      expect(await nothing.result()).toEqual(NOTHING_TO_COMPACT);
      await world.server.waitForRequests(2, 20_000);
      const late = await handle.startUpdate(agentRunUpdates.compact, {
        args: [{}],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      second.release(reply({ content: 'a.txt holds alpha and beta.' }));
      expect(await late.result()).toEqual({
        compacted: false,
        reason: 'the run finished before its next chat request',
      });
      const result = await handle.result();
      expect(result.stopReason).toBe('completed');
      expect(result.compactions.totals.compactions).toBe(0);
    });
  });

  it('a pinned message survives compactions in place, unpinned it goes; the flag never reaches the model', async () => {
    const holds = [createHold(), createHold(), createHold()];
    world.server.script(...holds.map((hold) => hold.response));
    const t = await testConnection();
    await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
      const handle = await t.client.workflow.start(agentRun, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('agent-pins'),
        args: [input()],
      });
      await world.server.waitForRequests(1, 20_000);
      expect(await liveIds(handle)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
      const unknown = await handle
        .executeUpdate(agentRunUpdates.pin, { args: [{ ids: ['m3', 'm99'] }] })
        .catch((e: unknown) => e);
      expect(unknown).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(failureTypeOf(unknown)).toEqual({
        type: FailureType.Compaction.InvalidInput,
        message:
          'pin.ids[1]: no message with id "m99" in the live conversation (the conversationEntries query lists them)',
      });
      const notPinned = await handle
        .executeUpdate(agentRunUpdates.unpin, { args: [{ ids: ['m5'] }] })
        .catch((e: unknown) => e);
      expect(failureTypeOf(notPinned).message).toMatch(/^unpin\.ids\[0\]: "m5" is not pinned/);
      // m5 holds what the agent found: pinned with a fact (answered at once, the request in flight
      // notwithstanding), then compacted on demand before the next request.
      expect(
        await handle.executeUpdate(agentRunUpdates.pin, { args: [{ ids: ['m5'], fact: 'The fix goes in parser.py' }] }),
      ).toEqual({ ids: ['m5'], facts: ['The fix goes in parser.py'] });
      const compact = await handle.startUpdate(agentRunUpdates.compact, {
        args: [{}],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      holds[0]?.release(readCall('call_1'));
      expect(await compact.result()).toMatchObject({ kind: 'summary', round: 2, dropped: 3 });
      await world.server.waitForRequests(2, 20_000);
      // m3 and m4 went into the summary; the pinned m5 stayed where it was, after it.
      expect(await liveIds(handle)).toEqual(['m1', 'm2', 'summary:m6', 'm5', 'm7', 'm8']);
      const live = await handle.query(agentRunQueries.conversation);
      expect(live[3]).toEqual({ ...opening[4], sticky: true });
      const sentSecond = world.server.requests[1]?.body as { messages: ChatMessage[] };
      expect(JSON.stringify(sentSecond)).not.toContain('sticky');
      expect(sentSecond.messages).toEqual(toProviderMessages(live));
      const details = await currentDetails(handle);
      expect(details).toContain('Pinned messages: m5');
      expect(details).toContain('Pinned facts (kept by every summary): “The fix goes in parser.py”');

      // Unpinned, the next compaction takes it too.
      expect(await handle.executeUpdate(agentRunUpdates.unpin, { args: [{ ids: ['m5'] }] })).toEqual({
        ids: [],
        facts: ['The fix goes in parser.py'],
      });
      const again = await handle.startUpdate(agentRunUpdates.compact, {
        args: [{}],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      holds[1]?.release(readCall('call_2'));
      expect(await again.result()).toMatchObject({ kind: 'summary', round: 3, dropped: 4 });
      await world.server.waitForRequests(3, 20_000);
      expect(await liveIds(handle)).toEqual(['m1', 'm2', 'summary:m8', 'm9', 'm10']);
      holds[2]?.release(reply({ content: 'The parser returns None.' }));
      const result = await handle.result();
      const lines = await readSessionLines(t.client, result.session);
      expect(lines.filter((line) => line.type === 'pin')).toEqual([
        { type: 'pin', ids: ['m5'], pinned: true },
        { type: 'pin', ids: ['m5'], pinned: false },
      ]);
      expect(replaySession(lines)).toEqual(result.messages);
      expect(result.compactions.totals.compactions).toBe(2);
      // The pinned fact reached every summary request: as the summarize activity's instructions.
      const summarizeInputs = await summarizeActivityInputs(handle);
      expect(summarizeInputs.length).toBeGreaterThanOrEqual(2);
      for (const input of summarizeInputs)
        expect(input.instructions).toMatch(
          /^Keep these facts, word for word:\n- The fix goes in parser\.py(\nKeep these identifiers: .+)?$/,
        );
      await maybeRecordHistory(handle, 'agent-run-pins');
    });
  });

  it('pins survive continue-as-new: the continued run holds the fact and shows it', async () => {
    const first = createHold();
    const second = createHold();
    world.server.script(first.response, second.response, reply({ content: 'Done.' }));
    const t = await testConnection();
    await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
      const workflowId = uniqueId('agent-pins-can');
      const handle = await t.client.workflow.start(agentRun, {
        taskQueue: t.taskQueue,
        workflowId,
        args: [input({ continueAsNewAfterRounds: 1 })],
      });
      await world.server.waitForRequests(1, 20_000);
      expect(
        await handle.executeUpdate(agentRunUpdates.pin, { args: [{ ids: ['m3'], fact: 'The fix goes in parser.py' }] }),
      ).toEqual({ ids: ['m3'], facts: ['The fix goes in parser.py'] });
      first.release(readCall('call_1'));
      await world.server.waitForRequests(2, 20_000);
      const latest = t.client.workflow.getHandle(workflowId);
      const { runId } = await latest.describe();
      expect(runId).not.toBe(handle.firstExecutionRunId);
      expect(await currentDetails(latest)).toContain(
        'Pinned facts (kept by every summary): “The fix goes in parser.py”',
      );
      expect((await latest.query(agentRunQueries.conversation))[2]).toEqual({ ...opening[2], sticky: true });
      // The continued run knows both pins: it unpins them (an unknown pin would be refused).
      expect(
        await latest.executeUpdate(agentRunUpdates.unpin, {
          args: [{ ids: ['m3'], fact: 'The fix goes in parser.py' }],
        }),
      ).toEqual({ ids: [], facts: [] });
      second.release(readCall('call_2'));
      const result = await latest.result();
      expect(result.continuedAsNew).toBe(2);
      expect(result.messages[2]).toEqual(opening[2]);
      expect(replaySession(await readSessionLines(t.client, result.session))).toEqual(result.messages);
    });
  });

  it('refuses steering once the run has finished', async () => {
    world.server.script(reply({ content: 'Done.' }));
    const t = await testConnection();
    await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
      const handle = await t.client.workflow.start(agentRun, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('agent-steer-late'),
        args: [input()],
      });
      await handle.result();
      const late = await handle
        .executeUpdate(agentRunUpdates.pin, { args: [{ ids: ['m3'] }] })
        .catch((e: unknown) => e);
      expect(String(late)).toContain('workflow execution already completed');
    });
  });

  describe('review before apply (compaction.review)', () => {
    it("'approve' publishes the compaction and waits; edit applies the person's summary", async () => {
      const hold = createHold();
      world.server.script(hold.response, reply({ content: 'Done.' }));
      const t = await testConnection();
      await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
        const handle = await t.client.workflow.start(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-review'),
          args: [input({ compaction: { keepRecent: 2, review: 'approve' } })],
        });
        await world.server.waitForRequests(1, 20_000);
        expect(await handle.query(agentRunQueries.pendingCompaction)).toBeNull();
        const nothing = capturedCliIo(t);
        expect(await main(['review', handle.workflowId], nothing)).toBe(1);
        expect(nothing.err()).toContain('no compaction is waiting for review');
        const none = await handle
          .executeUpdate(agentRunUpdates.reviewCompaction, { args: [{ decision: 'apply' }] })
          .catch((e: unknown) => e);
        expect(failureTypeOf(none)).toEqual({
          type: FailureType.Compaction.InvalidInput,
          message: 'reviewCompaction: no compaction is waiting for review (the pendingCompaction query)',
        });
        const compact = await handle.startUpdate(agentRunUpdates.compact, {
          args: [{}],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        });
        hold.release(readCall('call_1'));
        const proposal = await proposalOf(handle);
        expect(proposal).toMatchObject({ round: 2, kind: 'summary', dropped: ['m3', 'm4', 'm5', 'm6'], elided: [] });
        expect(proposal.summary).toMatch(/^\[Summary by the harness of 4 earlier messages\]/);
        expect(proposal.tokensAfter).toBeLessThan(proposal.tokensBefore);
        expect(await currentDetails(handle)).toContain('**Compaction waiting for review** (round 2, summary)');
        // Nothing is applied while it waits, and no request goes out.
        expect(await liveIds(handle)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8']);
        expect(world.server.requests).toHaveLength(1);
        const bad = await handle
          .executeUpdate(agentRunUpdates.reviewCompaction, { args: [{ decision: 'edit' }] })
          .catch((e: unknown) => e);
        expect(failureTypeOf(bad).message).toBe(
          'reviewCompaction.summary: must be the summary to apply (a non-empty string)',
        );
        // The CLI shows it and takes the decision: the person's summary from a file.
        const shown = capturedCliIo(t);
        expect(await main(['review', handle.workflowId], shown)).toBe(0);
        expect(shown.out()).toContain(
          `agentRun ${handle.workflowId} · compaction waiting for review (round 2, summary`,
        );
        expect(shown.out()).toContain('drops: m3, m4, m5, m6');
        expect(shown.out()).toContain(proposal.summary ?? 'a summary');
        expect(await main(['review', handle.workflowId, '--apply', '--reject'], capturedCliIo(t))).toBe(2);
        const file = join(world.root, 'summary.md');
        writeFileSync(file, 'The parser returns None for an empty string (parser.py line 42).');
        const decided = capturedCliIo(t);
        expect(await main(['review', handle.workflowId, '--edit', file], decided)).toBe(0);
        expect(decided.out()).toBe(
          `agentRun ${handle.workflowId}: applied with your summary the compaction of round 2\n`,
        );
        const record = await compact.result();
        expect(record).toMatchObject({ round: 2, kind: 'summary', review: 'edited', dropped: 4 });
        const result = await handle.result();
        expect(result.messages[2]).toEqual({
          role: 'user',
          content:
            '[Summary by the harness of 4 earlier messages]\n\nThe parser returns None for an empty string (parser.py line 42).',
        });
        expect(await handle.query(agentRunQueries.pendingCompaction)).toBeNull();
        const lines = await readSessionLines(t.client, result.session);
        expect(replaySession(lines)).toEqual(result.messages);
        expect(lines.find((line) => line.type === 'compaction')).toMatchObject({ review: 'edited' });
        await maybeRecordHistory(handle, 'agent-run-review');
      });
    });

    it('reject leaves the conversation as it is; unreviewed, a proposal is applied at reviewTimeout', async () => {
      const holds = [createHold(), createHold()];
      world.server.script(
        holds[0]?.response ?? reply({}),
        holds[1]?.response ?? reply({}),
        reply({ content: 'Done.' }),
      );
      const t = await testConnection();
      await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
        const handle = await t.client.workflow.start(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-review-reject'),
          args: [input({ compaction: { keepRecent: 2, review: 'approve', reviewTimeout: '2s' } })],
        });
        await world.server.waitForRequests(1, 20_000);
        const rejected = await handle.startUpdate(agentRunUpdates.compact, {
          args: [{}],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        });
        holds[0]?.release(readCall('call_1'));
        await proposalOf(handle);
        expect(
          await handle.executeUpdate(agentRunUpdates.reviewCompaction, { args: [{ decision: 'reject' }] }),
        ).toEqual({
          decision: 'reject',
          round: 2,
        });
        expect(await rejected.result()).toEqual({
          compacted: false,
          reason: 'the reviewer rejected it (reviewCompaction)',
        });
        await world.server.waitForRequests(2, 20_000);
        expect(await liveIds(handle)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8']);
        // The summarizer was asked (and billed) all the same.
        expect((await handle.query(agentRunQueries.compactions)).usage.summarizer.requests).toBe(1);
        // Nobody answers the next one: it is applied when reviewTimeout is up.
        const unreviewed = await handle.startUpdate(agentRunUpdates.compact, {
          args: [{}],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        });
        holds[1]?.release(readCall('call_2'));
        expect(await unreviewed.result()).toMatchObject({ round: 3, kind: 'summary', review: 'timed-out' });
        const result = await handle.result();
        expect(result.compactions.totals.compactions).toBe(1);
        expect(replaySession(await readSessionLines(t.client, result.session))).toEqual(result.messages);
      });
    });

    it("'manual' compacts only on demand, but a request that would not fit its window forces the compaction", async () => {
      world.server.script(reply({ content: 'Done.' }));
      const t = await testConnection();
      // The opening is over this window's room: the first request cannot go out as it is.
      const small = { ...openaiModel, contextWindow: 1_000, maxOutputTokens: 100, safetyMargin: 0 };
      const forced = await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, (t) =>
        t.client.workflow.execute(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-review-forced'),
          args: [input({ model: small, compaction: { keepRecent: 2, review: 'manual' } })],
        }),
      );
      expect(forced.compactions.recent).toEqual([expect.objectContaining({ round: 1, review: 'forced' })]);
      expect(world.server.requests).toHaveLength(1);
      // Over the trigger (0.6 of the room) but within the room: 'auto' compacts, 'manual' does not.
      world.server.script(reply({ content: 'Done.' }), reply({ content: 'Done.' }));
      const roomy = { ...openaiModel, contextWindow: 1_600, maxOutputTokens: 100, safetyMargin: 0 };
      const runRoomy = (review: 'manual' | 'auto') =>
        withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, (t) =>
          t.client.workflow.execute(agentRun, {
            taskQueue: t.taskQueue,
            workflowId: uniqueId(`agent-review-roomy-${review}`),
            args: [
              input({
                model: roomy,
                compaction: { keepRecent: 2, review, triggerRatio: 0.6, deferShallowCompactions: false },
              }),
            ],
          }),
        );
      expect((await runRoomy('auto')).compactions.totals.compactions).toBe(1);
      expect((await runRoomy('manual')).compactions.totals.compactions).toBe(0);
    });

    it('a proposal waits through a worker restart: a new worker takes the decision', async () => {
      const hold = createHold();
      world.server.script(hold.response, reply({ content: 'Done.' }));
      const t = await testConnection();
      const workflowId = uniqueId('agent-review-restart');
      const handle = await withWorker(t, { workflowBundle: bundle, activities: world.activities() }, async () => {
        const started = await t.client.workflow.start(agentRun, {
          taskQueue: t.taskQueue,
          workflowId,
          args: [input({ compaction: { keepRecent: 2, review: 'approve' } })],
        });
        await world.server.waitForRequests(1, 20_000);
        await started.startUpdate(agentRunUpdates.compact, { args: [{}], waitForStage: WorkflowUpdateStage.ACCEPTED });
        hold.release(readCall('call_1'));
        await proposalOf(started);
        return started;
      });
      // No worker now: the proposal waits in history (a timer), not in a worker's memory; the list
      // finds it by its search attribute (docs/design.md#review).
      expect(await pendingAttributeBecomes(t.client, handle, true)).toEqual({ described: true, listed: 1 });
      await withWorker(t, { workflowBundle: bundle, activities: world.activities() }, async () => {
        const proposal = await proposalOf(handle);
        expect(proposal.dropped).toEqual(['m3', 'm4', 'm5', 'm6']);
        expect(await handle.executeUpdate(agentRunUpdates.reviewCompaction, { args: [{ decision: 'apply' }] })).toEqual(
          {
            decision: 'apply',
            round: 2,
          },
        );
        const result = await handle.result();
        expect(result.compactions.recent).toEqual([expect.objectContaining({ review: 'applied', dropped: 4 })]);
        expect(replaySession(await readSessionLines(t.client, result.session))).toEqual(result.messages);
        // Applied: no longer pending, in the description and in the list.
        expect(await pendingAttributeBecomes(t.client, handle, false)).toEqual({ described: false, listed: 1 });
        const upserts = ((await handle.fetchHistory()).events ?? []).filter(
          (event) =>
            event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.CompactionPending,
        );
        expect(upserts).toHaveLength(2);
        await maybeRecordHistory(handle, 'agent-run-review-worker-restart');
      });
    });
  });
});
