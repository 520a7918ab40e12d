// Every worker says what it uses in one line as it starts — the task queue, the summarizer (model
// and endpoint), the chat server, the payload store and the codec — whether it was built with
// `compactorPlugin()` on a user's own worker, with `createWorker`, or by `temporal-compactor worker`
// (test/workflows/worker-process.test.ts). One function builds the line (src/worker/start-line.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createExtractiveSummarizer, createOpenAISummarizer } from '../../src/index.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import { createWorker } from '../../src/worker/create-worker.js';
import { compactorPlugin } from '../../src/worker/plugin.js';
import { summarizerFromConfig } from '../../src/worker/summarizer-from-config.js';
import { workerStartLine } from '../../src/worker/start-line.js';
import { testConnection, type TestConnection } from '../support/temporal.js';

const KEY = Buffer.alloc(32, 7).toString('base64');
/** An endpoint that carries a password and a key, as a proxy's URL may. */
const SECRET_URL = 'http://me:hunter2@127.0.0.1:9/v1?api-key=sk-in-url';
const REDACTED_URL = 'http://[redacted]@127.0.0.1:9/v1?api-key=[redacted]';
/** The configuration refuses a URL with credentials: its key is a setting of its own. */
const MODEL_URL = 'http://127.0.0.1:9/v1';

let store: string;
beforeAll(() => {
  store = mkdtempSync(join(tmpdir(), 'start-line-store-'));
});
afterAll(() => rmSync(store, { recursive: true, force: true }));

/** A configuration with a model behind a credentialed URL, a file store and a codec key. */
function configured() {
  return loadConfig({
    env: {
      OPENAI_BASE_URL: MODEL_URL,
      OPENAI_API_KEY: 'sk-secret-key',
      COMPACTOR_SUMMARIZER_MODEL: 'gpt-4o-mini',
      COMPACTOR_PAYLOAD_STORE: `file:${store}`,
      COMPACTOR_CODEC_KEY: KEY,
      COMPACTOR_CODEC_KEY_ID: 'k-start',
    },
  });
}

function expectNoSecrets(line: string): void {
  expect(line).not.toMatch(/hunter2|sk-in-url|sk-secret-key/);
}

describe('workerStartLine', () => {
  it('names the task queue, the summarizer with its model and endpoint, the chat server, the store and the codec', () => {
    const config = configured();
    const line = workerStartLine({
      queues: [{ taskQueue: 'agents', runs: 'all' }],
      summarizer: summarizerFromConfig(config).summarizer,
      chat: { baseURL: config.openaiBaseUrl, apiKey: config.openaiApiKey },
      dataConverter: payloadConverterFromConfig(config).dataConverter,
    });
    expect(line).toBe(
      `temporal-compactor worker: polling task queue "agents" (all); OpenAI-compatible summarizer: model gpt-4o-mini at ${MODEL_URL}, timeout 60000 ms; chat: model server at ${MODEL_URL}; payload store file:${store} (payloads of 256 B and more), codec deflate + AES-256-GCM (key id k-start)`,
    );
    expectNoSecrets(line);
  });

  it('says so when there is no model server, and when the summarizer or the data converter is the caller’s own', () => {
    const line = workerStartLine({
      queues: [
        { taskQueue: 'agents', runs: 'workflows' },
        { taskQueue: 'summaries', runs: 'activities' },
      ],
      summarizer: { summarize: () => Promise.resolve({ text: 'mine' }) },
      chat: { baseURL: undefined, apiKey: undefined },
      dataConverter: { payloadConverterPath: '/app/converter.js' },
    });
    expect(line).toBe(
      'temporal-compactor worker: polling task queue "agents" (workflows) and "summaries" (activities); summarizer: one of your own; chat: no model server (set OPENAI_API_KEY or OPENAI_BASE_URL; agentRun with the replay provider needs none); a data converter of your own (payload store and codec not ours to say)',
    );
  });

  it('names a summarizer built with createOpenAISummarizer or createExtractiveSummarizer by what it is', () => {
    const openai = createOpenAISummarizer({
      model: 'qwen3',
      baseURL: SECRET_URL,
      apiKey: 'sk-secret-key',
      timeout: 5000,
    });
    const parts = (summarizer: Parameters<typeof workerStartLine>[0]['summarizer']) =>
      workerStartLine({
        queues: [{ taskQueue: 'q', runs: 'activities' }],
        summarizer,
        chat: undefined,
        dataConverter: {},
      });
    expect(parts(openai)).toBe(
      `temporal-compactor worker: polling task queue "q" (activities); OpenAI-compatible summarizer: model qwen3 at ${REDACTED_URL}, timeout 5000 ms; payloads inline (no store, no codec)`,
    );
    expect(parts(createExtractiveSummarizer())).toContain('; built-in offline extractive summarizer;');
  });
});

describe('the start line on a dev server', { timeout: 120_000 }, () => {
  let t: TestConnection;
  beforeAll(async () => {
    t = await testConnection();
  });

  it('compactorPlugin() prints it when the user’s worker starts (regression: it printed nothing)', async () => {
    const lines: string[] = [];
    const config = configured();
    const plugin = compactorPlugin({ config, register: 'activities', tracing: 'off', log: (line) => lines.push(line) });
    const worker = await Worker.create({
      connection: t.nativeConnection,
      namespace: t.namespace,
      taskQueue: t.taskQueue,
      plugins: [plugin],
    });
    await worker.runUntil(Promise.resolve());
    expect(lines).toEqual([
      `temporal-compactor worker: polling task queue "${t.taskQueue}" (activities); OpenAI-compatible summarizer: model gpt-4o-mini at ${MODEL_URL}, timeout 60000 ms; chat: model server at ${MODEL_URL}; payload store file:${store} (payloads of 256 B and more), codec deflate + AES-256-GCM (key id k-start)`,
    ]);
  });

  it('createWorker prints it for each worker it starts (regression: it printed nothing)', async () => {
    const lines: string[] = [];
    const config = configured();
    const { run, shutdown } = await createWorker({
      connection: t.nativeConnection,
      namespace: t.namespace,
      summarizerTaskQueue: t.taskQueue,
      mode: 'activities',
      summarizer: summarizerFromConfig(config).summarizer,
      chatServer: { baseURL: config.openaiBaseUrl, apiKey: config.openaiApiKey },
      dataConverter: payloadConverterFromConfig(config).dataConverter,
      tracing: 'off',
      log: (line) => lines.push(line),
    });
    const running = run();
    shutdown();
    await running;
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(
      `polling task queue "${t.taskQueue}" (activities); OpenAI-compatible summarizer: model gpt-4o-mini`,
    );
    expect(lines[0]).toContain(`chat: model server at ${MODEL_URL}; payload store file:${store}`);
    expectNoSecrets(lines[0] ?? '');
  });
});
