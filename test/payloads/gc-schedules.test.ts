// Payloads in a schedule's action. A client with the store on stores a schedule's workflow
// arguments like any other payload: the schedule keeps claims, and each run it starts copies them
// into its history. gc marks from histories and from schedules, so a schedule that has not fired
// within the grace period (or whose runs are past retention) still starts runs that can read their
// input; a schedule gc cannot describe stops it before anything is removed. On the dev server, in
// a namespace of the test's own.
import { randomBytes } from 'node:crypto';
import { readdirSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { collectGarbage, totalOf } from '../../src/payloads/gc.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import { collectRetainedClaims } from '../../src/payloads/retained-claims.js';
import { temporaryDirectory } from '../support/cleanup.js';
import { ownNamespace } from '../support/namespace.js';
import { bundleWorkflows, testConnection, uniqueId, type TestConnection } from '../support/temporal.js';
import type { EchoValue, StoreTestActivities, storeEcho } from '../../corpus/store-workflows.js';

const HOUR = 3_600_000;

function ageAll(directory: string, hours: number): void {
  const then = new Date(Date.now() - hours * HOUR);
  for (const entry of readdirSync(directory, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) utimesSync(join(entry.parentPath, entry.name), then, then);
}

let t: TestConnection;
let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  t = await testConnection();
  bundle = await bundleWorkflows(new URL('../../corpus/store-workflows.ts', import.meta.url));
});

describe('gc and schedules', () => {
  it(
    'keeps what a schedule action claims, so the run it starts after the grace period reads its input',
    { timeout: 180_000 },
    async () => {
      const directory = temporaryDirectory('compactor-gc-schedules-');
      const env = {
        COMPACTOR_PAYLOAD_STORE: `file:${directory}`,
        COMPACTOR_CODEC_KEY: randomBytes(32).toString('base64'),
      };
      const payloads = payloadConverterFromConfig(loadConfig({ env }));
      if (payloads.driver === undefined) throw new Error('no store');
      const namespace = await ownNamespace(t.connection, 'ns-gc-schedules');
      const client = new Client({ connection: t.connection, namespace, dataConverter: payloads.dataConverter });
      const taskQueue = uniqueId('tq-gc-schedules');
      const value: EchoValue = {
        text: `scheduled ${randomBytes(16).toString('hex')} `.repeat(2_000),
        note: 'scheduled',
      };
      const scheduleId = uniqueId('schedule');
      // Paused, with a spec far apart: it runs only when triggered below.
      const schedule = await client.schedule.create({
        scheduleId,
        spec: { intervals: [{ every: '365 days' }] },
        state: { paused: true },
        action: { type: 'startWorkflow', workflowType: 'storeEcho', taskQueue, args: [value] },
      });
      expect(readdirSync(directory).length).toBeGreaterThan(0);
      // Everything the schedule's client stored is older than the grace period; no run exists yet.
      ageAll(directory, 72);

      // Schedules are listed through visibility, which may lag a moment behind.
      await expect.poll(async () => (await collectRetainedClaims({ clients: [client] })).schedules).toBe(1);
      const retained = await collectRetainedClaims({ clients: [client] });
      expect(retained.manifests.size).toBe(1); // the argument
      const report = await collectGarbage({ driver: payloads.driver, claimedManifests: retained.manifests });
      expect(totalOf(report.deleted).objects).toBe(0);
      expect(report.missingCount).toBe(0);

      // The schedule fires: its run reads the argument the schedule holds.
      const activities: StoreTestActivities = {
        echo: async (echoed: EchoValue) => echoed,
        incompressible: async (bytes: number) => new Uint8Array(bytes),
      };
      const worker = await Worker.create({
        connection: t.nativeConnection,
        namespace,
        taskQueue,
        workflowBundle: bundle,
        activities,
        dataConverter: payloads.dataConverter,
      });
      await worker.runUntil(async () => {
        await schedule.trigger();
        const described = await expect
          .poll(async () => (await schedule.describe()).info.recentActions.length, { timeout: 60_000 })
          .toBeGreaterThan(0)
          .then(() => schedule.describe());
        const started = described.info.recentActions[0]?.action.workflow;
        if (started === undefined) throw new Error('the schedule started nothing');
        const result = await client.workflow.getHandle<typeof storeEcho>(started.workflowId).result();
        expect(result).toEqual({ ...value, length: value.text.length });
      });
      await schedule.delete();
    },
  );
});

describe('gc and a schedule it cannot describe', () => {
  it('stops before removing anything, naming the schedule', async () => {
    // The namespace's one schedule cannot be described (the server failed the query): a client
    // whose service answers so.
    const service = {
      listSchedules: async () => ({ schedules: [{ scheduleId: 'nightly' }], nextPageToken: new Uint8Array(0) }),
      describeSchedule: async () => {
        throw new Error('9 FAILED_PRECONDITION: Unable to query workflow due to Workflow Task in failed state.');
      },
    };
    const client = { options: { namespace: 'ns-x' }, workflowService: service } as unknown as Client;
    await expect(collectRetainedClaims({ clients: [client] })).rejects.toThrow(
      /^schedule "nightly" of namespace ns-x cannot be described, so what its action claims is unknown; nothing was removed/,
    );
  });
});
