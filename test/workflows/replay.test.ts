// Determinism: every history recorded under test/histories/ (RECORD_HISTORIES=1 npx vitest run
// test/workflows) replays against today's workflow code. A change that would break running
// workflows — a different command sequence, another activity — fails here.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HistoryAndWorkflowId } from '@temporalio/common';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ECONOMICS_PATCH_ID,
  SUMMARIZE_MIDDLE_PATCH_ID,
  SUMMARY_COVERAGE_PATCH_ID,
} from '../../src/workflows/compact.js';
import {
  CONTEXT_TOKENS_PATCH_ID,
  RECALL_IN_PASS_PATCH_ID,
  REVIEW_ATTRIBUTE_PATCH_ID,
} from '../../src/workflows/agent/patches.js';
import { bundleTestWorkflows, HISTORIES_DIR, patchIdsOf, type JsonEvent } from './harness.js';

function recordedHistories(): Array<{ file: string; history: { events: JsonEvent[] } }> {
  return readdirSync(HISTORIES_DIR)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => {
      const history: { events: JsonEvent[] } = JSON.parse(readFileSync(join(HISTORIES_DIR, file), 'utf8'));
      return { file, history };
    });
}

async function replay(
  bundle: WorkflowBundleWithSourceMap,
  histories: HistoryAndWorkflowId[],
): Promise<Map<string, Error | undefined>> {
  const outcomes = new Map<string, Error | undefined>();
  for await (const result of Worker.runReplayHistories({ workflowBundle: bundle }, histories))
    outcomes.set(result.workflowId, result.error);
  return outcomes;
}

describe('replay of recorded histories', () => {
  let bundle: WorkflowBundleWithSourceMap;
  const histories = recordedHistories();

  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  it('there are histories of every kind of run: summary, retries, fallback, cancellation, elision-only, parity', () => {
    const names = histories.map(({ file }) => file).join(' ');
    for (const kind of [
      'success',
      '5xx-then-success',
      'too-long-then-tighter',
      'all-attempts-fail',
      'elision-only',
      'cancel-',
      'parity-',
      'compact-in-workflow-cancel',
      'economics-',
    ]) {
      expect(names).toContain(kind);
    }
  });

  it('only histories recorded under the economic rules carry their patch marker; the older ones replay through the reference branch', () => {
    const patched = histories
      .filter(({ history }) => patchIdsOf(history).includes(ECONOMICS_PATCH_ID))
      .map(({ file }) => file);
    // The agentRun histories were recorded again after its commands changed (a describeWorker
    // activity at the start, recordSession batches, fewer search-attribute upserts), so under the rules.
    expect(patched.sort()).toEqual(
      [
        'agent-run-compact-update.json',
        'agent-run-compactions-taubench_gpt4o_airline_task2_trial1.json',
        'agent-run-context-tokens-window.json',
        'agent-run-exhausted-taubench_gpt4o_airline_task46_trial3.json',
        'agent-run-openai-tools.json',
        'agent-run-pins.json',
        'agent-run-recall-in-pass.json',
        'agent-run-recall.json',
        'agent-run-review-pending-attribute.json',
        'agent-run-review-worker-restart.json',
        'agent-run-review.json',
        'agent-run-update.json',
        'compact-conversation-coverage-retry.json',
        'compact-conversation-economics-window-gives-way.json',
        'compact-conversation-instructions.json',
        'compact-conversation-success-summarize-middle.json',
        // a middle over summarizerContextWindow, summarized in pieces (test/workflows/summarizer-window.test.ts)
        'compact-conversation-summarizer-window.json',
        'compact-conversation-too-long-then-tighter-summarize-middle.json',
        // recorded on both sides of COUNT_PARTS_PATCH_ID (test/workflows/count-parts.test.ts), both after the economic rules
        'compact-in-workflow-images-before-count-parts.json',
        'compact-in-workflow-images-counted.json',
        // recorded on both sides of TRUNCATE_SHORTENS_PATCH_ID (test/workflows/truncation-patches.test.ts)
        'compact-in-workflow-truncation-lengthens.json',
        'compact-in-workflow-truncation-shortens.json',
        // recorded before TRUNCATE_BOUNDED_PATCH_ID (test/workflows/truncation-patches.test.ts)
        'compact-in-workflow-truncation-unbounded.json',
      ].sort(),
    );
    for (const file of [
      'compact-conversation-success.json',
      'parity-taubench_gpt4o_airline_task2_trial1-ok.json',
      'cancel-during-backoff.json',
    ]) {
      expect(histories.find((recorded) => recorded.file === file)?.history.events.length ?? 0).toBeGreaterThan(0);
      expect(patched).not.toContain(file);
    }
  });

  it('agentRun histories on both sides of the ContextTokens rule: one recorded under its patch, the older ones without it', () => {
    const agentRuns = histories.filter(({ file }) => file.startsWith('agent-run-'));
    const patched = agentRuns
      .filter(({ history }) => patchIdsOf(history).includes(CONTEXT_TOKENS_PATCH_ID))
      .map(({ file }) => file);
    // The steering and recall histories (agent-run-steering.test.ts, agent-run-recall.test.ts) were recorded after it too.
    expect(patched.sort()).toEqual([
      'agent-run-compact-update.json',
      'agent-run-context-tokens-window.json',
      'agent-run-pins.json',
      'agent-run-recall-in-pass.json',
      'agent-run-recall.json',
      'agent-run-review-pending-attribute.json',
      'agent-run-review-worker-restart.json',
      'agent-run-review.json',
    ]);
    expect(agentRuns.length).toBeGreaterThan(patched.length);
  });

  it('recall histories on both sides of the recall-in-pass patch (docs/design.md#recall): ids named inside the pass, and after it before', () => {
    const named = histories
      .filter(({ history }) => patchIdsOf(history).includes(RECALL_IN_PASS_PATCH_ID))
      .map(({ file }) => file);
    // Asked only by runs with compaction.recall on: the other agentRun histories have no marker.
    expect(named).toEqual(['agent-run-recall-in-pass.json']);
    expect(histories.map(({ file }) => file)).toContain('agent-run-recall.json');
  });

  it('summarize activity inputs of both shapes: the middle as messages under its patch, the rendered request before it', () => {
    const withMiddle = histories
      .filter(({ history }) => patchIdsOf(history).includes(SUMMARIZE_MIDDLE_PATCH_ID))
      .map(({ file }) => file);
    expect(withMiddle.sort()).toEqual([
      'agent-run-compact-update.json',
      'agent-run-pins.json',
      'agent-run-review-pending-attribute.json',
      'agent-run-review-worker-restart.json',
      'agent-run-review.json',
      'compact-conversation-coverage-retry.json',
      'compact-conversation-instructions.json',
      'compact-conversation-success-summarize-middle.json',
      'compact-conversation-summarizer-window.json',
      'compact-conversation-too-long-then-tighter-summarize-middle.json',
    ]);
    const inputKeys = (file: string): string[] => {
      const recorded = histories.find((history) => history.file === file);
      const scheduled = recorded?.history.events.find((event) => event.activityTaskScheduledEventAttributes);
      const data = scheduled?.activityTaskScheduledEventAttributes?.input?.payloads?.[0]?.data;
      return Object.keys(JSON.parse(Buffer.from(String(data), 'base64').toString('utf8')) as object).sort();
    };
    expect(inputKeys('compact-conversation-success-summarize-middle.json')).toEqual(['instruction', 'middle']);
    expect(inputKeys('compact-conversation-success.json')).toEqual(['request']);
  });

  it('agentRun histories on both sides of steering: the compact, pin and unpin updates in the new ones, none in those recorded before', () => {
    const updates = (file: string): string[] =>
      (histories.find((recorded) => recorded.file === file)?.history.events ?? []).flatMap((event) => {
        const name = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name;
        return name === undefined ? [] : [name];
      });
    expect(updates('agent-run-compact-update.json')).toEqual(['compact']);
    expect(updates('agent-run-pins.json')).toEqual(['pin', 'compact', 'unpin', 'compact']);
    // A review: the compaction waits on a timer (reviewTimeout) for reviewCompaction, across a worker restart in the second.
    expect(updates('agent-run-review.json')).toEqual(['compact', 'reviewCompaction']);
    expect(updates('agent-run-review-worker-restart.json')).toEqual(['compact', 'reviewCompaction']);
    const timers = (file: string): number =>
      (histories.find((recorded) => recorded.file === file)?.history.events ?? []).filter(
        (event) => event.eventType === 'EVENT_TYPE_TIMER_STARTED',
      ).length;
    expect(timers('agent-run-review-worker-restart.json')).toBe(1);
    // Recorded before steering existed (its handlers registered, nothing asked): it replays with them below.
    expect(updates('agent-run-update.json')).toEqual(['addUserMessage']);
  });

  it('the review attribute patch is recorded only where a proposal was published on a namespace with CompactionPending (docs/design.md#review)', () => {
    const marked = histories
      .filter(({ history }) => patchIdsOf(history).includes(REVIEW_ATTRIBUTE_PATCH_ID))
      .map(({ file }) => file);
    expect(marked).toEqual(['agent-run-review-pending-attribute.json']);
    const pendingUpserts = (file: string): number =>
      (histories.find((recorded) => recorded.file === file)?.history.events ?? []).filter(
        (event) =>
          event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.CompactionPending,
      ).length;
    // The same run (a proposal across a worker restart, then apply) before the patch and under it:
    // CompactionPending set when the proposal was published and cleared when it was applied.
    expect(pendingUpserts('agent-run-review-pending-attribute.json')).toBe(2);
    expect(pendingUpserts('agent-run-review-worker-restart.json')).toBe(0);
  });

  it('the coverage patch is recorded only where a summary left identifiers out (docs/design.md#coverage)', () => {
    const covered = histories
      .filter(({ history }) => patchIdsOf(history).includes(SUMMARY_COVERAGE_PATCH_ID))
      .map(({ file }) => file);
    expect(covered).toEqual(['compact-conversation-coverage-retry.json']);
  });

  it('every recorded history replays without a non-determinism error', async () => {
    const outcomes = await replay(
      bundle,
      histories.map(({ file, history }) => ({ workflowId: file, history })),
    );
    expect([...outcomes.keys()].sort()).toEqual(histories.map(({ file }) => file));
    const failures = [...outcomes]
      .filter(([, error]) => error !== undefined)
      .map(([file, error]) => `${file}: ${error?.message}`);
    expect(failures).toEqual([]);
  }, 120_000);

  it('(control) a history whose summarize activity was another one fails to replay', async () => {
    const recorded = histories.find(({ history }) =>
      history.events.some((event) => event.activityTaskScheduledEventAttributes !== undefined),
    );
    if (recorded === undefined) throw new Error('no recorded history schedules an activity');
    const tampered = structuredClone(recorded.history);
    for (const event of tampered.events) {
      const activityType = event.activityTaskScheduledEventAttributes?.activityType;
      if (activityType !== undefined) activityType.name = 'somethingElse';
    }
    const outcomes = await replay(bundle, [{ workflowId: 'tampered', history: tampered }]);
    expect(outcomes.get('tampered')?.name).toBe('DeterminismViolationError');
  }, 60_000);
});
