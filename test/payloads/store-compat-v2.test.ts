// A store written by main before pack chunks stays readable. test/fixtures/store-v2 was written by
// main at f8240a0 (manifest and node format 2, chunker 2: binary manifests on base manifests, slices
// inline, nodes 0x4f, one object per chunk), with and without encryption (write-fixture.ts.txt
// beside it is the script that wrote it). Every object under it is read here by today's driver.
import { describe, expect, it } from 'vitest';
import { readClaim } from '../../src/payloads/index.js';
import {
  expectEveryClaimReads,
  expectGcKeepsEverything,
  plainCopy,
  readStoreFixture,
} from '../support/store-fixture.js';

const fixture = readStoreFixture('store-v2');

describe('a store written by main in manifest format 2 (before pack chunks)', () => {
  it('every claim (with and without a key) reads back byte for byte with its metadata, by a cold driver, writing nothing', async () => {
    expect(fixture.claims).toHaveLength(30);
    await expectEveryClaimReads(fixture);
  });

  it('holds what format 2 wrote: manifests on base manifests and tree nodes; a gc over a copy keeps all of it and the payloads still read', async () => {
    const copy = plainCopy(fixture, 'compactor-store-v2-');
    const depths = await Promise.all(
      copy.claimed
        .filter((entry) => entry.size > 0)
        .map(async (entry) => (await copy.driver.inspect('manifest', readClaim(entry.claimData).manifestId)).depth),
    );
    expect(Math.max(...depths)).toBeGreaterThan(1);
    const report = await expectGcKeepsEverything(copy);
    expect(report.reachable.node.objects).toBeGreaterThan(0);
    expect(report.reachable.chunk.objects).toBeGreaterThan(0);
  });
});
