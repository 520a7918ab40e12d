// A store written by main before manifest format 4 stays readable. test/fixtures/store-v3 was
// written by main at 5f79a5f (manifest format 3 "ctm" 0x03, nodes 0x50, chunker 2: packs holding
// the new slices of a payload, listed as slices of packs, every object deflated with preset
// dictionary 1), with and without encryption (write-fixture.ts.txt beside it is the script that
// wrote it). Every object under it is read here by today's driver.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseObjectKey, readClaim } from '../../src/payloads/index.js';
import { openObject } from '../../src/payloads/sealed-object.js';
import {
  expectEveryClaimReads,
  expectGcKeepsEverything,
  keysUnder,
  plainCopy,
  readStoreFixture,
} from '../support/store-fixture.js';

const fixture = readStoreFixture('store-v3');

describe('a store written by main in manifest format 3 (before format 4)', () => {
  it('every claim (with and without a key) reads back byte for byte with its metadata, by a cold driver, writing nothing', async () => {
    expect(fixture.claims).toHaveLength(30);
    await expectEveryClaimReads(fixture);
  });

  it('holds what format 3 wrote: "ctm" 0x03 manifests deflated with preset dictionary 1, packs listed by several payloads; a gc over a copy keeps all of it', async () => {
    const copy = plainCopy(fixture, 'compactor-store-v3-');
    const directory = join(fixture.directory, 'plain');
    let manifests = 0;
    let withDictionary = 0;
    for (const key of keysUnder(directory)) {
      const parsed = parseObjectKey(key);
      if (parsed === undefined) continue;
      const sealed = readFileSync(join(directory, key));
      const plaintext = openObject(sealed, parsed.id, key, undefined, undefined);
      // Flags bit 2: deflated with a preset dictionary, whose number is the body's first byte.
      if (((sealed[4] ?? 0) & 4) !== 0) {
        expect(sealed[5]).toBe(1);
        withDictionary += 1;
      }
      if (parsed.kind === 'manifest' && plaintext.length >= 4) {
        expect(Buffer.from(plaintext.subarray(0, 4)).toString('latin1')).toBe('ctm\u0003');
        manifests += 1;
      }
    }
    expect(manifests).toBeGreaterThan(10);
    expect(withDictionary).toBeGreaterThan(10);
    // Some pack is a child of more than one manifest or node: slices of one payload's pack listed by later payloads.
    const parents = new Map<string, number>();
    for (const entry of copy.claimed.filter((claimed) => claimed.size > 0)) {
      const inspected = await copy.driver.inspect('manifest', readClaim(entry.claimData).manifestId);
      for (const child of inspected.children)
        if (child.kind === 'chunk') parents.set(child.id, (parents.get(child.id) ?? 0) + 1);
    }
    expect(Math.max(...parents.values())).toBeGreaterThan(1);
    const report = await expectGcKeepsEverything(copy);
    expect(report.reachable.node.objects).toBeGreaterThan(0);
    expect(report.reachable.chunk.objects).toBeGreaterThan(0);
  });
});
