// A 1M-token conversation through agentRun, with the payload store on: its chat requests are
// payloads of megabytes (refused by the server inline), and counting it in the workflow would hold
// an activation for seconds, past the SDK's 2 s deadlock timeout. It must complete without a
// failed workflow task, and a fresh worker must replay its history without one either.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type ChatMessage } from '../../src/index.js';
import { replaySession } from '../../src/core/agent/session.js';
import type { AgentRunWorkflowInput } from '../../src/workflows/agent-run.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { payloadProtoSize } from '../../src/payloads/codec.js';
import { historyPayloads, isSdkMetadata } from '../support/history-payloads.js';
import { readTurn, sourceText } from '../support/source-text.js';
import { runAgentThroughPlugin } from '../support/agent.js';
import { bundleWorkflows, chainHistories, testConnection, uniqueId, type TestConnection } from '../support/temporal.js';

describe('a 1M-token conversation with the payload store', { timeout: 600_000 }, () => {
  let t: TestConnection;
  let bundle: WorkflowBundleWithSourceMap;
  let dir: string;
  let store: string;
  // ~3.5 MB of pasted source in the task (about a million tokens), then three rounds of reads.
  const opening: ChatMessage[] = [
    { role: 'system', content: 'You review code.' },
    { role: 'user', content: `Review this service for N+1 queries:\n${sourceText(3_500_000, 'svc')}` },
  ];
  const trajectory: ChatMessage[] = [
    ...opening,
    readTurn('c1', 'db/session.py'),
    { role: 'tool', tool_call_id: 'c1', content: sourceText(30_000, 'session') },
    readTurn('c2', 'db/queries.py'),
    { role: 'tool', tool_call_id: 'c2', content: sourceText(30_000, 'queries') },
    { role: 'assistant', content: 'svc_handler_12 runs one query per row of table_12: batch it.' },
  ];

  beforeAll(async () => {
    t = await testConnection();
    bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
    dir = mkdtempSync(join(tmpdir(), 'large-context-'));
    store = mkdtempSync(join(tmpdir(), 'large-context-store-'));
    writeFileSync(join(dir, 'million.json'), JSON.stringify(trajectory));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(store, { recursive: true, force: true });
  });
  /** agentRun through the plugin with the file store, replaying the trajectories written to `dir`. */
  const runWithStore = (workflowId: string, input: AgentRunWorkflowInput) =>
    runAgentThroughPlugin(t, {
      workflowBundle: bundle,
      plugin: {
        config: loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: `file:${store}` } }),
        activities: { trajectoryDir: dir },
      },
      workflowId,
      input,
    });

  it('completes without a failed workflow task, counts the big text outside the workflow, and replays on a fresh worker', async () => {
    const workflowId = uniqueId('agent-million');
    const { result, client, plugin } = await runWithStore(workflowId, {
      messages: opening,
      model: { provider: 'replay', trajectory: 'million', contextWindow: 1_200_000, maxOutputTokens: 8_000 },
      compaction: {},
      maxRounds: 10,
    });
    expect(result.stopReason).toBe('completed');
    expect(result.rounds).toBe(3);
    expect(result.peakContextTokens).toBeGreaterThan(900_000);
    expect(replaySession(await readSessionLines(client, result.session))).toEqual(result.messages);

    const [events = [], ...continued] = await chainHistories(client, workflowId);
    expect(continued).toEqual([]);
    // Not one workflow task failed: no activation ran into the deadlock timeout, no payload was refused.
    expect(events.filter((event) => event.workflowTaskFailedEventAttributes)).toEqual([]);
    // The million tokens were counted by the countTokens activity, not in the sandbox.
    expect(
      events.filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'countTokens').length,
    ).toBeGreaterThan(0);
    // Every chat request of several MB is a claim in history; nothing held is over 256 KB.
    const largest = Math.max(
      ...historyPayloads(events, payloadProtoSize)
        .filter((found) => !isSdkMetadata(found))
        .map((found) => found.size),
    );
    expect(largest).toBeLessThan(256 * 1024);

    // A fresh worker replays the run from its history (claims resolved from the store): the counts
    // come back from the countTokens results, so no activation tokenizes the million tokens again.
    const history = { events };
    await expect(
      Worker.runReplayHistory({ workflowBundle: bundle, plugins: [plugin] }, history, workflowId),
    ).resolves.toBeUndefined();
  });

  // docs/design.md#truncation A 5 MB tool result at a 1.2M-token window must be cut. Before
  // TRUNCATION_COUNT_CHARS the bisection tokenized a probe of megabytes at each of its steps in one
  // activation (22 s in-process on this machine): the task ran into the deadlock timeout on every
  // attempt, forever.
  it('cuts a 5 MB tool result within one activation: the run completes without a failed workflow task', async () => {
    writeFileSync(
      join(dir, 'five-mb.json'),
      JSON.stringify([
        ...opening.slice(0, 1),
        { role: 'user', content: 'Find the N+1 query in db/session.py.' },
        readTurn('c1', 'db/session.py'),
        { role: 'tool', tool_call_id: 'c1', content: sourceText(5_000_000, 'session') },
        { role: 'assistant', content: 'session_handler_12 runs one query per row: batch it.' },
      ]),
    );
    const workflowId = uniqueId('agent-five-mb');
    const run = runWithStore(workflowId, {
      messages: [opening[0] as ChatMessage, { role: 'user', content: 'Find the N+1 query in db/session.py.' }],
      model: { provider: 'replay', trajectory: 'five-mb', contextWindow: 1_200_000, maxOutputTokens: 4_000 },
      compaction: {},
      maxRounds: 5,
    });
    // A wedged run never ends: give up on it after a while and say what its history holds.
    const ended = await Promise.race([run, new Promise<undefined>((resolve) => setTimeout(resolve, 180_000))]);
    const events = await chainHistories(t.client, workflowId).then(([first = []]) => first);
    const failedTasks = events.filter((event) => event.workflowTaskFailedEventAttributes);
    if (ended === undefined) await t.client.workflow.getHandle(workflowId).terminate('test: no end in 180 s');
    expect(failedTasks.map((event) => event.workflowTaskFailedEventAttributes?.failure?.message)).toEqual([]);
    expect(ended?.result.stopReason).toBe('completed');
    const [record] = ended?.result.compactions.recent ?? [];
    expect(record?.truncated).toBe(1);
    expect(record?.exhausted).toBe(false);
  });
});
