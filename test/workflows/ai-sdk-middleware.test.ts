// compactionMiddleware (docs/compaction.md#ai-sdk-middleware): the AI SDK's own generateText loop
// with the middleware in process, and the middleware in workflow code on a dev server — one
// summary per compaction, the compacted prefix put back at the next steps, the history replays.
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { generateText, jsonSchema, stepCountIs, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SummarizeRequest, Summarizer } from '../../src/core/types.js';
import { compactionMiddleware } from '../../src/workflows/ai-sdk-middleware.js';
import { replayActivities } from '../support/agent.js';
import { testConnection, uniqueId, withFileWorker } from '../support/temporal.js';
import { bundleTestWorkflows } from './harness.js';
import type { middlewareInWorkflow } from './test-workflows.js';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};
const SUMMARY = '## Goals\nRead the files.\n## Decisions\nNone.\n## Files and commands\nf*.txt\n## Unresolved\nNone.';

function countingSummarizer(): Summarizer & { requests: SummarizeRequest[] } {
  const requests: SummarizeRequest[] = [];
  return { requests, summarize: async (request) => (requests.push(request), { text: SUMMARY }) };
}

const toolCall = (step: number) => ({
  role: 'assistant',
  content: [{ type: 'tool-call', toolCallId: `c${step}`, toolName: 'read', input: { path: `f${step}.txt` } }],
});
const toolResult = (step: number, chars = 4000) => ({
  role: 'tool',
  content: [
    {
      type: 'tool-result',
      toolCallId: `c${step}`,
      toolName: 'read',
      output: { type: 'text', value: `${step}`.repeat(chars) },
    },
  ],
});

describe('compactionMiddleware in process, under the AI SDK’s generateText', () => {
  it('compacts when the prompt is over the trigger, once per compaction, and puts the compaction back at later steps', async () => {
    let step = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async () => {
        step += 1;
        if (step <= 8)
          return {
            content: [
              {
                type: 'tool-call',
                toolCallId: `c${step}`,
                toolName: 'read',
                input: JSON.stringify({ path: `f${step}.txt` }),
              },
            ],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage,
            warnings: [],
          };
        return {
          content: [{ type: 'text', text: 'done' }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        };
      },
    });
    const summarizer = countingSummarizer();
    const wrapped = wrapLanguageModel({
      model,
      middleware: compactionMiddleware({ contextBudget: 4000, keepRecent: 2, summarizer }),
    });
    const result = await generateText({
      model: wrapped,
      prompt: 'Read the files.',
      tools: {
        read: tool({
          inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } } }),
          execute: async ({ path }) => `${path}: ${'x'.repeat(4000)}`,
        }),
      },
      stopWhen: stepCountIs(20),
    });
    expect(result.text).toBe('done');
    const prompts = model.doGenerateCalls.map((call) => call.prompt);
    expect(prompts).toHaveLength(9);
    // A provider-level prompt: user and assistant contents are parts (a provider maps over them), the summary too.
    for (const message of prompts.flat())
      if (message.role === 'user' || message.role === 'assistant') expect(Array.isArray(message.content)).toBe(true);
    const compacted = prompts.map((prompt) => JSON.stringify(prompt).includes('[Summary by the harness of'));
    const first = compacted.indexOf(true);
    expect(first).toBeGreaterThan(0);
    // Every later call carries a summary; the summarizer ran far fewer times than the model.
    expect(compacted.slice(first).every(Boolean)).toBe(true);
    expect(summarizer.requests.length).toBeGreaterThan(0);
    expect(summarizer.requests.length).toBeLessThan(prompts.length - first);
    // The step after the first compaction starts with exactly what that compaction sent: a stable prefix.
    const sent = prompts[first] ?? [];
    expect(prompts[first + 1]?.slice(0, sent.length)).toEqual(sent);
  });

  it('refuses to run outside a workflow without a summarizer, naming the option', async () => {
    const middleware = compactionMiddleware({ contextBudget: 100 });
    const prompt = [{ role: 'user', content: [{ type: 'text', text: 'x'.repeat(2000) }] }, toolCall(1), toolResult(1)];
    await expect(middleware.transformParams({ type: 'generate', params: { prompt }, model: {} })).rejects.toThrow(
      'options.summarizer',
    );
    expect(() => compactionMiddleware({ contextBudget: 100, keepRecnt: 2 } as never)).toThrow(
      'did you mean keepRecent?',
    );
  });
});

describe('compactionMiddleware in workflow code', { timeout: 120_000 }, () => {
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  it('one summarize activity for a prompt that grows over three calls; the later calls start with the compaction; the history replays', async () => {
    const prompt: unknown[] = [
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: [{ type: 'text', text: 'Read every file.' }] },
    ];
    for (let step = 1; step <= 6; step += 1) prompt.push(toolCall(step), toolResult(step));
    const steps = [7, 8].map((step) => [toolCall(step), toolResult(step, 200)]);
    const t = await testConnection();
    const workflowId = uniqueId('middleware');
    const sent = await withFileWorker(t, { workflowBundle: bundle, activities: replayActivities() }, (t) =>
      t.client.workflow.execute<typeof middlewareInWorkflow>('middlewareInWorkflow', {
        taskQueue: t.taskQueue,
        workflowId,
        args: [{ prompt, steps, contextBudget: 5000 }],
      }),
    );
    const handle = t.client.workflow.getHandle(workflowId);
    const history = await handle.fetchHistory();
    const summaries = (history.events ?? []).filter(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'summarize',
    );
    expect(summaries).toHaveLength(1);
    const [first = [], second = [], third = []] = sent;
    expect(first.length).toBeLessThan(prompt.length);
    expect(JSON.stringify(first)).toContain('[Summary by the harness of');
    expect(second.slice(0, first.length)).toEqual(first);
    expect(third.slice(0, first.length)).toEqual(first);
    await Worker.runReplayHistory({ workflowBundle: bundle }, history, workflowId);
  });
});
