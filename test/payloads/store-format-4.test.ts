// Store format 4: every pack deflated against the window of the pack the process stored before it
// (its context, named in the sealed object's header: flag 8, a depth and the context's id), a chain
// of at most 63; manifests and nodes deflated against that window when it makes them smaller. What
// the objects say, what a cold reader needs, what a reader refuses, what `manifestFormat: 3` still
// writes, and what a garbage collection keeps.
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
  parseObjectKey,
  readClaim,
  type Keyring,
} from '../../src/payloads/index.js';
import {
  chainRoot,
  contextualId,
  inflateObject,
  MAX_CONTEXT_DEPTH,
  objectId,
  openObject,
  sealWithContext,
  unsealObject,
  windowAfter,
  WINDOW_BYTES,
} from '../../src/payloads/sealed-object.js';
import { keysUnder, sha, storeOne } from '../support/store-fixture.js';

const HOUR = 3_600_000;

/** The file backend, recording what a gc removes, in order. */
class RemovalOrder extends FileBackend {
  readonly removed: string[] = [];
  override async removeIfOlder(key: string, cutoffMs: number): Promise<boolean> {
    const removed = await super.removeIfOlder(key, cutoffMs);
    if (removed) this.removed.push(key);
    return removed;
  }
}
const directories: string[] = [];
afterAll(() => directories.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

function storeDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'compactor-format-4-'));
  directories.push(directory);
  return directory;
}

/** A tool result as an agent reads files: lines of code, distinct per seed, some of them repeated across seeds. */
function toolResult(seed: number, lines = 60): Payload {
  const content = Array.from(
    { length: lines },
    (_, line) =>
      `${line + 1}\tdef handler_${(seed * 7 + line) % 90}(self, request): return self.route(request, ${line})`,
  ).join('\n');
  const body = { role: 'tool', tool_call_id: `call_${seed}_${randomBytes(4).toString('hex')}`, content };
  return { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(body)) };
}

/** The context a stored chunk names (undefined: none) and its depth. */
async function contextOf(
  backend: FileBackend,
  key: string,
  keyring: Keyring | undefined,
): Promise<{ id: string; depth: number } | undefined> {
  const sealed = await backend.get(key);
  if (sealed === undefined) throw new Error(`${key} is not stored`);
  return unsealObject(sealed, key, keyring?.current.id, keyring).context;
}

describe('sealed objects with a context chunk', () => {
  it('open only with the context window they were deflated against; openObject refuses them', () => {
    const lines = (from: number, to: number): Buffer =>
      Buffer.from(
        Array.from(
          { length: to - from },
          (_, index) => `${from + index}\tdef handler_${from + index}(self): return ${(from + index) * 7}\n`,
        ).join(''),
      );
    const rootText = lines(0, 200);
    const rootId = objectId(rootText, undefined);
    const root = sealWithContext(rootText, rootId, undefined, 6, 1, undefined);
    expect(root.context).toBeUndefined();
    const rootWindow = windowAfter(root.before, rootText);
    expect(rootWindow.subarray(rootWindow.length - rootText.length)).toEqual(rootText);
    // Half of it is the root's last lines: what a file read again looks like.
    const text = lines(100, 300);
    const id = contextualId(text, rootId, undefined);
    expect(id).not.toBe(objectId(text, undefined));
    const sealed = sealWithContext(text, id, undefined, 6, 1, { id: rootId, depth: 0, window: rootWindow });
    expect(sealed.context?.id).toBe(rootId);
    // Flags: deflated, a preset dictionary, a context; then dictionary 1, depth 1 and the context's id.
    expect(sealed.sealed[4]).toBe(1 | 4 | 8);
    expect([...sealed.sealed.subarray(5, 7)]).toEqual([1, 1]);
    expect(Buffer.from(sealed.sealed.subarray(7, 39)).toString('hex')).toBe(rootId);
    const unsealed = unsealObject(sealed.sealed, 'v1/chunks/x', undefined, undefined);
    expect(unsealed.context).toEqual({ id: rootId, depth: 1, kind: 'chunk' });
    expect(Buffer.from(inflateObject(unsealed, id, 'v1/chunks/x', rootWindow).plaintext)).toEqual(text);
    // Named by its plaintext alone it is refused: a chunk's id binds its context.
    expect(() => inflateObject(unsealed, objectId(text, undefined), 'v1/chunks/x', rootWindow)).toThrow(
      /hash mismatch/,
    );
    // Smaller than against the preset dictionary alone: the context holds most of it.
    expect(sealed.sealed.length).toBeLessThan(
      sealWithContext(text, objectId(text, undefined), undefined, 6, 1, undefined).sealed.length,
    );
    expect(() => inflateObject(unsealed, id, 'v1/chunks/x', chainRoot())).toThrow(ChunkIntegrityError);
    expect(() => openObject(sealed.sealed, id, 'v1/chunks/x', undefined, undefined)).toThrow(
      /compressed against a context chunk/,
    );
    // A depth past the readers' limit is refused from the header.
    const deep = Buffer.from(sealed.sealed);
    deep[6] = MAX_CONTEXT_DEPTH + 1;
    expect(() => unsealObject(deep, 'v1/chunks/y', undefined, undefined)).toThrow(/chain of 65 context chunks/);
  });

  it('a window is the last 32 KiB of what it follows and the plaintext', () => {
    const before = Buffer.alloc(WINDOW_BYTES, 1);
    expect(windowAfter(before, Buffer.alloc(10, 2))).toEqual(
      Buffer.concat([Buffer.alloc(WINDOW_BYTES - 10, 1), Buffer.alloc(10, 2)]),
    );
    expect(windowAfter(before, Buffer.alloc(WINDOW_BYTES + 5, 3))).toEqual(Buffer.alloc(WINDOW_BYTES, 3));
  });
});

for (const keyed of [false, true]) {
  const keyring = keyed ? keyringOf(codecKey(randomBytes(32), 'k4')) : undefined;
  describe(`store format 4 ${keyed ? 'with a key' : 'without a key'}`, () => {
    it('deflates each pack against the one stored before it (depth + 1), and a cold reader reads every payload back', async () => {
      const directory = storeDirectory();
      const backend = new FileBackend({ directory, durable: false });
      const driver = new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 });
      const payloads = Array.from({ length: 6 }, (_, seed) => toolResult(seed));
      const claims: StorageDriverClaim[] = [];
      const packs: string[] = [];
      for (const payload of payloads) {
        const before = new Set(keysUnder(directory, 'chunks'));
        claims.push(await storeOne(driver, payload));
        const added = keysUnder(directory, 'chunks').filter((key) => !before.has(key));
        expect(added).toHaveLength(1);
        packs.push(added[0] ?? '');
      }
      const contexts = await Promise.all(packs.map((key) => contextOf(backend, key, keyring)));
      expect(contexts[0]).toBeUndefined();
      contexts.slice(1).forEach((context, index) => {
        expect(context?.id).toBe(parseObjectKey(packs[index] ?? '')?.id);
        expect(context?.depth).toBe(index + 1);
      });
      // Smaller than format 3 writes the same payloads (the preset dictionary alone).
      const plainDirectory = storeDirectory();
      const formatThree = new ChunkStoreDriver({
        backend: new FileBackend({ directory: plainDirectory, durable: false }),
        keyring,
        manifestFormat: 3,
      });
      for (const payload of payloads) await storeOne(formatThree, payload);
      expect(formatThree.stats.written.chunk.bytes).toBeGreaterThan(driver.stats.written.chunk.bytes);

      // A cold reader of the last payload opens the chain of contexts first; every payload reads back.
      for (const [index, claim] of claims.entries()) {
        const reader = new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 });
        const [back] = await reader.retrieve({}, [claim]);
        expect(sha(back?.data)).toBe(sha(payloads[index]?.data));
      }
      const cold = new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 });
      await cold.retrieve({}, [claims.at(-1) ?? (claims[0] as StorageDriverClaim)]);
      expect(cold.stats.fetched.objects).toBe(1 + packs.length);
    });

    it('starts a new chain after 63 packs, and when the last pack is older than half the refresh period', async () => {
      const directory = storeDirectory();
      const backend = new FileBackend({ directory, durable: false });
      let clock = Date.now();
      const driver = new ChunkStoreDriver({
        backend,
        keyring,
        manifestFormat: 4,
        refreshAfterMs: 24 * HOUR,
        now: () => clock,
      });
      const depths: number[] = [];
      for (let seed = 0; seed < 66; seed += 1) {
        const before = new Set(keysUnder(directory, 'chunks'));
        await storeOne(driver, toolResult(seed, 12));
        const [pack] = keysUnder(directory, 'chunks').filter((key) => !before.has(key));
        depths.push((await contextOf(backend, pack ?? '', keyring))?.depth ?? 0);
      }
      expect(Math.max(...depths)).toBe(63);
      expect(depths.slice(62, 66)).toEqual([62, 63, 0, 1]);
      clock += 13 * HOUR;
      const before = new Set(keysUnder(directory, 'chunks'));
      await storeOne(driver, toolResult(100, 12));
      const [pack] = keysUnder(directory, 'chunks').filter((key) => !before.has(key));
      expect(await contextOf(backend, pack ?? '', keyring)).toBeUndefined();
    });

    it('names the context a reader cannot find, and refuses a context at another depth than its successor says', async () => {
      const directory = storeDirectory();
      const backend = new FileBackend({ directory, durable: false });
      const driver = new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 });
      await storeOne(driver, toolResult(1));
      const first = keysUnder(directory, 'chunks');
      await storeOne(driver, toolResult(2));
      const claim = await storeOne(driver, toolResult(3));
      const chunks = keysUnder(directory, 'chunks');
      const contexts = new Map(
        await Promise.all(chunks.map(async (key) => [key, await contextOf(backend, key, keyring)] as const)),
      );
      const [last] = [...contexts].filter(([, context]) => context?.depth === 2).map(([key]) => key);
      const [middle] = [...contexts].filter(([, context]) => context?.depth === 1).map(([key]) => key);
      if (last === undefined || middle === undefined || first[0] === undefined)
        throw new Error('expected a chain of 3');
      // The middle pack put where the first should be: a chunk at depth 1 where depth 0 is expected.
      const rootBody = await backend.get(first[0]);
      const middleBody = await backend.get(middle);
      if (rootBody === undefined || middleBody === undefined) throw new Error('not stored');
      await backend.put(first[0], middleBody);
      await expect(new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 }).retrieve({}, [claim])).rejects.toThrow(
        /at context depth 1 where the chunk compressed against it says 0/,
      );
      rmSync(join(directory, ...first[0].split('/')));
      const missing = new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 }).retrieve({}, [claim]);
      await expect(missing).rejects.toThrow(ChunkMissingError);
      await expect(missing).rejects.toThrow(first[0]);
      await backend.put(first[0], rootBody);
      const [back] = await new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 }).retrieve({}, [claim]);
      expect(back?.data?.length).toBeGreaterThan(0);
    });

    it('a payload on a base with at most 1 KiB of new bytes is its manifest alone; more go to a pack', async () => {
      const directory = storeDirectory();
      const backend = new FileBackend({ directory, durable: false });
      const driver = new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 });
      const messages = Array.from({ length: 8 }, (_, seed) =>
        JSON.parse(Buffer.from(toolResult(seed).data ?? []).toString()),
      );
      const input = (extra: unknown[]): Payload => ({
        metadata: { encoding: Buffer.from('json/plain') },
        data: Buffer.from(JSON.stringify({ messages: [...messages, ...extra], tools: [] })),
      });
      await storeOne(driver, input([]));
      const reply = { role: 'assistant', content: 'Let me look at the handler that fails. '.repeat(8) };
      const chunksBefore = keysUnder(directory, 'chunks').length;
      const small = await storeOne(driver, input([reply]));
      expect(keysUnder(directory, 'chunks')).toHaveLength(chunksBefore);
      expect((await driver.inspect('manifest', readClaim(small.claimData).manifestId)).depth).toBe(1);
      const large = await storeOne(
        driver,
        input([
          reply,
          ...Array.from({ length: 3 }, (_, seed) =>
            JSON.parse(Buffer.from(toolResult(20 + seed).data ?? []).toString()),
          ),
        ]),
      );
      expect(keysUnder(directory, 'chunks')).toHaveLength(chunksBefore + 1);
      expect((await driver.inspect('manifest', readClaim(large.claimData).manifestId)).depth).toBe(2);
      for (const claim of [small, large]) {
        const [back] = await new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 }).retrieve({}, [claim]);
        expect(back?.data?.length).toBeGreaterThan(0);
      }
    });

    it('two writers that deflate the same bytes against different packs store two objects; each reads back', async () => {
      const directory = storeDirectory();
      const backend = new FileBackend({ directory, durable: false });
      const [one, two] = [
        new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 }),
        new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 }),
      ];
      await storeOne(one, toolResult(1));
      await storeOne(two, toolResult(2));
      const shared = toolResult(3);
      const claims = [await storeOne(one, shared), await storeOne(two, shared)];
      const manifests = claims.map((claim) => readClaim(claim.claimData).manifestId);
      const packs = await Promise.all(
        manifests.map(async (manifest) =>
          (await one.inspect('manifest', manifest)).children.filter((child) => child.kind === 'chunk'),
        ),
      );
      expect(packs[0]?.map((pack) => pack.id)).not.toEqual(packs[1]?.map((pack) => pack.id));
      for (const claim of claims) {
        const [back] = await new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 }).retrieve({}, [claim]);
        expect(sha(back?.data)).toBe(sha(shared.data));
      }
    });

    it('with manifestFormat 3 (a rolling upgrade) writes no object with a context, and format 4 reads it', async () => {
      const directory = storeDirectory();
      const backend = new FileBackend({ directory, durable: false });
      const driver = new ChunkStoreDriver({ backend, keyring, manifestFormat: 3 });
      const payloads = Array.from({ length: 4 }, (_, seed) => toolResult(seed));
      const claims = [];
      for (const payload of payloads) claims.push(await storeOne(driver, payload));
      for (const kind of ['chunks', 'manifests', 'nodes'] as const)
        for (const key of keysUnder(directory, kind)) {
          const sealed = await backend.get(key);
          expect(((sealed?.[4] ?? 0) & 8) === 0, key).toBe(true);
        }
      const last = claims[3];
      if (last === undefined) throw new Error('no claim');
      const [back] = await new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 }).retrieve({}, [last]);
      expect(sha(back?.data)).toBe(sha(payloads[3]?.data));
    });

    it('a gc keeps the chunks the packs of a claimed payload were deflated against, removes the rest deepest first, and a young chunk keeps its chain', async () => {
      const directory = storeDirectory();
      const backend = new RemovalOrder({ directory, durable: false });
      const driver = new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 });
      const claims: StorageDriverClaim[] = [];
      for (let seed = 0; seed < 5; seed += 1) claims.push(await storeOne(driver, toolResult(seed)));
      const packs = keysUnder(directory, 'chunks');
      expect(packs).toHaveLength(5);
      const depthOf = new Map(
        await Promise.all(
          packs.map(async (key) => [key, (await contextOf(backend, key, keyring))?.depth ?? 0] as const),
        ),
      );
      const packsByDepth = [...packs].sort((a, b) => (depthOf.get(a) ?? 0) - (depthOf.get(b) ?? 0));
      const then = new Date(Date.now() - 72 * HOUR);
      for (const kind of ['chunks', 'manifests', 'nodes'] as const)
        for (const key of keysUnder(directory, kind)) utimesSync(join(directory, key), then, then);
      // Claimed: the third payload only. Its pack stands on the first two; the last two are garbage.
      const claimed = claims[2];
      if (claimed === undefined) throw new Error('no claim');
      const inspected = await driver.inspect('manifest', readClaim(claimed.claimData).manifestId);
      const [pack] = inspected.children.filter((child) => child.kind === 'chunk');
      if (pack === undefined) throw new Error('no pack');
      expect((await driver.inspect('chunk', pack.id)).depth).toBe(2);

      const report = await collectGarbage({ driver, claimedManifests: [readClaim(claimed.claimData).manifestId] });
      expect(report.missingCount).toBe(0);
      expect(report.reachable.chunk.objects).toBe(3);
      expect(report.deleted.chunk.objects).toBe(2);
      expect(report.deleted.manifest.objects).toBe(4);
      expect(keysUnder(directory, 'chunks')).toHaveLength(3);
      // The fifth payload's pack (depth 4) before the fourth's (depth 3), which was its context.
      const removedChunks = backend.removed.filter((key) => key.startsWith('v1/chunks/'));
      expect(removedChunks).toHaveLength(2);
      expect(removedChunks).toEqual(packsByDepth.slice(3).reverse());
      const [back] = await new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 }).retrieve({}, [claimed]);
      expect(back?.data?.length).toBeGreaterThan(0);

      // A young chunk no manifest lists (a store that wrote its pack, then died) keeps its chain.
      const writer = new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 });
      const newPack = async (seed: number): Promise<string> => {
        const before = new Set(keysUnder(directory, 'chunks'));
        const claim = await storeOne(writer, toolResult(seed));
        rmSync(join(directory, ...objectKey('manifest', readClaim(claim.claimData).manifestId).split('/')));
        const [key] = keysUnder(directory, 'chunks').filter((candidate) => !before.has(candidate));
        if (key === undefined) throw new Error('no new pack');
        return key;
      };
      const root = await newPack(10);
      const child = await newPack(11);
      expect((await contextOf(backend, child, keyring))?.id).toBe(parseObjectKey(root)?.id);
      utimesSync(join(directory, root), then, then);
      const second = await collectGarbage({ driver, claimedManifests: [readClaim(claimed.claimData).manifestId] });
      expect(second.youngChunks).toBe(1);
      const left = new Set(keysUnder(directory, 'chunks'));
      expect(left.has(child) && left.has(root)).toBe(true);
      expect(left.size).toBe(5);
    });
  });
}
