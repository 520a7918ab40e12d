// The chain of contexts: every pack and manifest a driver stores is deflated against the window of
// the pack or manifest it stored before under the same key (named in the object's header, its id
// binding it), a chain of at most 63. What the objects say, what a cold reader needs, when a chain
// starts again, what a reader refuses, and what a garbage collection keeps.
import { randomBytes } from 'node:crypto';
import { rmSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { type StorageDriverClaim } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ChunkIntegrityError, ChunkMissingError } from '../../src/payloads/errors.js';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { codecKey, type Keyring } from '../../src/payloads/keyring.js';
import { keyringOf } from '../support/keyring.js';
import { collectGarbage } from '../../src/payloads/gc.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { objectKey, parseObjectKey } from '../../src/payloads/object-format.js';
import { readClaim } from '../../src/payloads/claims.js';
import { unsealObject } from '../../src/payloads/sealed-object.js';
import { temporaryDirectory } from '../support/cleanup.js';
import { jsonPayload, keysUnder, sha, storeOne, toolMessage } from '../support/payload-store.js';

const HOUR = 3_600_000;

/** The header of a stored object: its context (kind, depth, id) and its flags. */
async function headerOf(backend: FileBackend, key: string, keyring: Keyring | undefined) {
  const sealed = await backend.get(key);
  if (sealed === undefined) throw new Error(`${key} is not stored`);
  const { context } = unsealObject(sealed, key, keyring?.current.id, keyring);
  return { context, flags: sealed[4] ?? 0 };
}

const manifestKeyOf = (claim: StorageDriverClaim): string =>
  objectKey('manifest', readClaim(claim.claimData).manifestId);

for (const keyed of [false, true])
  describe(`the chain of contexts ${keyed ? 'with' : 'without'} a key`, () => {
    const keyring = keyed ? keyringOf(codecKey(randomBytes(32), 'k1')) : undefined;

    /** A store in a fresh directory, and a driver writing to it. */
    function openStore(now?: () => number) {
      const directory = temporaryDirectory('compactor-chains-');
      const backend = new FileBackend({ directory, durable: false });
      const driver = new ChunkStoreDriver({ backend, keyring, ...(now === undefined ? {} : { now }) });
      return { directory, backend, driver };
    }

    /** `count` tool results stored one after another, their claims in order. */
    async function storeToolMessages(
      driver: ChunkStoreDriver,
      count: number,
      lines = 40,
    ): Promise<StorageDriverClaim[]> {
      const claims: StorageDriverClaim[] = [];
      for (let seed = 0; seed < count; seed += 1)
        claims.push(await storeOne(driver, jsonPayload(toolMessage(seed, lines))));
      return claims;
    }

    it('deflates each manifest against the one stored before it (depth + 1, named by it); a cold reader opens the chain first', async () => {
      const { directory, backend, driver } = openStore();
      const payloads = Array.from({ length: 5 }, (_, seed) => jsonPayload(toolMessage(seed)));
      const claims: StorageDriverClaim[] = [];
      for (const payload of payloads) claims.push(await storeOne(driver, payload));
      // A fresh payload is its manifest alone.
      expect(keysUnder(directory, 'chunks')).toEqual([]);
      expect(keysUnder(directory, 'nodes')).toEqual([]);
      const ids = claims.map((claim) => readClaim(claim.claimData).manifestId);
      const headers = await Promise.all(ids.map((id) => headerOf(backend, objectKey('manifest', id), keyring)));
      expect(headers[0]?.context).toBeUndefined();
      for (let index = 1; index < ids.length; index += 1) {
        expect(headers[index]?.context).toEqual({ id: ids[index - 1], depth: index, kind: 'manifest' });
        expect((headers[index]?.flags ?? 0) & 12).toBe(12);
      }
      // Smaller than each deflated alone: the one before holds most of its lines.
      const alone = openStore();
      let aloneBytes = 0;
      for (const payload of payloads) {
        const fresh = new ChunkStoreDriver({ backend: alone.backend, keyring });
        await storeOne(fresh, payload);
        aloneBytes += fresh.stats.written.manifest.bytes;
      }
      expect(driver.stats.written.manifest.bytes).toBeLessThan(aloneBytes);
      for (const [index, claim] of claims.entries()) {
        const [back] = await new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claim]);
        expect(sha(back?.data)).toBe(sha(payloads[index]?.data));
      }
      const cold = new ChunkStoreDriver({ backend, keyring });
      await cold.retrieve({}, [claims.at(-1) as StorageDriverClaim]);
      expect(cold.stats.fetched.objects).toBe(payloads.length);
    });

    it('starts a new chain after 63 objects, and when the last is older than half the refresh period', async () => {
      let clock = Date.now();
      const { backend, driver } = openStore(() => clock);
      const claims = await storeToolMessages(driver, 66, 12);
      const depths = await Promise.all(
        claims.map(async (claim) => (await headerOf(backend, manifestKeyOf(claim), keyring)).context?.depth ?? 0),
      );
      expect(Math.max(...depths)).toBe(63);
      expect(depths.slice(62, 66)).toEqual([62, 63, 0, 1]);
      clock += 13 * HOUR;
      const later = await storeOne(driver, jsonPayload(toolMessage(100, 12)));
      expect((await headerOf(backend, manifestKeyOf(later), keyring)).context).toBeUndefined();
    });

    it('names the context a reader cannot find, and refuses a context at another depth or under another name', async () => {
      const { directory, backend, driver } = openStore();
      const claims = await storeToolMessages(driver, 3);
      const [first, second, third] = claims.map(manifestKeyOf);
      if (first === undefined || second === undefined || third === undefined) throw new Error('no manifests');
      const read = () => new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claims[2] as StorageDriverClaim]);
      const firstBody = await backend.get(first);
      const secondBody = await backend.get(second);
      if (firstBody === undefined || secondBody === undefined) throw new Error('not stored');
      // The second put where the first should be: at depth 1 where the second says 0.
      await backend.put(first, secondBody);
      await expect(read()).rejects.toThrow(/at context depth 1 where the object deflated against it says 0/);
      // The first gone: the third cannot be opened, and the error names the first.
      rmSync(join(directory, ...first.split('/')));
      await expect(read()).rejects.toThrow(ChunkMissingError);
      await expect(read()).rejects.toThrow(first);
      // Another chain's first manifest in its place: at the right depth, but not what its name says.
      const { backend: elsewhere, driver: otherDriver } = openStore();
      const [foreign] = await storeToolMessages(otherDriver, 1);
      await backend.put(
        first,
        (await elsewhere.get(manifestKeyOf(foreign as StorageDriverClaim))) ?? new Uint8Array(0),
      );
      await expect(read()).rejects.toThrow(ChunkIntegrityError);
      await expect(read()).rejects.toThrow(/hash mismatch/);
      await backend.put(first, firstBody);
      const [back] = await read();
      expect(back?.data?.length).toBeGreaterThan(0);
    });

    it('two writers that deflate the same bytes against different objects store two objects; each reads back', async () => {
      const { backend } = openStore();
      const [one, two] = [new ChunkStoreDriver({ backend, keyring }), new ChunkStoreDriver({ backend, keyring })];
      await storeOne(one, jsonPayload(toolMessage(1)));
      await storeOne(two, jsonPayload(toolMessage(2)));
      const shared = jsonPayload(toolMessage(3));
      const claims = [await storeOne(one, shared), await storeOne(two, shared)];
      expect(manifestKeyOf(claims[0] as StorageDriverClaim)).not.toBe(manifestKeyOf(claims[1] as StorageDriverClaim));
      for (const claim of claims) {
        const [back] = await new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claim]);
        expect(sha(back?.data)).toBe(sha(shared.data));
      }
    });

    it('a gc keeps the objects a claimed payload was deflated against, removes the rest deepest first, and a young manifest keeps its chain', async () => {
      const { directory, backend, driver } = openStore();
      const claims = await storeToolMessages(driver, 5);
      const ids = claims.map((claim) => readClaim(claim.claimData).manifestId);
      const then = new Date(Date.now() - 72 * HOUR);
      for (const key of keysUnder(directory, 'manifests')) utimesSync(join(directory, key), then, then);
      const removed: string[] = [];
      const recording = Object.assign(Object.create(backend) as FileBackend, {
        removeIfOlder: async (key: string, cutoffMs: number) => {
          const done = await backend.removeIfOlder(key, cutoffMs);
          if (done) removed.push(key);
          return done;
        },
      });
      const collector = new ChunkStoreDriver({ backend: recording, keyring });
      // Claimed: the third. It was deflated against the second, the second against the first.
      const report = await collectGarbage({ driver: collector, claimedManifests: [ids[2] ?? ''] });
      expect(report.missingCount).toBe(0);
      expect(report.reachable.manifest.objects).toBe(3);
      expect(report.deleted.manifest.objects).toBe(2);
      // The fifth (deflated against the fourth) before the fourth.
      expect(removed).toEqual([objectKey('manifest', ids[4] ?? ''), objectKey('manifest', ids[3] ?? '')]);
      const [back] = await new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claims[2] as StorageDriverClaim]);
      expect(back?.data?.length).toBeGreaterThan(0);

      // A young manifest no claim names (a payload whose claim has not reached history yet) keeps
      // the old objects it was deflated against.
      const chain = openStore();
      const [old, young] = await storeToolMessages(chain.driver, 2);
      const [oldKey, youngKey] = [old, young].map((claim) => manifestKeyOf(claim as StorageDriverClaim));
      expect((await headerOf(chain.backend, youngKey ?? '', keyring)).context?.id).toBe(
        parseObjectKey(oldKey ?? '')?.id,
      );
      utimesSync(join(chain.directory, oldKey ?? ''), then, then);
      const kept = await collectGarbage({ driver: chain.driver, claimedManifests: [] });
      expect([kept.youngManifests, kept.deleted.manifest.objects, kept.reachable.manifest.objects]).toEqual([1, 0, 2]);
      utimesSync(join(chain.directory, youngKey ?? ''), then, then);
      const gone = await collectGarbage({ driver: chain.driver, claimedManifests: [] });
      expect(gone.deleted.manifest.objects).toBe(2);
      expect(keysUnder(chain.directory, 'manifests')).toEqual([]);
    });
  });
