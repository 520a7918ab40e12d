// What the payload store's garbage collector keeps, on the dev server with real runs in a namespace
// of their own: the claims of a live run and of a retained closed run survive however old their
// objects are; objects only reachable from a deleted run's payloads or from a payload that never
// reached a history go once older than the grace period; young objects stay. On the file backend
// (objects aged by their modification time, the CLI's dry run and its defaults), and on S3 (moto).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, isGrpcServiceError } from '@temporalio/client';
import { defaultPayloadConverter, StorageDriverClaim } from '@temporalio/common';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Server, type S3TestServer } from '../../scripts/s3-test-server.js';
import { loadConfig } from '../../src/config.js';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { claimDataFor, claimManifestId } from '../../src/payloads/claims.js';
import { objectKey } from '../../src/payloads/object-format.js';
import { payloadConverterFromConfig, type ConfiguredPayloads } from '../../src/payloads/index.js';
import { payloadProtoSize } from '../../src/payloads/codec.js';
import { type ObjectBackend } from '../../src/payloads/object-backend.js';
import { collectGarbage, DEFAULT_GC_GRACE_MS, totalOf, type GarbageReport } from '../../src/payloads/gc.js';
import { collectRetainedClaims } from '../../src/payloads/retained-claims.js';
import { sealObject, objectId } from '../../src/payloads/sealed-object.js';
import { historyEvents } from '../../src/client/session-reader.js';
import { runCli } from '../support/cli-process.js';
import { claimOf, historyPayloads } from '../support/history-payloads.js';
import { ownNamespace } from '../support/namespace.js';
import { bundleWorkflows, testConnection, uniqueId, type TestConnection } from '../support/temporal.js';
import type { EchoValue, StoreTestActivities, storeEcho } from '../../corpus/store-workflows.js';

const HOUR = 3_600_000;
const directories: string[] = [];
afterAll(() => directories.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

let t: TestConnection;
let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  t = await testConnection();
  bundle = await bundleWorkflows(new URL('../../corpus/store-workflows.ts', import.meta.url));
});

/** Distinct text per run (a seed word mixed in everywhere), so runs share no chunk of content. */
function prose(seed: string, length: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let index = 0; size < length; index += 1) {
    const word = `${seed}-${(index * 7919).toString(36)} `;
    parts.push(word);
    size += word.length;
  }
  return parts.join('').slice(0, length);
}

/** Manifest ids claimed anywhere in a run's history, read as the server holds it. */
async function claimedBy(client: Client, workflowId: string): Promise<string[]> {
  const { runId } = await client.workflow.getHandle(workflowId).describe();
  const events = [];
  for await (const event of historyEvents(client, workflowId, runId)) events.push(event);
  return historyPayloads(events, payloadProtoSize).flatMap((found) => {
    const claim = claimOf(found.payload);
    return claim === undefined ? [] : (claimManifestId(claim.claimData) ?? []);
  });
}

/** Every object key reachable from these manifests. */
async function reachable(driver: ChunkStoreDriver, manifests: Iterable<string>): Promise<Set<string>> {
  const keys = new Set<string>();
  const queue: Array<{ kind: 'manifest' | 'node' | 'chunk'; id: string }> = [...manifests].map((id) => ({
    kind: 'manifest' as const,
    id,
  }));
  for (let item = queue.pop(); item !== undefined; item = queue.pop()) {
    const key = objectKey(item.kind, item.id);
    if (keys.has(key)) continue;
    keys.add(key);
    // A manifest's base manifest is reachable with everything under it; a chunk lists the chunk it was deflated against.
    for (const child of (await driver.reader.inspect(item.kind, item.id)).children)
      queue.push({ kind: child.kind, id: child.id });
  }
  return keys;
}

async function present(backend: ObjectBackend, keys: Iterable<string>): Promise<string[]> {
  const found: string[] = [];
  for (const key of keys) if ((await backend.stat(key)) !== undefined) found.push(key);
  return found;
}

interface Scenario {
  namespace: string;
  payloads: ConfiguredPayloads;
  driver: ChunkStoreDriver;
  /** Objects of the live and the closed run, of a young stored payload, and a young lone chunk: must stay. */
  kept: Set<string>;
  /** Objects only the deleted run and the never-recorded payload reach: must go. */
  garbage: Set<string>;
  youngChunk: string;
  /** Date.now() just before the young objects were written: everything older was written before `age()`. */
  youngAt: number;
  liveClaims: string[];
  closedClaims: string[];
  /** Lets the live run's activity finish; resolves with the run's result. */
  finishLiveRun(): Promise<unknown>;
  stopWorker(): Promise<void>;
}

/**
 * Runs, in a fresh namespace with the store `env` configures: a closed run, a live run (its activity
 * waits), a run then deleted, and a payload stored that no history records; then `age()` makes
 * all of that older than the grace period; then a young payload and a young lone chunk are written.
 */
async function scenario(
  env: Record<string, string>,
  age: () => Promise<void>,
  s3ClientConfig?: S3TestServer['clientConfig'],
): Promise<Scenario> {
  // A namespace of this test's own: the collector reads every history of the namespaces it is given.
  const namespace = await ownNamespace(t.connection, 'ns-gc');
  const payloads = payloadConverterFromConfig(loadConfig({ env }), { s3ClientConfig });
  const driver = payloads.driver;
  if (driver === undefined) throw new Error('no store configured');
  const client = new Client({ connection: t.connection, namespace, dataConverter: payloads.dataConverter });
  const taskQueue = uniqueId('tq-gc');
  let releaseLive: () => void = () => undefined;
  const liveMayFinish = new Promise<void>((resolve) => (releaseLive = resolve));
  let liveStarted: () => void = () => undefined;
  const liveActivityStarted = new Promise<void>((resolve) => (liveStarted = resolve));
  const activities: StoreTestActivities = {
    echo: async (value: EchoValue) => {
      if (value.note === 'live') {
        liveStarted();
        await liveMayFinish;
      }
      return value;
    },
    incompressible: async (bytes: number) => new Uint8Array(randomBytes(bytes)),
  };
  const worker = await Worker.create({
    connection: t.nativeConnection,
    namespace,
    taskQueue,
    workflowBundle: bundle,
    activities,
    dataConverter: payloads.dataConverter,
  });
  const running = worker.run();
  const echo = (note: string) => ({
    taskQueue,
    workflowId: uniqueId(`gc-${note}`),
    args: [{ text: prose(note, 30_000), note }] as [EchoValue],
  });

  const closed = echo('closed');
  await client.workflow.execute<typeof storeEcho>('storeEcho', closed);
  // The live run before the deleted one: a manifest is deflated against the one
  // stored before it, which it keeps (gc follows contexts), so a run stored after the deleted one
  // would keep the deleted run's objects.
  const live = echo('live');
  const liveHandle = await client.workflow.start<typeof storeEcho>('storeEcho', live);
  await liveActivityStarted;
  const deleted = echo('deleted');
  await client.workflow.execute<typeof storeEcho>('storeEcho', deleted);
  const deletedClaims = await claimedBy(client, deleted.workflowId);
  await client.workflowService.deleteWorkflowExecution({
    namespace,
    workflowExecution: { workflowId: deleted.workflowId },
  });
  // The server deletes in the background (seconds; longer on a busy machine).
  await expect
    .poll(
      async () => {
        try {
          await client.workflowService.getWorkflowExecutionHistory({
            namespace,
            execution: { workflowId: deleted.workflowId },
          });
          return 'still there';
        } catch (error) {
          return isGrpcServiceError(error) ? error.code : String(error);
        }
      },
      { timeout: 120_000, interval: 500 },
    )
    .toBe(5);
  const [neverRecorded] = await driver.store({}, [
    defaultPayloadConverter.toPayload({ text: prose('never-recorded', 30_000) }) ?? {},
  ]);
  if (neverRecorded === undefined) throw new Error('no claim');

  const liveClaims = await claimedBy(client, live.workflowId);
  const closedClaims = await claimedBy(client, closed.workflowId);
  expect(liveClaims.length).toBeGreaterThanOrEqual(2); // the run's input and the activity's input
  expect(closedClaims.length).toBeGreaterThanOrEqual(4);
  // The collector finds runs through visibility: wait until both are listed.
  await expect
    .poll(
      async () => {
        const listed: string[] = [];
        for await (const execution of client.workflow.list({ query: '' })) listed.push(execution.workflowId);
        return [live.workflowId, closed.workflowId].every((id) => listed.includes(id));
      },
      { timeout: 30_000 },
    )
    .toBe(true);

  await age();
  const youngAt = Date.now();
  // Young: a payload stored by a driver that has seen nothing yet, and one chunk on its own (a store in progress).
  const freshDriver = new ChunkStoreDriver({ backend: driver.backend, keyring: driver.keyring });
  const [young] = await freshDriver.store({}, [
    defaultPayloadConverter.toPayload({ text: prose('young', 30_000) }) ?? {},
  ]);
  if (young === undefined) throw new Error('no claim');
  const lone = Buffer.from(`a lone chunk ${randomBytes(8).toString('hex')}`);
  const loneId = objectId(lone, driver.keyring?.current);
  const youngChunk = objectKey('chunk', loneId);
  await driver.backend.put(youngChunk, sealObject(lone, driver.keyring?.current).sealed);

  const kept = await reachable(driver, [...liveClaims, ...closedClaims, claimManifestId(young.claimData) ?? '']);
  kept.add(youngChunk);
  const garbage = new Set(
    [...(await reachable(driver, [...deletedClaims, claimManifestId(neverRecorded.claimData) ?? '']))].filter(
      (key) => !kept.has(key),
    ),
  );
  expect(garbage.size).toBeGreaterThan(4);
  return {
    namespace,
    payloads,
    driver,
    kept,
    garbage,
    youngChunk,
    youngAt,
    liveClaims,
    closedClaims,
    finishLiveRun: async () => {
      releaseLive();
      return liveHandle.result();
    },
    stopWorker: async () => {
      // A failed test must not leave the live activity waiting: shutdown would wait for it.
      releaseLive();
      worker.shutdown();
      await running;
    },
  };
}

/** What the collector left: kept objects all there (and the live and closed claims resolve), garbage all gone. */
async function expectCollected(s: Scenario, report: GarbageReport): Promise<void> {
  const backend = s.driver.backend;
  expect(await present(backend, s.kept)).toHaveLength(s.kept.size);
  expect(await present(backend, s.garbage)).toEqual([]);
  expect(totalOf(report.deleted).objects).toBe(s.garbage.size);
  // Young chunks are roots (a chunk lists the object it was deflated against): the lone one among them.
  expect(report.youngChunks).toBeGreaterThanOrEqual(1);
  expect(report.missingCount).toBe(0);
  // A driver with an empty cache reads every kept claim back from the store.
  const reader = new ChunkStoreDriver({ backend, keyring: s.driver.keyring });
  const claims = [...s.liveClaims, ...s.closedClaims].map(
    (manifestId) => new StorageDriverClaim(claimDataFor({ manifestId, keyId: reader.keyring?.current.id })),
  );
  const values = (await reader.retrieve({}, claims)).map((payload) =>
    JSON.stringify(defaultPayloadConverter.fromPayload(payload)),
  );
  expect(values.every((value) => value.includes('live-') || value.includes('closed-'))).toBe(true);
}

async function claimsOf(s: Scenario): Promise<Set<string>> {
  const client = new Client({
    connection: t.connection,
    namespace: s.namespace,
    dataConverter: s.payloads.dataConverter,
  });
  const retained = await collectRetainedClaims({ clients: [client] });
  expect(retained.runs).toBe(2); // the live and the closed run; the deleted one is not listed any more
  return retained.manifests;
}

function filesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

describe('gc of the payload store', { timeout: 240_000 }, () => {
  it('file backend: keeps live and retained claims and young objects, removes the rest older than 48 h (the CLI dry run first)', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'compactor-gc-'));
    directories.push(directory);
    const env = {
      COMPACTOR_PAYLOAD_STORE: `file:${directory}`,
      COMPACTOR_CODEC_KEY: randomBytes(32).toString('base64'),
    };
    // Everything written so far becomes 72 hours old: older than the default grace period.
    const age = async (): Promise<void> => {
      const then = new Date(Date.now() - 72 * HOUR);
      for (const file of filesUnder(directory)) utimesSync(file, then, then);
    };
    const s = await scenario(env, age);
    try {
      const before = filesUnder(directory).length;
      const dry = await runCli(['gc', '--dry-run', '--namespace', s.namespace], {
        ...env,
        TEMPORAL_ADDRESS: t.address,
      });
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain(`gc of file:${directory} (dry run: nothing removed)`);
      expect(dry.stdout).toMatch(
        new RegExp(
          `^Marked from 2 runs and 0 schedules in ${s.namespace}: \\d+ claims to \\d+ manifests, and \\d+ manifests and \\d+ nodes younger than the grace period\\.$`,
          'm',
        ),
      );
      expect(dry.stdout).toContain(`Would remove ${s.garbage.size.toLocaleString('en-US')} (`);
      expect(dry.stderr).toContain('gc: read the histories of 2 runs, ');
      expect(filesUnder(directory)).toHaveLength(before);
      const tooShort = await runCli(['gc', '--grace', '1h'], { ...env, TEMPORAL_ADDRESS: t.address });
      expect([tooShort.code, tooShort.stderr]).toEqual([2, expect.stringContaining('--grace must be at least 48h')]);

      const report = await collectGarbage({ driver: s.driver, claimedManifests: await claimsOf(s) });
      expect(report.graceMs).toBe(DEFAULT_GC_GRACE_MS);
      await expectCollected(s, report);
      // A file the collector removed is gone from disk, and nothing it moved aside is left behind.
      expect(filesUnder(directory).some((file) => /\.gc-/.test(file))).toBe(false);
      expect(statSync(join(directory, s.youngChunk)).isFile()).toBe(true);

      // The live run goes on with the claims it holds and completes.
      expect(await s.finishLiveRun()).toMatchObject({ note: 'live', length: 30_000 });
    } finally {
      await s.stopWorker();
    }
  });

  describe('S3 backend (moto)', () => {
    let s3: S3TestServer | undefined;
    beforeAll(async () => {
      s3 = await startS3Server({ bucket: 'compactor-gc' });
    }, 180_000);
    afterAll(async () => {
      await s3?.stop();
    });

    it('keeps live and retained claims and young objects, removes the rest older than the grace period', async () => {
      if (s3 === undefined) throw new Error('no S3 server');
      const env = {
        ...s3.env,
        COMPACTOR_PAYLOAD_STORE: `s3://${s3.bucket}/gc-${process.pid}`,
        COMPACTOR_CODEC_KEY: randomBytes(32).toString('base64'),
      };
      // S3 keeps its own modification times: instead of aging objects, wait longer than a short
      // grace period, and judge at the moment the young objects began to be written. S3 states
      // times in whole seconds, so a young object reads at most 1 s older than that: within the
      // grace; the others are at least 3.5 s old. Judging later (when the scenario returns) would
      // let a busy machine age the young objects past the grace.
      const graceMs = 2_000;
      const s = await scenario(env, () => new Promise((resolve) => setTimeout(resolve, 3_500)), s3.clientConfig);
      const judgedAt = s.youngAt;
      try {
        const report = await collectGarbage({
          driver: s.driver,
          claimedManifests: await claimsOf(s),
          graceMs,
          now: () => judgedAt,
        });
        await expectCollected(s, report);
        expect(await s.finishLiveRun()).toMatchObject({ note: 'live', length: 30_000 });
      } finally {
        await s.stopWorker();
      }
    });
  });
});
