// A store written by an earlier version stays readable. test/fixtures/store-v1 was written by main
// at 246db5d (manifest format 1 in JSON, chunker 1, tree nodes 0x4e), with claims of both formats,
// with and without encryption (write-fixture.ts.txt beside it is the script that wrote it, run
// against that commit's src/payloads). Every object under it is read here by today's driver.
import { describe, expect, it } from 'vitest';
import { ChunkStoreDriver, DEFAULT_CHUNKER_LIMITS, FileBackend, parseObjectKey } from '../../src/payloads/index.js';
import { openObject } from '../../src/payloads/sealed-object.js';
import { temporaryDirectory } from '../support/cleanup.js';
import {
  expectEveryClaimReads,
  expectGcKeepsEverything,
  plainCopy,
  readStoreFixture,
} from '../support/store-fixture.js';

/** Small chunks: a few KB make a tree of nodes. */
const SMALL = { ...DEFAULT_CHUNKER_LIMITS, minChunk: 64, groupMax: 128 };

const fixture = readStoreFixture('store-v1');

describe('a store written by main before manifest format 2', () => {
  it('every claim (formats 1 and 2, with and without a key) reads back byte for byte, with its metadata', async () => {
    expect(fixture.claims).toHaveLength(16);
    await expectEveryClaimReads(fixture);
  });

  it('a garbage collection over a copy keeps everything its claims name, and the payloads still read', async () => {
    const report = await expectGcKeepsEverything(plainCopy(fixture, 'compactor-store-v1-'));
    // Every object of the copy was reached from the claims: manifests, nodes and chunks.
    expect(report.reachable.manifest.objects).toBe(4);
    expect(report.reachable.node.objects).toBeGreaterThan(0);
    expect(report.reachable.chunk.objects).toBeGreaterThan(0);
  });

  it('with manifestFormat 1 (a rolling upgrade) a driver writes only format-1 manifests and nodes, which read back', async () => {
    const copy = temporaryDirectory('compactor-store-format-1-');
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
