// Undoing a compaction of a running agentRun on the dev server (docs/design.md#undo): the
// `undoCompaction` update brings back every message the compaction replaced, byte for byte (an
// image included), as a record (`kind: 'undo'`) in the history, the UI details, the CLI and the
// transcript; refused with `Compaction.UndoRefused` when later compactions depend on it, when the
// restored conversation would not fit the window, or when nothing is left to undo.
import { WorkflowUpdateFailedError, WorkflowUpdateStage, type WorkflowHandle } from '@temporalio/client';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import { isReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { agentRun, FailureType, type ChatMessage } from '../../src/index.js';
import { agentRunUpdates, agentRunQueries, type AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import { replaySession } from '../../src/core/agent/session.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { COMPACTION_TABLE_HEADER } from '../../src/core/agent/compaction-history.js';
import { main } from '../../src/cli/main.js';
import { loadConfig } from '../../src/config.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import { createHold } from '../support/fake-openai.js';
import { failureTypeOf, fakeModelAndToolRoot, replayTokens } from '../support/agent.js';
import { capturedCliIo } from '../support/cli-process.js';
import { dataUrl, pngBytes } from '../support/images.js';
import { bundleWorkflows, testConnection, uniqueId, withFileWorker, withWorker } from '../support/temporal.js';
import { maybeRecordHistory } from './harness.js';
import { billedReply as reply, notes, readCall, undoOpening as opening } from '../support/undo-conversation.js';

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
});

const openaiModel = { provider: 'openai' as const, model: 'fake-agent', contextWindow: 16_000, maxOutputTokens: 500 };

async function liveIds(handle: WorkflowHandle): Promise<string[]> {
  return (await handle.query(agentRunQueries.conversationEntries)).map((entry) => entry.id);
}

async function currentDetails(handle: WorkflowHandle): Promise<string> {
  const metadata: unknown = await handle.query('__temporal_workflow_metadata');
  return String(Reflect.get(Object(metadata), 'currentDetails'));
}

/** The messages a chat request sent. */
function sent(world: ReturnType<typeof fakeModelAndToolRoot>, index: number): ChatMessage[] {
  return (world.server.requests[index]?.body as { messages: ChatMessage[] }).messages;
}

describe('undoCompaction', { timeout: 120_000 }, () => {
  const world = fakeModelAndToolRoot('agent-undo-', { 'a.txt': 'alpha\nbeta\n' });
  const input = (overrides: Partial<AgentRunWorkflowInput> = {}): AgentRunWorkflowInput => ({
    messages: opening,
    model: openaiModel,
    tools: ['fs_read'],
    compaction: { keepRecent: 2 },
    ...overrides,
  });

  it('brings back what the compaction replaced, byte for byte, as a record in the history, UI, CLI and transcript', async () => {
    const holds = [createHold(), createHold()];
    world.server.script(...holds.map((hold) => hold.response), reply({ content: 'The parser returns None.' }));
    const t = await testConnection();
    await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
      const handle = await t.client.workflow.start(agentRun, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('agent-undo'),
        args: [input()],
      });
      await world.server.waitForRequests(1, 20_000);
      const compact = await handle.startUpdate(agentRunUpdates.compact, {
        args: [{}],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      holds[0]?.release(readCall('call_1'));
      expect(await compact.result()).toMatchObject({ kind: 'summary', round: 2, dropped: 4 });
      await world.server.waitForRequests(2, 20_000);
      expect(await liveIds(handle)).toEqual(['m1', 'm2', 'summary:m6', 'm7', 'm8']);
      expect(JSON.stringify(sent(world, 1))).not.toContain('image_url');

      // #1 is a compaction; #2 would be out of range: named, refused as input.
      const unknown = await handle
        .executeUpdate(agentRunUpdates.undoCompaction, { args: [{ compactionId: 2 }] })
        .catch((error: unknown) => error);
      expect(unknown).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(failureTypeOf(unknown)).toEqual({
        type: FailureType.Compaction.InvalidInput,
        message: 'undoCompaction.compactionId: no compaction #2: the history holds 1 record',
      });
      const undo = await handle.startUpdate(agentRunUpdates.undoCompaction, {
        args: [{ compactionId: 1 }],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      // Accepted, the undo waits for the loop: a second undo of the same compaction is refused at once.
      const twice = await handle
        .executeUpdate(agentRunUpdates.undoCompaction, { args: [{}] })
        .catch((error: unknown) => error);
      expect(failureTypeOf(twice)).toEqual({
        type: FailureType.Compaction.UndoRefused,
        message: 'there is no compaction in effect to undo',
      });
      holds[1]?.release(readCall('call_2'));
      const record = await undo.result();
      expect(record).toMatchObject({ kind: 'undo', undoes: 1, restored: 4, round: 3, dropped: 0 });
      expect(record.tokensAfter).toBeGreaterThan(record.tokensBefore);
      const result = await handle.result();

      // The third request: the opening as the first request sent it, byte for byte (the image
      // included), then the two tool turns; no summary.
      const third = sent(world, 2);
      expect(JSON.stringify(third.slice(0, opening.length))).toBe(JSON.stringify(sent(world, 0)));
      expect(third).toHaveLength(opening.length + 4);
      expect(JSON.stringify(third)).not.toContain('[Summary by the harness');
      expect(result.messages.slice(0, opening.length).map(({ sticky: _sticky, ...message }) => message)).toEqual(
        opening,
      );

      // The history: a compaction, then its undo; the totals count both apart.
      expect(result.compactions.recent.map((item) => item.kind)).toEqual(['summary', 'undo']);
      expect(result.compactions.totals).toMatchObject({ compactions: 1, undos: 1 });
      expect(result.compactions.undone).toEqual([{ compaction: 1, by: 2 }]);
      expect(result.compactions.recent[1]).toEqual(record);
      // The transcript: one undo line, and it replays to the result.
      const lines = await readSessionLines(t.client, result.session);
      expect(lines.filter((line) => line.type === 'undo')).toEqual([
        expect.objectContaining({ type: 'undo', compaction: 1, removes: ['summary:m6'], round: 3 }),
      ]);
      expect(replaySession(lines)).toEqual(result.messages);
      // The UI's current details and the CLI's history name the undo.
      const details = await currentDetails(handle);
      expect(details).toContain('#1 round 2');
      expect(details).toContain('(undone by #2)');
      expect(details).toContain('#2 round 3');
      expect(details).toContain('undo of #1, 4 messages back');
      const io = capturedCliIo(t);
      expect(await main(['history', handle.workflowId, '--all'], io)).toBe(0);
      expect(io.out()).toContain(' · COMPLETED · 1 compaction, 1 undo\n');
      expect(io.out()).toContain(COMPACTION_TABLE_HEADER);
      expect(io.out()).toMatch(/\| 1 \| 2 \| .* \| summary \([\d,]+ chars\), undone by #2[^|]* \|/);
      expect(io.out()).toMatch(/\| 2 \| 3 \| .* \| undo of #1, 4 messages back \|/);
      const session = capturedCliIo(t);
      expect(await main(['session', handle.workflowId], session)).toBe(0);
      expect(session.out()).toContain('── undo of compaction #1: 4 messages back, summary:m6 out');
      await maybeRecordHistory(handle, 'agent-run-undo');
    });
  });

  it('is refused while a later compaction depends on it, then applies once that one is undone', async () => {
    const holds = [createHold(), createHold(), createHold()];
    world.server.script(...holds.map((hold) => hold.response), reply({ content: 'Done.' }));
    const t = await testConnection();
    await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
      const handle = await t.client.workflow.start(agentRun, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('agent-undo-order'),
        args: [input()],
      });
      for (const [index, hold] of holds.slice(0, 2).entries()) {
        await world.server.waitForRequests(index + 1, 20_000);
        const compact = await handle.startUpdate(agentRunUpdates.compact, {
          args: [{}],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        });
        hold.release(readCall(`call_${index + 1}`));
        expect(await compact.result()).toMatchObject({ round: index + 2 });
      }
      await world.server.waitForRequests(3, 20_000);
      const refused = await handle
        .executeUpdate(agentRunUpdates.undoCompaction, { args: [{ compactionId: 1 }] })
        .catch((error: unknown) => error);
      expect(failureTypeOf(refused)).toEqual({
        type: FailureType.Compaction.UndoRefused,
        message: 'compaction #1: later compactions depend on it; undo #2 first',
      });
      // The CLI says the same, exit 1; a bad --compaction is a usage mistake.
      const cli = capturedCliIo(t);
      expect(await main(['undo', handle.workflowId, '--compaction', '1'], cli)).toBe(1);
      expect(cli.err()).toBe(
        `agentRun ${handle.workflowId}: the undo was refused: Compaction.UndoRefused: compaction #1: later compactions depend on it; undo #2 first\n`,
      );
      const usage = capturedCliIo(t);
      expect(await main(['undo', handle.workflowId, '--compaction', 'last'], usage)).toBe(2);
      expect(usage.err()).toContain('--compaction takes the # of a compaction in the history');
      const second = await handle.startUpdate(agentRunUpdates.undoCompaction, {
        args: [{}],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      // Both accepted before the loop serves them: #2 (the last in effect), then #1.
      const first = await handle.startUpdate(agentRunUpdates.undoCompaction, {
        args: [{ compactionId: 1 }],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      holds[2]?.release(readCall('call_3'));
      expect(await second.result()).toMatchObject({ kind: 'undo', undoes: 2 });
      expect(await first.result()).toMatchObject({ kind: 'undo', undoes: 1 });
      const result = await handle.result();
      expect(result.compactions.undone).toEqual([
        { compaction: 2, by: 3 },
        { compaction: 1, by: 4 },
      ]);
      const fourth = sent(world, 3);
      expect(JSON.stringify(fourth.slice(0, opening.length))).toBe(JSON.stringify(sent(world, 0)));
      expect(fourth).toHaveLength(opening.length + 6);
      expect(replaySession(await readSessionLines(t.client, result.session))).toEqual(result.messages);
    });
  });

  it('a worker that goes away while the undo reads the transcript changes nothing: another one serves it once', async () => {
    const holds = [createHold(), createHold()];
    world.server.script(...holds.map((hold) => hold.response), reply({ content: 'Done.' }));
    const t = await testConnection();
    const workflowId = uniqueId('agent-undo-restart');
    let started = 0;
    // The first worker's restoreCompaction starts, then the worker goes away under it.
    const dying = {
      ...world.activities(),
      restoreCompaction: async (): Promise<never> => {
        started += 1;
        await Context.current().cancelled;
        throw new Error('unreachable: the worker went away');
      },
    };
    const handle = await withWorker(t, { workflowBundle: bundle, activities: dying }, async () => {
      const run = await t.client.workflow.start(agentRun, { taskQueue: t.taskQueue, workflowId, args: [input()] });
      await world.server.waitForRequests(1, 20_000);
      const compact = await run.startUpdate(agentRunUpdates.compact, {
        args: [{}],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      holds[0]?.release(readCall('call_1'));
      await compact.result();
      await world.server.waitForRequests(2, 20_000);
      await run.startUpdate(agentRunUpdates.undoCompaction, { args: [{}], waitForStage: WorkflowUpdateStage.ACCEPTED });
      holds[1]?.release(readCall('call_2'));
      for (let attempt = 0; attempt < 200 && started === 0; attempt += 1)
        await new Promise((resolve) => setTimeout(resolve, 100));
      return run;
    });
    expect(started).toBe(1);
    // The second worker serves the undo: one activity, retried after the first attempt was lost, one undo line.
    await withWorker(t, { workflowBundle: bundle, activities: world.activities() }, async () => {
      const result = await handle.result();
      const lines = await readSessionLines(t.client, result.session);
      expect(lines.filter((line) => line.type === 'undo')).toHaveLength(1);
      expect(result.compactions.undone).toEqual([{ compaction: 1, by: 2 }]);
      const third = sent(world, 2);
      expect(JSON.stringify(third.slice(0, opening.length))).toBe(JSON.stringify(sent(world, 0)));
      expect(third).toHaveLength(opening.length + 4);
      expect(replaySession(lines)).toEqual(result.messages);
      const attempts = ((await handle.fetchHistory()).events ?? []).filter(
        (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'restoreCompaction',
      );
      expect(attempts).toHaveLength(1);
      const scheduledId = String(attempts[0]?.eventId);
      const startedEvent = ((await handle.fetchHistory()).events ?? []).find(
        (event) => String(event.activityTaskStartedEventAttributes?.scheduledEventId) === scheduledId,
      );
      expect(startedEvent?.activityTaskStartedEventAttributes?.attempt).toBeGreaterThanOrEqual(2);
    });
  });

  it('with a payload store: the messages come back byte for byte from stored transcript batches', async () => {
    const storeDir = mkdtempSync(join(tmpdir(), 'undo-store-'));
    try {
      const payloads = payloadConverterFromConfig(loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: `file:${storeDir}` } }));
      // A screenshot of about 300 KB: the batches and requests that carry it leave the history for the store.
      const big: ChatMessage[] = opening.map((message, index) =>
        index === 3
          ? {
              role: 'user',
              content: [
                { type: 'text', text: `Here is the screen of the failure. ${notes('the logs')}` },
                {
                  type: 'image_url',
                  image_url: { url: dataUrl(pngBytes(64, 48), 'image/png', 300_000), detail: 'low' },
                },
              ],
            }
          : message,
      );
      const holds = [createHold(), createHold()];
      world.server.script(...holds.map((hold) => hold.response), reply({ content: 'Done.' }));
      const t = await testConnection({ dataConverter: payloads.dataConverter });
      await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
        const handle = await t.client.workflow.start(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-undo-store'),
          args: [input({ messages: big, model: { ...openaiModel, contextWindow: 200_000 } })],
        });
        await world.server.waitForRequests(1, 20_000);
        const compact = await handle.startUpdate(agentRunUpdates.compact, {
          args: [{}],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        });
        holds[0]?.release(readCall('call_1'));
        expect(await compact.result()).toMatchObject({ round: 2 });
        await world.server.waitForRequests(2, 20_000);
        expect(JSON.stringify(sent(world, 1))).not.toContain('image_url');
        const undo = await handle.startUpdate(agentRunUpdates.undoCompaction, {
          args: [{}],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        });
        holds[1]?.release(readCall('call_2'));
        expect(await undo.result()).toMatchObject({ kind: 'undo', undoes: 1 });
        const result = await handle.result();
        const third = sent(world, 2);
        expect(JSON.stringify(third.slice(0, big.length))).toBe(JSON.stringify(sent(world, 0)));
        expect(JSON.stringify(third)).toContain(dataUrl(pngBytes(64, 48), 'image/png', 300_000));
        expect(replaySession(await readSessionLines(t.client, result.session))).toEqual(result.messages);
        // The transcript batches went to the store: the history holds claims, the store the bytes.
        expect(readdirSync(storeDir, { recursive: true }).length).toBeGreaterThan(0);
        const batches = ((await handle.fetchHistory()).events ?? []).flatMap((event) => {
          const scheduled = event.activityTaskScheduledEventAttributes;
          return scheduled?.activityType?.name === 'recordSession' ? (scheduled.input?.payloads ?? []) : [];
        });
        expect(batches.some((payload) => isReferencePayload(payload))).toBe(true);
      });
    } finally {
      rmSync(storeDir, { recursive: true, force: true });
    }
  });

  it('is refused when the restored conversation would not fit the window', async () => {
    const hold = createHold();
    world.server.script(hold.response, reply({ content: 'Done.' }));
    const t = await testConnection();
    await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
      // The opening does not fit this window: the run compacts before its first request.
      const small = { ...openaiModel, contextWindow: replayTokens(opening) + 300 };
      const handle = await t.client.workflow.start(agentRun, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('agent-undo-window'),
        args: [input({ model: small })],
      });
      await world.server.waitForRequests(1, 20_000);
      const undo = await handle.startUpdate(agentRunUpdates.undoCompaction, {
        args: [{}],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      hold.release(readCall('call_1'));
      const refused = await undo.result().catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
      const failure = failureTypeOf(refused);
      expect(failure.type).toBe(FailureType.Compaction.UndoRefused);
      expect(failure.message).toMatch(
        /^compaction #1: the restored conversation would be \d+ tokens, over the \d+ the window leaves$/,
      );
      const result = await handle.result();
      expect(result.compactions.totals).toMatchObject({ compactions: 1, undos: 0 });
      expect(result.compactions.undone).toEqual([]);
    });
  });
});
