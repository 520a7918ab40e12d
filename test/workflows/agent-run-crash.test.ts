// A worker *process* SIGKILLed in the middle of an agentRun: a second process picks the run up
// (the dead worker's workflow task after the sticky timeout, its activity after the heartbeat
// timeout) and the run completes with exactly the conversation, transcript and compaction history
// of an uninterrupted run of the same input.
import { describe, expect, it } from 'vitest';
import { agentRun } from '../../src/index.js';
import { agentRunQueries, type AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import { replaySession } from '../../src/core/agent/session.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { TRAJECTORY_DIR_ENV } from '../../corpus/index.js';
import { openingOf, replayActivities, trajectoryDir } from '../support/agent.js';
import { testConnection, uniqueId, withWorker } from '../support/temporal.js';
import { spawnWorkerProcess, workerProcessesFor } from '../support/worker-process.js';
import { until } from '../support/until.js';

/** A generated coding run with parallel tool calls (corpus/generate.ts): at this window it elides early and first summarizes about halfway. */
const NAME = 'generated_parallel-calls';

describe('a worker process killed mid-run', () => {
  const workers = workerProcessesFor('agent-crash-');

  it('completes with the same final conversation as an uninterrupted run', { timeout: 180_000 }, async () => {
    const input: AgentRunWorkflowInput = {
      messages: openingOf(NAME),
      model: { provider: 'replay', trajectory: NAME, contextWindow: 15_000, maxOutputTokens: 1000 },
      compaction: {
        keepRecent: 4,
        ageObservations: true,
        ageReclaimMin: 8000,
        ageMinChars: 1000,
        heartbeatTimeout: '2s',
      },
      chatActivity: { heartbeatTimeout: '2s', startToCloseTimeout: '10s' },
      toolActivity: { startToCloseTimeout: '5s' },
      continueAsNewAfterRounds: 20,
      maxRounds: 1000,
    };

    const reference = await testConnection();
    const uninterrupted = await withWorker(
      reference,
      { workflowBundle: { code: workers.bundle.code }, activities: replayActivities() },
      () =>
        reference.client.workflow.execute(agentRun, {
          taskQueue: reference.taskQueue,
          workflowId: uniqueId('agent-reference'),
          args: [input],
        }),
    );
    expect(uninterrupted.compactions.totals.compactions).toBeGreaterThanOrEqual(3);

    const t = await testConnection();
    const env = {
      TEMPORAL_ADDRESS: t.address,
      TEMPORAL_NAMESPACE: t.namespace,
      AGENT_TASK_QUEUE: t.taskQueue,
      AGENT_WORKFLOW_BUNDLE: workers.bundle.bundlePath,
      [TRAJECTORY_DIR_ENV]: trajectoryDir(),
    };
    const first = spawnWorkerProcess('test/support/agent-worker.ts', env);
    workers.spawned.push(first);
    await until(() => first.output().includes('agent worker ready'), 60_000, `the first worker:\n${first.output()}`);
    const handle = await t.client.workflow.start(agentRun, {
      taskQueue: t.taskQueue,
      workflowId: uniqueId('agent-crash'),
      args: [input],
    });

    // Kill it once the run is well under way (past its first compaction), not at a quiet boundary on purpose.
    let linesAtKill = 0;
    await until(
      async () => {
        const { totals } = await handle.query(agentRunQueries.compactions);
        const session = await handle.query(agentRunQueries.session);
        linesAtKill = session.reference.lines + session.pending.length;
        return totals.compactions > 0 && linesAtKill >= 50;
      },
      90_000,
      'the run to get under way',
    );
    first.child.kill('SIGKILL');
    await until(() => first.child.signalCode === 'SIGKILL', 10_000, 'the first worker to die');

    const second = spawnWorkerProcess('test/support/agent-worker.ts', env);
    workers.spawned.push(second);
    const recovered = await handle.result();
    expect(linesAtKill).toBeLessThan(recovered.session.lines);
    expect(JSON.stringify(recovered.messages)).toBe(JSON.stringify(uninterrupted.messages));
    const recoveredLines = await readSessionLines(t.client, recovered.session);
    expect(recoveredLines).toEqual(await readSessionLines(reference.client, uninterrupted.session));
    expect(replaySession(recoveredLines)).toEqual(recovered.messages);
    expect(recovered.compactions).toEqual(uninterrupted.compactions);
    expect(recovered.rounds).toBe(uninterrupted.rounds);
    second.child.kill('SIGTERM');
  });
});
