// The workflow's token-count cache forgets what compaction dropped. Without that it held every
// text a run ever counted until the run continued as new — on a long run with big tool results,
// megabytes of dropped text in the worker's memory per cached workflow. Observable from outside:
// a dropped text that comes back (the agent reads the same file again) is new to the run again,
// so the countTokens activity counts it a second time. And a run that continues as new hands the
// counts of its live conversation to the next one, which then does not count it again.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { temporal } from '@temporalio/proto';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type ChatMessage } from '../../src/index.js';
import { replaySession } from '../../src/core/agent/session.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { WORKFLOW_COUNT_CHARS } from '../../src/workflows/agent/token-cache.js';
import { readTurn, sourceText } from '../support/source-text.js';
import { runAgentThroughPlugin } from '../support/agent.js';
import { bundleWorkflows, chainHistories, testConnection, uniqueId, type TestConnection } from '../support/temporal.js';

describe('the token-count cache', { timeout: 300_000 }, () => {
  let t: TestConnection;
  let bundle: WorkflowBundleWithSourceMap;
  let dir: string;
  let store: string;
  // Each file is more new text than the workflow counts itself, and the two do not fit the window together.
  const alpha = sourceText(WORKFLOW_COUNT_CHARS + 50_000, 'alpha');
  const beta = sourceText(WORKFLOW_COUNT_CHARS + 50_000, 'beta');
  const opening: ChatMessage[] = [
    { role: 'system', content: 'You audit code.' },
    { role: 'user', content: 'Find the slow query in alpha.py and beta.py.' },
  ];
  const trajectory: ChatMessage[] = [
    ...opening,
    readTurn('c1', 'alpha.py'),
    { role: 'tool', tool_call_id: 'c1', content: alpha },
    readTurn('c2', 'beta.py'),
    { role: 'tool', tool_call_id: 'c2', content: beta },
    readTurn('c3', 'alpha.py'),
    { role: 'tool', tool_call_id: 'c3', content: alpha },
    { role: 'assistant', content: 'alpha_step_12 scans table_12 once per row.' },
  ];

  // One big file read, then small ones: the big one stays in the live context across continue-as-new.
  const carryTrajectory: ChatMessage[] = [
    ...opening,
    readTurn('c1', 'alpha.py'),
    { role: 'tool', tool_call_id: 'c1', content: alpha },
    ...['notes.md', 'todo.md', 'plan.md'].flatMap((file, index): ChatMessage[] => [
      readTurn(`s${index}`, file),
      { role: 'tool', tool_call_id: `s${index}`, content: `# ${file}\nnothing slow here` },
    ]),
    { role: 'assistant', content: 'alpha_step_12 scans table_12 once per row.' },
  ];

  beforeAll(async () => {
    t = await testConnection();
    bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
    dir = mkdtempSync(join(tmpdir(), 'token-cache-'));
    store = mkdtempSync(join(tmpdir(), 'token-cache-store-'));
    writeFileSync(join(dir, 'reread.json'), JSON.stringify(trajectory));
    writeFileSync(join(dir, 'carry.json'), JSON.stringify(carryTrajectory));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(store, { recursive: true, force: true });
  });

  it('forgets a text compaction dropped: read again, it is counted again', async () => {
    const workflowId = uniqueId('agent-reread');
    const { result, client } = await runAgentThroughPlugin(t, {
      workflowBundle: bundle,
      plugin: {
        config: loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: `file:${store}` } }),
        activities: { trajectoryDir: dir },
        searchAttributes: 'skip',
      },
      workflowId,
      input: {
        messages: opening,
        model: { provider: 'replay', trajectory: 'reread', contextWindow: 120_000, maxOutputTokens: 4_000 },
        compaction: {},
        maxRounds: 10,
      },
    });
    expect(result.stopReason).toBe('completed');
    expect(result.rounds).toBe(4);
    expect(replaySession(await readSessionLines(client, result.session))).toEqual(result.messages);
    // alpha.py was dropped before it was read again.
    expect(result.compactions.totals.compactions).toBeGreaterThan(0);

    const events = (await chainHistories(client, workflowId)).flat();
    expect(events.filter((event) => event.workflowTaskFailedEventAttributes)).toEqual([]);
    // alpha.py, beta.py, and alpha.py again: a cache that kept every counted text would know the
    // second alpha.py and count only twice.
    expect(countTokensActivities(events)).toBe(3);
  });

  it("continue-as-new carries the live conversation's counts: the continued runs do not count it again", async () => {
    const workflowId = uniqueId('agent-carry-counts');
    const { result, client } = await runAgentThroughPlugin(t, {
      workflowBundle: bundle,
      plugin: { config: loadConfig({ env: {} }), activities: { trajectoryDir: dir }, searchAttributes: 'skip' },
      workflowId,
      input: {
        messages: opening,
        model: { provider: 'replay', trajectory: 'carry', contextWindow: 120_000, maxOutputTokens: 4_000 },
        compaction: {},
        maxRounds: 10,
        continueAsNewAfterRounds: 2,
      },
    });
    expect([result.stopReason, result.rounds, result.continuedAsNew]).toEqual(['completed', 5, 2]);
    // alpha.py is in the live context of every run, and more new text than the workflow counts itself.
    expect(result.messages.some((message) => message.content === alpha)).toBe(true);
    // Counted once, in the run that read it; without the carried counts each continued run counted it again.
    expect((await chainHistories(client, workflowId)).map(countTokensActivities)).toEqual([1, 0, 0]);
  });
});

/** How many countTokens activities the events schedule. */
function countTokensActivities(events: temporal.api.history.v1.IHistoryEvent[]): number {
  return events.filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'countTokens')
    .length;
}
