// A user's own worker, set up only through `compactorPlugin()`: their workflow calls `compact()`,
// and the plugin brings the summarize activity, our workflows beside theirs, the payload codec and
// store on worker and client alike, and the namespace's search attributes.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import vm from 'node:vm';
import { bundleWorkflowCode, DefaultLogger, Worker, type BundlerPlugin, type WorkerOptions } from '@temporalio/worker';
import { injectGlobals } from '@temporalio/worker/lib/workflow/vm-shared.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  agentRun,
  compactConversation,
  compactorPlugin,
  createExtractiveSummarizer,
  loadConfig,
} from '../../src/index.js';
import { compactorWorkflowsPath } from '../../src/worker/workflow-bundling.js';
import { workerBuildId } from '../../src/worker/plugin.js';
import type { SearchAttributeSetup } from '../../src/client/namespace-search-attributes.js';
import type { SupportChatOutput, supportChat } from '../fixtures/user-worker/workflows.js';
import { openingOf, trajectoryDir } from '../support/agent.js';
import { historyPayloads, claimOf, isSdkMetadata } from '../support/history-payloads.js';
import { toolRounds } from '../support/messages.js';
import { temporaryDirectory } from '../support/cleanup.js';
import { bundleWorkflows, testConnection, uniqueId, type TestConnection } from '../support/temporal.js';
import { payloadProtoSize } from '../../src/payloads/codec.js';

const USER_WORKFLOWS = fileURLToPath(new URL('../fixtures/user-worker/workflows.ts', import.meta.url));

/** The workflow names a bundle exports, evaluated as the worker's sandbox evaluates it. */
function workflowsOf(code: string): unknown {
  const context = vm.createContext({});
  injectGlobals(context);
  vm.runInContext('globalThis.__webpack_module_cache__ = {};', context);
  vm.runInContext(code, context, { filename: 'workflow-bundle.js' });
  return vm.runInContext('Object.keys(__TEMPORAL__.importWorkflows()).sort()', context);
}

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
    const config = loadConfig({
      env: {
        COMPACTOR_PAYLOAD_STORE: `file:${store}`,
        COMPACTOR_CODEC_KEY: Buffer.alloc(32, 7).toString('base64'),
        COMPACTOR_CODEC_KEY_ID: 'plugin-test',
      },
    });
    const setups: SearchAttributeSetup[] = [];
    const plugin = compactorPlugin({
      config,
      summarizer: createExtractiveSummarizer(),
      activities: { trajectoryDir: trajectoryDir() },
      onSearchAttributes: (setup) => setups.push(setup),
    });
    const worker = await Worker.create({
      connection: t.nativeConnection,
      namespace: t.namespace,
      taskQueue: t.taskQueue,
      workflowsPath: USER_WORKFLOWS,
      plugins: [plugin],
    });
    const client = new Client({ connection: t.connection, namespace: t.namespace, plugins: [plugin] });

    const messages = [{ role: 'system' as const, content: 'You help with orders.' }, ...toolRounds(12, 600)];
    const workflowId = uniqueId('user-support-chat');
    const results = await worker.runUntil(async () => {
      const theirs: SupportChatOutput = await client.workflow.execute<typeof supportChat>('supportChat', {
        taskQueue: t.taskQueue,
        workflowId,
        args: [{ messages, contextBudget: 1_500 }],
      });
      const ours = await client.workflow.execute(compactConversation, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('plugin-compact'),
        args: [{ messages, options: { contextBudget: 1_500, keepRecent: 2 } }],
      });
      const name = 'taubench_gpt4o_airline_task2_trial1';
      const agent = await client.workflow.execute(agentRun, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('plugin-agent'),
        args: [
          {
            messages: openingOf(name),
            model: { provider: 'replay', trajectory: name, contextWindow: 6_300, maxOutputTokens: 1000 },
            compaction: { keepRecent: 4 },
            maxRounds: 5,
          },
        ],
      });
      return { theirs, ours, agent };
    });
    // Their workflow compacted with a summary from the summarize activity the plugin registered.
    expect(results.theirs.compacted).toMatchObject({
      fallback: false,
      summary: expect.stringContaining('Offline extractive summary'),
    });
    expect(results.theirs.messages.length).toBeLessThan(messages.length);
    // Our workflows ran on the same worker, from the same one line.
    expect(results.ours.messages).toEqual(results.theirs.messages);
    expect(results.agent.rounds).toBe(5);
    // The namespace was checked once, when the worker started.
    expect(setups).toHaveLength(1);
    // Payloads went through the codec and the store the plugin set on both ends: the raw history holds claims and ciphertext only.
    const raw =
      (
        await t.connection.workflowService.getWorkflowExecutionHistory({
          namespace: t.namespace,
          execution: { workflowId },
        })
      ).history?.events ?? [];
    const payloads = historyPayloads(raw, payloadProtoSize).filter((found) => !isSdkMetadata(found));
    expect(payloads.some((found) => claimOf(found.payload) !== undefined)).toBe(true);
    for (const found of payloads) {
      const encoding = new TextDecoder().decode(found.payload.metadata?.encoding ?? new Uint8Array());
      expect(claimOf(found.payload) !== undefined || encoding === 'binary/compactor', found.path).toBe(true);
    }
  });
});

describe('the build id compactorPlugin gives a worker that runs a prebuilt bundle', { timeout: 240_000 }, () => {
  const plugin = compactorPlugin({
    config: loadConfig({ env: {} }),
    summarizer: createExtractiveSummarizer(),
    tracing: 'off',
    searchAttributes: 'skip',
  });
  const bundle = { code: 'var workflows = 1;' };

  it("12 hex digits of the bundle's SHA-256, unless the worker chose a build id or versioning; none for a worker that bundles at start", () => {
    expect(workerBuildId(bundle.code)).toMatch(/^[0-9a-f]{12}$/);
    expect(plugin.configureWorker({ taskQueue: 'q', workflowBundle: bundle }).buildId).toBe(workerBuildId(bundle.code));
    // A different bundle, a different id.
    expect(workerBuildId('var workflows = 2;')).not.toBe(workerBuildId(bundle.code));
    // A bundle on disk (read as bytes) gets the id of the same code as a string, non-ASCII text included.
    const file = join(temporaryDirectory('plugin-build-id-'), 'workflow-bundle.js');
    const code = 'var workflows = "résumé → ✓";';
    writeFileSync(file, code);
    expect(plugin.configureWorker({ taskQueue: 'q', workflowBundle: { codePath: file } }).buildId).toBe(
      workerBuildId(code),
    );
    const kept: Array<[string, WorkerOptions]> = [
      ['its own build id', { taskQueue: 'q', workflowBundle: bundle, buildId: 'release-42' }],
      [
        'worker deployment options',
        {
          taskQueue: 'q',
          workflowBundle: bundle,
          workerDeploymentOptions: {
            version: { deploymentName: 'agents', buildId: 'b1' },
            useWorkerVersioning: true,
            defaultVersioningBehavior: 'PINNED',
          },
        },
      ],
    ];
    for (const [what, options] of kept) expect(plugin.configureWorker(options).buildId, what).toBe(options.buildId);
    expect(plugin.configureWorker({ taskQueue: 'q', workflowsPath: USER_WORKFLOWS }).buildId).toBeUndefined();
  });

  it('the history of a run records it on every workflow task and activity start (the SDK default is 90 bytes at each)', async () => {
    const t = await testConnection();
    // The run's shared bundle of our workflows: which prebuilt bundle it is does not matter here.
    const built = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
    const worker = await Worker.create({
      connection: t.nativeConnection,
      namespace: t.namespace,
      taskQueue: t.taskQueue,
      workflowBundle: built,
      plugins: [plugin],
    });
    const client = new Client({ connection: t.connection, namespace: t.namespace, plugins: [plugin] });
    const workflowId = uniqueId('plugin-build-id');
    const messages = [{ role: 'system' as const, content: 'You help with orders.' }, ...toolRounds(12, 600)];
    await worker.runUntil(
      client.workflow.execute(compactConversation, {
        taskQueue: t.taskQueue,
        workflowId,
        args: [{ messages, options: { contextBudget: 1_500 } }],
      }),
    );
    const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const recorded = events.flatMap((event) => {
      const version =
        event.workflowTaskStartedEventAttributes?.workerVersion ??
        event.workflowTaskCompletedEventAttributes?.workerVersion ??
        event.activityTaskStartedEventAttributes?.workerVersion;
      return version?.buildId === undefined || version.buildId === null ? [] : [version.buildId];
    });
    // Two workflow tasks and a summarize activity at least; every one with the short id.
    expect(recorded.length).toBeGreaterThanOrEqual(5);
    expect(new Set(recorded)).toEqual(new Set([workerBuildId(built.code)]));
  });
});

describe('our workflows beside a worker’s own: nothing written where another user could plant something', () => {
  const plugin = compactorPlugin({
    config: loadConfig({ env: {} }),
    summarizer: createExtractiveSummarizer(),
    tracing: 'off',
    searchAttributes: 'skip',
  });
  let savedTmpdir: string | undefined;
  afterEach(() => {
    if (savedTmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmpdir;
  });

  it('a symlink planted under the system temporary directory is not followed, and no file is written there (regression)', () => {
    // Another local user's doing: the directory the plugin once wrote its re-export module to, and
    // at that module's path a symlink to a file of the worker's user.
    const shared = temporaryDirectory('plugin-shared-tmp-');
    const victim = join(temporaryDirectory('plugin-victim-'), 'precious.txt');
    writeFileSync(victim, 'the worker user’s file\n');
    const planted = join(shared, 'temporal-compactor-workflows');
    mkdirSync(planted);
    const hash = createHash('sha256').update(`${USER_WORKFLOWS}\n${compactorWorkflowsPath()}`).digest('hex');
    symlinkSync(victim, join(planted, `workflows-${hash.slice(0, 16)}.js`));
    savedTmpdir = process.env.TMPDIR;
    process.env.TMPDIR = shared;
    const before = readdirSync(shared, { recursive: true, encoding: 'utf8' }).sort();

    const options = plugin.configureWorker({ taskQueue: 'q', workflowsPath: USER_WORKFLOWS });

    expect(readFileSync(victim, 'utf8')).toBe('the worker user’s file\n');
    expect(readdirSync(shared, { recursive: true, encoding: 'utf8' }).sort()).toEqual(before);
    expect(options.workflowsPath?.startsWith(shared)).toBe(false);
  });
});

describe(
  'bundleWorkflowCode with compactorPlugin(): a prebuilt bundle of the worker’s workflows and ours',
  { timeout: 120_000 },
  () => {
    const plugin = compactorPlugin({ config: loadConfig({ env: {} }), register: 'workflows', tracing: 'off' });

    it('exports both, and holds nothing the workflows do not use (zod’s translations of its messages)', async () => {
      const { code } = await bundleWorkflowCode({
        workflowsPath: USER_WORKFLOWS,
        logger: new DefaultLogger('WARN'),
        plugins: [plugin],
      });
      expect(workflowsOf(code)).toEqual(['agentRun', 'compactConversation', 'supportChat']);
      // webpack marks each module it replaced by an empty one: only the SDK's optional converter slots.
      const ignored = [...code.matchAll(/\*\*\* (\S+) \(ignored\) \*\*\*/g)].map((match) => match[1]);
      expect(ignored.sort()).toEqual(['__temporal_custom_failure_converter', '__temporal_custom_payload_converter']);
      // zod imports the messages of every language; webpack leaves out those nothing uses (zod declares no side effects).
      expect(code).not.toMatch(/zod\/v4\/locales\/(he|ru|ja)\.js/);
      expect(code).toMatch(/zod\/v4\/locales\/en\.js/);
    });

    it('a plugin before ours that wraps the webpack hook (as @temporalio/ai-sdk does) keeps the worker’s workflows (regression)', async () => {
      // What Worker.create does: the plugins configure the worker, then the bundler, in their order.
      const wrapping: BundlerPlugin = {
        name: 'wraps-the-webpack-hook',
        configureBundler: (options) => {
          const hook = options.webpackConfigHook;
          return { ...options, webpackConfigHook: (config) => (hook === undefined ? config : hook(config)) };
        },
      };
      const worker = plugin.configureWorker({ taskQueue: 'q', workflowsPath: USER_WORKFLOWS });
      if (worker.workflowsPath === undefined) throw new Error('the plugin dropped the workflowsPath');
      const { code } = await bundleWorkflowCode({
        workflowsPath: worker.workflowsPath,
        webpackConfigHook: worker.bundlerOptions?.webpackConfigHook,
        logger: new DefaultLogger('WARN'),
        plugins: [wrapping, plugin],
      });
      expect(workflowsOf(code)).toEqual(['agentRun', 'compactConversation', 'supportChat']);
    });

    it('a workflowsPath that names nothing is refused with its path', () => {
      const missing = join(tmpdir(), 'no-such-workflows.ts');
      expect(() => plugin.configureWorker({ taskQueue: 'q', workflowsPath: missing })).toThrow(
        expect.objectContaining({ name: 'WorkflowsPathError', workflowsPath: missing }),
      );
    });
  },
);
