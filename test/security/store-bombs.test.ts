// Adversarial: the payload store's objects and manifests. Whoever can write to the store (a
// directory, a bucket) can put any bytes under an object's name; a claim in a history then makes
// every worker that reads it open them. An object never inflates past the plaintext length it
// states (at most MAX_OBJECT_BYTES), a sealed object over MAX_SEALED_OBJECT_BYTES is refused
// before it is read, a manifest stating a payload over MAX_STORED_PAYLOAD_BYTES before anything
// is allocated for it; each ends in a ChunkIntegrityError naming the object, and the next payload
// reads as usual. Hostile structure (cycles, deep chains, wrong kinds, lengths that do not add up)
// is refused the same way.
import { truncateSync } from 'node:fs';
import { join } from 'node:path';
import { StorageDriverClaim } from '@temporalio/common';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { ChunkIntegrityError, ChunkMissingError, PayloadTooLargeError } from '../../src/payloads/errors.js';
import { claimDataFor } from '../../src/payloads/claims.js';
import { objectKey } from '../../src/payloads/object-format.js';
import { PRESET_DICTIONARIES } from '../../src/payloads/dictionary.js';
import { MAX_OBJECT_BYTES, MAX_STORED_PAYLOAD_BYTES } from '../../src/payloads/object-format.js';
import { objectId, sealObject } from '../../src/payloads/sealed-object.js';
import { jsonPayload, keysUnder, sha, storeOne } from '../support/payload-store.js';
import { deflateBomb } from './bombs.js';
import { fakeId, FLAG_DEFLATE, hostileStore, MAGIC, placeManifest } from './hostile-store.js';
import { measured, MiB } from './memory.js';

async function expectRefusedWithin(
  driver: ChunkStoreDriver,
  claim: StorageDriverClaim,
  bound: number,
  reason: RegExp,
): Promise<void> {
  const { outcome, use } = await measured(() => driver.retrieve({}, [claim]));
  expect(outcome.ok).toBe(false);
  if (outcome.ok) return;
  expect(outcome.error).toBeInstanceOf(ChunkIntegrityError);
  expect(String(outcome.error)).toMatch(reason);
  expect(use.arrayBuffers).toBeLessThan(bound);
  // Nothing else stopped: the same driver stores and reads the next payload.
  const good = jsonPayload({ next: 'payload', padding: 'y'.repeat(3_000) });
  const [back] = await driver.retrieve({}, [await storeOne(driver, good)]);
  expect(sha(back?.data)).toBe(sha(good.data));
}

describe('the store meets a decompression bomb', () => {
  let bomb: Buffer;
  beforeAll(async () => {
    const dictionary = PRESET_DICTIONARIES.get(1);
    if (dictionary === undefined) throw new Error('no preset dictionary 1');
    bomb = await deflateBomb(256 * MiB, dictionary);
  });

  it('a pack of 256 KB that inflates to 256 MiB, listed by a manifest: refused, under 1 MiB allocated', async () => {
    const { place, driver } = hostileStore();
    // Deflated against preset dictionary 1, as the writer does, with no stated length: what an
    // attacker writes when the stated length would give the bomb away.
    const pack = fakeId(0xb0);
    place('chunk', pack, Buffer.concat([MAGIC, Uint8Array.of(FLAG_DEFLATE, 1), bomb]));
    const claim = placeManifest(place, 10, [{ kind: 'slice', of: 'pack', id: pack, offset: 0, length: 10 }]);
    await expectRefusedWithin(
      driver(),
      claim,
      MiB,
      /v1\/chunks\/b0\/b0\/b0b0.*states a plaintext of \d+ bytes, more than/,
    );
  });

  it('a pack stating the largest plaintext there is: inflating stops there, then its hash refuses it', async () => {
    const { place, driver } = hostileStore();
    const pack = fakeId(0xb1);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(MAX_OBJECT_BYTES);
    place('chunk', pack, Buffer.concat([MAGIC, Uint8Array.of(FLAG_DEFLATE, 1), length, bomb]));
    const claim = placeManifest(place, 10, [{ kind: 'slice', of: 'pack', id: pack, offset: 0, length: 10 }]);
    await expectRefusedWithin(
      driver(),
      claim,
      MAX_OBJECT_BYTES + 2 * MiB,
      /inflates to more than the \d+ bytes it states/,
    );
  });

  it('a sealed object larger than any the store writes: refused before it is read', async () => {
    const { place, directory, driver } = hostileStore();
    const pack = fakeId(0xb2);
    place('chunk', pack, Buffer.concat([MAGIC, Uint8Array.of(0)]));
    // 80 MiB, sparse: costs the disk nothing, and a reader that reads it first 80 MiB of memory.
    truncateSync(join(directory, ...objectKey('chunk', pack).split('/')), 80 * MiB);
    const claim = placeManifest(place, 10, [{ kind: 'slice', of: 'pack', id: pack, offset: 0, length: 10 }]);
    await expectRefusedWithin(
      driver(),
      claim,
      MiB,
      /is 83886080 bytes, more than the \d+ any object of the store takes/,
    );
  });

  it('a manifest stating a payload of 2 GiB: refused before the payload is allocated', async () => {
    const { place, driver } = hostileStore();
    const size = 2 ** 31 - 1;
    const claim = placeManifest(place, size, [{ kind: 'node', level: 1, id: fakeId(0xb3), length: size }]);
    await expectRefusedWithin(
      driver(),
      claim,
      MiB,
      /states a payload of 2147483647 bytes, more than the \d+ the store holds/,
    );
  });
});

describe('what the store writes, it reads', () => {
  it('storing a payload over the bound a reader trusts fails with a PayloadTooLargeError, writing nothing', async () => {
    const { directory, driver } = hostileStore();
    const writer = driver();
    const large = { metadata: { encoding: Buffer.from('binary/plain') }, data: Buffer.alloc(MAX_STORED_PAYLOAD_BYTES) };
    await expect(writer.store({}, [large])).rejects.toThrow(PayloadTooLargeError);
    await expect(writer.store({}, [large])).rejects.toThrow(
      /a payload to store is 67108\d+ bytes, more than the 67108864/,
    );
    expect(keysUnder(directory)).toEqual([]);
  });
});

describe('hostile structure', () => {
  it('a chain of base manifests that loops, or is deeper than 16: refused', async () => {
    const { place, driver } = hostileStore();
    // A manifest that names itself as its base cannot be written (its id is its hash), but one
    // that names another that names the first at the wrong depth is refused by depth.
    const looping = placeManifest(place, 4, [{ kind: 'inline', bytes: Buffer.from('tail') }], {
      id: fakeId(0xc0),
      keep: 0,
      depth: 17,
    });
    await expectRefusedWithin(driver(), looping, MiB, /is on a chain of 17 manifests \(at most 16\)/);
    const first = placeManifest(place, 1, [{ kind: 'inline', bytes: Buffer.from('a') }]);
    const firstId = Buffer.from(String(first.claimData.m), 'base64url').toString('hex');
    const wrongDepth = placeManifest(place, 2, [{ kind: 'inline', bytes: Buffer.from('b') }], {
      id: firstId,
      keep: 1,
      depth: 3,
    });
    await expectRefusedWithin(driver(), wrongDepth, MiB, /is at depth 0 where its successor says 2/);
  });

  it('a node that lists a node of its own level (a cycle needs one), or lengths that do not add up: refused', async () => {
    const { place, driver } = hostileStore();
    const leaf = Buffer.concat([Uint8Array.of(0x4e, 1, 1, 0, 3), Buffer.from('abc')]);
    const leafId = objectId(leaf, undefined);
    place('node', leafId, sealObject(leaf, undefined).sealed);
    // A level-2 node listing itself is impossible (its id is its hash); one listing a level-2 node
    // where level 1 is due stands for it.
    const claimWrongLevel = placeManifest(place, 3, [{ kind: 'node', level: 2, id: leafId, length: 3 }]);
    await expectRefusedWithin(driver(), claimWrongLevel, MiB, /tree node of level 1 where level 2 was expected/);
    const claimWrongLength = placeManifest(place, 5, [{ kind: 'node', level: 1, id: leafId, length: 5 }]);
    await expectRefusedWithin(driver(), claimWrongLength, MiB, /covers 3 bytes where 5 were expected/);
  });

  it('a slice past the end of its pack, or a claim naming an object of another kind: refused', async () => {
    const { place, driver } = hostileStore();
    const pack = Buffer.from('0123456789');
    const packId = objectId(pack, undefined);
    place('chunk', packId, sealObject(pack, undefined).sealed);
    const past = placeManifest(place, 8, [{ kind: 'slice', of: 'pack', id: packId, offset: 6, length: 8 }]);
    await expectRefusedWithin(driver(), past, MiB, /lists bytes 6–14 of pack .*, which has 10/);
    // A claim names a manifest: the pack's id as a manifest id finds nothing there.
    const reader = driver();
    await expect(
      reader.retrieve({}, [new StorageDriverClaim(claimDataFor({ manifestId: packId, keyId: undefined }))]),
    ).rejects.toThrow(ChunkMissingError);
    // A pack's bytes under a manifest's name are no manifest.
    place('manifest', packId, sealObject(pack, undefined).sealed);
    await expectRefusedWithin(
      reader,
      new StorageDriverClaim(claimDataFor({ manifestId: packId, keyId: undefined })),
      MiB,
      /is not a temporal-compactor manifest/,
    );
  });
});
