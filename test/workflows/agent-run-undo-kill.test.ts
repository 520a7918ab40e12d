// A worker *process* SIGKILLed while an `undoCompaction` update is in flight (docs/design.md#undo):
// the undo is a record the workflow writes only once `restoreCompaction` has answered, so a worker
// that dies under it leaves no trace; a new worker serves the same update once. Afterwards the
// conversation is byte for byte the one before the compaction, and the history, the transcript
// and the result hold one `kind: 'undo'` record.
import { WorkflowUpdateStage } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { agentRun, type ChatMessage } from '../../src/index.js';
import { agentRunUpdates, type AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import { replaySession } from '../../src/core/agent/session.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { TRAJECTORY_DIR_ENV } from '../../corpus/index.js';
import { createHold } from '../support/fake-openai.js';
import { fakeModelAndToolRoot, trajectoryDir } from '../support/agent.js';
import { testConnection, uniqueId } from '../support/temporal.js';
import { spawnWorkerProcess, workerProcessesFor } from '../support/worker-process.js';
import { billedReply as reply, readCall, undoOpening as opening } from '../support/undo-conversation.js';
import { until } from '../support/until.js';

describe('a worker process killed while an undo is in flight', () => {
  const world = fakeModelAndToolRoot('agent-undo-kill-', { 'a.txt': 'alpha\nbeta\n' });
  const workers = workerProcessesFor('agent-undo-kill-');

  it(
    'changes nothing: a new worker serves the undo once, the conversation comes back byte for byte',
    { timeout: 180_000 },
    async () => {
      const holds = [createHold(), createHold()];
      world.server.script(...holds.map((hold) => hold.response), reply({ content: 'The parser returns None.' }));
      const t = await testConnection();
      const env = {
        TEMPORAL_ADDRESS: t.address,
        TEMPORAL_NAMESPACE: t.namespace,
        AGENT_TASK_QUEUE: t.taskQueue,
        AGENT_WORKFLOW_BUNDLE: workers.bundle.bundlePath,
        AGENT_OPENAI_BASE_URL: world.server.baseURL,
        AGENT_TOOLS_ROOT: world.root,
        [TRAJECTORY_DIR_ENV]: trajectoryDir(),
      };
      const first = spawnWorkerProcess('test/support/agent-worker.ts', { ...env, AGENT_HOLD_RESTORE: '1' });
      workers.spawned.push(first);
      await until(() => first.output().includes('agent worker ready'), 60_000, `the first worker:\n${first.output()}`);

      const input: AgentRunWorkflowInput = {
        messages: opening,
        model: { provider: 'openai', model: 'fake-agent', contextWindow: 16_000, maxOutputTokens: 500 },
        tools: ['fs_read'],
        compaction: { keepRecent: 2 },
      };
      const handle = await t.client.workflow.start(agentRun, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('agent-undo-kill'),
        args: [input],
      });
      await world.server.waitForRequests(1, 20_000);
      const compact = await handle.startUpdate(agentRunUpdates.compact, {
        args: [{}],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      holds[0]?.release(readCall('call_1'));
      expect(await compact.result()).toMatchObject({ kind: 'summary', round: 2 });
      await world.server.waitForRequests(2, 20_000);
      const before = world.server.requests[0]?.body as { messages: ChatMessage[] };
      const compacted = world.server.requests[1]?.body as { messages: ChatMessage[] };
      expect(JSON.stringify(compacted.messages)).toContain('[Summary by the harness');

      // The undo is accepted; the loop serves it at the round's end, where the first worker's
      // restoreCompaction starts and never answers. The process dies there, without a word to the server.
      const undo = await handle.startUpdate(agentRunUpdates.undoCompaction, {
        args: [{}],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      holds[1]?.release(readCall('call_2'));
      await until(() => first.output().includes('restoreCompaction started'), 60_000, 'the undo to reach the worker');
      first.child.kill('SIGKILL');
      expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });

      const second = spawnWorkerProcess('test/support/agent-worker.ts', env);
      workers.spawned.push(second);
      expect(await undo.result()).toMatchObject({ kind: 'undo', undoes: 1, round: 3, dropped: 0 });
      const result = await handle.result();

      // The conversation: the third request opens with the first one's messages, byte for byte (the
      // image included), then the two tool turns; no summary.
      expect(world.server.requests).toHaveLength(3);
      const third = (world.server.requests[2]?.body as { messages: ChatMessage[] }).messages;
      expect(JSON.stringify(third.slice(0, before.messages.length))).toBe(JSON.stringify(before.messages));
      expect(third).toHaveLength(before.messages.length + 4);
      expect(JSON.stringify(third)).not.toContain('[Summary by the harness');
      expect(
        JSON.stringify(result.messages.slice(0, opening.length).map(({ sticky: _sticky, ...message }) => message)),
      ).toBe(JSON.stringify(opening));

      // One undo record: in the history, the transcript, and the result; the transcript replays to the result.
      expect(result.compactions.recent.map((record) => record.kind)).toEqual(['summary', 'undo']);
      expect(result.compactions.totals).toMatchObject({ compactions: 1, undos: 1 });
      expect(result.compactions.undone).toEqual([{ compaction: 1, by: 2 }]);
      const lines = await readSessionLines(t.client, result.session);
      expect(lines.filter((line) => line.type === 'undo')).toHaveLength(1);
      expect(replaySession(lines)).toEqual(result.messages);

      // The activity was scheduled once; the new worker ran its second attempt after the first was lost.
      const events = (await handle.fetchHistory()).events ?? [];
      const scheduled = events.filter(
        (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'restoreCompaction',
      );
      expect(scheduled).toHaveLength(1);
      const started = events.find(
        (event) => String(event.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled[0]?.eventId),
      );
      expect(started?.activityTaskStartedEventAttributes?.attempt).toBeGreaterThanOrEqual(2);
      second.child.kill('SIGTERM');
    },
  );
});
