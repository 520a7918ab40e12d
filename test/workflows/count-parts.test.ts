// Issue 19 item 2 across a worker upgrade (docs/design.md#count-parts): a workflow recorded before parts were
// counted, whose conversation holds a screenshot, replays with the screenshot charged 0 as it was
// then; a new run counts it (1,105 tokens) and records COUNT_PARTS_PATCH_ID. The scenario is one
// where the count decides how many summarize activities run: counted, the first summary leaves the
// conversation over contextBudget while the hard trim fits, so the tighter retry runs.
//
// test/histories/compact-in-workflow-images-before-count-parts.json was recorded by this scenario
// (the same messages, options and summaries, through `compactInWorkflow`) against the code before
// parts were counted (commit 42901c5); compact-in-workflow-images-counted.json by the first test
// below with RECORD_HISTORIES=1.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { compactionSteps, runCompactionSteps, type SummarizeStep } from '../../src/core/compaction/engine.js';
import { resolveOptions } from '../../src/core/compaction/options.js';
import { SUMMARY_INSTRUCTION } from '../../src/core/compaction/transcript.js';
import { createCharCounter, defaultCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage, SummarizeRequest, TokenCounter } from '../../src/core/types.js';
import { COUNT_PARTS_PATCH_ID, ECONOMICS_PATCH_ID } from '../../src/workflows/compact.js';
import { dataUrl, pngBytes } from '../support/images.js';
import {
  bundleTestWorkflows,
  eventTypes,
  jsonHistoryOf,
  loadHistory,
  maybeRecordHistory,
  patchIdsOf,
  replayErrors,
  uniqueId,
  withWorker,
  type JsonHistory,
} from './harness.js';
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
  return request.messages[0]?.content === SUMMARY_INSTRUCTION ? SUMMARY : TIGHTER;
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

const scheduled = (history: JsonHistory): number =>
  history.events.filter((event) => event.activityTaskScheduledEventAttributes !== undefined).length;

describe('counting parts across a worker upgrade (COUNT_PARTS_PATCH_ID)', () => {
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  it('(the scenario) counted, the screenshot makes the first summary too long; charged 0, it does not', () => {
    expect(stepsWith(defaultCounter)).toEqual(['summary', 'tighter']);
    expect(stepsWith(createCharCounter({ perNonTextPart: 0 }))).toEqual(['summary']);
  });

  it('a new run counts the screenshot: two summarize activities, and the patch recorded', async () => {
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
        expect(patchIdsOf(await jsonHistoryOf(handle))).toContain(COUNT_PARTS_PATCH_ID);
        await maybeRecordHistory(handle, 'compact-in-workflow-images-counted');
      },
    );
  });

  it('the histories on both sides of the patch: one summarize activity without the marker, two with it; both replay', async () => {
    const before = loadHistory('compact-in-workflow-images-before-count-parts.json');
    const counted = loadHistory('compact-in-workflow-images-counted.json');
    expect(patchIdsOf(before)).toContain(ECONOMICS_PATCH_ID);
    expect(patchIdsOf(before)).not.toContain(COUNT_PARTS_PATCH_ID);
    expect(scheduled(before)).toBe(1);
    expect(patchIdsOf(counted)).toContain(COUNT_PARTS_PATCH_ID);
    expect(scheduled(counted)).toBe(2);
    expect(await replayErrors(bundle, { before, counted })).toEqual({ before: undefined, counted: undefined });
  }, 60_000);
});
