// The collector's sweep on a file store without Temporal (claims given directly): what it removes
// and in which order (parents before children, so a node that exists always has its descendants),
// what a store renewing an object during the sweep protects, temporary files, dry runs, objects
// under a key it lacks kept, and a failing store stopping it before anything is removed.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter, type StorageDriverClaim } from '@temporalio/common';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { claimManifestId } from '../../src/payloads/claims.js';
import { codecKey, type Keyring } from '../../src/payloads/keyring.js';
import { keyringOf } from '../support/keyring.js';
import { collectGarbage, GarbageCollectionError, totalOf } from '../../src/payloads/gc.js';
import { DEFAULT_CHUNKER_LIMITS } from '../../src/payloads/chunker.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { objectKey, parseObjectKey } from '../../src/payloads/object-format.js';
import { type SweepableBackend } from '../../src/payloads/object-backend.js';

const HOUR = 3_600_000;
const directories: string[] = [];
afterAll(() => directories.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

function storeDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'compactor-gc-sweep-'));
  directories.push(directory);
  return directory;
}

function filesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

function ageAll(directory: string, hours: number): void {
  const then = new Date(Date.now() - hours * HOUR);
  for (const file of filesUnder(directory)) utimesSync(file, then, then);
}

/** A conversation large enough for a tree of a few levels (small chunks), distinct per seed. */
function conversation(seed: string, messages = 400) {
  return {
    messages: Array.from({ length: messages }, (_, index) => ({
      role: 'tool',
      content: `${seed} result ${index}: ${randomBytes(24).toString('hex')}`,
    })),
  };
}

async function store(driver: ChunkStoreDriver, value: unknown): Promise<StorageDriverClaim> {
  const [claim] = await driver.store({}, [defaultPayloadConverter.toPayload(value) ?? {}]);
  if (claim === undefined) throw new Error('no claim');
  return claim;
}

function manifestOf(claim: StorageDriverClaim): string {
  return claimManifestId(claim.claimData) ?? '';
}

/** Object keys reachable from a manifest (and the chunks chunks were deflated against), with each node's level. */
async function treeOf(driver: ChunkStoreDriver, manifest: string): Promise<Map<string, number>> {
  const levels = new Map<string, number>([[objectKey('manifest', manifest), Infinity]]);
  const queue: Array<{ kind: 'manifest' | 'node' | 'chunk'; id: string }> = [{ kind: 'manifest', id: manifest }];
  for (let item = queue.pop(); item !== undefined; item = queue.pop()) {
    const inspected = await driver.reader.inspect(item.kind, item.id);
    if (item.kind === 'node') levels.set(objectKey('node', item.id), inspected.level);
    for (const child of inspected.children) {
      if (child.kind === 'chunk') {
        if (!levels.has(objectKey('chunk', child.id))) queue.push({ kind: 'chunk', id: child.id });
        levels.set(objectKey('chunk', child.id), 0);
      } else {
        // A base manifest is removed with the manifests, before every node.
        if (child.kind === 'manifest') levels.set(objectKey('manifest', child.id), Infinity);
        queue.push({ kind: child.kind, id: child.id });
      }
    }
  }
  return levels;
}

/** The objects that list each of `keys` (among `keys`), as the objects say. */
async function parentsOf(driver: ChunkStoreDriver, keys: string[]): Promise<Map<string, string[]>> {
  const parents = new Map<string, string[]>(keys.map((key) => [key, []]));
  for (const key of keys) {
    const parsed = parseObjectKey(key);
    if (parsed === undefined) continue;
    for (const child of (await driver.reader.inspect(parsed.kind, parsed.id)).children)
      parents.get(objectKey(child.kind, child.id))?.push(key);
  }
  return parents;
}

/** The file backend, recording removals in order; `beforeRemove` runs first (a concurrent store). */
function recording(
  directory: string,
  beforeRemove: (key: string, backend: FileBackend) => Promise<void> = async () => undefined,
): { backend: SweepableBackend; removed: string[] } {
  const inner = new FileBackend({ directory, durable: false });
  const removed: string[] = [];
  const backend: SweepableBackend = {
    description: inner.description,
    get: (key, signal) => inner.get(key, signal),
    put: (key, body, signal) => inner.put(key, body, signal),
    stat: (key) => inner.stat(key),
    touch: (key) => inner.touch(key),
    list: (prefix, signal) => inner.list(prefix, signal),
    async removeIfOlder(key, cutoffMs) {
      await beforeRemove(key, inner);
      const done = await inner.removeIfOlder(key, cutoffMs);
      if (done) removed.push(key);
      return done;
    },
  };
  return { backend, removed };
}

/** Small chunks, every one an object (none inline), so a payload of 200 KB makes a tree of two node levels. */
const smallChunks = { chunkerLimits: { ...DEFAULT_CHUNKER_LIMITS, minChunk: 64, groupMax: 64 }, literalBelow: 0 };

describe('collectGarbage (sweep)', () => {
  const keyring: Keyring = keyringOf(codecKey(randomBytes(32), 'k1'));

  it('removes what no claim reaches once older than the grace period, parents before children', async () => {
    const directory = storeDirectory();
    const { backend, removed } = recording(directory);
    const driver = new ChunkStoreDriver({ backend, keyring, ...smallChunks });
    const kept = await store(driver, conversation('kept', 2400));
    const dropped = await store(driver, conversation('dropped', 2400));
    ageAll(directory, 72);
    const keptTree = await treeOf(driver, manifestOf(kept));
    const droppedTree = await treeOf(driver, manifestOf(dropped));
    const droppedParents = await parentsOf(driver, [...droppedTree.keys()]);
    const garbage = [...droppedTree.keys()].filter((key) => !keptTree.has(key));
    expect(Math.max(...[...droppedTree.values()].filter(Number.isFinite))).toBeGreaterThanOrEqual(2);

    const dry = await collectGarbage({ driver, claimedManifests: [manifestOf(kept)], dryRun: true });
    expect(removed).toEqual([]);
    expect(totalOf(dry.deleted).objects).toBe(garbage.length);

    const report = await collectGarbage({ driver, claimedManifests: [manifestOf(kept)] });
    expect(report.deleted).toEqual(dry.deleted);
    expect(new Set(removed)).toEqual(new Set(garbage));
    // Every object was removed after all its parents among the garbage (a manifest before its
    // base and what it lists, a node before its children, an object before its context).
    const at = new Map(removed.map((key, index) => [key, index]));
    for (const [child, parents] of droppedParents)
      for (const parent of parents)
        if (at.has(parent) && at.has(child)) expect(at.get(parent)).toBeLessThan(at.get(child) ?? -1);
    expect([...droppedParents.values()].some((parents) => parents.length > 0)).toBe(true);
    expect(totalOf(report.reachable).objects).toBe(keptTree.size);
    const reader = new ChunkStoreDriver({ backend, keyring });
    const [value] = await reader.retrieve({}, [kept]);
    expect(defaultPayloadConverter.fromPayload(value ?? {})).toEqual(
      expect.objectContaining({ messages: expect.any(Array) }),
    );
    await expect(reader.retrieve({}, [dropped])).rejects.toThrow(/is missing from file:/);
  });

  it('keeps an object a store renews during the sweep, and everything under it', async () => {
    const directory = storeDirectory();
    let renewed = '';
    const { backend, removed } = recording(directory, async (key, inner) => {
      // A store reusing the dropped payload's manifest just before the collector reaches it.
      if (key === renewed) await inner.touch(key);
    });
    const driver = new ChunkStoreDriver({ backend, keyring, ...smallChunks });
    const reused = await store(driver, conversation('reused'));
    const other = await store(driver, conversation('other'));
    renewed = objectKey('manifest', manifestOf(reused));
    ageAll(directory, 72);
    const reusedTree = await treeOf(driver, manifestOf(reused));
    const otherTree = await treeOf(driver, manifestOf(other));

    const report = await collectGarbage({ driver, claimedManifests: [] });
    expect(totalOf(report.renewed).objects).toBe(reusedTree.size);
    expect(removed.filter((key) => reusedTree.has(key))).toEqual([]);
    expect(new Set(removed)).toEqual(new Set([...otherTree.keys()].filter((key) => !reusedTree.has(key))));
    const [value] = await new ChunkStoreDriver({ backend, keyring }).retrieve({}, [reused]);
    expect(value?.data?.length).toBeGreaterThan(0);
  });

  it('keeps the base manifests a claimed manifest stands on, and removes a chain from its newest manifest down', async () => {
    const directory = storeDirectory();
    const { backend, removed } = recording(directory);
    // Small chunks: with the default ones the 40 messages are two or three slices, cut where their
    // random bytes say, and when the first slice both share is under half the input no base is named.
    const driver = new ChunkStoreDriver({ backend, keyring, ...smallChunks });
    // Five rounds of one conversation: each input is the last with a message appended, so each
    // manifest after the first names the one before as its base.
    const base = conversation('chain', 40);
    const inputs = [0, 1, 2, 3, 4].map((round) => ({
      messages: [...base.messages, ...conversation(`round ${round}`, round + 1).messages],
    }));
    const claims: StorageDriverClaim[] = [];
    for (const input of inputs) claims.push(await store(driver, input));
    const depths = await Promise.all(
      claims.map(async (claim) => (await driver.reader.inspect('manifest', manifestOf(claim))).depth),
    );
    expect(depths).toEqual([0, 1, 2, 3, 4]);
    ageAll(directory, 72);
    const claimed = claims[2];
    if (claimed === undefined) throw new Error('no claim');
    const keptTree = await treeOf(driver, manifestOf(claimed));
    // The claimed manifest stands on the two before it.
    for (const claim of claims.slice(0, 3)) expect(keptTree.has(objectKey('manifest', manifestOf(claim)))).toBe(true);

    const report = await collectGarbage({ driver, claimedManifests: [manifestOf(claimed)] });
    expect(report.missingCount).toBe(0);
    expect(totalOf(report.reachable).objects).toBe(keptTree.size);
    const manifestsRemoved = removed.filter((key) => key.startsWith('v1/manifests/'));
    // The newest first: a manifest is never removed before one that stands on it.
    expect(manifestsRemoved).toEqual([
      objectKey('manifest', manifestOf(claims[4] ?? claimed)),
      objectKey('manifest', manifestOf(claims[3] ?? claimed)),
    ]);
    const [value] = await new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claimed]);
    expect(defaultPayloadConverter.fromPayload(value ?? {})).toEqual(inputs[2]);
  });

  it('keeps young objects and young manifests with their trees, removes old temporary files', async () => {
    const directory = storeDirectory();
    const driver = new ChunkStoreDriver({
      backend: new FileBackend({ directory, durable: false }),
      keyring,
      ...smallChunks,
    });
    const oldValue = conversation('old');
    const old = await store(driver, oldValue);
    ageAll(directory, 72);
    // Stored by a driver that trusts its cache: the new manifest shares old chunks without touching
    // them (not its prefix: a payload that starts with most of the old one would name it as its base).
    const young = await store(driver, { messages: oldValue.messages.slice(100) });
    mkdirSync(join(directory, 'v1', 'chunks'), { recursive: true });
    writeFileSync(join(directory, 'v1', 'chunks', '.tmp-1-old'), 'half a write');
    mkdirSync(join(directory, 'v1', 'nodes'), { recursive: true });
    writeFileSync(join(directory, 'v1', 'nodes', '.tmp-2-young'), 'a write in progress');
    const then = new Date(Date.now() - 72 * HOUR);
    utimesSync(join(directory, 'v1', 'chunks', '.tmp-1-old'), then, then);

    const oldTree = await treeOf(driver, manifestOf(old));
    const youngTree = await treeOf(driver, manifestOf(young));
    // The young payload lists slices of the old payload's bytes (inline in its manifest).
    const shared = [...youngTree.keys()].filter((key) => oldTree.has(key));
    expect(shared.length).toBeGreaterThan(0);

    const report = await collectGarbage({ driver, claimedManifests: [] });
    expect(report.youngManifests).toBe(1);
    expect(report.deleted.temporary.objects).toBe(1);
    expect(report.young.temporary.objects).toBe(1);
    expect(totalOf(report.reachable).objects).toBe(youngTree.size);
    const left = new Set(filesUnder(directory).map((file) => file.slice(directory.length + 1)));
    // The old chunks the young manifest shares stay (72 hours old); the rest of the old payload goes.
    expect([...youngTree.keys()].filter((key) => !left.has(key))).toEqual([]);
    expect([...oldTree.keys()].filter((key) => !youngTree.has(key) && left.has(key))).toEqual([]);
    expect([...left].filter((key) => parseObjectKey(key) === undefined)).toEqual(['v1/nodes/.tmp-2-young']);
  });

  it('keeps everything under a young node, even when no manifest lists it (a store touched it, then died)', async () => {
    const directory = storeDirectory();
    const backend = new FileBackend({ directory, durable: false });
    // More than 1,024 slices: a fresh payload listed over a tree of nodes.
    const driver = new ChunkStoreDriver({ backend, keyring, ...smallChunks });
    const claim = await store(driver, conversation('interrupted', 1_100));
    ageAll(directory, 72);
    const tree = await treeOf(driver, manifestOf(claim));
    const [node] = [...tree.entries()]
      .filter(([key, level]) => key.startsWith('v1/nodes/') && level === 1)
      .map(([key]) => key);
    if (node === undefined) throw new Error('no level-1 node');
    await backend.touch(node);
    const parsed = parseObjectKey(node);
    const under = new Set(
      (await driver.reader.inspect('node', parsed?.id ?? '')).children.map((child) => objectKey(child.kind, child.id)),
    );

    const report = await collectGarbage({ driver, claimedManifests: [] });
    expect([report.youngManifests, report.youngNodes]).toEqual([0, 1]);
    const left = new Set(filesUnder(directory).map((file) => file.slice(directory.length + 1)));
    expect(left).toEqual(new Set([node, ...under]));
    expect(totalOf(report.deleted).objects).toBe(tree.size - 1 - under.size);
  });

  it('keeps every object sealed with a key it does not have, reports them, and goes on', async () => {
    const directory = storeDirectory();
    const writer = new ChunkStoreDriver({ backend: new FileBackend({ directory, durable: false }), keyring });
    const claim = await store(writer, conversation('secret'));
    await store(writer, conversation('garbage'));
    ageAll(directory, 72);
    const before = filesUnder(directory).length;
    const keyless = new ChunkStoreDriver({
      backend: new FileBackend({ directory }),
      keyring: keyringOf(codecKey(randomBytes(32), 'k2')),
    });
    const report = await collectGarbage({ driver: keyless, claimedManifests: [manifestOf(claim)] });
    expect(filesUnder(directory)).toHaveLength(before);
    expect(totalOf(report.deleted).objects).toBe(0);
    expect(report.unreadableCount).toBe(before);
    expect(report.unreadableObjects[0]?.reason).toMatch(/is encrypted with key id "k1", which is not configured/);
  });

  it('stops before removing anything when the store itself fails while marking', async () => {
    const directory = storeDirectory();
    const writer = new ChunkStoreDriver({ backend: new FileBackend({ directory, durable: false }), keyring });
    const claim = await store(writer, conversation('kept'));
    await store(writer, conversation('garbage'));
    ageAll(directory, 72);
    const before = filesUnder(directory).length;
    const inner = new FileBackend({ directory });
    const failing: SweepableBackend = {
      description: inner.description,
      get: async () => {
        throw new Error('EIO: the disk failed');
      },
      put: (key, body, signal) => inner.put(key, body, signal),
      stat: (key) => inner.stat(key),
      touch: (key) => inner.touch(key),
      list: (prefix, signal) => inner.list(prefix, signal),
      removeIfOlder: (key, cutoffMs) => inner.removeIfOlder(key, cutoffMs),
    };
    const failure = collectGarbage({
      driver: new ChunkStoreDriver({ backend: failing, keyring }),
      claimedManifests: [manifestOf(claim)],
    });
    await expect(failure).rejects.toThrow(GarbageCollectionError);
    await expect(failure).rejects.toThrow(/^marking stopped, nothing was removed: EIO: the disk failed/);
    expect(filesUnder(directory)).toHaveLength(before);
  });

  it('counts claims whose manifest is gone as missing and goes on', async () => {
    const directory = storeDirectory();
    const driver = new ChunkStoreDriver({ backend: new FileBackend({ directory, durable: false }), keyring });
    const report = await collectGarbage({ driver, claimedManifests: ['ab'.repeat(32), 'not an id'] });
    expect([report.claimedManifests, report.missingCount, report.missing]).toEqual([
      1,
      1,
      [objectKey('manifest', 'ab'.repeat(32))],
    ]);
  });
});

describe('temporal-compactor gc: usage', () => {
  async function run(args: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
    let stderr = '';
    const code = await main(args, { stdout: () => undefined, stderr: (text) => (stderr += text), env });
    return { code, stderr };
  }

  it('refuses a short or malformed grace period, and a configuration without a store, before connecting', async () => {
    const store = { COMPACTOR_PAYLOAD_STORE: `file:${storeDirectory()}` };
    expect(await run(['gc', '--grace', '47h'], store)).toEqual({
      code: 2,
      stderr: expect.stringContaining('temporal-compactor gc: --grace must be at least 48h'),
    });
    expect(await run(['gc', '--grace', 'soon'], store)).toEqual({
      code: 2,
      stderr: expect.stringContaining('--grace takes a duration such as "48h", "3d" or "90m", got "soon"'),
    });
    expect(await run(['gc', 'extra'], store)).toEqual({
      code: 2,
      stderr: expect.stringContaining('unexpected argument "extra"'),
    });
    expect(await run(['gc', '--dry-run'], {})).toEqual({
      code: 2,
      stderr: expect.stringContaining('gc needs the payload store: set COMPACTOR_PAYLOAD_STORE'),
    });
  });
});
