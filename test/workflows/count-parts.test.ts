// Parts that are not text counted in workflow code (docs/design.md#count-parts): a conversation
// whose screenshot counts 1,105 tokens, in a scenario where the count decides how many summarize
// activities run — counted, the first summary leaves the conversation over contextBudget while the
// hard trim fits, so the tighter retry runs. With RECORD_HISTORIES=1 the workflow test records
// test/histories/compact-in-workflow-images-counted.json.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { compactionSteps, type SummarizeStep } from '../../src/core/compaction/engine.js';
import { runCompactionSteps } from '../../corpus/fake-summarizer.js';
import { resolveOptions } from '../../src/core/compaction/options.js';
import { SUMMARY_INSTRUCTION } from '../../src/core/compaction/transcript.js';
import { createCharCounter, defaultCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage, SummarizeRequest, TokenCounter } from '../../src/core/types.js';
import { dataUrl, pngBytes } from '../support/images.js';
import { bundleTestWorkflows, eventTypes, maybeRecordHistory, uniqueId, withWorker } from './harness.js';
import type { compactInWorkflow } from './test-workflows.js';

const SUMMARY = `## Goals\n${'Compared the menus and the opening hours of the restaurants near the office. '.repeat(155)}`;
const TIGHTER =
  '## Goals\nBook a table for two at 7pm.\n## Decisions\nChose the bistro.\n## Files and commands\nnone\n## Unresolved\nSubmit the form.';

/** A browser agent's conversation: 20,000 characters of turns, then a 1280×800 screenshot in the recent window. */
function screenshotConversation(): ChatMessage[] {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You drive a browser for the user.' },
    { role: 'user', content: 'Book a table for two at 7pm.' },
  ];
  for (let turn = 0; turn < 6; turn += 1) {
    messages.push({
      role: 'assistant',
      content: `Page ${turn}: ${'the list of restaurants and their menus. '.repeat(41)}`,
    });
    messages.push({ role: 'user', content: `Go on with page ${turn + 1}. ${'Keep the prices in mind. '.repeat(66)}` });
  }
  messages.push({
    role: 'user',
    content: [
      { type: 'text', text: 'Here is the page now.' },
      { type: 'image_url', image_url: { url: dataUrl(pngBytes(1280, 800), 'image/png', 1000) } },
    ],
  });
  messages.push({ role: 'assistant', content: 'I see the booking form.' });
  return messages;
}

const OPTIONS = { contextBudget: 4000, keepRecent: 2, retryBackoff: 1 } as const;

function summaryFor(request: SummarizeRequest): string {
  return request.instruction === SUMMARY_INSTRUCTION ? SUMMARY : TIGHTER;
}

/** The engine alone, with the scenario's summaries: the summarize steps it asks for. */
function stepsWith(counter: TokenCounter): SummarizeStep['purpose'][] {
  const asked: SummarizeStep['purpose'][] = [];
  runCompactionSteps(compactionSteps(screenshotConversation(), resolveOptions(OPTIONS), {}, counter), (step) => {
    asked.push(step.purpose);
    return { kind: 'summary', text: summaryFor(step.request) };
  });
  return asked;
}

describe('counting parts that are not text in a workflow', () => {
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  it('(the scenario) counted, the screenshot makes the first summary too long; charged 0, it does not', () => {
    expect(stepsWith(defaultCounter)).toEqual(['summary', 'tighter']);
    expect(stepsWith(createCharCounter({ perNonTextPart: 0 }))).toEqual(['summary']);
  });

  it('a run counts the screenshot: two summarize activities', async () => {
    await withWorker(
      bundle,
      { summarizer: { summarize: (request) => Promise.resolve({ text: summaryFor(request) }) } },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start<typeof compactInWorkflow>('compactInWorkflow', {
          taskQueue,
          workflowId: uniqueId('count-parts'),
          args: [{ messages: screenshotConversation(), options: OPTIONS }],
        });
        const { result } = await handle.result();
        expect(result.fallback).toBe(false);
        expect(result.summary).toContain(TIGHTER);
        expect(result.tokensAfter).toBeGreaterThan(1105);
        expect((await eventTypes(handle)).filter((type) => type === 'ActivityTaskScheduled')).toHaveLength(2);
        await maybeRecordHistory(handle, 'compact-in-workflow-images-counted');
      },
    );
  });
});
