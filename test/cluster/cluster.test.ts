// The self-hosted path, proven on a real cluster: startCluster() (scripts/cluster) brings up three
// temporal-server nodes on PostgreSQL, and an agentRun through the cluster's frontend ends with the
// same result as an undisturbed run although the node owning the run's history shard is SIGKILLed
// in the middle of it.
//
// Not part of `npm test` (building the server takes minutes the first time): `npm run test:cluster`
// (vitest.cluster.config.ts). .ci/run builds the binaries first and runs it after `npm test`.
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { defineSearchAttributeKey } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClusterStartError,
  CLUSTER_NODE_COUNT,
  describeCluster,
  SERVER_SERVICES,
  startCluster,
  type Cluster,
} from '../../scripts/cluster/index.js';
import { createActivities } from '../../src/activities/index.js';
import { replaySession } from '../../src/core/agent/session.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { openingMessages } from '../../src/core/agent/trajectory.js';
import type { ChatMessage } from '../../src/core/types.js';
import { DEMO_CONTEXT_WINDOW, DEMO_MAX_OUTPUT_TOKENS, DEMO_TRAJECTORY, installQuietRuntime } from '../../dev/demo.js';
import { COMPACTOR_SEARCH_ATTRIBUTES, searchAttributeTypeName } from '../../dev/dev-server.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { workflowCode } from '../../src/worker/create-worker.js';
import { agentRun, type AgentRunResult, type AgentRunWorkflowInput } from '../../src/workflows/agent-run.js';

const TRAJECTORY_DIR = fileURLToPath(new URL('../../examples/trajectories/', import.meta.url));
const log = (line: string): void => void process.stderr.write(`[cluster] ${line}\n`);

/** A data directory the `postgres` user can reach when the tests run as root. */
function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

function demoInput(): AgentRunWorkflowInput {
  const opening: ChatMessage[] = openingMessages(
    JSON.parse(readFileSync(join(TRAJECTORY_DIR, `${DEMO_TRAJECTORY}.json`), 'utf8')),
  );
  return {
    messages: opening,
    model: {
      provider: 'replay',
      trajectory: DEMO_TRAJECTORY,
      contextWindow: DEMO_CONTEXT_WINDOW,
      maxOutputTokens: DEMO_MAX_OUTPUT_TOKENS,
    },
    compaction: { ageObservations: true, ageMinChars: 1000, ageReclaimMin: 4000 },
    maxRounds: 1000,
  };
}

/** `chat` activities scheduled so far in the run's history: its rounds. */
async function roundsScheduled(handle: WorkflowHandle): Promise<number> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'chat',
  ).length;
}

describe('a three-node Temporal cluster on PostgreSQL (scripts/cluster)', () => {
  let cluster: Cluster;
  let dataDir: string;
  let connection: Connection;
  let nativeConnection: NativeConnection;
  let client: Client;
  let worker: Worker;
  let workerRun: Promise<void>;
  const taskQueue = `cluster-test-${Date.now().toString(36)}`;

  beforeAll(async () => {
    installQuietRuntime();
    dataDir = scratchDir('compactor-cluster-');
    cluster = await startCluster({ dataDir, ui: true, log });
    connection = await Connection.connect({ address: cluster.address });
    nativeConnection = await NativeConnection.connect({ address: cluster.address });
    client = new Client({ connection, namespace: cluster.namespace });
    worker = await Worker.create({
      connection: nativeConnection,
      namespace: cluster.namespace,
      taskQueue,
      ...workflowCode({}),
      activities: createActivities({ summarizer: createExtractiveSummarizer(), trajectoryDir: TRAJECTORY_DIR }),
    });
    workerRun = worker.run();
  });

  afterAll(async () => {
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await workerRun?.catch(() => undefined);
    await nativeConnection?.close();
    await connection?.close();
    const pids = cluster?.nodes.map((node) => node.pid()).filter((pid) => pid !== undefined) ?? [];
    await cluster?.stop();
    // stop() leaves no server node behind
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
    expect(cluster?.postgres.running()).toBe(false);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('has every node in all four membership rings, as every node sees it', async () => {
    expect(cluster.nodes).toHaveLength(CLUSTER_NODE_COUNT);
    const frontends = cluster.nodes.map((node) => node.frontendAddress).sort();
    const historyHosts = cluster.nodes.map((node) => node.historyAddress).sort();
    for (const node of cluster.nodes) {
      const view = await describeCluster(node.frontendAddress);
      expect(view.serverVersion).toBe(cluster.versions.server.replace(/^v/, ''));
      expect(view.rings.map((ring) => ring.role).sort()).toEqual([...SERVER_SERVICES].sort());
      for (const ring of view.rings) expect(ring.memberCount, `${node.name} ${ring.role}`).toBe(CLUSTER_NODE_COUNT);
      expect(view.rings.find((ring) => ring.role === 'frontend')?.members.sort()).toEqual(frontends);
      expect(view.rings.find((ring) => ring.role === 'history')?.members.sort()).toEqual(historyHosts);
    }
  });

  it('registered the namespace and our search attributes, with their types, on every node', async () => {
    for (const node of cluster.nodes) {
      const nodeConnection = await Connection.connect({ address: node.frontendAddress });
      try {
        const { customAttributes } = await nodeConnection.operatorService.listSearchAttributes({
          namespace: cluster.namespace,
        });
        const types = Object.fromEntries(
          Object.entries(customAttributes ?? {}).map(([name, type]) => [name, searchAttributeTypeName(Number(type))]),
        );
        expect(types, node.name).toMatchObject(COMPACTOR_SEARCH_ATTRIBUTES);
      } finally {
        await nodeConnection.close();
      }
    }
  });

  it('serves the Temporal UI, which reads the namespace and its search attributes through the cluster', async () => {
    const uiUrl = cluster.uiUrl;
    if (uiUrl === undefined) throw new Error('started with ui: true, but there is no UI');
    const page = await fetch(`${uiUrl}/namespaces/${cluster.namespace}/workflows`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<html/i);
    const attributes: unknown = await (
      await fetch(`${uiUrl}/api/v1/namespaces/${cluster.namespace}/search-attributes`)
    ).json();
    expect(attributes).toMatchObject({
      customAttributes: {
        CompactionCount: 'INDEXED_VALUE_TYPE_INT',
        ContextTokens: 'INDEXED_VALUE_TYPE_INT',
        CompactionFallbacks: 'INDEXED_VALUE_TYPE_INT',
        ContextExhausted: 'INDEXED_VALUE_TYPE_BOOL',
        CompactionPending: 'INDEXED_VALUE_TYPE_BOOL',
      },
    });
  });

  it('finishes an agentRun with the undisturbed result when the node owning its history shard is SIGKILLed mid-run', async () => {
    const input = demoInput();
    const reference: AgentRunResult = await client.workflow.execute(agentRun, {
      taskQueue,
      workflowId: `${taskQueue}-reference`,
      args: [input],
    });
    expect(reference.stopReason).toBe('completed');
    expect(reference.compactions.totals.compactions).toBeGreaterThan(0);

    const handle = await client.workflow.start(agentRun, {
      taskQueue,
      workflowId: `${taskQueue}-disturbed`,
      args: [input],
    });
    const killAfterRounds = Math.floor(reference.rounds / 3);
    for (;;) {
      const rounds = await roundsScheduled(handle);
      expect(rounds, 'the run finished before the node could be killed').toBeLessThan(reference.rounds);
      if (rounds >= killAfterRounds) break;
      await sleep(200);
    }
    const owner = await cluster.shardOwner(handle.workflowId);
    const victim = owner.node;
    if (victim === undefined) throw new Error(`no node has the shard owner's history address ${owner.historyAddress}`);
    const killedAt = Date.now();
    log(
      `SIGKILL ${victim.name} (owner of history shard ${owner.shardId}) after ${await roundsScheduled(handle)} of ${reference.rounds} rounds`,
    );
    await victim.kill('SIGKILL');
    expect(victim.running()).toBe(false);

    const result: AgentRunResult = await handle.result();
    log(`the run completed ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
    expect(result.stopReason).toBe('completed');
    expect(result.rounds).toBe(reference.rounds);
    expect(result.messages).toEqual(reference.messages);
    expect(result.compactions).toEqual(reference.compactions);
    const lines = await readSessionLines(client, result.session);
    expect(lines).toEqual(await readSessionLines(client, reference.session));
    expect(replaySession(lines)).toEqual(result.messages);

    // The shard moved to a live node, and the others agree the victim is gone.
    const moved = await cluster.shardOwner(handle.workflowId);
    expect(moved.node?.running()).toBe(true);
    expect(moved.node?.name).not.toBe(victim.name);
    const views = await cluster.waitForMembership({ expected: CLUSTER_NODE_COUNT - 1 });
    for (const view of views) for (const ring of view.rings) expect(ring.members).not.toContain(victim.frontendAddress);

    // Search attributes were upserted and are queryable through SQL visibility.
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(defineSearchAttributeKey('CompactionCount', 'INT'))).toBe(
      reference.compactions.totals.compactions,
    );
    let listed: string[] = [];
    for (let attempt = 0; attempt < 50 && listed.length === 0; attempt++) {
      listed = [];
      for await (const execution of client.workflow.list({
        query: `WorkflowId = '${handle.workflowId}' AND CompactionCount >= 1`,
      }))
        listed.push(execution.workflowId);
      if (listed.length === 0) await sleep(200);
    }
    expect(listed).toEqual([handle.workflowId]);
  });

  it('takes the killed node back: restarted, it rejoins every ring', async () => {
    const stopped = cluster.nodes.filter((node) => !node.running());
    expect(stopped).toHaveLength(1);
    await stopped[0]?.start();
    const views = await cluster.waitForMembership({ expected: CLUSTER_NODE_COUNT });
    expect(views).toHaveLength(CLUSTER_NODE_COUNT);
  });
});

describe('startCluster failures', () => {
  let blocker: Server | undefined;
  afterAll(() => blocker?.close());

  it('names the step that failed, what was done before it, and stops what it had started', async () => {
    // Take the port the frontend balancer is told to use: PostgreSQL and the schema succeed first.
    blocker = createServer();
    const port = await new Promise<number>((resolve) => {
      blocker?.listen(0, '127.0.0.1', () => {
        const address = blocker?.address();
        resolve(typeof address === 'object' && address !== null ? address.port : 0);
      });
    });
    const dataDir = scratchDir('compactor-cluster-fail-');
    try {
      const failure = await startCluster({ dataDir, ui: false, frontendPort: port, log }).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (!(failure instanceof ClusterStartError))
        throw new Error(`expected a ClusterStartError, got ${String(failure)}`);
      const error = failure;
      expect(error.step).toBe('frontend balancer');
      expect(error.completed).toEqual(['binaries', 'postgres', 'schema']);
      expect(error.message).toMatch(/EADDRINUSE/);
      // PostgreSQL was stopped and its data removed.
      expect(readdirSync(dataDir)).not.toContain('postgres');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
