// Helpers for agentRun tests: the test corpus (the repository set, plus the extended corpus when
// present) as a trajectory directory for the replay provider, a worker's activities for replayed
// runs, and a deterministic summarizer.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Worker, type WorkerOptions, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import OpenAI from 'openai';
import { afterEach, beforeEach } from 'vitest';
import { createTrajectoryDir, findTrajectory, TRAJECTORY_DIR_ENV } from '../../corpus/index.js';
import { createActivities, type ActivityDeps } from '../../src/activities/index.js';
import {
  compactionRecordsFromSession,
  type CompactionHistory,
  type CompactionRecord,
} from '../../src/core/agent/compaction-history.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { requestCounter } from '../../src/core/agent/preflight.js';
import type { SessionLine } from '../../src/core/agent/session.js';
import { openingMessages } from '../../src/core/agent/trajectory.js';
import type { ChatMessage } from '../../src/core/types.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import {
  agentRunQueries,
  agentRun,
  type AgentRunResult,
  type AgentRunWorkflowInput,
} from '../../src/workflows/agent-run.js';
import { compactorPlugin, type CompactorPlugin, type CompactorPluginOptions } from '../../src/worker/plugin.js';
import { registerCleanup } from './cleanup.js';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai.js';
import { uniqueId, type TestConnection } from './temporal.js';

let ownDir: string | undefined;
/**
 * The directory the replay provider loads the test corpus from: the global setup's, else (a
 * process started without it) one written on first use and removed when the process exits.
 */
export function trajectoryDir(): string {
  const shared = process.env[TRAJECTORY_DIR_ENV];
  if (shared !== undefined && shared !== '') return shared;
  if (ownDir === undefined) {
    const created = createTrajectoryDir();
    process.once('exit', created.remove);
    ownDir = created.dir;
  }
  return ownDir;
}

/** A trajectory of the test corpus by name (see `findTrajectory`). */
export function loadTrajectory(name: string): ChatMessage[] {
  return findTrajectory(name).messages;
}

/** What a replayed run starts from: the trajectory's messages before its first assistant turn. */
export function openingOf(name: string): ChatMessage[] {
  return openingMessages(loadTrajectory(name));
}

/** Activities for replayed runs: the built-in extractive summarizer (deterministic) and the test corpus as trajectory directory. */
export function replayActivities(deps: Partial<ActivityDeps> = {}) {
  return createActivities({ summarizer: createExtractiveSummarizer(), trajectoryDir: trajectoryDir(), ...deps });
}

/** Counts like the replay provider bills (o200k BPE, no tools): what windows in tests are measured in. */
export function replayTokens(messages: readonly ChatMessage[]): number {
  return requestCounter('o200k_base', []).count(messages);
}

/** A worker polling `t.taskQueue` in the background for a whole test file; `stop()` shuts it down and waits. */
export async function startBackgroundWorker(
  t: TestConnection,
  options: Omit<WorkerOptions, 'connection' | 'namespace' | 'taskQueue'>,
): Promise<{ worker: Worker; stop: () => Promise<void> }> {
  const worker = await Worker.create({
    connection: t.nativeConnection,
    namespace: t.namespace,
    taskQueue: t.taskQueue,
    ...options,
  });
  const running = worker.run();
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (!stopped) {
      stopped = true;
      worker.shutdown();
    }
    await running;
  };
  registerCleanup(stop);
  return { worker, stop };
}

/** How a run ended, with what the workflow held at the end (read by query when it failed). */
export interface AgentOutcome {
  status: 'completed' | 'failed';
  failureType?: string;
  failureMessage?: string;
  messages: ChatMessage[];
  /** The whole transcript, read back from the run's histories (`readSessionLines`). */
  session: SessionLine[];
  /** Every compaction, rebuilt from the transcript. */
  compactions: CompactionRecord[];
  /** What the run itself kept: totals and recent records (its result, or the `compactions` query). */
  history: CompactionHistory;
  rounds?: number;
  result?: AgentRunResult;
}

/** The ApplicationFailure type at the bottom of a workflow failure, if any. */
export function failureTypeOf(error: unknown): { type?: string; message: string } {
  let cause: unknown = error;
  while (cause instanceof Error) {
    if (cause instanceof ApplicationFailure) return { type: cause.type ?? undefined, message: cause.message };
    cause = cause.cause;
  }
  return { message: error instanceof Error ? error.message : String(error) };
}

/** Runs agentRun to its end; a failed run's transcript and conversation are read by query (a worker must be polling). */
export async function runAgent(
  t: TestConnection,
  input: AgentRunWorkflowInput,
  workflowId = uniqueId('agent'),
  start: { staticSummary?: string; staticDetails?: string } = {},
): Promise<AgentOutcome> {
  const handle = await t.client.workflow.start(agentRun, {
    taskQueue: t.taskQueue,
    workflowId,
    args: [input],
    ...start,
  });
  try {
    const result = await handle.result();
    const session = await readSessionLines(t.client, result.session);
    return {
      status: 'completed',
      messages: result.messages,
      session,
      compactions: compactionRecordsFromSession(session),
      history: result.compactions,
      rounds: result.rounds,
      result,
    };
  } catch (error) {
    if (!(error instanceof WorkflowFailedError)) throw error;
    const failure = failureTypeOf(error);
    // A query on a closed run replays its last history on a worker: under load that can take a while, so retry.
    const query = async <T>(run: () => Promise<T>): Promise<T> => {
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await run();
        } catch (queryError) {
          if (attempt >= 4) throw queryError;
        }
      }
    };
    const messages = await query(() => handle.query(agentRunQueries.conversation));
    const history = await query(() => handle.query(agentRunQueries.compactions));
    // A failed run recorded its whole transcript before failing: the histories hold every line.
    const session = await readSessionLines(t.client, workflowId);
    return {
      status: 'failed',
      failureType: failure.type,
      failureMessage: failure.message,
      messages,
      session,
      compactions: compactionRecordsFromSession(session),
      history,
    };
  }
}

/**
 * Runs `agentRun` to its end on a worker and a client set up as a user's would be, with
 * `compactorPlugin(plugin)` alone (the extractive summarizer unless `plugin` names one), on `t`'s
 * task queue. Returns the result, the plugin's client (it reads claims from the store) and the plugin.
 */
export async function runAgentThroughPlugin(
  t: TestConnection,
  options: {
    workflowBundle: WorkflowBundleWithSourceMap;
    plugin: CompactorPluginOptions;
    input: AgentRunWorkflowInput;
    workflowId: string;
  },
): Promise<{ result: AgentRunResult; client: Client; plugin: CompactorPlugin }> {
  const plugin = compactorPlugin({ summarizer: createExtractiveSummarizer(), ...options.plugin });
  const worker = await Worker.create({
    connection: t.nativeConnection,
    namespace: t.namespace,
    taskQueue: t.taskQueue,
    workflowBundle: options.workflowBundle,
    plugins: [plugin],
  });
  const client = new Client({ connection: t.connection, namespace: t.namespace, plugins: [plugin] });
  const result = await worker.runUntil(() =>
    client.workflow.execute(agentRun, {
      taskQueue: t.taskQueue,
      workflowId: options.workflowId,
      args: [options.input],
    }),
  );
  return { result, client, plugin };
}

/**
 * For each test of the calling `describe`: a fake OpenAI-compatible model server and a tool root
 * holding `files`, both gone after the test; `activities()` is a worker's activities over the two.
 */
export function fakeModelAndToolRoot(prefix: string, files: Readonly<Record<string, string>>) {
  let server: FakeOpenAI | undefined;
  let root: string | undefined;
  beforeEach(async () => {
    server = await startFakeOpenAI();
    root = mkdtempSync(join(tmpdir(), prefix));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
  });
  afterEach(async () => {
    await server?.close();
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
  });
  const world = {
    get server(): FakeOpenAI {
      if (server === undefined) throw new Error('fakeModelAndToolRoot: no server outside a test');
      return server;
    },
    get root(): string {
      if (root === undefined) throw new Error('fakeModelAndToolRoot: no tool root outside a test');
      return root;
    },
    activities: () =>
      replayActivities({
        openai: new OpenAI({ baseURL: world.server.baseURL, apiKey: 'test-key', maxRetries: 0 }),
        toolsRoot: world.root,
      }),
  };
  return world;
}
