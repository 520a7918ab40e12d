// A user's own worker, set up only through `compactorPlugin()`: their workflow calls `compact()`,
// and the plugin brings the summarize activity, our workflows beside theirs, the payload codec and
// store on worker and client alike, and the namespace's search attributes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentRun, compactConversation, compactorPlugin, createExtractiveSummarizer, loadConfig, type SearchAttributeSetup } from '../../src/index.js';
import type { SupportChatOutput, supportChat } from '../fixtures/user-worker/workflows.js';
import { openingOf, trajectoryDir } from '../support/agent.js';
import { historyPayloads, claimOf, isSdkMetadata } from '../support/history-payloads.js';
import { toolRounds } from '../support/messages.js';
import { testConnection, uniqueId, type TestConnection } from '../support/temporal.js';
import { payloadProtoSize } from '../../src/payloads/index.js';

const USER_WORKFLOWS = fileURLToPath(new URL('../fixtures/user-worker/workflows.ts', import.meta.url));

describe('compactorPlugin on a user’s own worker and client', { timeout: 240_000 }, () => {
  let t: TestConnection;
  let store: string;
  beforeAll(async () => {
    t = await testConnection();
    store = mkdtempSync(join(tmpdir(), 'plugin-store-'));
  });
  afterAll(() => rmSync(store, { recursive: true, force: true }));

  it('one line on Worker.create and one on new Client: their compact() gets a summary, our workflows run beside theirs, payloads go to the store', async () => {
    // The configuration a user would put in the environment: a file store, a codec key.
    const config = loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: `file:${store}`, COMPACTOR_CODEC_KEY: Buffer.alloc(32, 7).toString('base64'), COMPACTOR_CODEC_KEY_ID: 'plugin-test' } });
    const setups: SearchAttributeSetup[] = [];
    const plugin = compactorPlugin({ config, summarizer: createExtractiveSummarizer(), activities: { trajectoryDir: trajectoryDir() }, onSearchAttributes: (setup) => setups.push(setup) });
    const worker = await Worker.create({ connection: t.nativeConnection, namespace: t.namespace, taskQueue: t.taskQueue, workflowsPath: USER_WORKFLOWS, plugins: [plugin] });
    const client = new Client({ connection: t.connection, namespace: t.namespace, plugins: [plugin] });

    const messages = [{ role: 'system' as const, content: 'You help with orders.' }, ...toolRounds(12, 600)];
    const workflowId = uniqueId('user-support-chat');
    const results = await worker.runUntil(async () => {
      const theirs: SupportChatOutput = await client.workflow.execute<typeof supportChat>('supportChat', { taskQueue: t.taskQueue, workflowId, args: [{ messages, contextBudget: 1_500 }] });
      const ours = await client.workflow.execute(compactConversation, { taskQueue: t.taskQueue, workflowId: uniqueId('plugin-compact'), args: [{ messages, options: { contextBudget: 1_500, keepRecent: 2 } }] });
      const name = 'taubench_gpt4o_airline_task2_trial1';
      const agent = await client.workflow.execute(agentRun, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('plugin-agent'),
        args: [{ messages: openingOf(name), model: { provider: 'replay', trajectory: name, contextWindow: 6_300, maxOutputTokens: 1000 }, compaction: { keepRecent: 4 }, maxRounds: 5 }],
      });
      return { theirs, ours, agent };
    });
    // Their workflow compacted with a summary from the summarize activity the plugin registered.
    expect(results.theirs.compacted).toMatchObject({ fallback: false, summary: expect.stringContaining('Offline extractive summary') });
    expect(results.theirs.messages.length).toBeLessThan(messages.length);
    // Our workflows ran on the same worker, from the same one line.
    expect(results.ours.messages).toEqual(results.theirs.messages);
    expect(results.agent.rounds).toBe(5);
    // The namespace was checked once, when the worker started.
    expect(setups).toHaveLength(1);
    // Payloads went through the codec and the store the plugin set on both ends: the raw history holds claims and ciphertext only.
    const raw = (await t.connection.workflowService.getWorkflowExecutionHistory({ namespace: t.namespace, execution: { workflowId } })).history?.events ?? [];
    const payloads = historyPayloads(raw, payloadProtoSize).filter((found) => !isSdkMetadata(found));
    expect(payloads.some((found) => claimOf(found.payload) !== undefined)).toBe(true);
    for (const found of payloads) {
      const encoding = new TextDecoder().decode(found.payload.metadata?.encoding ?? new Uint8Array());
      expect(claimOf(found.payload) !== undefined || encoding === 'binary/compactor', found.path).toBe(true);
    }
  });
});
