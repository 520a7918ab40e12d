// The payload store and codec on the dev server, configured as a user configures them
// (`loadConfig` → `payloadConverterFromConfig`, the same data converter for client and worker):
// large values round-trip while the history holds only small claims, a value that crosses the
// threshold only once encrypted is offloaded too, and no secret reaches any history payload.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { agentRun, createOpenAISummarizer, type ChatMessage } from '../../src/index.js';
import { createActivities } from '../../src/activities/index.js';
import { codecEnvelopeOf, payloadProtoSize } from '../../src/payloads/codec.js';
import { payloadConverterFromConfig, type ConfiguredPayloads } from '../../src/payloads/index.js';
import { assistantReply as completion, startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import {
  claimOf,
  decodeHistoryPayload,
  historyPayloads,
  isSdkMetadata,
  metadataOf,
  type HistoryPayload,
} from '../support/history-payloads.js';
import { bundleWorkflows, testConnection, uniqueId, withWorker, type TestConnection } from '../support/temporal.js';
import type { EchoValue, StoreTestActivities, storeEcho, storeIncompressible } from '../../corpus/store-workflows.js';

const directories: string[] = [];
afterAll(() => directories.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

function storeDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'compactor-store-server-'));
  directories.push(directory);
  return directory;
}

/** The data converter a worker and a client get from these settings. */
function configured(env: Record<string, string>): ConfiguredPayloads {
  return payloadConverterFromConfig(loadConfig({ env }));
}

/** The run's history exactly as the server keeps it (raw gRPC: no claim resolved, nothing decoded). */
async function rawHistory(t: TestConnection, workflowId: string): Promise<HistoryPayload[]> {
  const events = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await t.connection.workflowService.getWorkflowExecutionHistory({
      namespace: t.namespace,
      execution: { workflowId },
      ...(nextPageToken === undefined ? {} : { nextPageToken }),
    });
    events.push(...(page.history?.events ?? []));
    nextPageToken =
      page.nextPageToken !== null && page.nextPageToken !== undefined && page.nextPageToken.length > 0
        ? page.nextPageToken
        : undefined;
  } while (nextPageToken !== undefined);
  return historyPayloads(events, payloadProtoSize);
}

/** Prose that compresses like real text, but not to nothing. */
function prose(length: number): string {
  const words = [
    'build',
    'failed',
    'module',
    'import',
    'error',
    'line',
    'config',
    'patch',
    'test',
    'trace',
    'value',
    'field',
  ];
  const parts: string[] = [];
  let size = 0;
  for (let index = 0; size < length; index += 1) {
    const word = `${words[(index * 7 + (index >> 3)) % words.length] ?? 'x'}${index % 13 === 0 ? index.toString(36) : ''} `;
    parts.push(word);
    size += word.length;
  }
  return parts.join('').slice(0, length);
}

const storeActivities: StoreTestActivities = {
  echo: async (value: EchoValue) => value,
  incompressible: async (bytes: number) => new Uint8Array(randomBytes(bytes)),
};

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  bundle = await bundleWorkflows(new URL('../../corpus/store-workflows.ts', import.meta.url));
});

describe('payload store and codec on the dev server', { timeout: 120_000 }, () => {
  it('round-trips a 1.2 MB value through input, activity and result while the history holds only small claims', async () => {
    const directory = storeDirectory();
    const payloads = configured({
      COMPACTOR_PAYLOAD_STORE: `file:${directory}`,
      COMPACTOR_CODEC_KEY: randomBytes(32).toString('base64'),
    });
    const t = await testConnection({ dataConverter: payloads.dataConverter });
    const value: EchoValue = { text: prose(1_200_000), note: 'round trip' };
    const workflowId = uniqueId('store-echo');
    const result = await withWorker(t, { workflowBundle: bundle, activities: storeActivities }, () =>
      t.client.workflow.execute<typeof storeEcho>('storeEcho', { taskQueue: t.taskQueue, workflowId, args: [value] }),
    );
    expect(result).toEqual({ ...value, length: 1_200_000 });

    const history = await rawHistory(t, workflowId);
    const claims = history.filter((found) => claimOf(found.payload) !== undefined);
    // The workflow input, the activity's input and result, and the workflow result.
    expect(claims.map((found) => found.path.replace(/^events\[\d+\]\./, ''))).toEqual([
      'workflowExecutionStartedEventAttributes.input.payloads[0]',
      'activityTaskScheduledEventAttributes.input.payloads[0]',
      'activityTaskCompletedEventAttributes.result.payloads[0]',
      'workflowExecutionCompletedEventAttributes.result.payloads[0]',
    ]);
    for (const found of claims) expect(found.size).toBeLessThan(300);
    expect(Math.max(...history.map((found) => found.size))).toBeLessThan(1024);
    // Four copies of 1.2 MB went through the run; the store holds one, compressed.
    expect(payloads.driver?.stats.written.chunk.plaintextBytes ?? 0).toBeLessThan(1_300_000);

    // A client without the store cannot read the claims: it says so instead of handing out references.
    const plainClient = new Client({ connection: t.connection, namespace: t.namespace });
    await expect(plainClient.workflow.getHandle(workflowId).result()).rejects.toThrow(
      /External Storage|external storage/,
    );

    // The history as the server keeps it (claims) replays with the store, and not without it.
    const raw = (
      await t.connection.workflowService.getWorkflowExecutionHistory({
        namespace: t.namespace,
        execution: { workflowId },
      })
    ).history;
    if (raw === null || raw === undefined) throw new Error('no history');
    await expect(
      Worker.runReplayHistory({ workflowBundle: bundle, dataConverter: payloads.dataConverter }, raw, workflowId),
    ).resolves.toBeUndefined();
    await expect(Worker.runReplayHistory({ workflowBundle: bundle }, raw, workflowId)).rejects.toThrow(
      /external storage is not configured/,
    );
  });

  it('offloads a payload that reaches the threshold only once encrypted, and reads it back', async () => {
    const payloads = configured({
      COMPACTOR_PAYLOAD_STORE: `file:${storeDirectory()}`,
      COMPACTOR_CODEC_KEY: randomBytes(32).toString('base64'),
      COMPACTOR_PAYLOAD_THRESHOLD: '1024',
    });
    const t = await testConnection({ dataConverter: payloads.dataConverter });
    const workflowId = uniqueId('store-incompressible');
    // 960 random bytes: under 1 KiB as a payload, over it with the codec's nonce, tag and metadata.
    const result = await withWorker(t, { workflowBundle: bundle, activities: storeActivities }, () =>
      t.client.workflow.execute<typeof storeIncompressible>('storeIncompressible', {
        taskQueue: t.taskQueue,
        workflowId,
        args: [960],
      }),
    );
    expect(result).toHaveLength(960);
    const history = await rawHistory(t, workflowId);
    const completed = history.find((found) =>
      found.path.endsWith('activityTaskCompletedEventAttributes.result.payloads[0]'),
    );
    if (completed === undefined) throw new Error('no activity result in the history');
    expect(claimOf(completed.payload)).toBeDefined();
    const decoded = await decodeHistoryPayload(completed.payload, { driver: payloads.driver, codec: payloads.codec });
    expect(Buffer.from(decoded.data ?? []).equals(Buffer.from(result))).toBe(true);
    expect(metadataOf(decoded, 'encoding')).toBe('binary/plain');
  });

  describe('secrets (canary)', () => {
    let server: FakeOpenAI;
    beforeAll(async () => {
      server = await startFakeOpenAI();
    });
    afterAll(async () => {
      await server.close();
    });

    it('never writes OPENAI_API_KEY or the codec key into any history payload or stored object', async () => {
      const apiKey = `sk-canary-${randomBytes(12).toString('hex')}`;
      const rawKey = randomBytes(32);
      const codecKeyText = rawKey.toString('base64');
      const directory = storeDirectory();
      const env = {
        COMPACTOR_PAYLOAD_STORE: `file:${directory}`,
        COMPACTOR_CODEC_KEY: codecKeyText,
        COMPACTOR_CODEC_KEY_ID: 'canary',
        OPENAI_API_KEY: apiKey,
        OPENAI_BASE_URL: server.baseURL,
      };
      const config = loadConfig({ env });
      const payloads = payloadConverterFromConfig(config);
      const t = await testConnection({ dataConverter: payloads.dataConverter });
      server.script(
        completion({
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"id":"A-17"}' } }],
        }),
        completion({ content: 'Order A-17 shipped.' }),
      );
      const lookup = async (): Promise<string> => `order A-17: shipped. ${prose(3000)}`;
      const opening: ChatMessage[] = [
        { role: 'system', content: `You are a careful agent. ${prose(2000)}` },
        { role: 'user', content: 'Where is order A-17?' },
      ];
      const openai = new OpenAI({ baseURL: config.openaiBaseUrl, apiKey: config.openaiApiKey, maxRetries: 0 });
      const summarizer = createOpenAISummarizer({
        model: 'fake-summarizer',
        baseURL: config.openaiBaseUrl,
        apiKey: config.openaiApiKey,
      });
      const workflowId = uniqueId('store-canary');
      const lookupDeclaration = {
        type: 'function' as const,
        function: {
          name: 'lookup',
          description: 'Find an order',
          parameters: { type: 'object', properties: { id: { type: 'string' } } },
        },
      };
      const result = await withWorker(
        t,
        { workflowBundle: bundle, activities: { ...createActivities({ summarizer, openai }), lookup } },
        () =>
          t.client.workflow.execute(agentRun, {
            taskQueue: t.taskQueue,
            workflowId,
            args: [
              {
                messages: opening,
                model: { provider: 'openai', model: 'fake-agent', contextWindow: 16_000, maxOutputTokens: 500 },
                tools: [lookupDeclaration],
                compaction: {},
              },
            ],
          }),
      );
      expect(result.stopReason).toBe('completed');
      // The key did reach the model server: the canary is live, not a string nobody used.
      expect(server.requests.every((request) => request.headers.authorization === `Bearer ${apiKey}`)).toBe(true);

      const history = await rawHistory(t, workflowId);
      const secrets = [apiKey, codecKeyText, rawKey.toString('hex'), rawKey.toString('base64url')];
      const decodedTexts: string[] = [];
      for (const found of history) {
        const raw = Buffer.from(found.payload.data ?? []);
        const decoded = Buffer.from(
          (await decodeHistoryPayload(found.payload, { driver: payloads.driver, codec: payloads.codec })).data ?? [],
        );
        for (const bytes of [raw, decoded]) {
          for (const secret of secrets) expect(bytes.includes(secret), `${found.path} holds a secret`).toBe(false);
          expect(bytes.includes(rawKey), `${found.path} holds the raw key`).toBe(false);
        }
        decodedTexts.push(decoded.toString('utf8'));
        // Nothing readable in history: every payload but search attributes is a claim or encrypted.
        if (!isSdkMetadata(found))
          expect(
            claimOf(found.payload) !== undefined || codecEnvelopeOf(found.payload)?.keyId === 'canary',
            found.path,
          ).toBe(true);
      }
      // The decoding works (so the search above looked at real content).
      expect(decodedTexts.some((decoded) => decoded.includes('Where is order A-17?'))).toBe(true);
      expect(decodedTexts.some((decoded) => decoded.includes('Order A-17 shipped.'))).toBe(true);
      for (const file of readdirSync(directory, { recursive: true, withFileTypes: true }).filter((entry) =>
        entry.isFile(),
      )) {
        const bytes = readFileSync(join(file.parentPath, file.name));
        for (const secret of [...secrets, 'Where is order A-17?']) expect(bytes.includes(secret)).toBe(false);
      }
    });
  });
});
