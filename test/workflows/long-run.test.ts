// A long agent run completes. A 240-round trajectory with a 10 KB tool result every round, replayed
// through agentRun at a 16,000-token window, used to stop for good after ~217 rounds: the whole
// transcript was carried through continue-as-new and returned in the result, and once that passed
// the server's 2 MB payload limit every workflow task failed (PAYLOADS_TOO_LARGE), forever.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { temporal } from '@temporalio/proto';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateLongRun, longRunName } from '../../corpus/index.js';
import {
  agentRun,
  compactionRecordsFromSession,
  createActivities,
  createExtractiveSummarizer,
  historyEvents,
  openingMessages,
  readSessionLines,
  replaySession,
  type AgentRunResult,
} from '../../src/index.js';
import { bundleWorkflows, testConnection, uniqueId, withWorker, type TestConnection } from '../support/temporal.js';

const LONG_RUN = { rounds: 240, resultChars: 10_000 };

/** Every run of a continue-as-new chain, first run first. */
async function chainRuns(t: TestConnection, workflowId: string, lastRunId: string): Promise<string[]> {
  const runs = [lastRunId];
  for (;;) {
    const first = await historyEvents(t.client, workflowId, runs[0] ?? '').next();
    const previous = first.done === true ? undefined : first.value.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (previous === undefined || previous === null || previous === '') return runs;
    runs.unshift(previous);
  }
}

function payloadSizes(event: temporal.api.history.v1.IHistoryEvent): number[] {
  const sizes: number[] = [];
  const visit = (value: unknown): void => {
    if (typeof value !== 'object' || value === null) return;
    if (value instanceof Uint8Array) return;
    if ('data' in value && 'metadata' in value && value.data instanceof Uint8Array) {
      sizes.push(value.data.length);
      return;
    }
    for (const child of Object.values(value)) visit(child);
  };
  visit(event);
  return sizes;
}

describe('a long agent run', { timeout: 900_000 }, () => {
  let t: TestConnection;
  let bundle: WorkflowBundleWithSourceMap;
  let dir: string;
  const name = longRunName(LONG_RUN);
  const trajectory = generateLongRun(LONG_RUN);

  beforeAll(async () => {
    t = await testConnection();
    bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
    dir = mkdtempSync(join(tmpdir(), 'long-run-'));
    writeFileSync(join(dir, `${name}.json`), JSON.stringify(trajectory));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('240 rounds with a 10 KB tool result each, at a 16,000-token window: every round played, state and payloads bounded (regression)', async () => {
    const workflowId = uniqueId('agent-long');
    const activities = createActivities({ summarizer: createExtractiveSummarizer(), trajectoryDir: dir });
    const result: AgentRunResult = await withWorker(t, { workflowBundle: bundle, activities }, () =>
      t.client.workflow.execute(agentRun, {
        taskQueue: t.taskQueue,
        workflowId,
        args: [{ messages: openingMessages(trajectory), model: { provider: 'replay', trajectory: name, contextWindow: 16_000, maxOutputTokens: 1_000 }, compaction: {}, maxRounds: 1_000 }],
      }),
    );
    expect(result.stopReason).toBe('completed');
    expect(result.rounds).toBe(LONG_RUN.rounds);
    // The result is bounded by the live context, not by the ~2.5 MB the run went through.
    expect(JSON.stringify(result).length).toBeLessThan(150_000);
    expect(result.compactions.recent.length).toBeLessThanOrEqual(20);

    // The whole transcript is still there, outside the run's state, and replays to its conversation.
    const lines = await readSessionLines(t.client, result.session);
    expect(lines).toHaveLength(result.session.lines);
    expect(replaySession(lines)).toEqual(result.messages);
    expect(lines.filter((line) => line.type === 'message' && line.message.role === 'assistant')).toHaveLength(LONG_RUN.rounds);
    const records = compactionRecordsFromSession(lines);
    expect(records).toHaveLength(result.compactions.totals.compactions);
    expect(records.slice(-result.compactions.recent.length)).toEqual(result.compactions.recent);

    // No workflow task failed in any run of the chain, and no payload in any history is over 256 KB.
    let failures = 0;
    let largest = 0;
    const runs = await chainRuns(t, workflowId, (await t.client.workflow.getHandle(workflowId).describe()).runId);
    expect(runs).toHaveLength(result.continuedAsNew + 1);
    for (const runId of runs) {
      for await (const event of historyEvents(t.client, workflowId, runId)) {
        if (event.workflowTaskFailedEventAttributes) failures += 1;
        largest = Math.max(largest, ...payloadSizes(event));
      }
    }
    expect(failures).toBe(0);
    expect(largest).toBeLessThan(200 * 1024);
  });
});
