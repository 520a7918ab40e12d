// Manifest format 3: the new slices of a payload in one pack (a chunk object, compressed as one),
// later payloads listing slices of it, and every object deflated with a preset dictionary. What a
// round writes and reads, what the objects say, and what a reader refuses.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { StorageDriverClaim, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  ChunkIntegrityError,
  ChunkStoreDriver,
  claimDataFor,
  codecKey,
  keyringOf,
  objectKey,
  parseObjectKey,
  readClaim,
  type Keyring,
  type ObjectBackend,
} from '../../src/payloads/index.js';
import { PRESET_DICTIONARIES } from '../../src/payloads/dictionary.js';
import { encodeManifestV2 } from '../../src/payloads/object-format.js';
import { objectId, openObject, sealObject } from '../../src/payloads/sealed-object.js';
import { sha, storeOne } from '../support/store-fixture.js';

/** An in-memory backend that counts requests. */
class MemoryBackend implements ObjectBackend {
  readonly description = 'memory:test';
  readonly objects = new Map<string, Uint8Array>();
  readonly requests: Array<{ op: 'get' | 'put' | 'stat' | 'touch'; key: string }> = [];
  async get(key: string): Promise<Uint8Array | undefined> {
    this.requests.push({ op: 'get', key });
    return this.objects.get(key);
  }
  async put(key: string, body: Uint8Array): Promise<void> {
    this.requests.push({ op: 'put', key });
    this.objects.set(key, Uint8Array.from(body));
  }
  async stat(key: string): Promise<{ modifiedMs: number } | undefined> {
    this.requests.push({ op: 'stat', key });
    return this.objects.has(key) ? { modifiedMs: Date.now() } : undefined;
  }
  async touch(key: string): Promise<void> {
    this.requests.push({ op: 'touch', key });
  }
  puts(): string[] {
    return this.requests.filter((request) => request.op === 'put').map((request) => request.key);
  }
}

/** A conversation as an agent run's chat input grows: tool results of a few hundred bytes to a few KB. */
function conversation(messages: number): Payload {
  const body = {
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
  };
  return { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(body)) };
}

async function readBack(backend: ObjectBackend, claim: StorageDriverClaim, keyring?: Keyring): Promise<Payload> {
  const [payload] = await new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 }).retrieve({}, [claim]);
  if (payload === undefined) throw new Error('nothing read');
  return payload;
}

for (const keyed of [false, true]) {
  const keyring = keyed ? keyringOf(codecKey(randomBytes(32), 'k3')) : undefined;
  describe(`format 3 ${keyed ? 'with a key' : 'without a key'}`, () => {
    it('writes the new slices of a payload as one pack; the next payload lists slices of it and writes only what is new', async () => {
      const backend = new MemoryBackend();
      const driver = new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 });
      const first = conversation(20);
      const firstClaim = await storeOne(driver, first);
      const firstPuts = backend.puts();
      // One pack for all of the payload's chunks, the manifest (and the closed nodes of its tree).
      expect(firstPuts.filter((key) => key.startsWith('v1/chunks/'))).toHaveLength(1);
      const [firstPack] = firstPuts.filter((key) => key.startsWith('v1/chunks/'));

      backend.requests.length = 0;
      const second = conversation(24);
      const secondClaim = await storeOne(driver, second);
      const secondPuts = backend.puts();
      expect(secondPuts.filter((key) => key.startsWith('v1/chunks/'))).toHaveLength(1);
      expect(secondPuts).not.toContain(firstPack);
      expect(secondPuts.length).toBeLessThanOrEqual(3);
      const manifest = await driver.inspect('manifest', readClaim(secondClaim.claimData).manifestId);
      // On the first payload's manifest (its prefix), or listing the first payload's pack itself.
      expect(
        manifest.depth > 0 || manifest.children.some((child) => objectKey(child.kind, child.id) === firstPack),
      ).toBe(true);

      // A cold reader: byte for byte, each object fetched once.
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

    it('deflates every object with preset dictionary 1 (flag bit 2), smaller than without it for a small message', async () => {
      const backend = new MemoryBackend();
      await storeOne(new ChunkStoreDriver({ backend, keyring, manifestFormat: 4 }), conversation(12));
      const compressed = [...backend.objects.values()].filter((sealed) => ((sealed[4] ?? 0) & 1) !== 0);
      expect(compressed.length).toBeGreaterThan(0);
      for (const sealed of compressed) expect((sealed[4] ?? 0) & 4).toBe(4);
      const message = Buffer.from(
        JSON.stringify({
          message: {
            role: 'assistant',
            content: 'Let me run the tests again.',
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"command":"pytest -x"}' } },
            ],
          },
          usage: { promptTokens: 812, completionTokens: 40 },
          finishReason: 'tool_calls',
        }),
      );
      const key = keyring?.current;
      const id = objectId(message, key);
      const plain = sealObject(message, id, key, 6, 0);
      const preset = sealObject(message, id, key, 6, 1);
      expect(preset.length).toBeLessThan(plain.length);
      const objectName = objectKey('chunk', id);
      expect(Buffer.from(openObject(preset, id, objectName, key?.id, keyring))).toEqual(message);
      expect(Buffer.from(openObject(plain, id, objectName, key?.id, keyring))).toEqual(message);
    });
  });
}

describe('format 3 across processes', () => {
  it('a driver that read a payload another wrote lists its slices where they lie, instead of writing them again', async () => {
    const backend = new MemoryBackend();
    const first = await storeOne(new ChunkStoreDriver({ backend, manifestFormat: 4 }), conversation(20));
    const packBytes = (keys: string[]): number =>
      keys
        .filter((key) => key.startsWith('v1/chunks/'))
        .reduce((sum, key) => sum + (backend.objects.get(key)?.length ?? 0), 0);
    // Another process, that has read the first payload (a workflow taking an activity's result).
    const reader = new ChunkStoreDriver({ backend, manifestFormat: 4 });
    await reader.retrieve({}, [first]);
    backend.requests.length = 0;
    const claim = await storeOne(reader, conversation(24));
    const afterReading = packBytes(backend.puts());
    // A third that has not: it writes the whole conversation into its pack.
    backend.requests.length = 0;
    await storeOne(new ChunkStoreDriver({ backend, manifestFormat: 4 }), conversation(26));
    const unread = packBytes(backend.puts());
    expect(afterReading).toBeGreaterThan(0);
    expect(afterReading * 3).toBeLessThan(unread);
    expect(sha((await readBack(backend, claim)).data)).toBe(sha(conversation(24).data));
  });

  it('lists the chunks of a format-2 store it read as slices of them (a chunk of format 2 is a pack of one slice)', async () => {
    const backend = new MemoryBackend();
    const first = await storeOne(new ChunkStoreDriver({ backend, manifestFormat: 2 }), conversation(20));
    const chunksBefore = [...backend.objects.keys()].filter((key) => key.startsWith('v1/chunks/'));
    const reader = new ChunkStoreDriver({ backend, manifestFormat: 4 });
    await reader.retrieve({}, [first]);
    const claim = await storeOne(reader, conversation(24));
    const manifest = await reader.inspect('manifest', readClaim(claim.claimData).manifestId);
    const listed = new Set(manifest.children.map((child) => objectKey(child.kind, child.id)));
    expect(chunksBefore.some((key) => listed.has(key))).toBe(true);
    expect(sha((await readBack(backend, claim)).data)).toBe(sha(conversation(24).data));
  });
});

describe('format 3 readers and writers', () => {
  it('interop/python/compactor_payloads.py holds preset dictionary 1 byte for byte', () => {
    const python = readFileSync(new URL('../../interop/python/compactor_payloads.py', import.meta.url), 'utf8');
    const literal = /\n {4}1: base64\.b64decode\(\n((?: {8}"[A-Za-z0-9+/=]+"\n)+) {4}\)/.exec(python)?.[1] ?? '';
    const bytes = Buffer.from(literal.replace(/[\s"]/g, ''), 'base64');
    expect(bytes.length).toBeGreaterThan(1000);
    expect(bytes).toEqual(PRESET_DICTIONARIES.get(1));
  });

  it('refuses an object compressed with a preset dictionary it does not know, naming the object and the number', () => {
    const message = Buffer.from('{"role":"user","content":"a message long enough to be compressed at all, surely"}');
    const id = objectId(message, undefined);
    const sealed = sealObject(message, id, undefined, 6, 1);
    // The dictionary's number is the first byte of the body, after the 5-byte header.
    sealed[5] = 9;
    expect(() => openObject(sealed, id, objectKey('chunk', id), undefined, undefined)).toThrow(ChunkIntegrityError);
    expect(() => openObject(sealed, id, objectKey('chunk', id), undefined, undefined)).toThrow(
      /preset dictionary 9, which this version does not know/,
    );
  });

  it('with manifestFormat 2 (a rolling upgrade) writes one object per chunk, no pack slices and no preset dictionary; format 3 reads it', async () => {
    const backend = new MemoryBackend();
    const driver = new ChunkStoreDriver({ backend, manifestFormat: 2 });
    const payload = conversation(20);
    const claim = await storeOne(driver, payload);
    expect(backend.puts().filter((key) => key.startsWith('v1/chunks/')).length).toBeGreaterThan(1);
    for (const [key, sealed] of backend.objects) {
      expect((sealed[4] ?? 0) & 4, key).toBe(0);
      const parsed = parseObjectKey(key);
      if (parsed?.kind === 'manifest')
        expect(Buffer.from(openObject(sealed, parsed.id, key, undefined, undefined)).subarray(0, 4)).toEqual(
          Buffer.from([0x63, 0x74, 0x6d, 0x02]),
        );
    }
    expect(sha((await readBack(backend, claim)).data)).toBe(sha(payload.data));
  });

  it('refuses a manifest listing bytes past the end of a pack, naming the manifest', async () => {
    const backend = new MemoryBackend();
    const pack = Buffer.from('x'.repeat(300));
    const packId = objectId(pack, undefined);
    await backend.put(objectKey('chunk', packId), sealObject(pack, packId, undefined, 6, 1));
    const manifest = encodeManifestV2(
      {
        chunker: 2,
        size: 200,
        metadata: {},
        base: undefined,
        entries: [{ kind: 'slice', id: packId, offset: 200, length: 200 }],
      },
      3,
    );
    const manifestId = objectId(manifest, undefined);
    await backend.put(objectKey('manifest', manifestId), sealObject(manifest, manifestId, undefined, 6, 1));
    const claim = new StorageDriverClaim(claimDataFor({ manifestId, keyId: undefined }));
    await expect(readBack(backend, claim)).rejects.toThrow(ChunkIntegrityError);
    await expect(readBack(backend, claim)).rejects.toThrow(
      new RegExp(`${objectKey('manifest', manifestId)}.*bytes 200–400 of pack ${packId}, which has 300`),
    );
  });

  it('writes the slices of a pack a gc took again, and the payload reads back', async () => {
    const backend = new MemoryBackend();
    // refreshAfterMs 0: every reuse checks the store again.
    const driver = new ChunkStoreDriver({ backend, manifestFormat: 4, refreshAfterMs: 0 });
    const first = conversation(20);
    await storeOne(driver, first);
    const [pack] = backend.puts().filter((key) => key.startsWith('v1/chunks/'));
    if (pack === undefined) throw new Error('no pack');
    backend.objects.delete(pack);
    // Gone with everything that listed it: a payload with the same messages, not on the old manifest.
    for (const key of [...backend.objects.keys()]) if (!key.startsWith('v1/chunks/')) backend.objects.delete(key);
    const again = conversation(20);
    const claim = await storeOne(driver, again);
    expect(backend.objects.has(pack)).toBe(true);
    expect(sha((await readBack(backend, claim)).data)).toBe(sha(again.data));
  });
});
