// Determinism: every history recorded under test/histories/ (`npm run record:histories`) replays
// against today's workflow code. They were recorded from the code that ships, so a change that would
// break running workflows — a different command sequence, another activity — fails here; such a
// change is gated with `patched()` within a minor (docs/compatibility.md).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HistoryAndWorkflowId } from '@temporalio/common';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleTestWorkflows, HISTORIES_DIR, type JsonEvent } from './harness.js';

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
  const eventsOf = (file: string): JsonEvent[] =>
    histories.find((recorded) => recorded.file === file)?.history.events ?? [];

  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  it('there are histories of every kind of run: summary, retries, fallback, cancellation, elision-only, parity, agent runs', () => {
    const names = histories.map(({ file }) => file).join(' ');
    for (const kind of [
      'compact-conversation-success',
      '5xx-then-success',
      'too-long-then-tighter',
      'all-attempts-fail',
      'elision-only',
      'coverage-retry',
      'summarizer-window',
      'cancel-',
      'parity-',
      'compact-in-workflow-cancel',
      'compact-in-workflow-images',
      'economics-',
      'agent-run-compactions',
      'agent-run-exhausted',
      'agent-run-pins',
      'agent-run-recall',
      'agent-run-review',
      'agent-run-undo',
    ]) {
      expect(names).toContain(kind);
    }
  });

  it('every summarize activity input is the summarize request: the instruction, the cut middle, max tokens, the instructions when set, and the task a compaction keeps in place', () => {
    let inputs = 0;
    let tasks = 0;
    for (const { file, history } of histories) {
      for (const event of history.events) {
        const scheduled = event.activityTaskScheduledEventAttributes;
        if (scheduled?.activityType?.name !== 'summarize') continue;
        const data = scheduled.input?.payloads?.[0]?.data;
        const input: unknown = JSON.parse(Buffer.from(String(data), 'base64').toString('utf8'));
        const keys = Object.keys(input as object).sort();
        expect(
          [
            'instruction,maxTokens,middle',
            'instruction,instructions,maxTokens,middle',
            'instruction,maxTokens,middle,task',
            'instruction,instructions,maxTokens,middle,task',
          ],
          file,
        ).toContain(keys.join(','));
        if (keys.includes('task')) tasks += 1;
        inputs += 1;
      }
    }
    expect(inputs).toBeGreaterThan(20);
    // agentRun pins its task: its summaries are told it apart (docs/design.md#task-survives).
    expect(tasks).toBeGreaterThan(0);
  });

  it('agentRun histories with the steering updates: compact, pin, unpin, reviewCompaction and addUserMessage', () => {
    const updates = (file: string): string[] =>
      eventsOf(file).flatMap((event) => {
        const name = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name;
        return name === undefined ? [] : [name];
      });
    expect(updates('agent-run-compact-update.json')).toEqual(['compact']);
    expect(updates('agent-run-pins.json')).toEqual(['pin', 'compact', 'unpin', 'compact']);
    // A review: the compaction waits on a timer (reviewTimeout) for reviewCompaction, across a worker restart in the second.
    expect(updates('agent-run-review.json')).toEqual(['compact', 'reviewCompaction']);
    expect(updates('agent-run-review-worker-restart.json')).toEqual(['compact', 'reviewCompaction']);
    const timers = eventsOf('agent-run-review-worker-restart.json').filter(
      (event) => event.eventType === 'EVENT_TYPE_TIMER_STARTED',
    );
    expect(timers).toHaveLength(1);
    expect(updates('agent-run-update.json')).toEqual(['addUserMessage']);
  });

  it('a proposal published on a namespace with CompactionPending sets it while it waits and clears it once applied (docs/design.md#review)', () => {
    const pendingUpserts = eventsOf('agent-run-review-worker-restart.json').filter(
      (event) =>
        event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.CompactionPending,
    );
    expect(pendingUpserts).toHaveLength(2);
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
