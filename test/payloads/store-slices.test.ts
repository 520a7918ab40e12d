// Where a stored payload's bytes lie: inline in its manifest (a fresh payload, one on a base),
// listed again by later payloads as slices of that manifest's inline bytes, or — a long payload
// listed over a tree of nodes — in one pack, its new slices end to end. What a round writes and
// reads, what a process that read a payload reuses, and what a reader refuses.
import { randomBytes } from 'node:crypto';
import { StorageDriverClaim, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ChunkIntegrityError } from '../../src/payloads/errors.js';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { claimDataFor, readClaim } from '../../src/payloads/claims.js';
import { codecKey, type Keyring } from '../../src/payloads/keyring.js';
import { keyringOf } from '../support/keyring.js';
import { objectKey } from '../../src/payloads/object-format.js';
import { type ObjectBackend } from '../../src/payloads/object-backend.js';
import { encodeManifest, type Entry } from '../../src/payloads/object-format.js';
import { objectId, sealObject, unsealObject } from '../../src/payloads/sealed-object.js';
import { jsonPayload, MemoryBackend, sha, storeOne, toolMessage } from '../support/payload-store.js';

/** A conversation as an agent run's chat input grows: tool results of a few hundred bytes to a few KB. */
function conversation(messages: number): Payload {
  return jsonPayload({
    messages: Array.from({ length: messages }, (_, index) =>
      index % 2 === 0
        ? {
            role: 'assistant',
            content: `Step ${index}: let me look at the module that fails.`,
            tool_calls: [
              {
                id: `call_${index}`,
                type: 'function',
                function: { name: 'bash', arguments: `{"command":"cat src/m${index}.py"}` },
              },
            ],
          }
        : {
            role: 'tool',
            tool_call_id: `call_${index - 1}`,
            content: Array.from(
              { length: 10 + (index % 5) * 20 },
              (_, line) => `${line + 1}\tdef handler_${index}_${line}(self): return ${line}`,
            ).join('\n'),
          },
    ),
    tools: [],
  });
}

async function readBack(backend: ObjectBackend, claim: StorageDriverClaim, keyring?: Keyring): Promise<Payload> {
  const [payload] = await new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claim]);
  if (payload === undefined) throw new Error('nothing read');
  return payload;
}

const manifestIdOf = (claim: StorageDriverClaim): string => readClaim(claim.claimData).manifestId;

for (const keyed of [false, true]) {
  const keyring = keyed ? keyringOf(codecKey(randomBytes(32), 'k1')) : undefined;
  describe(`a payload's bytes ${keyed ? 'with a key' : 'without a key'}`, () => {
    it('a fresh payload is its manifest alone; a later payload lists its bytes as slices of that manifest, writing them once', async () => {
      const backend = new MemoryBackend();
      const driver = new ChunkStoreDriver({ backend, keyring });
      const messages = Array.from({ length: 6 }, (_, seed) => toolMessage(seed, 30));
      const results: StorageDriverClaim[] = [];
      // Each tool result alone (a fresh payload), then a chat input holding all of them.
      for (const message of messages) results.push(await storeOne(driver, jsonPayload(message)));
      expect(backend.puts().every((key) => key.startsWith('v1/manifests/'))).toBe(true);
      const input = jsonPayload({ messages, tools: [] });
      const claim = await storeOne(driver, input);
      const inspected = await driver.reader.inspect('manifest', manifestIdOf(claim));
      const listed = new Set(inspected.children.filter((child) => child.kind === 'manifest').map((child) => child.id));
      for (const result of results) expect(listed.has(manifestIdOf(result))).toBe(true);
      // The input's manifest holds little of its own: the messages are the results' bytes.
      const sealed = backend.objects.get(objectKey('manifest', manifestIdOf(claim)))?.length ?? 0;
      expect(sealed).toBeLessThan((input.data?.length ?? 0) / 5);
      expect(sha((await readBack(backend, claim, keyring)).data)).toBe(sha(input.data));
    });

    it("a chat input stands on the previous one's manifest and writes only its manifest; a cold reader fetches each object once", async () => {
      const backend = new MemoryBackend();
      const driver = new ChunkStoreDriver({ backend, keyring });
      const first = conversation(20);
      const firstClaim = await storeOne(driver, first);
      backend.requests.length = 0;
      const second = conversation(24);
      const secondClaim = await storeOne(driver, second);
      expect(backend.puts()).toEqual([objectKey('manifest', manifestIdOf(secondClaim))]);
      const manifest = await driver.reader.inspect('manifest', manifestIdOf(secondClaim));
      expect(manifest.depth).toBe(1);
      expect(manifest.children).toContainEqual({ kind: 'manifest', id: manifestIdOf(firstClaim) });

      const reader = new MemoryBackend();
      for (const [key, body] of backend.objects) reader.objects.set(key, body);
      for (const [claim, payload] of [
        [firstClaim, first],
        [secondClaim, second],
      ] as const) {
        reader.requests.length = 0;
        const back = await readBack(reader, claim, keyring);
        expect(sha(back.data)).toBe(sha(payload.data));
        expect(Buffer.from(back.metadata?.encoding ?? []).toString()).toBe('json/plain');
        const gets = reader.requests.filter((request) => request.op === 'get').map((request) => request.key);
        expect(new Set(gets).size).toBe(gets.length);
      }
    });

    // Where a tree's nodes close depends on keyed ids: with some keys the new pack sits under a
    // node rather than under the manifest itself. These fixed keys cover both placements (18 and 23
    // put it under a node).
    const keyrings = keyed
      ? [1, 18, 23].map((fill) => keyringOf(codecKey(Buffer.alloc(32, fill), `k${fill}`)))
      : [undefined];
    it.each(keyrings.map((ring, index) => [index, ring] as const))(
      'a long payload that extends a recent one past what a manifest on it lists is listed over a tree, its new slices in one pack in the chain (key %i)',
      async (_index, keyring) => {
        const backend = new MemoryBackend();
        const driver = new ChunkStoreDriver({ backend, keyring });
        const before = await storeOne(driver, conversation(140));
        backend.requests.length = 0;
        // 84 messages more: more entries than a manifest on a base lists, so a full manifest with nodes.
        const long = conversation(224);
        const claim = await storeOne(driver, long);
        const puts = backend.puts();
        const packs = puts.filter((key) => key.startsWith('v1/chunks/'));
        expect(packs).toHaveLength(1);
        expect(puts.filter((key) => key.startsWith('v1/nodes/')).length).toBeGreaterThan(0);
        const manifest = await driver.reader.inspect('manifest', manifestIdOf(claim));
        expect(manifest.depth).toBe(0);
        expect(manifest.level).toBeGreaterThan(0);
        // The pack is deflated against the manifest stored before it, the new manifest against the pack.
        const packKey = packs[0] ?? '';
        const header = (key: string) =>
          unsealObject(backend.objects.get(key) ?? new Uint8Array(0), key, keyring?.current.id, keyring).context;
        expect(header(packKey)).toMatchObject({ kind: 'manifest', id: manifestIdOf(before) });
        expect(header(objectKey('manifest', manifestIdOf(claim)))).toMatchObject({
          kind: 'chunk',
          id: packKey.split('/').at(-1),
        });
        // The next round stands on it and lists nothing but a message.
        backend.requests.length = 0;
        const next = await storeOne(driver, conversation(225));
        expect(backend.puts()).toHaveLength(1);
        expect(sha((await readBack(backend, claim, keyring)).data)).toBe(sha(long.data));
        expect(sha((await readBack(backend, next, keyring)).data)).toBe(sha(conversation(225).data));
      },
    );
  });
}

describe('slices across processes', () => {
  it('a driver that read a payload listing slices another wrote lists them where they lie, instead of writing them again', async () => {
    const backend = new MemoryBackend();
    const writer = new ChunkStoreDriver({ backend });
    const messages = Array.from({ length: 6 }, (_, seed) => toolMessage(seed, 30));
    for (const message of messages) await storeOne(writer, jsonPayload(message));
    const input = await storeOne(writer, jsonPayload({ messages, tools: [] }));
    const manifestBytes = (keys: string[]): number =>
      keys
        .filter((key) => key.startsWith('v1/manifests/'))
        .reduce((sum, key) => sum + (backend.objects.get(key)?.length ?? 0), 0);
    // Another process, that has read the chat input (a worker taking the chat activity's input).
    const reader = new ChunkStoreDriver({ backend });
    await reader.retrieve({}, [input]);
    backend.requests.length = 0;
    const transcript = jsonPayload({ lines: messages.map((message) => ({ message })) });
    const afterReading = await storeOne(reader, transcript);
    const read = manifestBytes(backend.puts());
    // A third that has not: it holds the messages in its own manifest.
    backend.requests.length = 0;
    await storeOne(new ChunkStoreDriver({ backend }), transcript);
    const unread = manifestBytes(backend.puts());
    expect(read * 3).toBeLessThan(unread);
    expect(sha((await readBack(backend, afterReading)).data)).toBe(sha(transcript.data));
  });

  it('writes the slices of a pack a gc took again, and the payload reads back', async () => {
    const backend = new MemoryBackend();
    let clock = Date.now();
    const driver = new ChunkStoreDriver({ backend, now: () => clock });
    await storeOne(driver, conversation(140));
    await storeOne(driver, conversation(224));
    const [pack] = backend.puts().filter((key) => key.startsWith('v1/chunks/'));
    if (pack === undefined) throw new Error('no pack');
    // A day later a gc took everything, the pack with the manifests that listed it.
    clock += 24 * 3_600_000;
    backend.objects.clear();
    const again = conversation(224);
    const claim = await storeOne(driver, again);
    expect(sha((await readBack(backend, claim)).data)).toBe(sha(again.data));
    expect([...backend.objects.keys()].some((key) => key.startsWith('v1/chunks/'))).toBe(true);
  });
});

describe('a reader of slices', () => {
  /** A manifest listing `entry` alone, stored under its id; its claim. */
  async function manifestListing(backend: ObjectBackend, entry: Entry, size: number): Promise<StorageDriverClaim> {
    const manifest = encodeManifest({ size, metadata: {}, base: undefined, entries: [entry] });
    const manifestId = objectId(manifest, undefined);
    await backend.put(objectKey('manifest', manifestId), sealObject(manifest, undefined).sealed);
    return new StorageDriverClaim(claimDataFor({ manifestId, keyId: undefined }));
  }

  it('refuses a manifest listing bytes past the end of a pack or of a manifest, naming the manifest and what it lists', async () => {
    const backend = new MemoryBackend();
    const pack = Buffer.from('x'.repeat(300));
    const packId = objectId(pack, undefined);
    await backend.put(objectKey('chunk', packId), sealObject(pack, undefined).sealed);
    const pastPack = await manifestListing(
      backend,
      { kind: 'slice', of: 'pack', id: packId, offset: 200, length: 200 },
      200,
    );
    await expect(readBack(backend, pastPack)).rejects.toThrow(ChunkIntegrityError);
    await expect(readBack(backend, pastPack)).rejects.toThrow(
      new RegExp(`${objectKey('manifest', manifestIdOf(pastPack))}.*bytes 200–400 of pack ${packId}, which has 300`),
    );
    const holder = await manifestListing(backend, { kind: 'inline', bytes: pack }, 300);
    const pastInline = await manifestListing(
      backend,
      { kind: 'slice', of: 'manifest', id: manifestIdOf(holder), offset: 250, length: 100 },
      100,
    );
    await expect(readBack(backend, pastInline)).rejects.toThrow(
      new RegExp(`bytes 250–350 of manifest ${manifestIdOf(holder)}, which has 300`),
    );
    const within = await manifestListing(
      backend,
      { kind: 'slice', of: 'manifest', id: manifestIdOf(holder), offset: 100, length: 100 },
      100,
    );
    expect(Buffer.from((await readBack(backend, within)).data ?? []).toString()).toBe('x'.repeat(100));
  });
});
