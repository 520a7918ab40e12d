// docs/design.md#truncation across worker upgrades: each patch of the truncation, with a history
// recorded before it that must replay as it ran.
//
// TRUNCATE_SHORTENS_PATCH_ID: a cut that would not lower the count is undone. The scenario: the
// whole conversation is the recent window and does not fit; the 6,000-character result is cut to
// 1,000, and the 1,040-character one would become 1,084 (1,000 and the marker).
// test/histories/compact-in-workflow-truncation-lengthens.json was recorded by this scenario (the
// same messages and options, through `compactInWorkflow`) against the code before the rule (commit
// 52f275c): both results cut, no marker. compact-in-workflow-truncation-shortens.json by the first
// test below with RECORD_HISTORIES=1.
//
// TRUNCATE_BOUNDED_PATCH_ID: a truncation counts at most TRUNCATION_COUNT_CHARS characters of cut
// text, and a text whose bisection could count more is searched by interpolation. The scenario: the
// whole conversation is the recent window, and one 200,000-character tool result does not fit a
// 40,000-token budget; its bisection counted 2,986,163 characters of cut text.
// test/histories/compact-in-workflow-truncation-unbounded.json was recorded by this scenario
// against the code before the bound (commit d9ff43d): the bisection's cut, 159,709 characters. A new
// run's history is replayed as soon as it completes.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { compactionSteps, runCompactionSteps } from '../../src/core/compaction/engine.js';
import { resolveOptions } from '../../src/core/compaction/options.js';
import type { ChatMessage } from '../../src/core/types.js';
import {
  TRUNCATE_BOUNDED_PATCH_ID,
  TRUNCATE_PATCH_ID,
  TRUNCATE_SHORTENS_PATCH_ID,
} from '../../src/workflows/compact.js';
import {
  bundleTestWorkflows,
  compactInWorkflowOnce,
  compactInWorkflowResult,
  jsonHistoryOf,
  loadHistory,
  maybeRecordHistory,
  patchIdsOf,
  replayErrors,
} from './harness.js';

/** Lines of a source file, each `line(number)`, cut to `chars`. */
function fileText(chars: number, line: (number: number) => string): string {
  let text = '';
  for (let number = 0; text.length < chars; number += 1) text += line(number);
  return text.slice(0, chars);
}
/** The lines the two scenarios were recorded with. */
const plainLine = (number: number): string => `line ${number}: def handler(request): return render(request, "page\n`;
const namedLine = (number: number): string =>
  `line ${number}: def handler_${number}(request): return render(request, "page_${number % 97}")\n`;

const readFile = (id: string, path: string): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path }) } }],
});

const barelyOver: ChatMessage[] = [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Find where the page is rendered.' },
  readFile('call_1', 'app/views.py'),
  { role: 'tool', tool_call_id: 'call_1', content: fileText(6000, plainLine) },
  readFile('call_2', 'app/urls.py'),
  { role: 'tool', tool_call_id: 'call_2', content: fileText(1040, plainLine) },
  { role: 'assistant', content: 'The page is rendered in app/views.py.' },
];
const BARELY_OVER_OPTIONS = { contextBudget: 200, keepRecent: 10, recentWindowGivesWay: false } as const;

const longResult: ChatMessage[] = [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Find where the page is rendered.' },
  readFile('call_1', 'app/views.py'),
  { role: 'tool', tool_call_id: 'call_1', content: fileText(200_000, namedLine) },
  { role: 'assistant', content: 'The page is rendered in app/views.py.' },
];
const LONG_RESULT_OPTIONS = { contextBudget: 40_000, keepRecent: 10, recentWindowGivesWay: false } as const;

/** The longest cut that fits the long result, as the bisection found it (the recorded history's). */
const LONGEST = 159_709;

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  bundle = await bundleTestWorkflows();
});

describe('a truncation cut that would not lower the count, across a worker upgrade (TRUNCATE_SHORTENS_PATCH_ID)', () => {
  it('a new run leaves the 1,040-character result whole and records the patch', async () => {
    await compactInWorkflowOnce(
      bundle,
      { messages: barelyOver, options: BARELY_OVER_OPTIONS },
      'truncation-shortens',
      async (handle, result) => {
        expect(result.exhausted).toBe(true);
        expect(result.truncations).toEqual([{ index: 3, chars: 6000, kept: 1000 }]);
        expect(result.messages[5]).toEqual(barelyOver[5]);
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
    expect(compactInWorkflowResult(before).truncations?.map(({ index }) => index)).toEqual([3, 5]);
    expect(String(compactInWorkflowResult(before).messages[5]?.content).length).toBe(1084);
    expect(patchIdsOf(after)).toContain(TRUNCATE_SHORTENS_PATCH_ID);
    expect(compactInWorkflowResult(after).truncations?.map(({ index }) => index)).toEqual([3]);
    expect(await replayErrors(bundle, { before, after })).toEqual({ before: undefined, after: undefined });
  }, 60_000);
});

describe('a truncation of a long text, across a worker upgrade (TRUNCATE_BOUNDED_PATCH_ID)', () => {
  it('a new run searches within the bound: the same cut, the patch recorded, and its history replays', async () => {
    await compactInWorkflowOnce(
      bundle,
      { messages: longResult, options: LONG_RESULT_OPTIONS },
      'truncation-bounded',
      async (handle, result) => {
        expect(result.exhausted).toBe(false);
        expect(result.tokensAfter).toBeLessThanOrEqual(LONG_RESULT_OPTIONS.contextBudget);
        // The longest cut, as the bisection found it.
        expect(result.truncations).toEqual([{ index: 3, chars: 200_000, kept: LONGEST }]);
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
    expect(compactInWorkflowResult(before).truncations).toEqual([{ index: 3, chars: 200_000, kept: LONGEST }]);
    // The same pass outside a workflow asks whether to bound the search (and with either answer finds the same cut here).
    let asked = 0;
    const kept = runCompactionSteps(
      compactionSteps(longResult, resolveOptions(LONG_RESULT_OPTIONS), {}, undefined, {
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
