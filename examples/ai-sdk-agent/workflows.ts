// The agent: the AI SDK's generateText loop with one tool, its model called through
// @temporalio/ai-sdk (each call an activity), its prompt compacted by temporal-compactor's
// middleware before each call (the summary is temporal-compactor's summarize activity).
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';
import { generateText, jsonSchema, stepCountIs, tool, wrapLanguageModel } from 'ai';
import { compactionMiddleware } from 'temporal-compactor/workflow';
import type * as activities from './activities.js';

const { readLog } = proxyActivities<typeof activities>({ startToCloseTimeout: '1 minute' });

export async function investigate(question: string): Promise<{ text: string; steps: number }> {
  const model = wrapLanguageModel({
    model: temporalProvider.languageModel('fake-agent'),
    // A small window, so that the example compacts: 6,000 tokens of the character estimator.
    middleware: compactionMiddleware({ contextBudget: 6_000, keepRecent: 4 }),
  });
  const result = await generateText({
    model,
    system: 'You investigate failing builds by reading their logs.',
    prompt: question,
    tools: {
      read_log: tool({
        description: 'Read one build log',
        inputSchema: jsonSchema<{ name: string }>({
          type: 'object',
          properties: { name: { type: 'string' } },
          required: ['name'],
        }),
        execute: async ({ name }) => readLog(name),
      }),
    },
    stopWhen: stepCountIs(20),
  });
  return { text: result.text, steps: result.steps.length };
}
