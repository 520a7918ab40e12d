// docs/design.md#truncation across a worker upgrade: under TRUNCATE_BOUNDED_PATCH_ID a truncation
// counts at most TRUNCATION_COUNT_CHARS characters of cut text, and a text whose bisection could
// count more is searched by interpolation. The scenario: the whole conversation is the recent
// window, and one 200,000-character tool result does not fit a 40,000-token budget; its bisection
// counted 2,986,163 characters of cut text.
//
// test/histories/compact-in-workflow-truncation-unbounded.json was recorded by this scenario (the
// same messages and options, through `compactInWorkflow`) against the code before the bound
// (commit d9ff43d): the bisection's cut, 159,709 characters. A new run's history is replayed as
// soon as it completes.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { compactionSteps, runCompactionSteps } from '../../src/core/compaction/engine.js';
import { resolveOptions } from '../../src/core/compaction/options.js';
import type { ChatMessage, CompactionResult } from '../../src/core/types.js';
import { TRUNCATE_BOUNDED_PATCH_ID, TRUNCATE_PATCH_ID } from '../../src/workflows/compact.js';
import {
  bundleTestWorkflows,
  jsonHistoryOf,
  loadHistory,
  patchIdsOf,
  replayErrors,
  uniqueId,
  withWorker,
  type JsonHistory,
} from './harness.js';
import type { compactInWorkflow } from './test-workflows.js';

/** Numbered lines of a source file, cut to `chars`. */
function fileText(chars: number): string {
  let text = '';
  for (let line = 0; text.length < chars; line += 1)
    text += `line ${line}: def handler_${line}(request): return render(request, "page_${line % 97}")\n`;
  return text.slice(0, chars);
}

const messages: ChatMessage[] = [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Find where the page is rendered.' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"app/views.py"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', content: fileText(200_000) },
  { role: 'assistant', content: 'The page is rendered in app/views.py.' },
];
const OPTIONS = { contextBudget: 40_000, keepRecent: 10, recentWindowGivesWay: false } as const;

const decode = (data: string | undefined): unknown =>
  data === undefined ? undefined : JSON.parse(Buffer.from(data, 'base64').toString('utf8'));

/** The compaction result a recorded `compactInWorkflow` completed with. */
function recordedResult(history: JsonHistory): CompactionResult {
  const completed = history.events.find((event) => event.workflowExecutionCompletedEventAttributes);
  const output = decode(completed?.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0]?.data);
  return (output as { result: CompactionResult }).result;
}

/** The longest cut that fits, as the bisection found it (the recorded history's). */
const LONGEST = 159_709;

describe('a truncation of a long text, across a worker upgrade (TRUNCATE_BOUNDED_PATCH_ID)', () => {
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  it('a new run searches within the bound: the same cut, the patch recorded, and its history replays', async () => {
    await withWorker(
      bundle,
      { summarizer: { summarize: () => Promise.reject(new Error('nothing to summarize in this scenario')) } },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start<typeof compactInWorkflow>('compactInWorkflow', {
          taskQueue,
          workflowId: uniqueId('truncation-bounded'),
          args: [{ messages, options: OPTIONS }],
        });
        const { result } = await handle.result();
        expect(result.exhausted).toBe(false);
        expect(result.tokensAfter).toBeLessThanOrEqual(OPTIONS.contextBudget);
        const [cut] = result.truncations ?? [];
        expect(cut?.index).toBe(3);
        // The longest cut, as the bisection found it.
        expect(cut?.kept).toBe(LONGEST);
        const history = await jsonHistoryOf(handle);
        expect(patchIdsOf(history)).toEqual(expect.arrayContaining([TRUNCATE_PATCH_ID, TRUNCATE_BOUNDED_PATCH_ID]));
        expect(await replayErrors(bundle, { after: history })).toEqual({ after: undefined });
      },
    );
  }, 60_000);

  it('the history recorded before the bound replays with the longest cut, and carries no marker of it', async () => {
    const before = loadHistory('compact-in-workflow-truncation-unbounded.json');
    expect(patchIdsOf(before)).toContain(TRUNCATE_PATCH_ID);
    expect(patchIdsOf(before)).not.toContain(TRUNCATE_BOUNDED_PATCH_ID);
    expect(recordedResult(before).truncations).toEqual([{ index: 3, chars: 200_000, kept: LONGEST }]);
    // The same pass outside a workflow asks whether to bound the search (and with either answer finds the same cut here).
    let asked = 0;
    const kept = runCompactionSteps(
      compactionSteps(messages, resolveOptions(OPTIONS), {}, undefined, {
        mayBoundCounting: () => {
          asked += 1;
          return true;
        },
      }),
      () => ({ kind: 'failed', reason: 'exhausted', message: 'nothing to summarize' }),
    ).truncations?.[0]?.kept;
    expect([asked, kept]).toEqual([1, LONGEST]);
    expect(await replayErrors(bundle, { before })).toEqual({ before: undefined });
  }, 60_000);
});
