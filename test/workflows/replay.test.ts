// Determinism: every history recorded under test/histories/ (RECORD_HISTORIES=1 npx vitest run
// test/workflows) replays against today's workflow code. A change that would break running
// workflows — a different command sequence, another activity — fails here.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HistoryAndWorkflowId } from '@temporalio/common';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleTestWorkflows, HISTORIES_DIR } from './harness.js';

interface JsonEvent {
  eventType?: string;
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string } };
}

function recordedHistories(): Array<{ file: string; history: { events: JsonEvent[] } }> {
  return readdirSync(HISTORIES_DIR)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => {
      const history: { events: JsonEvent[] } = JSON.parse(readFileSync(join(HISTORIES_DIR, file), 'utf8'));
      return { file, history };
    });
}

async function replay(bundle: WorkflowBundleWithSourceMap, histories: HistoryAndWorkflowId[]): Promise<Map<string, Error | undefined>> {
  const outcomes = new Map<string, Error | undefined>();
  for await (const result of Worker.runReplayHistories({ workflowBundle: bundle }, histories)) outcomes.set(result.workflowId, result.error);
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
    for (const kind of ['success', '5xx-then-success', 'too-long-then-tighter', 'all-attempts-fail', 'elision-only', 'cancel-', 'parity-', 'compact-in-workflow-cancel']) {
      expect(names).toContain(kind);
    }
  });

  it('every recorded history replays without a non-determinism error', async () => {
    const outcomes = await replay(
      bundle,
      histories.map(({ file, history }) => ({ workflowId: file, history })),
    );
    expect([...outcomes.keys()].sort()).toEqual(histories.map(({ file }) => file));
    const failures = [...outcomes].filter(([, error]) => error !== undefined).map(([file, error]) => `${file}: ${error?.message}`);
    expect(failures).toEqual([]);
  }, 120_000);

  it('(control) a history whose summarize activity was another one fails to replay', async () => {
    const recorded = histories.find(({ history }) => history.events.some((event) => event.activityTaskScheduledEventAttributes !== undefined));
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
