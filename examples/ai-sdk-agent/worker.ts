// The worker: both plugins. AiSdkPlugin runs the model calls (an OpenAI-compatible endpoint at
// OPENAI_BASE_URL); compactorPlugin runs the summaries (its summarizer reads the same variables).
import { fileURLToPath } from 'node:url';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { NativeConnection, Worker } from '@temporalio/worker';
import { compactorPlugin } from 'temporal-compactor';
import * as activities from './activities.js';

const provider = createOpenAICompatible({
  name: 'openai-compatible',
  baseURL: process.env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
  apiKey: process.env.OPENAI_API_KEY ?? '',
});
const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
const worker = await Worker.create({
  connection,
  taskQueue: 'ai-sdk-agent',
  workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
  activities,
  plugins: [new AiSdkPlugin({ modelProvider: provider }), compactorPlugin()],
});
await worker.run();
