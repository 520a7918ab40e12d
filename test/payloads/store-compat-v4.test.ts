// A store written by main in store format 4 stays readable by the driver that writes format 5.
// test/fixtures/store-v4 was written by main at 75db398 (manifests "ctm" 0x03 and nodes 0x50, each
// pack deflated against the window of the pack stored before it: chunks that name a context chunk
// in their header; fresh payloads as flat manifests, a few new bytes inline in manifests on bases),
// with and without encryption (write-fixture.ts.txt beside it is the script that wrote it). Every
// claim is read back here by today's driver, and a gc over a copy keeps all of it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseObjectKey } from '../../src/payloads/index.js';
import { unsealObject } from '../../src/payloads/sealed-object.js';
import {
  expectEveryClaimReads,
  expectGcKeepsEverything,
  keysUnder,
  plainCopy,
  readStoreFixture,
} from '../support/store-fixture.js';

const fixture = readStoreFixture('store-v4');

describe('a store written by main in store format 4 (before format 5)', () => {
  it('every claim (with and without a key) reads back byte for byte with its metadata, by a cold driver, writing nothing', async () => {
    expect(fixture.claims).toHaveLength(48);
    await expectEveryClaimReads(fixture);
  });

  it('holds what format 4 wrote: chunks deflated against context chunks, "ctm" 0x03 manifests; a gc over a copy keeps all of it', async () => {
    const directory = join(fixture.directory, 'plain');
    let chained = 0;
    let manifests = 0;
    for (const key of keysUnder(directory)) {
      const parsed = parseObjectKey(key);
      if (parsed === undefined) continue;
      const sealed = readFileSync(join(directory, key));
      const { context, bound } = unsealObject(sealed, key, undefined, undefined);
      // Format 4 names only chunks as contexts and binds no manifest or node to one.
      expect(context?.kind ?? 'chunk').toBe('chunk');
      expect(bound).toBe(false);
      if (parsed.kind === 'chunk' && context !== undefined) chained += 1;
      if (parsed.kind === 'manifest') {
        manifests += 1;
        expect(sealed[0]).toBe(0x63);
      }
    }
    expect(chained).toBeGreaterThan(3);
    expect(manifests).toBeGreaterThan(20);
    const copy = plainCopy(fixture, 'compactor-store-v4-');
    const report = await expectGcKeepsEverything(copy);
    expect(report.reachable.node.objects).toBeGreaterThan(0);
    expect(report.reachable.chunk.objects).toBeGreaterThan(0);
  });
});
