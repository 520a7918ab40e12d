// The client: starts the agent and prints its answer.
import { Client, Connection } from '@temporalio/client';
import type { investigate } from './workflows.js';

const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
const client = new Client({ connection });
const result = await client.workflow.execute<typeof investigate>('investigate', {
  taskQueue: 'ai-sdk-agent',
  workflowId: process.env.WORKFLOW_ID ?? `investigate-${Date.now()}`,
  args: ['Why did the nightly builds fail?'],
});
console.log(`answer after ${result.steps} steps: ${result.text}`);
await connection.close();
