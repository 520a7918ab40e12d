// Store format 5: a payload on a base, or a fresh one, is its manifest alone (its new bytes inline)
// and later payloads list slices of those bytes there (entry tag 3 in "ctm" 0x05 manifests); every
// manifest is deflated against the window of the object stored before it and joins that chain
// (header bit 4: the context is a manifest; bit 5: the manifest's name binds its context). What the
// objects say, what a reader refuses, what `manifestFormat: 4` still writes, and what a gc keeps.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Payload, type StorageDriverClaim } from '@temporalio/common';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ChunkIntegrityError,
  ChunkMissingError,
  ChunkStoreDriver,
  codecKey,
  collectGarbage,
  FileBackend,
  keyringOf,
  objectKey,
  readClaim,
  type Keyring,
} from '../../src/payloads/index.js';
import { unsealObject } from '../../src/payloads/sealed-object.js';
import { keysUnder, sha, storeOne } from '../support/store-fixture.js';

const HOUR = 3_600_000;
const directories: string[] = [];
afterAll(() => directories.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

function storeDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'compactor-format-5-'));
  directories.push(directory);
  return directory;
}

/** A tool's result, distinct per seed: lines of code, some shared across seeds. */
function toolMessage(seed: number, lines = 40): Record<string, string> {
  const content = Array.from(
    { length: lines },
    (_, line) =>
      `${line + 1}\tdef handler_${(seed * 7 + line) % 90}(self, request): return self.route(request, ${line})`,
  ).join('\n');
  return { role: 'tool', tool_call_id: `call_${seed}_${randomBytes(4).toString('hex')}`, content };
}

const json = (value: unknown): Payload => ({
  metadata: { encoding: Buffer.from('json/plain') },
  data: Buffer.from(JSON.stringify(value)),
});

/** The header of a stored object: its context (kind, depth, id) and whether its name binds it. */
async function headerOf(backend: FileBackend, key: string, keyring: Keyring | undefined) {
  const sealed = await backend.get(key);
  if (sealed === undefined) throw new Error(`${key} is not stored`);
  const { context, bound } = unsealObject(sealed, key, keyring?.current.id, keyring);
  return { context, bound, flags: sealed[4] ?? 0 };
}

for (const keyed of [false, true])
  describe(`store format 5 ${keyed ? 'with' : 'without'} a key`, () => {
    const keyring = keyed ? keyringOf(codecKey(randomBytes(32), 'k1')) : undefined;

    /** A store in a fresh directory, and a driver writing to it (format 5 unless told). */
    function openStore(manifestFormat?: 4) {
      const directory = storeDirectory();
      const backend = new FileBackend({ directory, durable: false });
      const driver = new ChunkStoreDriver({
        backend,
        keyring,
        ...(manifestFormat === undefined ? {} : { manifestFormat }),
      });
      return { directory, backend, driver };
    }

    /** `count` tool results stored one after another, their claims in order. */
    async function storeToolMessages(driver: ChunkStoreDriver, count: number): Promise<StorageDriverClaim[]> {
      const claims: StorageDriverClaim[] = [];
      for (let seed = 0; seed < count; seed += 1) claims.push(await storeOne(driver, json(toolMessage(seed))));
      return claims;
    }

    it('holds a fresh payload in its manifest alone and chains the manifests: each deflated against the one before (depth + 1), named by it', async () => {
      const { directory, backend, driver } = openStore();
      const payloads = Array.from({ length: 5 }, (_, seed) => json(toolMessage(seed)));
      const claims: StorageDriverClaim[] = [];
      for (const payload of payloads) claims.push(await storeOne(driver, payload));
      expect(keysUnder(directory, 'chunks')).toEqual([]);
      expect(keysUnder(directory, 'nodes')).toEqual([]);
      const ids = claims.map((claim) => readClaim(claim.claimData).manifestId);
      const headers = await Promise.all(ids.map((id) => headerOf(backend, objectKey('manifest', id), keyring)));
      // The first starts the chain; each later one names the one before as its context, a manifest.
      expect(headers[0]?.context).toBeUndefined();
      for (let index = 1; index < ids.length; index += 1) {
        expect(headers[index]?.context).toEqual({ id: ids[index - 1], depth: index, kind: 'manifest' });
        expect(headers[index]?.bound).toBe(true);
        expect((headers[index]?.flags ?? 0) & 56).toBe(56);
      }
      // A cold reader opens the chain first, and reads every payload back.
      for (const [index, claim] of claims.entries()) {
        const [back] = await new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claim]);
        expect(sha(back?.data)).toBe(sha(payloads[index]?.data));
      }
    });

    it('a later payload lists the bytes an earlier one holds as slices of that manifest, writing them once', async () => {
      const { backend, driver } = openStore();
      const messages = Array.from({ length: 6 }, (_, seed) => toolMessage(seed, 30));
      const results: StorageDriverClaim[] = [];
      // Each tool result alone (a fresh payload), then a chat input holding all of them.
      for (const message of messages) results.push(await storeOne(driver, json(message)));
      const input = json({ messages, tools: [] });
      const claim = await storeOne(driver, input);
      const manifest = readClaim(claim.claimData).manifestId;
      const inspected = await driver.inspect('manifest', manifest);
      const listed = new Set(inspected.children.filter((child) => child.kind === 'manifest').map((child) => child.id));
      for (const result of results) expect(listed.has(readClaim(result.claimData).manifestId)).toBe(true);
      // The input's manifest holds little of its own: the messages are the results' bytes.
      const sealed = (await backend.get(objectKey('manifest', manifest)))?.length ?? 0;
      expect(sealed).toBeLessThan((input.data?.length ?? 0) / 5);
      const [back] = await new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claim]);
      expect(sha(back?.data)).toBe(sha(input.data));
    });

    it('names a missing context manifest, and refuses an object whose header says what no format says', async () => {
      const { directory, backend, driver } = openStore();
      const claims = await storeToolMessages(driver, 3);
      const [first, , third] = claims.map((claim) => objectKey('manifest', readClaim(claim.claimData).manifestId));
      if (first === undefined || third === undefined) throw new Error('no manifests');
      const original = await backend.get(third);
      if (original === undefined) throw new Error('not stored');
      // Bit 6 is no format's: a newer writer's object, refused by name.
      const flagged = Buffer.from(original);
      flagged[4] = (flagged[4] ?? 0) | 64;
      await backend.put(third, flagged);
      await expect(
        new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claims[2] as StorageDriverClaim]),
      ).rejects.toThrow(/has header flags \d+ this version does not know/);
      await backend.put(third, original);
      // The chain's first manifest gone: the third cannot be opened, and the error names the first.
      rmSync(join(directory, ...first.split('/')));
      const missing = new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claims[2] as StorageDriverClaim]);
      await expect(missing).rejects.toThrow(ChunkMissingError);
      await expect(
        new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claims[2] as StorageDriverClaim]),
      ).rejects.toThrow(first);
      // A manifest put where its chain's other one should be: its name no longer matches its content.
      const second = objectKey('manifest', readClaim((claims[1] as StorageDriverClaim).claimData).manifestId);
      await backend.put(first, (await backend.get(second)) ?? new Uint8Array(0));
      await expect(
        new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claims[2] as StorageDriverClaim]),
      ).rejects.toThrow(ChunkIntegrityError);
    });

    it('with manifestFormat 4 (a rolling upgrade) writes packs and no manifest in a chain, and format 5 reads it', async () => {
      const { directory, backend, driver } = openStore(4);
      const payloads = Array.from({ length: 4 }, (_, seed) => json(toolMessage(seed)));
      const claims: StorageDriverClaim[] = [];
      for (const payload of payloads) claims.push(await storeOne(driver, payload));
      expect(keysUnder(directory, 'chunks').length).toBeGreaterThan(0);
      for (const key of [...keysUnder(directory, 'manifests'), ...keysUnder(directory, 'chunks')]) {
        const { context, bound, flags } = await headerOf(backend, key, keyring);
        expect(bound, key).toBe(false);
        expect(context?.kind ?? 'chunk', key).toBe('chunk');
        expect(flags & 48, key).toBe(0);
      }
      const back = await new ChunkStoreDriver({ backend, keyring }).retrieve({}, claims);
      expect(back.map((payload) => sha(payload.data))).toEqual(payloads.map((payload) => sha(payload.data)));
    });

    it('a gc keeps the manifests a claimed payload was deflated against, removes the rest, each object before its context', async () => {
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
    });
  });
