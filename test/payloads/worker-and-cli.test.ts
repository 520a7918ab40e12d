// The worker process and the CLI configured only by their environment (COMPACTOR_PAYLOAD_STORE,
// COMPACTOR_CODEC_KEY): a client from the CLI's connectClient starts an agentRun that the worker
// process runs, the history holds claims and encrypted payloads only, and the CLI's `session`
// command reads the transcript back through the same store and key.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, main } from '../../src/cli/main.js';
import { agentRun } from '../../src/index.js';
import { parseSessionJsonl } from '../../src/core/agent/session.js';
import { openingMessages } from '../../src/core/agent/trajectory.js';
import { codecEnvelopeOf, payloadProtoSize } from '../../src/payloads/codec.js';
import { claimOf, historyPayloads, isSdkMetadata } from '../support/history-payloads.js';
import { testConnection, uniqueId } from '../support/temporal.js';
import {
  killWorkerProcesses,
  spawnWorkerProcess,
  writeProductionBundle,
  type WorkerProcess,
} from '../support/worker-process.js';

const TRAJECTORY = 'openhands_gpt4o_Project-MONAI__MONAI-3715';
const trajectoryDir = fileURLToPath(new URL('../../examples/trajectories/', import.meta.url));

describe('worker process and CLI with the payload store and a codec key', () => {
  let bundle: Awaited<ReturnType<typeof writeProductionBundle>>;
  let storeDirectory: string;
  const spawned: WorkerProcess[] = [];
  beforeAll(async () => {
    bundle = await writeProductionBundle('compactor-store-worker-');
    storeDirectory = mkdtempSync(join(tmpdir(), 'compactor-store-cli-'));
  });
  afterAll(() => {
    killWorkerProcesses(spawned);
    bundle.remove();
    rmSync(storeDirectory, { recursive: true, force: true });
  });

  it('agree: the CLI reads what the worker stored, and history holds nothing in the clear', async () => {
    const t = await testConnection();
    const env = {
      TEMPORAL_ADDRESS: t.address,
      TEMPORAL_NAMESPACE: t.namespace,
      COMPACTOR_TASK_QUEUE: t.taskQueue,
      COMPACTOR_WORKFLOW_BUNDLE: bundle.bundlePath,
      COMPACTOR_TRAJECTORY_DIR: trajectoryDir,
      COMPACTOR_PAYLOAD_STORE: `file:${storeDirectory}`,
      COMPACTOR_CODEC_KEY: randomBytes(32).toString('base64'),
      COMPACTOR_CODEC_KEY_ID: 'cli-test',
    };
    const worker = spawnWorkerProcess('src/worker/create-worker.ts', env);
    spawned.push(worker);
    const deadline = Date.now() + 60_000;
    while (!/polling task queue/.test(worker.output())) {
      if (worker.child.exitCode !== null || Date.now() > deadline)
        throw new Error(`the worker did not start:\n${worker.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(worker.output()).toContain(
      `payload store file:${storeDirectory} (payloads of 256 B and more), codec deflate + AES-256-GCM (key id cli-test)`,
    );

    const { client, close } = await connectClient(env, {});
    const workflowId = uniqueId('store-cli');
    const opening = openingMessages(JSON.parse(readFileSync(join(trajectoryDir, `${TRAJECTORY}.json`), 'utf8')));
    try {
      const result = await client.workflow.execute(agentRun, {
        taskQueue: t.taskQueue,
        workflowId,
        args: [
          {
            messages: opening,
            model: { provider: 'replay', trajectory: TRAJECTORY, contextWindow: 9_000, maxOutputTokens: 1_000 },
            compaction: { ageObservations: true },
            maxRounds: 8,
          },
        ],
      });
      expect(result.rounds).toBe(8);
    } finally {
      await close();
    }

    const events =
      (
        await t.connection.workflowService.getWorkflowExecutionHistory({
          namespace: t.namespace,
          execution: { workflowId },
        })
      ).history?.events ?? [];
    const payloads = historyPayloads(events, payloadProtoSize).filter((found) => !isSdkMetadata(found));
    expect(payloads.filter((found) => claimOf(found.payload) !== undefined).length).toBeGreaterThan(3);
    for (const found of payloads)
      expect(
        claimOf(found.payload) !== undefined || codecEnvelopeOf(found.payload)?.keyId === 'cli-test',
        found.path,
      ).toBe(true);

    let out = '';
    const io = { stdout: (text: string) => (out += text), stderr: (text: string) => (out += text), env };
    expect(await main(['session', workflowId, '--jsonl'], io)).toBe(0);
    const lines = parseSessionJsonl(out);
    expect(lines.length).toBeGreaterThan(opening.length);
    expect(JSON.stringify(lines)).toContain(JSON.stringify(opening[1]?.content).slice(1, 60));

    // Without the store the run used, each command names the setting to give (regression: the SDK's
    // "Unexpected error while making gRPC request").
    const { COMPACTOR_PAYLOAD_STORE: _store, ...withoutStore } = env;
    for (const command of ['session', 'history']) {
      let said = '';
      const record = (text: string) => (said += text);
      const code = await main([command, workflowId], { stdout: record, stderr: record, env: withoutStore });
      expect(said).toMatch(
        new RegExp(
          `^temporal-compactor ${command}: configuration error: the run's payloads are in a payload store .* (this command|the client reading run .*) was given none: set COMPACTOR_PAYLOAD_STORE to the store the run's worker uses`,
        ),
      );
      expect(said).not.toContain('Unexpected error');
      expect(code).toBe(2);
    }
  }, 120_000);
});
