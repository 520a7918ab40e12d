// A worker process for agentRun tests (`node --import tsx test/support/agent-worker.ts`): replay
// activities over the test corpus and the extractive summarizer, workflows from a prebuilt bundle.
// Configured by TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, AGENT_TASK_QUEUE, AGENT_WORKFLOW_BUNDLE and
// COMPACTOR_TEST_TRAJECTORY_DIR (the test run's trajectory directory; without it the process writes its own).
// Optional: AGENT_OPENAI_BASE_URL (a fake OpenAI server for `provider: 'openai'`), AGENT_TOOLS_ROOT
// (the tools' root), and AGENT_HOLD_RESTORE=1: `restoreCompaction` says `restoreCompaction started`
// on stdout and never answers, so a test can kill the process while an undo is in flight.
import { NativeConnection, Worker } from '@temporalio/worker';
import OpenAI from 'openai';
import { replayActivities } from './agent.js';

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

const baseURL = process.env.AGENT_OPENAI_BASE_URL;
const toolsRoot = process.env.AGENT_TOOLS_ROOT;
const activities = replayActivities({
  ...(baseURL === undefined ? {} : { openai: new OpenAI({ baseURL, apiKey: 'test-key', maxRetries: 0 }) }),
  ...(toolsRoot === undefined ? {} : { toolsRoot }),
});
if (process.env.AGENT_HOLD_RESTORE === '1')
  activities.restoreCompaction = async (): Promise<never> => {
    process.stdout.write('restoreCompaction started\n');
    return new Promise<never>(() => undefined);
  };

const connection = await NativeConnection.connect({ address: required('TEMPORAL_ADDRESS') });
const worker = await Worker.create({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  taskQueue: required('AGENT_TASK_QUEUE'),
  workflowBundle: { codePath: required('AGENT_WORKFLOW_BUNDLE') },
  activities,
  // The crash tests SIGKILL this process mid-run: its run's next workflow task waits on the dead
  // worker's sticky queue this long (the SDK's default is 10 s) before the server hands it to the
  // task queue, where the next worker takes it.
  stickyQueueScheduleToStartTimeout: '1s',
});
process.stdout.write('agent worker ready\n');
await worker.run();
await connection.close();
