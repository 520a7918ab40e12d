// One engine, two drivers (docs/design.md#drivers): on corpus conversations, `compact` inside a workflow
// returns byte for byte what the in-process `Compactor` returns, given the same deterministic fake
// summarizer. Also: a tool result of more than 600,000 characters travels through compactConversation.
// The repository set (MIT recordings, generated runs) always; the extended corpus' cases when it is
// present (read in place: most of it is not MIT), else one skipped test. Histories are recorded only
// for MIT files.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { Compactor, createOpenAISummarizer, type ChatMessage } from '../../src/index.js';
import { createCharCounter, defaultCounter } from '../../src/core/counting/tokens.js';
import type { CompactConversationOptions } from '../../src/workflows/compact-conversation.js';
import { findTrajectory } from '../../corpus/index.js';
import { createFakeSummarizer, type SummarizerPlan } from '../support/conversations.js';
import { extendedCases } from '../support/corpus.js';
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

/** On the repository set: runs everywhere. */
const REPOSITORY_CASES: ParityCase[] = [
  { file: 'taubench_gpt4o_airline_task2_trial1', plan: 'ok', record: true },
  {
    file: 'taubench_gpt4o_airline_task46_trial3',
    plan: { summary: 'tooLong', tighter: 'ok' },
    charsPerToken: 3,
    record: true,
  },
  {
    file: 'openhands_gpt4o_Project-MONAI__MONAI-3715',
    plan: 'ok',
    options: {
      ageObservations: true,
      ageMinChars: 500,
      ageReclaimMin: 5000,
      keepRecent: 6,
      triggerRatio: 0.5,
      targetRatio: 0.25,
    },
    record: true,
  },
  { file: 'taubench_gpt4o_airline_task2_trial1', plan: 'rejected', options: { keepRecent: 12 }, record: true },
  // The same shapes as the extended cases below, on generated runs: a long coding session with a small cap, and a trim.
  { file: 'generated_parallel-calls', plan: 'ok', options: { toolResultCap: 500 }, record: false },
  { file: 'generated_sticky-injections', plan: 'failing', record: false },
];

/** On the extended corpus: only when it is present. */
const EXTENDED_CASES: ParityCase[] = [
  { file: 'claudecode_django__django-11797', plan: 'ok', options: { toolResultCap: 500 }, record: false },
  { file: 'sweagent_doubao_fasterxml__jackson-databind-4365', plan: 'failing', record: false },
];

const extended = extendedCases();
const CASES: ParityCase[] = [...REPOSITORY_CASES, ...(extended.length > 0 ? EXTENDED_CASES : [])];
/** A tool result bigger than Temporal's 512 KB payload warning: generated always, jackson-databind-4304's 666,865 characters when present. */
const HUGE = [
  'generated_huge-result',
  ...extended.filter(({ name }) => name === 'sweagent_doubao_fasterxml__jackson-databind-4304').map(({ name }) => name),
];

const activitySettings: Partial<CompactConversationOptions> = {
  retryBackoff: '50ms',
  heartbeatTimeout: '5s',
  startToCloseTimeout: '30s',
};

describe('parity: compact in a workflow == the in-process Compactor', () => {
  let bundle: WorkflowBundleWithSourceMap;

  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  function conversation(file: string): ChatMessage[] {
    return findTrajectory(file).messages;
  }

  it.each(CASES.map((parityCase, index) => ({ ...parityCase, name: `${index}-${parityCase.file}` })))(
    '$file with summarizer plan $plan',
    async ({ file, plan, options: extra, charsPerToken, record, name }) => {
      const messages = conversation(file);
      const counter = charsPerToken === undefined ? defaultCounter : createCharCounter({ charsPerToken });
      const options: CompactConversationOptions = {
        contextBudget: Math.ceil(counter.count(messages) / 2),
        ...activitySettings,
        ...extra,
      };

      const inProcess = await new Compactor({ ...options, summarizer: createFakeSummarizer(plan), counter }).compact(
        messages,
      );
      const workerSummarizer = createFakeSummarizer(plan);
      const { output, events } = await withWorker(
        bundle,
        { summarizer: workerSummarizer },
        async ({ client, taskQueue }) => {
          const handle = await client.workflow.start<typeof compactInWorkflow>('compactInWorkflow', {
            taskQueue,
            workflowId: uniqueId(`parity-${name}`),
            args: [{ messages, options, ...(charsPerToken === undefined ? {} : { charsPerToken }) }],
          });
          const result = await handle.result();
          if (record)
            await maybeRecordHistory(
              handle,
              `parity-${file}-${typeof plan === 'string' ? plan : `${plan.summary}-${plan.tighter}`}`,
            );
          return { output: result, events: await eventTypes(handle) };
        },
      );

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

  it.each(HUGE)(
    'the tool result of over 600,000 characters in %s compacts through compactConversation without payload limits',
    async (file) => {
      const messages = conversation(file);
      const huge = messages.findIndex(
        (message) => typeof message.content === 'string' && message.content.length >= 600_000,
      );
      expect(huge).toBeGreaterThan(0);
      if (file === 'sweagent_doubao_fasterxml__jackson-databind-4304')
        expect(messages[huge]?.content).toHaveLength(666_865);
      const goal = `Fix ${file}.`;
      const summaryText = `## Goals\n${goal}\n## Decisions\nNone.\n## Files and commands\nfind /\n## Unresolved\nAll.`;
      const server = await startFakeOpenAI();
      try {
        server.setDefault({ kind: 'summary', text: summaryText });
        const summarizer = createOpenAISummarizer({
          model: 'fake-summarizer',
          baseURL: server.baseURL,
          apiKey: 'test-key',
        });
        const options: CompactConversationOptions = { contextBudget: 128_000, ...activitySettings };
        const result = await withWorker(bundle, { summarizer }, async ({ client, taskQueue }) =>
          client.workflow.execute<typeof compactConversation>('compactConversation', {
            taskQueue,
            workflowId: uniqueId(`huge-tool-result-${file}`),
            args: [{ messages, options }],
          }),
        );
        expect(server.requests).toHaveLength(1);
        // The activity got the capped transcript, not the raw conversation.
        expect(JSON.stringify(server.requests[0]?.body).length).toBeLessThan(200_000);
        expect(result.fallback).toBe(false);
        expect(result.summary).toContain(goal);
        // The recent window (with the huge result) is over the low-water mark, so it gave way down to
        // the last complete turn (docs/design.md#window-gives-way): the huge result was summarized and the conversation fits.
        expect(result.messages.some((message) => message.content === messages[huge]?.content)).toBe(false);
        expect(result.exhausted).toBe(false);
        expect(result.tokensAfter).toBeLessThanOrEqual(0.5 * 128_000);
        const inProcess = await new Compactor({
          ...options,
          summarizer: { summarize: () => Promise.resolve({ text: summaryText }) },
        }).compact(messages);
        expect(JSON.stringify(result)).toBe(JSON.stringify(inProcess));
      } finally {
        await server.close();
      }
    },
    60_000,
  );
});
