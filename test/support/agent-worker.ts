// A worker process for agentRun tests (`node --import tsx test/support/agent-worker.ts`): replay
// activities over the test corpus and the extractive summarizer, workflows from a prebuilt bundle.
// Configured by TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, AGENT_TASK_QUEUE, AGENT_WORKFLOW_BUNDLE and
// COMPACTOR_TEST_TRAJECTORY_DIR (the test run's trajectory directory; without it the process writes its own).
import { NativeConnection, Worker } from '@temporalio/worker';
import { replayActivities } from './agent.js';

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

const connection = await NativeConnection.connect({ address: required('TEMPORAL_ADDRESS') });
const worker = await Worker.create({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  taskQueue: required('AGENT_TASK_QUEUE'),
  workflowBundle: { codePath: required('AGENT_WORKFLOW_BUNDLE') },
  activities: replayActivities(),
});
process.stdout.write('agent worker ready\n');
await worker.run();
await connection.close();
