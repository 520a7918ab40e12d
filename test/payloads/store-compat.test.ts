// A store written by an earlier version stays readable. test/fixtures/store-v1 was written by main
// at 246db5d (manifest format 1 in JSON, chunker 1, tree nodes 0x4e), with claims of both formats,
// with and without encryption (write-fixture.ts.txt beside it is the script that wrote it, run
// against that commit's src/payloads). Every object under it is read here by today's driver.
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
  DEFAULT_CHUNKER_LIMITS,
  FileBackend,
  keyringOf,
  parseObjectKey,
  readClaim,
  type ObjectBackend,
} from '../../src/payloads/index.js';
import { openObject } from '../../src/payloads/sealed-object.js';

/** Small chunks: a few KB make a tree of nodes. */
const SMALL = { ...DEFAULT_CHUNKER_LIMITS, minChunk: 64, groupMax: 128 };

const FIXTURE = new URL('../fixtures/store-v1/', import.meta.url);
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
function fixtureBackend(store: string, writes: string[]): ObjectBackend {
  const files = new FileBackend({ directory: join(FIXTURE.pathname, store) });
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

describe('a store written by main before manifest format 2', () => {
  it('every claim (formats 1 and 2, with and without a key) reads back byte for byte, with its metadata', async () => {
    expect(fixture.claims).toHaveLength(16);
    const writes: string[] = [];
    for (const entry of fixture.claims) {
      const driver = new ChunkStoreDriver({
        backend: fixtureBackend(entry.store, writes),
        keyring: entry.store === 'encrypted' ? keyring : undefined,
      });
      const [payload] = await driver.retrieve({}, [new StorageDriverClaim(entry.claimData)]);
      const data = payload?.data ?? new Uint8Array(0);
      expect(data.length, `${entry.store} ${entry.payload}`).toBe(entry.size);
      expect(createHash('sha256').update(data).digest('hex'), `${entry.store} ${entry.payload}`).toBe(entry.sha256);
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

  it('a garbage collection over a copy keeps everything its claims name, and the payloads still read', async () => {
    const copy = mkdtempSync(join(tmpdir(), 'compactor-store-v1-'));
    afterAll(() => rmSync(copy, { recursive: true, force: true }));
    cpSync(join(FIXTURE.pathname, 'plain'), copy, { recursive: true });
    const backend = new FileBackend({ directory: copy });
    const driver = new ChunkStoreDriver({ backend });
    const claimed = fixture.claims.filter((entry) => entry.store === 'plain');
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
    // Every object of the copy was reached from the claims: manifests, nodes and chunks.
    expect(report.reachable.manifest.objects).toBe(4);
    expect(report.reachable.node.objects).toBeGreaterThan(0);
    expect(report.reachable.chunk.objects).toBeGreaterThan(0);
    for (const entry of claimed) {
      const [payload] = await new ChunkStoreDriver({ backend }).retrieve({}, [new StorageDriverClaim(entry.claimData)]);
      expect(
        createHash('sha256')
          .update(payload?.data ?? new Uint8Array(0))
          .digest('hex'),
      ).toBe(entry.sha256);
    }
  });

  it('with manifestFormat 1 (a rolling upgrade) a driver writes only format-1 manifests and nodes, which read back', async () => {
    const copy = mkdtempSync(join(tmpdir(), 'compactor-store-format-1-'));
    afterAll(() => rmSync(copy, { recursive: true, force: true }));
    const backend = new FileBackend({ directory: copy });
    const driver = new ChunkStoreDriver({ backend, manifestFormat: 1, chunkerLimits: SMALL });
    const rounds = [20, 21, 22].map((messages) =>
      Buffer.from(
        JSON.stringify({
          messages: Array.from({ length: messages }, (_, index) => ({
            role: 'tool',
            content: `${index} ${'x'.repeat(300)}`,
          })),
        }),
      ),
    );
    const claims = await driver.store(
      {},
      rounds.map((data) => ({ metadata: { encoding: Buffer.from('json/plain') }, data })),
    );
    for await (const object of backend.list('v1/')) {
      const parsed = parseObjectKey(object.key);
      if (parsed === undefined || parsed.kind === 'chunk') continue;
      const sealed = (await backend.get(object.key)) ?? new Uint8Array(0);
      const plaintext = openObject(sealed, parsed.id, object.key, undefined, undefined);
      // What a reader of format 1 alone expects: JSON manifests of version 1, nodes that start with 0x4e.
      if (parsed.kind === 'manifest')
        expect(JSON.parse(Buffer.from(plaintext).toString('utf8'))).toMatchObject({ v: 1 });
      else expect(plaintext[0]).toBe(0x4e);
    }
    const back = await new ChunkStoreDriver({ backend }).retrieve({}, claims);
    expect(back.map((payload) => Buffer.from(payload.data ?? []).toString())).toEqual(
      rounds.map((data) => data.toString()),
    );
  });
});
