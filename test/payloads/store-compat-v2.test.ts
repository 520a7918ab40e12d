// A store written by main before pack chunks stays readable. test/fixtures/store-v2 was written by
// main at f8240a0 (manifest and node format 2, chunker 2: binary manifests on base manifests, slices
// inline, nodes 0x4f, one object per chunk), with and without encryption (write-fixture.ts.txt
// beside it is the script that wrote it). Every object under it is read here by today's driver.
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StorageDriverClaim } from '@temporalio/common';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ChunkStoreDriver,
  codecKey,
  collectGarbage,
  FileBackend,
  keyringOf,
  readClaim,
  type ObjectBackend,
} from '../../src/payloads/index.js';

const FIXTURE = new URL('../fixtures/store-v2/', import.meta.url);
const Fixture = z.object({
  key: z.object({ id: z.string(), hex: z.string() }),
  claims: z.array(
    z.object({
      store: z.enum(['plain', 'encrypted']),
      payload: z.string(),
      claimData: z.record(z.string(), z.string()),
      size: z.number(),
      sha256: z.string(),
      metadata: z.record(z.string(), z.string()),
    }),
  ),
});
const fixture = Fixture.parse(JSON.parse(readFileSync(new URL('claims.json', FIXTURE), 'utf8')));
const keyring = keyringOf(codecKey(Buffer.from(fixture.key.hex, 'hex'), fixture.key.id));

/** The fixture's backend, counting writes: reading an old store must not need to write to it. */
function fixtureBackend(directory: string, writes: string[]): ObjectBackend {
  const files = new FileBackend({ directory });
  return {
    description: files.description,
    get: (key, signal) => files.get(key, signal),
    stat: (key) => files.stat(key),
    put: async (key) => {
      writes.push(key);
    },
    touch: async (key) => {
      writes.push(key);
    },
  };
}

const sha256 = (data: Uint8Array | null | undefined): string =>
  createHash('sha256')
    .update(data ?? new Uint8Array(0))
    .digest('hex');

describe('a store written by main in manifest format 2 (before pack chunks)', () => {
  it('every claim (with and without a key) reads back byte for byte with its metadata, by a cold driver, writing nothing', async () => {
    expect(fixture.claims).toHaveLength(30);
    const writes: string[] = [];
    for (const entry of fixture.claims) {
      const driver = new ChunkStoreDriver({
        backend: fixtureBackend(join(FIXTURE.pathname, entry.store), writes),
        keyring: entry.store === 'encrypted' ? keyring : undefined,
      });
      const [payload] = await driver.retrieve({}, [new StorageDriverClaim(entry.claimData)]);
      expect(payload?.data?.length ?? 0, `${entry.store} ${entry.payload}`).toBe(entry.size);
      expect(sha256(payload?.data), `${entry.store} ${entry.payload}`).toBe(entry.sha256);
      const metadata = Object.fromEntries(
        Object.entries(payload?.metadata ?? {}).map(([name, value]) => [
          name,
          Buffer.from(value ?? []).toString('base64'),
        ]),
      );
      expect(metadata).toEqual(entry.metadata);
    }
    expect(writes).toEqual([]);
  });

  it('holds what format 2 wrote: manifests on base manifests and tree nodes; a gc over a copy keeps all of it and the payloads still read', async () => {
    const copy = mkdtempSync(join(tmpdir(), 'compactor-store-v2-'));
    afterAll(() => rmSync(copy, { recursive: true, force: true }));
    cpSync(join(FIXTURE.pathname, 'plain'), copy, { recursive: true });
    const backend = new FileBackend({ directory: copy });
    const driver = new ChunkStoreDriver({ backend });
    const claimed = fixture.claims.filter((entry) => entry.store === 'plain');
    const depths = await Promise.all(
      claimed
        .filter((entry) => entry.size > 0)
        .map(async (entry) => (await driver.inspect('manifest', readClaim(entry.claimData).manifestId)).depth),
    );
    expect(Math.max(...depths)).toBeGreaterThan(1);
    const report = await collectGarbage({
      driver,
      claimedManifests: claimed.map((entry) => readClaim(entry.claimData).manifestId),
      graceMs: 0,
      now: () => Date.now() + 1_000,
    });
    expect(report.missingCount).toBe(0);
    expect(report.deleted).toEqual({
      manifest: { objects: 0, bytes: 0 },
      node: { objects: 0, bytes: 0 },
      chunk: { objects: 0, bytes: 0 },
      temporary: { objects: 0, bytes: 0 },
    });
    expect(report.reachable.node.objects).toBeGreaterThan(0);
    expect(report.reachable.chunk.objects).toBeGreaterThan(0);
    for (const entry of claimed) {
      const [payload] = await new ChunkStoreDriver({ backend }).retrieve({}, [new StorageDriverClaim(entry.claimData)]);
      expect(sha256(payload?.data), entry.payload).toBe(entry.sha256);
    }
  });
});
