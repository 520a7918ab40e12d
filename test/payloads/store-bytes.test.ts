// The store's bytes (docs/payloads.md, "The store's format") do not change by accident: from the
// same payloads the driver writes test/fixtures/store again byte for byte, and a cold driver reads
// every claim there back. The fixture uses every part of the format. To change the format on
// purpose, `RECORD_STORE_FIXTURE=1 npx vitest run test/payloads/store-bytes.test.ts` writes the
// fixture anew (and a released store needs a reader for its old bytes: docs/payloads.md).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { parseObjectKey } from '../../src/payloads/object-format.js';
import { readClaim } from '../../src/payloads/claims.js';
import { unsealObject } from '../../src/payloads/sealed-object.js';
import { temporaryDirectory } from '../support/cleanup.js';
import { keysUnder } from '../support/payload-store.js';
import {
  expectEveryClaimReads,
  expectGcKeepsEverything,
  readStoreFixture,
  STORE_FIXTURE_DIR,
  writeStoreFixture,
} from '../support/store-fixture.js';

describe('test/fixtures/store', () => {
  it('is what the driver writes from its payloads, byte for byte', async () => {
    if (process.env.RECORD_STORE_FIXTURE === '1') await writeStoreFixture(STORE_FIXTURE_DIR);
    const directory = temporaryDirectory('compactor-store-bytes-');
    const written = await writeStoreFixture(directory);
    const fixture = readStoreFixture();
    expect(written.claims).toEqual(fixture.claims);
    for (const store of ['plain', 'encrypted']) {
      const keys = keysUnder(join(directory, store)).sort();
      expect(keysUnder(join(fixture.directory, store)).sort(), store).toEqual(keys);
      for (const key of keys)
        expect(
          readFileSync(join(fixture.directory, store, key)).equals(readFileSync(join(directory, store, key))),
          key,
        ).toBe(true);
    }
  });

  it('every claim (without and with a key) reads back byte for byte with its metadata, by a cold driver, writing nothing', async () => {
    const fixture = readStoreFixture();
    expect(fixture.claims).toHaveLength(18);
    await expectEveryClaimReads(fixture);
  });

  it('uses every part of the format, and a gc over a copy keeps all of it', async () => {
    const fixture = readStoreFixture();
    for (const store of ['plain', 'encrypted'] as const) {
      const directory = join(fixture.directory, store);
      const keyring = store === 'encrypted' ? fixture.keyring : undefined;
      const { reader } = new ChunkStoreDriver({ backend: new FileBackend({ directory }), keyring });
      const seen = new Set<string>();
      for (const key of keysUnder(directory)) {
        const parsed = parseObjectKey(key);
        if (parsed === undefined) throw new Error(`${key} is not an object key`);
        const sealed = readFileSync(join(directory, key));
        const { context } = unsealObject(sealed, key, keyring?.current.id, keyring);
        if (context !== undefined) seen.add(`${parsed.kind} deflated against a ${context.kind}`);
        if (parsed.kind === 'chunk') seen.add('pack');
        const inspected = await reader.inspect(parsed.kind, parsed.id);
        if (parsed.kind === 'manifest' && inspected.depth > 0) seen.add('manifest on a base');
        for (const child of inspected.children)
          if (child.kind === 'manifest') seen.add(`${parsed.kind} lists a manifest`);
        if (parsed.kind === 'node') seen.add(`node of level ${inspected.level}`);
      }
      for (const { claimData } of fixture.claims.filter((entry) => entry.store === store)) {
        expect(readClaim(claimData).keyId).toBe(keyring?.current.id);
      }
      expect([...seen].sort(), store).toEqual(
        expect.arrayContaining([
          'chunk deflated against a manifest',
          'manifest deflated against a chunk',
          'manifest deflated against a manifest',
          'manifest lists a manifest',
          'manifest on a base',
          'node of level 1',
          'pack',
        ]),
      );
      const report = await expectGcKeepsEverything(fixture, store);
      expect(report.reachable.node.objects).toBeGreaterThan(0);
      expect(report.reachable.chunk.objects).toBeGreaterThan(0);
    }
  });
});
