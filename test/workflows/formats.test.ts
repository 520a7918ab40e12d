// The `anthropic` and `ai-sdk` formats through Temporal: compactConversation on a dev server maps the
// conversation and its result in workflow code, and agrees with the in-process Compactor on the same
// input; the workflow needsCompaction agrees with the Compactor's.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { repositoryCorpus } from '../../corpus/index.js';
import { Compactor, type AnthropicCompactionResult, type CompactConversationInput } from '../../src/index.js';
import { needsCompaction } from '../../src/workflows/compact.js';
import { normalizeArguments, toAnthropic } from '../support/anthropic.js';
import { toAiSdk } from '../support/ai-sdk.js';
import { createFakeSummarizer } from '../support/conversations.js';
import { bundleTestWorkflows, eventTypes, uniqueId, withWorker } from './harness.js';
import type { compactConversation } from './test-workflows.js';

const trajectory = repositoryCorpus().find(({ name }) => name === 'swesmith_claude37_getmoto__moto-pr_6055');
const options = { contextBudget: 8_000, keepRecent: 6, ageObservations: true, ageReclaimMin: 4_000, retryBackoff: 0 };

describe('compactConversation with format anthropic, on a dev server', () => {
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  it('returns Anthropic messages, the same as the in-process Compactor, and one summarize activity per request', async () => {
    if (trajectory === undefined) throw new Error('the moto trajectory is in examples/trajectories');
    const { system, messages } = toAnthropic(normalizeArguments(trajectory.messages));
    const input: CompactConversationInput = { messages, system, options: { ...options, format: 'anthropic' } };
    const { result, events } = await withWorker(bundle, { summarizer: createFakeSummarizer('ok') }, async (t) => {
      const handle = await t.client.workflow.start<typeof compactConversation>('compactConversation', {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('compact-anthropic'),
        args: [input],
      });
      return { result: await handle.result(), events: await eventTypes(handle) };
    });
    const inProcess = createFakeSummarizer('ok');
    const expected: AnthropicCompactionResult = await new Compactor({
      ...options,
      summarizer: inProcess,
    }).compact({ system, messages }, { format: 'anthropic' });
    const { request: _request, ...withoutRequest } = expected;
    expect(result).toEqual(withoutRequest);
    expect(result.summary).not.toBeNull();
    // The summary, and the coverage retry when it left identifiers out (docs/design.md#coverage): as many as in process.
    expect(events.filter((type) => type === 'ActivityTaskScheduled')).toHaveLength(inProcess.requests.length);
    expect([1, 2]).toContain(inProcess.requests.length);
    // Anthropic's shape: tool_result blocks in user messages, never a tool role, the system prompt not sent back.
    expect(result.messages.every((message) => message.role === 'user' || message.role === 'assistant')).toBe(true);
    expect(result).not.toHaveProperty('request');
  });
});

describe('compactConversation with format ai-sdk, on a dev server', () => {
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  it('returns AI SDK messages, the same as the in-process Compactor', async () => {
    if (trajectory === undefined) throw new Error('the moto trajectory is in examples/trajectories');
    const messages = toAiSdk(normalizeArguments(trajectory.messages));
    const input: CompactConversationInput = { messages, options: { ...options, format: 'ai-sdk' } };
    const result = await withWorker(bundle, { summarizer: createFakeSummarizer('ok') }, async (t) =>
      t.client.workflow.execute<typeof compactConversation>('compactConversation', {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('compact-ai-sdk'),
        args: [input],
      }),
    );
    const expected = await new Compactor({ ...options, summarizer: createFakeSummarizer('ok') }).compact(messages, {
      format: 'ai-sdk',
    });
    expect(result).toEqual(expected);
    expect(result.summary).not.toBeNull();
  });
});

describe('the workflow needsCompaction with format anthropic (outside a worker: no workflow API needed)', () => {
  it.each([2_000, 200_000])('agrees with the Compactor at a budget of %i tokens', (contextBudget) => {
    if (trajectory === undefined) throw new Error('the moto trajectory is in examples/trajectories');
    const body = toAnthropic(normalizeArguments(trajectory.messages));
    const compactor = new Compactor({ contextBudget, summarizer: createFakeSummarizer('ok') });
    const inProcess = compactor.needsCompaction(body, { format: 'anthropic' });
    expect(needsCompaction(body, { contextBudget, format: 'anthropic' })).toBe(inProcess);
    expect(inProcess).toBe(contextBudget === 2_000);
  });
});
