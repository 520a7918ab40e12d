// docs/design.md#truncation across a worker upgrade: a cut that would not lower the count is undone
// under TRUNCATE_SHORTENS_PATCH_ID. The scenario: the whole conversation is the recent window and
// does not fit; the 6,000-character result is cut to 1,000, and the 1,040-character one would become
// 1,084 (1,000 and the marker).
//
// test/histories/compact-in-workflow-truncation-lengthens.json was recorded by this scenario (the
// same messages and options, through `compactInWorkflow`) against the code before the rule (commit
// 52f275c): both results cut, no marker. compact-in-workflow-truncation-shortens.json by the first
// test below with RECORD_HISTORIES=1.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage, CompactionResult } from '../../src/core/types.js';
import { TRUNCATE_PATCH_ID, TRUNCATE_SHORTENS_PATCH_ID } from '../../src/workflows/compact.js';
import {
  bundleTestWorkflows,
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

/** Numbered lines of a source file, cut to `chars`. */
function fileText(chars: number): string {
  let text = '';
  for (let line = 0; text.length < chars; line += 1)
    text += `line ${line}: def handler(request): return render(request, "page\n`;
  return text.slice(0, chars);
}

const readFile = (id: string, path: string): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path }) } }],
});

const messages: ChatMessage[] = [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Find where the page is rendered.' },
  readFile('call_1', 'app/views.py'),
  { role: 'tool', tool_call_id: 'call_1', content: fileText(6000) },
  readFile('call_2', 'app/urls.py'),
  { role: 'tool', tool_call_id: 'call_2', content: fileText(1040) },
  { role: 'assistant', content: 'The page is rendered in app/views.py.' },
];
const OPTIONS = { contextBudget: 200, keepRecent: 10, recentWindowGivesWay: false } as const;

const decode = (data: string | undefined): unknown =>
  data === undefined ? undefined : JSON.parse(Buffer.from(data, 'base64').toString('utf8'));

/** The compaction result a recorded `compactInWorkflow` completed with. */
function recordedResult(history: JsonHistory): CompactionResult {
  const completed = history.events.find((event) => event.workflowExecutionCompletedEventAttributes);
  const output = decode(completed?.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0]?.data);
  return (output as { result: CompactionResult }).result;
}

describe('a truncation cut that would not lower the count, across a worker upgrade (TRUNCATE_SHORTENS_PATCH_ID)', () => {
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  it('a new run leaves the 1,040-character result whole and records the patch', async () => {
    await withWorker(
      bundle,
      { summarizer: { summarize: () => Promise.reject(new Error('nothing to summarize in this scenario')) } },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start<typeof compactInWorkflow>('compactInWorkflow', {
          taskQueue,
          workflowId: uniqueId('truncation-shortens'),
          args: [{ messages, options: OPTIONS }],
        });
        const { result } = await handle.result();
        expect(result.exhausted).toBe(true);
        expect(result.truncations).toEqual([{ index: 3, chars: 6000, kept: 1000 }]);
        expect(result.messages[5]).toEqual(messages[5]);
        expect(patchIdsOf(await jsonHistoryOf(handle))).toEqual(
          expect.arrayContaining([TRUNCATE_PATCH_ID, TRUNCATE_SHORTENS_PATCH_ID]),
        );
        await maybeRecordHistory(handle, 'compact-in-workflow-truncation-shortens');
      },
    );
  });

  it('the histories on both sides of the patch: the old one kept the longer cut, the new one did not; both replay', async () => {
    const before = loadHistory('compact-in-workflow-truncation-lengthens.json');
    const after = loadHistory('compact-in-workflow-truncation-shortens.json');
    expect(patchIdsOf(before)).toContain(TRUNCATE_PATCH_ID);
    expect(patchIdsOf(before)).not.toContain(TRUNCATE_SHORTENS_PATCH_ID);
    expect(recordedResult(before).truncations?.map(({ index }) => index)).toEqual([3, 5]);
    expect(String(recordedResult(before).messages[5]?.content).length).toBe(1084);
    expect(patchIdsOf(after)).toContain(TRUNCATE_SHORTENS_PATCH_ID);
    expect(recordedResult(after).truncations?.map(({ index }) => index)).toEqual([3]);
    expect(await replayErrors(bundle, { before, after })).toEqual({ before: undefined, after: undefined });
  }, 60_000);
});
