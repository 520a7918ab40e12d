// One engine, two drivers (DESIGN §2): on corpus conversations, `compact` inside a workflow
// returns byte for byte what the in-process `Compactor` returns, given the same deterministic fake
// summarizer. Also: the 666,865-character tool result travels through compactConversation.
// The corpus is read in place (most of it is not MIT); histories are recorded only for MIT files.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  Compactor,
  createCharCounter,
  createOpenAISummarizer,
  defaultCounter,
  type ChatMessage,
  type CompactConversationOptions,
} from '../../src/index.js';
import { createFakeSummarizer, loadCorpus, type SummarizerPlan, type Trajectory } from '../support/conversations.js';
import { startFakeOpenAI } from '../support/fake-openai.js';
import { bundleTestWorkflows, eventTypes, maybeRecordHistory, uniqueId, withWorker } from './harness.js';
import type { compactConversation, compactInWorkflow } from './test-workflows.js';

interface ParityCase {
  file: string;
  plan: SummarizerPlan;
  /** Extra options on top of a budget at half the conversation's size. */
  options?: Partial<CompactConversationOptions>;
  charsPerToken?: number;
  /** MIT-licensed: its history (which holds the conversation) may be committed. */
  record: boolean;
}

const CASES: ParityCase[] = [
  { file: 'taubench_gpt4o_airline_task2_trial1', plan: 'ok', record: true },
  { file: 'taubench_gpt4o_airline_task46_trial3', plan: { summary: 'tooLong', tighter: 'ok' }, charsPerToken: 3, record: true },
  {
    file: 'openhands_gpt4o_Project-MONAI__MONAI-3715',
    plan: 'ok',
    options: { ageObservations: true, ageMinChars: 500, ageReclaimMin: 5000, keepRecent: 6, triggerRatio: 0.5, targetRatio: 0.25 },
    record: true,
  },
  { file: 'taubench_gpt4o_airline_task2_trial1', plan: 'rejected', options: { keepRecent: 12 }, record: true },
  { file: 'claudecode_django__django-11797', plan: 'ok', options: { toolResultCap: 500 }, record: false },
  { file: 'sweagent_doubao_fasterxml__jackson-databind-4365', plan: 'failing', record: false },
];

const activitySettings: Partial<CompactConversationOptions> = { retryBackoff: '50ms', heartbeatTimeout: '5s', startToCloseTimeout: '30s' };

describe('parity: compact in a workflow == the in-process Compactor', () => {
  let bundle: WorkflowBundleWithSourceMap;
  let corpus: Map<string, ChatMessage[]>;

  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
    corpus = new Map(loadCorpus().map((trajectory: Trajectory) => [trajectory.name, trajectory.messages]));
  });

  function conversation(file: string): ChatMessage[] {
    const messages = corpus.get(file);
    if (messages === undefined) throw new Error(`no corpus file ${file}.json`);
    return messages;
  }

  it.each(CASES.map((parityCase, index) => ({ ...parityCase, name: `${index}-${parityCase.file}` })))(
    '$file with summarizer plan $plan',
    async ({ file, plan, options: extra, charsPerToken, record, name }) => {
      const messages = conversation(file);
      const counter = charsPerToken === undefined ? defaultCounter : createCharCounter({ charsPerToken });
      const options: CompactConversationOptions = { contextBudget: Math.ceil(counter.count(messages) / 2), ...activitySettings, ...extra };

      const inProcess = await new Compactor({ ...options, summarizer: createFakeSummarizer(plan), counter }).compact(messages);
      const workerSummarizer = createFakeSummarizer(plan);
      const { output, events } = await withWorker(bundle, { summarizer: workerSummarizer }, async ({ client, taskQueue }) => {
        const handle = await client.workflow.start<typeof compactInWorkflow>('compactInWorkflow', {
          taskQueue,
          workflowId: uniqueId(`parity-${name}`),
          args: [{ messages, options, ...(charsPerToken === undefined ? {} : { charsPerToken }) }],
        });
        const result = await handle.result();
        if (record) await maybeRecordHistory(handle, `parity-${file}-${typeof plan === 'string' ? plan : `${plan.summary}-${plan.tighter}`}`);
        return { output: result, events: await eventTypes(handle) };
      });

      expect(output.nextStep).toBe('ran');
      expect(JSON.stringify(output.result)).toBe(JSON.stringify(inProcess));
      // The case does what it says: a summary, a tighter retry, an elision, or the hard trim.
      const scheduled = events.filter((type) => type === 'ActivityTaskScheduled').length;
      if (plan === 'ok') expect(inProcess.summary).not.toBeNull();
      if (typeof plan !== 'string') expect(scheduled).toBe(2);
      if (plan === 'rejected' || plan === 'failing') expect(inProcess.fallback).toBe(true);
      if (plan === 'failing') expect(workerSummarizer.requests).toHaveLength(3);
      if (extra?.ageObservations === true) expect(inProcess.elisions.length).toBeGreaterThan(0);
    },
  );

  it('the 666,865-character tool result compacts through compactConversation without payload limits', async () => {
    const messages = conversation('sweagent_doubao_fasterxml__jackson-databind-4304');
    const huge = messages.findIndex((message) => typeof message.content === 'string' && message.content.length === 666_865);
    expect(huge).toBeGreaterThan(0);
    const server = await startFakeOpenAI();
    try {
      server.setDefault({ kind: 'summary', text: '## Goals\nFix jackson-databind 4304.\n## Decisions\nNone.\n## Files and commands\nfind /\n## Unresolved\nAll.' });
      const summarizer = createOpenAISummarizer({ model: 'fake-summarizer', baseURL: server.baseURL, apiKey: 'test-key' });
      const options: CompactConversationOptions = { contextBudget: 128_000, ...activitySettings };
      const result = await withWorker(bundle, { summarizer }, async ({ client, taskQueue }) =>
        client.workflow.execute<typeof compactConversation>('compactConversation', {
          taskQueue,
          workflowId: uniqueId('huge-tool-result'),
          args: [{ messages, options }],
        }),
      );
      expect(server.requests).toHaveLength(1);
      // The activity got the capped transcript, not the raw conversation.
      expect(JSON.stringify(server.requests[0]?.body).length).toBeLessThan(200_000);
      expect(result.fallback).toBe(false);
      expect(result.summary).toContain('Fix jackson-databind 4304.');
      // The recent window (with the huge result) comes back verbatim.
      expect(result.messages.some((message) => message.content === messages[huge]?.content)).toBe(true);
      const inProcess = await new Compactor({ ...options, summarizer: { summarize: () => Promise.resolve({ text: '## Goals\nFix jackson-databind 4304.\n## Decisions\nNone.\n## Files and commands\nfind /\n## Unresolved\nAll.' }) } }).compact(messages);
      expect(JSON.stringify(result)).toBe(JSON.stringify(inProcess));
    } finally {
      await server.close();
    }
  }, 60_000);
});
