// Adversarial: a store gc cannot read all of — objects under a retired key it was not given, a
// stray object of another environment (another key under the same id, or another id), bytes that
// are no object of ours. None of them stops the collection: each is reported, with its key and why,
// never removed (gc cannot tell what it lists, nor prove it is ours), and everything else is
// collected as usual. Claims gc cannot follow keep what they reach the same way.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { defaultPayloadConverter, type StorageDriverClaim } from '@temporalio/common';
import { beforeAll, describe, expect, it } from 'vitest';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { claimManifestId } from '../../src/payloads/claims.js';
import { codecKey } from '../../src/payloads/keyring.js';
import { keyringOf } from '../support/keyring.js';
import { collectGarbage, totalOf } from '../../src/payloads/gc.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { objectKey } from '../../src/payloads/object-format.js';
import { temporaryDirectory } from '../support/cleanup.js';
import { runCli } from '../support/cli-process.js';
import { ownNamespace } from '../support/namespace.js';
import { toolMessage } from '../support/payload-store.js';
import { testConnection, type TestConnection } from '../support/temporal.js';

const HOUR = 3_600_000;

function filesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(directory.length + 1));
}

function ageAll(directory: string, hours: number): void {
  const then = new Date(Date.now() - hours * HOUR);
  for (const file of filesUnder(directory)) utimesSync(join(directory, file), then, then);
}

async function store(driver: ChunkStoreDriver, seed: number): Promise<StorageDriverClaim> {
  const value = { messages: Array.from({ length: 30 }, (_, index) => toolMessage(seed * 100 + index, 30)) };
  const [claim] = await driver.store({}, [defaultPayloadConverter.toPayload(value)]);
  if (claim === undefined) throw new Error('no claim');
  return claim;
}

describe('gc over objects it cannot read', () => {
  it('reports each, removes none of them, and collects the rest', async () => {
    const directory = temporaryDirectory('compactor-gc-unreadable-');
    const backend = new FileBackend({ directory, durable: false });
    const retired = codecKey(randomBytes(32), 'k-retired');
    const current = codecKey(randomBytes(32), 'k-current');
    const twin = codecKey(randomBytes(32), 'k-current');
    // Under the retired key: a payload a retained history still claims, and one nothing claims.
    const old = new ChunkStoreDriver({ backend, keyring: keyringOf(retired) });
    const claimedUnderRetired = await store(old, 1);
    await store(old, 2);
    // Another environment sharing the prefix, with another key under the same id.
    await store(new ChunkStoreDriver({ backend, keyring: keyringOf(twin) }), 3);
    const foreign = new Set(filesUnder(directory));
    // Bytes that are no object of ours, under an object's name.
    const junk = objectKey('chunk', 'ee'.repeat(32));
    mkdirSync(dirname(join(directory, junk)), { recursive: true });
    writeFileSync(join(directory, junk), 'not an object');
    foreign.add(junk);
    // Ours: one claimed payload, one garbage.
    const ours = new ChunkStoreDriver({ backend, keyring: keyringOf(current) });
    const claimed = await store(ours, 4);
    const beforeGarbage = new Set(filesUnder(directory));
    await store(ours, 5);
    const garbage = filesUnder(directory).filter((file) => !beforeGarbage.has(file));
    expect(garbage.length).toBeGreaterThan(0);
    ageAll(directory, 72);

    const report = await collectGarbage({
      driver: ours,
      claimedManifests: [claimManifestId(claimedUnderRetired.claimData), claimManifestId(claimed.claimData)].flatMap(
        (id) => (id === undefined ? [] : [id]),
      ),
    });
    const left = new Set(filesUnder(directory));
    // Nothing gc could not read is gone; the garbage it could read is.
    for (const file of foreign) expect(left.has(file), file).toBe(true);
    for (const file of garbage) expect(left.has(file), file).toBe(false);
    expect(totalOf(report.deleted).objects).toBe(garbage.length);
    // Each is reported, with why.
    expect(report.unreadableCount).toBe(foreign.size);
    expect(totalOf(report.unreadable).objects).toBe(foreign.size - 1);
    const reasons = report.unreadableObjects.map(({ reason }) => reason).join('\n');
    expect(reasons).toMatch(/key id "k-retired", which is not configured/);
    expect(reasons).toMatch(/failed authentication under key id "k-current"/);
    expect(reasons).toMatch(/not a temporal-compactor object/);
    expect(report.unreadableObjects.map(({ key }) => key)).toContain(junk);
  });
});

describe('temporal-compactor gc over objects it cannot read', () => {
  let t: TestConnection;
  beforeAll(async () => {
    t = await testConnection();
  });

  it('lists them on stderr with why, keeps them, collects the rest, and exits 3', async () => {
    const directory = temporaryDirectory('compactor-gc-unreadable-cli-');
    const key = randomBytes(32);
    const env = {
      COMPACTOR_PAYLOAD_STORE: `file:${directory}`,
      COMPACTOR_CODEC_KEY: key.toString('base64'),
      TEMPORAL_ADDRESS: t.address,
    };
    const ours = new ChunkStoreDriver({ backend: new FileBackend({ directory }), keyring: keyringOf(codecKey(key)) });
    await store(ours, 6);
    const garbage = filesUnder(directory);
    const junk = objectKey('manifest', 'dd'.repeat(32));
    mkdirSync(dirname(join(directory, junk)), { recursive: true });
    writeFileSync(join(directory, junk), 'cps\u0001\u0000 not what its name says');
    ageAll(directory, 72);
    const run = await runCli(['gc', '--namespace', await ownNamespace(t.connection, 'ns-gc-unreadable')], env);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toContain('1 object could not be read and was kept');
    expect(run.stderr).toContain(`  ${junk}: content does not match its name`);
    expect(run.stdout).toContain(`Removed ${garbage.length} (`);
    expect(filesUnder(directory)).toEqual([junk]);
  });
});
