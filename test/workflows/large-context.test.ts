// A 1M-token conversation through agentRun, with the payload store on: its chat requests are
// payloads of megabytes (refused by the server inline), and counting it in the workflow would hold
// an activation for seconds, past the SDK's 2 s deadlock timeout. It must complete without a
// failed workflow task, and a fresh worker must replay its history without one either.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, replaySession, type ChatMessage } from '../../src/index.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { payloadProtoSize } from '../../src/payloads/index.js';
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

  it('completes without a failed workflow task, counts the big text outside the workflow, and replays on a fresh worker', async () => {
    const workflowId = uniqueId('agent-million');
    const { result, client, plugin } = await runAgentThroughPlugin(t, {
      workflowBundle: bundle,
      plugin: {
        config: loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: `file:${store}` } }),
        activities: { trajectoryDir: dir },
      },
      workflowId,
      input: {
        messages: opening,
        model: { provider: 'replay', trajectory: 'million', contextWindow: 1_200_000, maxOutputTokens: 8_000 },
        compaction: {},
        maxRounds: 10,
      },
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
});
