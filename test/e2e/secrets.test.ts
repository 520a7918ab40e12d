// Secrets stay on the worker: a worker process (`temporal-compactor worker`) runs with canary
// values in OPENAI_API_KEY and TEMPORAL_API_KEY, in the codec server's token and in the AWS and
// OpenTelemetry secrets, against an OpenAI-compatible server that — as some proxies do — echoes the
// key it was sent, and the environment it knows, in its error messages; its tool root holds a `.env`
// with a canary the model asks for. Agent runs and a compaction go through retried, rejected and
// failed calls; afterwards no canary is in any event of their histories (payload bytes decoded), in
// any query result, or in any line the worker logged at its default level (INFO).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentRun, compactConversation, type ChatMessage } from '../../src/index.js';
import { agentRunQueries, type AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import {
  assistantReply,
  startFakeOpenAI,
  type FakeOpenAI,
  type RecordedRequest,
  type ScriptedResponse,
} from '../support/fake-openai.js';
import { testConnection, uniqueId, type TestConnection } from '../support/temporal.js';
import {
  killWorkerProcesses,
  spawnWorkerProcess,
  writeProductionBundle,
  type WorkerProcess,
} from '../support/worker-process.js';

const OPENAI_CANARY = 'sk-canary-openai-7f3a91c2e4b8d05f6a17';
const TEMPORAL_CANARY = 'tmprl-canary-api-key-41d9e0c7b2a6f835';
/** Secrets of the worker's environment that are not the provider's key, by variable. */
const ENVIRONMENT_CANARIES = {
  COMPACTOR_CODEC_SERVER_TOKEN: 'canary-codec-server-token-5c0e2b91',
  AWS_SECRET_ACCESS_KEY: 'canary-aws-secret-9d41f7a3c2b8e605',
  AWS_SESSION_TOKEN: 'canary-aws-session-0b6e3d72a94f18c5',
  OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer canary-otel-header-8e2a4c61',
};
const DOTENV_CANARY = 'canary-dotenv-db-password-3f9a0c77';
const CANARIES = [
  OPENAI_CANARY,
  TEMPORAL_CANARY,
  ...Object.values(ENVIRONMENT_CANARIES),
  'canary-otel-header-8e2a4c61',
  DOTENV_CANARY,
];

/** Every string in `value`, with byte arrays (payload data, failure bytes) decoded as UTF-8. */
function stringsIn(value: unknown, found: string[] = []): string[] {
  if (typeof value === 'string') found.push(value);
  else if (value instanceof Uint8Array) found.push(Buffer.from(value).toString('utf8'));
  else if (Array.isArray(value)) for (const item of value) stringsIn(item, found);
  else if (typeof value === 'object' && value !== null) for (const item of Object.values(value)) stringsIn(item, found);
  return found;
}

function leaksIn(texts: readonly string[]): string[] {
  return texts.filter((text) => CANARIES.some((canary) => text.includes(canary))).map((text) => text.slice(0, 300));
}

/** The key the request carried, as a provider that echoes it would see it. */
function bearer(request: RecordedRequest): string {
  return String(request.headers.authorization ?? '').replace(/^Bearer /, '');
}

/** The model the request asked for: the agents and the summarizer are told apart by it. */
function modelOf(request: RecordedRequest): string {
  return String(Reflect.get(Object(request.body), 'model'));
}

/** An assistant reply billed 900 prompt and 10 completion tokens. */
function completion(message: Record<string, unknown>): ScriptedResponse {
  return assistantReply(message, { prompt_tokens: 900, completion_tokens: 10, total_tokens: 910 });
}

/** An OpenAI-style error whose message carries the key the request was sent with, and the worker's other secrets. */
function echoing(status: number, headers: Record<string, string> = {}): ScriptedResponse {
  return (request) => ({
    kind: 'status',
    status,
    headers,
    body: {
      error: {
        message: `Incorrect API key provided: ${bearer(request)}. Proxy environment: ${Object.entries(
          ENVIRONMENT_CANARIES,
        )
          .map(([name, value]) => `${name}=${value}`)
          .join(' ')}`,
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      },
    },
  });
}

/** A conversation long enough to be compacted in a 2,000-token window, every call answered. */
function longOpening(): ChatMessage[] {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are a careful agent.' },
    { role: 'user', content: 'Read the notes and summarize them.' },
  ];
  for (let turn = 1; turn <= 6; turn += 1) {
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: `call_${turn}`,
          type: 'function',
          function: { name: 'fs_read', arguments: JSON.stringify({ path: `notes-${turn}.txt` }) },
        },
      ],
    });
    messages.push({
      role: 'tool',
      tool_call_id: `call_${turn}`,
      content: `notes ${turn}: ${'lorem ipsum dolor sit amet '.repeat(40)}`,
    });
  }
  messages.push({ role: 'user', content: 'Now read a.txt.' });
  return messages;
}

describe('a canary API key set on the worker', { timeout: 180_000 }, () => {
  let t: TestConnection;
  let server: FakeOpenAI;
  let root: string;
  let bundle: Awaited<ReturnType<typeof writeProductionBundle>>;
  const workers: WorkerProcess[] = [];
  /** Scripted answers by the request's model: the agents and the summarizer are told apart. */
  const answers = new Map<string, ScriptedResponse[]>();

  beforeAll(async () => {
    t = await testConnection();
    server = await startFakeOpenAI();
    server.setDefault((request) => {
      const model = modelOf(request);
      const next = answers.get(model)?.shift();
      return next ?? { kind: 'status', status: 500, body: { error: { message: `unscripted request for ${model}` } } };
    });
    root = mkdtempSync(join(tmpdir(), 'secrets-root-'));
    writeFileSync(join(root, 'a.txt'), 'alpha\n');
    writeFileSync(join(root, '.env'), `DATABASE_PASSWORD=${DOTENV_CANARY}\n`);
    bundle = await writeProductionBundle('secrets-');
    const worker = spawnWorkerProcess(
      'src/cli/main.ts',
      {
        TEMPORAL_ADDRESS: t.address,
        TEMPORAL_NAMESPACE: t.namespace,
        TEMPORAL_API_KEY: TEMPORAL_CANARY,
        // The dev server has no TLS; the key still travels as the connection's authorization.
        TEMPORAL_TLS: 'false',
        OPENAI_API_KEY: OPENAI_CANARY,
        OPENAI_BASE_URL: server.baseURL,
        COMPACTOR_TASK_QUEUE: t.taskQueue,
        COMPACTOR_WORKFLOW_BUNDLE: bundle.bundlePath,
        COMPACTOR_TOOLS_ROOT: root,
        ...ENVIRONMENT_CANARIES,
      },
      ['worker'],
    );
    workers.push(worker);
    for (let waited = 0; !worker.output().includes('polling task queue'); waited += 100) {
      if (waited > 60_000 || worker.child.exitCode !== null)
        throw new Error(`the worker did not start:\n${worker.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  afterAll(async () => {
    killWorkerProcesses(workers);
    await server?.close();
    bundle?.remove();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('reaches the provider, and appears in no history, query result or log line', async () => {
    const handles: WorkflowHandle[] = [];
    const fastRetries = { maximumAttempts: 3, initialInterval: 10 };

    // A run that retries a chat (500), runs a tool, and compacts through a summarizer that first
    // answers 429 and then a summary — every error message carrying the key.
    answers.set('agent-a', [
      echoing(500),
      completion({
        content: null,
        tool_calls: [
          { id: 'call_9', type: 'function', function: { name: 'fs_read', arguments: '{"path":"a.txt"}' } },
          // A model talked into reading the secrets beside the project's files.
          { id: 'call_10', type: 'function', function: { name: 'fs_read', arguments: '{"path":".env"}' } },
          { id: 'call_11', type: 'function', function: { name: 'grep', arguments: '{"pattern":"PASSWORD"}' } },
        ],
      }),
      completion({ content: 'a.txt holds alpha.' }),
    ]);
    answers.set('gpt-4o-mini', [
      echoing(429, { 'retry-after': '0' }),
      completion({ content: 'The notes were read; a.txt is next.' }),
    ]);
    const input: AgentRunWorkflowInput = {
      messages: longOpening(),
      model: { provider: 'openai', model: 'agent-a', contextWindow: 2_000, maxOutputTokens: 200 },
      tools: ['fs_read', 'grep'],
      compaction: { keepRecent: 2, retryBackoff: 10 },
      chatActivity: fastRetries,
    };
    const completed = await t.client.workflow.start(agentRun, {
      taskQueue: t.taskQueue,
      workflowId: uniqueId('secrets-agent'),
      args: [input],
    });
    handles.push(completed);
    const result = await completed.result();
    expect(result.stopReason).toBe('completed');
    expect(result.compactions.totals.compactions).toBeGreaterThan(0);

    // A compaction whose summarizer refuses the request (400): the hard trim, with the refusal recorded.
    answers.set('gpt-4o-mini', [echoing(400)]);
    const compaction = await t.client.workflow.start(compactConversation, {
      taskQueue: t.taskQueue,
      workflowId: uniqueId('secrets-compact'),
      args: [{ messages: longOpening(), options: { contextBudget: 600, keepRecent: 2 } }],
    });
    handles.push(compaction);
    expect((await compaction.result()).fallback).toBe(true);

    // A run whose only backend refuses the key (401): it fails, and its failure quotes the last error.
    answers.set('agent-c', [echoing(401)]);
    const failed = await t.client.workflow.start(agentRun, {
      taskQueue: t.taskQueue,
      workflowId: uniqueId('secrets-failed'),
      args: [
        {
          ...input,
          messages: [{ role: 'user', content: 'hi' }],
          model: { provider: 'openai', model: 'agent-c', contextWindow: 8_000, maxOutputTokens: 200 },
        },
      ],
    });
    handles.push(failed);
    const failure = await failed.result().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowFailedError);

    // The key did reach the provider, which echoed it back each time: the test exercises the leak paths.
    expect(server.requests.map((request) => `${modelOf(request)} ${request.outcome}`)).toEqual([
      // The run compacts its opening (429, then the summary), retries a chat (500), runs its tools, ends.
      ...['gpt-4o-mini answered', 'gpt-4o-mini answered'],
      ...['agent-a answered', 'agent-a answered', 'agent-a answered'],
      // The compaction refused (400), and the run refused (401).
      'gpt-4o-mini answered',
      'agent-c answered',
    ]);
    expect(server.requests.every((request) => bearer(request) === OPENAI_CANARY)).toBe(true);

    const histories = await Promise.all(handles.map(async (handle) => stringsIn(await handle.fetchHistory())));
    const queries = await Promise.all(
      [completed, failed].map(async (handle) =>
        stringsIn([
          await handle.query(agentRunQueries.session),
          await handle.query(agentRunQueries.compactions),
          await handle.query(agentRunQueries.conversation),
        ]),
      ),
    );
    const logLines = workers.flatMap((worker) => worker.output().split('\n'));
    expect({
      histories: leaksIn(histories.flat()),
      queries: leaksIn(queries.flat()),
      logLines: leaksIn(logLines),
    }).toEqual({ histories: [], queries: [], logLines: [] });
    // The errors were recorded, with the key taken out.
    expect(histories.flat().some((text) => text.includes('Incorrect API key provided: [redacted]'))).toBe(true);
    expect(
      histories.flat().some((text) => text.includes('AWS_SECRET_ACCESS_KEY=[redacted] AWS_SESSION_TOKEN=[redacted]')),
    ).toBe(true);
    // The model asked for the dotenv file and grepped for it: it read the refusals, naming the rule.
    const results = result.messages.filter((message) => message.role === 'tool').map((message) => message.content);
    expect(results).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Error: fs_read: \.env is not read: it matches the rule "\.env" \(dotenv files\)/),
        'no matches for /PASSWORD/ in .',
      ]),
    );
    // The worker logged at INFO (its default): the check read real log lines.
    expect(logLines.some((line) => /INFO/.test(line))).toBe(true);
  });
});
