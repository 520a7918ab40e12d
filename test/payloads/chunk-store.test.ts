import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { defaultPayloadConverter, StorageDriverClaim, type Payload } from '@temporalio/common';
import { encodeReferencePayload } from '@temporalio/common/lib/internal-non-workflow/extstore-helpers.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHUNK_STORE_DRIVER_NAME, ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { ChunkIntegrityError, ChunkMissingError, PayloadKeyMissingError } from '../../src/payloads/errors.js';
import { claimManifestId, readClaim } from '../../src/payloads/claims.js';
import { codecKey, type Keyring } from '../../src/payloads/keyring.js';
import { keyringOf } from '../support/keyring.js';
import { CompactorCodec, payloadProtoSize } from '../../src/payloads/codec.js';
import { DEFAULT_CHUNKER_LIMITS } from '../../src/payloads/chunker.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { objectKey } from '../../src/payloads/object-format.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import { S3Backend } from '../../src/payloads/s3-backend.js';
import { type ObjectBackend } from '../../src/payloads/object-backend.js';
import { chatInputSequence } from '../../corpus/chat-inputs.js';
import { loadConfig } from '../../src/config.js';
import { startS3Server, type S3TestServer } from '../../scripts/s3-test-server.js';
import { temporaryDirectory } from '../support/cleanup.js';
import { storeOne } from '../support/payload-store.js';

const toPayload = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);
const fromPayload = (payload: Payload | undefined): unknown => defaultPayloadConverter.fromPayload(payload ?? {});

const storeDirectory = (): string => temporaryDirectory('compactor-store-test-');

function filesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

async function retrieveOne(driver: ChunkStoreDriver, claim: StorageDriverClaim): Promise<Payload> {
  const [payload] = await driver.retrieve({}, [claim]);
  if (payload === undefined) throw new Error('no payload');
  return payload;
}

/** Stores the synthetic run's chat inputs one per round; returns store growth over new content. */
async function dedupRatio(
  backend: ObjectBackend,
  keyring: Keyring | undefined,
): Promise<{ stored: number; plaintext: number; newContent: number; total: number }> {
  const driver = new ChunkStoreDriver({ backend, keyring });
  let newContent = 0;
  let total = 0;
  for (const step of chatInputSequence({ rounds: 60, bytesPerRound: 10_000, compactEvery: 15 })) {
    const payload = { metadata: { encoding: new TextEncoder().encode('json/plain') }, data: step.data };
    const claim = await storeOne(driver, payload);
    expect(Buffer.from((await retrieveOne(driver, claim)).data ?? []).equals(Buffer.from(step.data))).toBe(true);
    newContent += step.newContentBytes;
    total += step.data.length;
  }
  const { chunk, node, manifest } = driver.stats.written;
  return {
    stored: chunk.bytes + node.bytes + manifest.bytes,
    plaintext: chunk.plaintextBytes + node.plaintextBytes + manifest.plaintextBytes,
    newContent,
    total,
  };
}

const bigConversation = {
  messages: Array.from({ length: 60 }, (_, index) => ({
    role: index % 2 === 0 ? 'assistant' : 'tool',
    content: `${index}: ${'the quick brown fox '.repeat(200)}`,
  })),
};

/**
 * The tests every backend must pass. The dedup ratio depends on the driver, not on the backend:
 * `dedupModes` picks which encryption modes run the 60-round sequence (moto answers each request in
 * tens of milliseconds, so S3 runs it once).
 */
function backendContract(name: string, makeBackend: () => ObjectBackend, dedupModes: boolean[] = [false, true]) {
  describe(name, () => {
    const key = codecKey(randomBytes(32), 'k1');

    for (const encrypted of [false, true]) {
      describe(encrypted ? 'encrypted' : 'not encrypted', () => {
        const keyring = encrypted ? keyringOf(key) : undefined;

        it('round-trips payloads of every shape, metadata included, through a fresh driver', async () => {
          const backend = makeBackend();
          const writer = new ChunkStoreDriver({ backend, keyring });
          const payloads: Payload[] = [
            toPayload(null),
            toPayload(bigConversation),
            {
              metadata: { encoding: new TextEncoder().encode('binary/plain'), other: Uint8Array.of(1, 2) },
              data: randomBytes(100_000),
            },
            { metadata: {}, data: new Uint8Array(0) },
          ];
          const claims = await writer.store({}, payloads);
          for (const claim of claims) {
            expect(Object.keys(claim.claimData).sort()).toEqual(encrypted ? ['k', 'm'] : ['m']);
            expect(claim.claimData.m).toMatch(/^[A-Za-z0-9_-]{43}$/);
            expect(claim.claimData.k).toBe(encrypted ? 'k1' : undefined);
          }
          const reader = new ChunkStoreDriver({ backend, keyring });
          const back = await reader.retrieve({}, claims);
          expect(fromPayload(back[1])).toEqual(bigConversation);
          const hexOf = (payload: Payload): string => Buffer.from(payload.data ?? []).toString('hex');
          expect(back.map(hexOf)).toEqual(payloads.map(hexOf));
          expect(Buffer.from(back[2]?.metadata?.other ?? []).toString('hex')).toBe('0102');
        });

        if (dedupModes.includes(encrypted))
          it(`grows by at most 0.355× the new content over a 60-round run with compactions`, async () => {
            const { stored, plaintext, newContent, total } = await dedupRatio(makeBackend(), keyring);
            // Stored bytes are compressed; the plaintext measure shows the dedup alone (every new
            // byte once, and a little of the tree around it). Stored: bench/README.md#payloads.
            expect(plaintext / newContent).toBeLessThanOrEqual(1.1);
            expect(stored / newContent).toBeLessThanOrEqual(0.355);
            // And the run sent far more than that: the payloads share almost everything.
            expect(total / newContent).toBeGreaterThan(8);
          });
      });
    }

    it('detects a corrupted object, a swapped object and a missing object, naming the object', async () => {
      const backend = makeBackend();
      const driver = new ChunkStoreDriver({ backend });
      // The first half's manifest is the base of the whole conversation's, and the object it is deflated against.
      const half = await storeOne(driver, toPayload({ messages: bigConversation.messages.slice(0, 30) }));
      const claim = await storeOne(driver, toPayload(bigConversation));
      const victim = objectKey('manifest', readClaim(half.claimData).manifestId);
      expect((await driver.reader.inspect('manifest', readClaim(claim.claimData).manifestId)).children).toContainEqual({
        kind: 'manifest',
        id: readClaim(half.claimData).manifestId,
      });
      const original = await backend.get(victim);
      if (original === undefined) throw new Error('manifest not stored');
      const flipped = Buffer.from(original);
      flipped[flipped.length - 5] = (flipped[flipped.length - 5] ?? 0) ^ 0xff;
      await backend.put(victim, flipped);
      await expect(retrieveOne(new ChunkStoreDriver({ backend }), claim)).rejects.toThrow(ChunkIntegrityError);
      await expect(retrieveOne(new ChunkStoreDriver({ backend }), claim)).rejects.toThrow(victim);
      // A well-formed object under the wrong name (another store's, deflated against nothing): only the hash check can tell.
      const elsewhere = makeBackend();
      const stranger = await storeOne(
        new ChunkStoreDriver({ backend: elsewhere }),
        toPayload({ other: 'conversation' }),
      );
      const strangerBody = await elsewhere.get(objectKey('manifest', readClaim(stranger.claimData).manifestId));
      if (strangerBody === undefined) throw new Error('manifest not stored');
      await backend.put(victim, strangerBody);
      await expect(retrieveOne(new ChunkStoreDriver({ backend }), claim)).rejects.toThrow(
        /content does not match its name \(hash mismatch/,
      );
      await backend.put(victim, original);
      expect(fromPayload(await retrieveOne(new ChunkStoreDriver({ backend }), claim))).toEqual(bigConversation);
      if (backend instanceof FileBackend) rmSync(join(backend.directory, ...victim.split('/')));
      else await backend.put(victim, new Uint8Array(0));
      await expect(retrieveOne(new ChunkStoreDriver({ backend }), claim)).rejects.toThrow(
        backend instanceof FileBackend ? ChunkMissingError : ChunkIntegrityError,
      );
    });

    it('reads with a retired key, and names the key id when it is missing', async () => {
      const backend = makeBackend();
      const claim = await storeOne(
        new ChunkStoreDriver({ backend, keyring: keyringOf(key) }),
        toPayload(bigConversation),
      );
      const newKey = codecKey(randomBytes(32), 'k2');
      expect(
        fromPayload(await retrieveOne(new ChunkStoreDriver({ backend, keyring: keyringOf(newKey, key) }), claim)),
      ).toEqual(bigConversation);
      await expect(retrieveOne(new ChunkStoreDriver({ backend, keyring: keyringOf(newKey) }), claim)).rejects.toThrow(
        PayloadKeyMissingError,
      );
      await expect(retrieveOne(new ChunkStoreDriver({ backend }), claim)).rejects.toThrow(
        /key id "k1", which is not configured/,
      );
      const impostor = keyringOf(codecKey(randomBytes(32), 'k1'));
      await expect(retrieveOne(new ChunkStoreDriver({ backend, keyring: impostor }), claim)).rejects.toThrow(
        /failed authentication under key id "k1"/,
      );
    });
  });
}

/** The chunk object keys of a stored payload, read through its manifest and nodes with the object layout. */
async function chunkKeysOf(backend: ObjectBackend, claim: StorageDriverClaim): Promise<string[]> {
  // Retrieval through a recording backend lists exactly the objects a claim needs.
  const seen: string[] = [];
  const recording: ObjectBackend = {
    description: backend.description,
    get: async (key, signal) => {
      seen.push(key);
      return backend.get(key, signal);
    },
    put: (key, body, signal) => backend.put(key, body, signal),
    stat: (key, signal) => backend.stat(key, signal),
    touch: (key, signal) => backend.touch(key, signal),
  };
  await retrieveOne(new ChunkStoreDriver({ backend: recording }), claim);
  return [...new Set(seen.filter((key) => key.startsWith('v1/chunks/')))];
}

describe('ChunkStoreDriver', () => {
  backendContract('file backend', () => new FileBackend({ directory: storeDirectory(), durable: false }));

  describe('S3 backend (moto)', () => {
    let s3: S3TestServer | undefined;
    let counter = 0;
    beforeAll(async () => {
      s3 = await startS3Server();
    }, 180_000);
    afterAll(async () => {
      await s3?.stop();
    });
    backendContract(
      'contract',
      () => {
        if (s3 === undefined) throw new Error('no S3 server');
        counter += 1;
        return new S3Backend({ bucket: s3.bucket, prefix: `run-${process.pid}/${counter}`, client: s3.client() });
      },
      [true],
    );

    it('touches an old reused object so a gc grace period never expires under a live claim', async () => {
      if (s3 === undefined) throw new Error('no S3 server');
      const backend = new S3Backend({ bucket: s3.bucket, prefix: 'touch', client: s3.client() });
      await backend.put('v1/chunks/aa/bb/x', Uint8Array.of(1, 2, 3));
      const before = await backend.stat('v1/chunks/aa/bb/x');
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await backend.touch('v1/chunks/aa/bb/x');
      const after = await backend.stat('v1/chunks/aa/bb/x');
      expect(after?.modifiedMs ?? 0).toBeGreaterThan(before?.modifiedMs ?? Infinity);
      expect(Buffer.from((await backend.get('v1/chunks/aa/bb/x')) ?? []).toString('hex')).toBe('010203');
      expect(await backend.get('v1/chunks/aa/bb/missing')).toBeUndefined();
      expect(await backend.stat('v1/chunks/aa/bb/missing')).toBeUndefined();
    });

    it('is configured from s3://BUCKET/PREFIX and COMPACTOR_S3_ENDPOINT with the AWS_* variables', async () => {
      if (s3 === undefined) throw new Error('no S3 server');
      const saved = { ...process.env };
      Object.assign(process.env, s3.env);
      try {
        const configured = payloadConverterFromConfig(
          loadConfig({ env: { ...s3.env, COMPACTOR_PAYLOAD_STORE: `s3://${s3.bucket}/from-config` } }),
        );
        if (configured.driver === undefined) throw new Error('no driver');
        const claim = await storeOne(configured.driver, toPayload(bigConversation));
        expect(fromPayload(await retrieveOne(configured.driver, claim))).toEqual(bigConversation);
        expect(configured.describe).toContain(`payload store s3://${s3.bucket}/from-config`);
      } finally {
        for (const name of Object.keys(s3.env)) if (saved[name] === undefined) delete process.env[name];
        Object.assign(process.env, saved);
      }
    });
  });

  describe('file backend layout', () => {
    it('writes sharded, sealed objects atomically and nothing readable with a key', async () => {
      const directory = storeDirectory();
      const driver = new ChunkStoreDriver({
        backend: new FileBackend({ directory }),
        keyring: keyringOf(codecKey(randomBytes(32))),
      });
      const canary = 'canary-7c2e9a-never-stored-in-clear';
      await storeOne(driver, toPayload({ ...bigConversation, canary }));
      const files = filesUnder(directory).map((file) => relative(directory, file));
      // A fresh payload is its manifest alone: its bytes inline, no pack, no tree nodes.
      expect(files.length).toBeGreaterThanOrEqual(1);
      for (const file of files)
        expect(file).toMatch(/^v1\/(chunks|nodes|manifests)\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}$/);
      for (const file of filesUnder(directory)) {
        const bytes = readFileSync(file);
        expect(bytes.includes(canary)).toBe(false);
        expect(bytes.includes('quick brown fox')).toBe(false);
      }
    });

    it('dedups: storing the same payload again writes only its manifest, with a fresh modification time', async () => {
      const directory = storeDirectory();
      const keyring = keyringOf(codecKey(randomBytes(32)));
      const first = new ChunkStoreDriver({ backend: new FileBackend({ directory }), keyring });
      const claim = await storeOne(first, toPayload(bigConversation));
      const manifestFile = join(directory, ...objectKey('manifest', claimManifestId(claim.claimData) ?? '').split('/'));
      utimesSync(manifestFile, new Date(2000, 0, 1), new Date(2000, 0, 1));
      const count = filesUnder(directory).length;
      const second = new ChunkStoreDriver({ backend: new FileBackend({ directory }), keyring });
      const again = await storeOne(second, toPayload(bigConversation));
      expect(again.claimData).toEqual(claim.claimData);
      expect(filesUnder(directory)).toHaveLength(count);
      expect(second.stats.written.chunk.objects + second.stats.written.node.objects).toBe(0);
      expect(second.stats.written.manifest.objects).toBe(1);
      expect(statSync(manifestFile).mtime.getFullYear()).toBeGreaterThan(2000);
    });

    it('touches a reused tree older than refreshAfterMs and writes back an object a gc removed', async () => {
      const directory = storeDirectory();
      const backend = new FileBackend({ directory });
      // More than 1,024 slices, every one in the pack: a fresh payload listed over a tree of nodes.
      const TREES = { chunkerLimits: { ...DEFAULT_CHUNKER_LIMITS, minChunk: 64, groupMax: 64 }, literalBelow: 0 };
      const manyMessages = {
        messages: Array.from({ length: 1_100 }, (_, index) => ({
          role: 'tool',
          content: `result ${index}: ${'the quick brown fox '.repeat(3)}`,
        })),
      };
      const claim = await storeOne(new ChunkStoreDriver({ backend, ...TREES }), toPayload(manyMessages));
      const old = new Date(Date.now() - 3 * 24 * 3_600_000);
      for (const file of filesUnder(directory)) utimesSync(file, old, old);
      const [removed] = await chunkKeysOf(backend, claim);
      if (removed === undefined) throw new Error('no chunk');
      const nodes = filesUnder(directory).filter((file) => relative(directory, file).startsWith('v1/nodes/'));
      // The nodes the manifest lists are reused and touched; below them nothing is checked (a node
      // that exists has its children).
      const driver = new ChunkStoreDriver({ backend, refreshAfterMs: 24 * 3_600_000, ...TREES });
      await storeOne(driver, toPayload(manyMessages));
      const listed = (await driver.reader.inspect('manifest', readClaim(claim.claimData).manifestId)).children;
      const listedNodes = listed.filter((child) => child.kind === 'node').map((child) => objectKey('node', child.id));
      expect(listedNodes.length).toBeGreaterThan(0);
      const touched = nodes.filter((file) => statSync(file).mtimeMs > old.getTime() + 1000);
      expect(touched.map((file) => relative(directory, file))).toEqual(expect.arrayContaining(listedNodes));
      expect(touched.length).toBe(listedNodes.length);
      expect(driver.stats.reused.node).toBe(listedNodes.length);
      // A gc that took a whole tree: the next store writes it all back.
      rmSync(join(directory, 'v1', 'nodes'), { recursive: true });
      rmSync(join(directory, ...removed.split('/')));
      const rewriting = new ChunkStoreDriver({ backend, ...TREES });
      const again = await storeOne(rewriting, toPayload(manyMessages));
      expect(rewriting.stats.written.node.objects).toBe(nodes.length);
      expect(fromPayload(await retrieveOne(new ChunkStoreDriver({ backend, ...TREES }), again))).toEqual(manyMessages);
    });

    it('leaves no temporary file behind when a write fails', async () => {
      const directory = storeDirectory();
      const backend = new FileBackend({ directory });
      await backend.put('v1/chunks/00/00/a', Uint8Array.of(1));
      writeFileSync(join(directory, 'v1', 'chunks', '00', '00', 'b'), 'x');
      // A directory where the object should go makes the rename fail.
      rmSync(join(directory, 'v1', 'chunks', '00', '00', 'b'));
      await backend.put('v1/chunks/00/00/b/c', Uint8Array.of(2));
      await expect(backend.put('v1/chunks/00/00/b', Uint8Array.of(3))).rejects.toThrow();
      expect(readdirSync(join(directory, 'v1', 'chunks', '00', '00')).sort()).toEqual(['a', 'b']);
    });
  });

  describe('claims', () => {
    const key = codecKey(randomBytes(32), 'k1');
    /** The protobuf size of the reference payload the SDK writes into history around a claim. */
    const referenceSize = (claim: StorageDriverClaim, payload: Payload): number =>
      payloadProtoSize(
        encodeReferencePayload({ driverName: CHUNK_STORE_DRIVER_NAME, claim, sizeBytes: payloadProtoSize(payload) }),
      );

    for (const encrypted of [false, true]) {
      it(`${encrypted ? 'encrypted' : 'not encrypted'}: { m, k? }, the manifest id in base64url, which names the manifest in hex`, async () => {
        const backend = new FileBackend({ directory: storeDirectory(), durable: false });
        // A key with its default id, `k-` and 8 hex digits.
        const keyring = encrypted ? keyringOf(codecKey(randomBytes(32))) : undefined;
        const payload = toPayload(bigConversation);
        const claim = await storeOne(new ChunkStoreDriver({ backend, keyring }), payload);
        expect(Object.keys(claim.claimData).sort()).toEqual(encrypted ? ['k', 'm'] : ['m']);
        expect(claim.claimData.m).toMatch(/^[A-Za-z0-9_-]{43}$/);
        // What history holds around it: 193 bytes, 210 with a 10-character key id (docs/payloads.md).
        expect(referenceSize(claim, payload)).toBe(encrypted ? 210 : 193);
        const manifestId = claimManifestId(claim.claimData);
        expect(manifestId).toMatch(/^[0-9a-f]{64}$/);
        expect(Buffer.from(manifestId ?? '', 'hex').toString('base64url')).toBe(claim.claimData.m);
        expect(readClaim(claim.claimData).keyId).toBe(keyring?.current.id);
        expect(await backend.stat(objectKey('manifest', manifestId ?? ''))).toBeDefined();
        expect(fromPayload(await retrieveOne(new ChunkStoreDriver({ backend, keyring }), claim))).toEqual(
          bigConversation,
        );
      });
    }

    it('refuses anything else with a ChunkIntegrityError naming the claim and saying why', async () => {
      const backend = new FileBackend({ directory: storeDirectory(), durable: false });
      const driver = new ChunkStoreDriver({ backend, keyring: keyringOf(key) });
      const claim = await storeOne(driver, toPayload(bigConversation));
      const m = claim.claimData.m ?? '';
      const hex = readClaim(claim.claimData).manifestId;
      // The last of 43 characters carries 4 bits and 2 unused ones: the next letter decodes to the same bytes.
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const otherSpelling = `${m.slice(0, 42)}${alphabet[alphabet.indexOf(m.slice(42)) + 1] ?? ''}`;
      expect(Buffer.from(otherSpelling, 'base64url').toString('hex')).toBe(hex);
      const notAnId = 'has an m that is not a manifest id (43 characters of base64url without padding)';
      const refused: Array<[Record<string, string>, string]> = [
        [{}, 'has no manifest id (m)'],
        [{ k: 'k1' }, 'has a key id (k) but no manifest id (m)'],
        [{ m: m.slice(0, 42), k: 'k1' }, notAnId],
        [{ m: `${m}A`, k: 'k1' }, notAnId],
        [{ m: `${m.slice(0, 42)}=`, k: 'k1' }, notAnId],
        [{ m: Buffer.from(hex, 'hex').toString('base64').replace(/=+$/, '').replace(/^./, '+'), k: 'k1' }, notAnId],
        [{ m: otherSpelling, k: 'k1' }, notAnId],
        [{ m: hex, k: 'k1' }, notAnId],
        [{ m, k: '' }, "has a k that is not a key id (1-64 characters of A-Z, a-z, 0-9, '.', '_', '-')"],
        [{ m, k: 'k 1' }, "has a k that is not a key id (1-64 characters of A-Z, a-z, 0-9, '.', '_', '-')"],
        [{ manifest: hex, keyId: 'k1' }, 'has fields other than m and k (keyId, manifest)'],
        [{ m, k: 'k1', keyId: 'k1' }, 'has fields other than m and k (keyId)'],
      ];
      for (const [claimData, why] of refused) {
        expect(claimManifestId(claimData), JSON.stringify(claimData)).toBeUndefined();
        const error = await retrieveOne(driver, new StorageDriverClaim(claimData)).then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error, JSON.stringify(claimData)).toBeInstanceOf(ChunkIntegrityError);
        expect(error).toHaveProperty(
          'message',
          `payload store object claim ${JSON.stringify(claimData)}: is not a temporal-compactor claim: it ${why}`,
        );
      }
      // The same claim, well formed, reads: the refusals were the claims' alone.
      expect(fromPayload(await retrieveOne(driver, new StorageDriverClaim({ m, k: 'k1' })))).toEqual(bigConversation);
    });
  });

  describe('with the codec in front (the SDK order: codec, then External Storage)', () => {
    it('stores and restores a payload that reaches the threshold only once encoded', async () => {
      const threshold = 1024;
      const keyring = keyringOf(codecKey(randomBytes(32)));
      const codec = new CompactorCodec({ keyring, passThroughAtOrAbove: threshold });
      // Random bytes do not compress: the codec's framing, tag and metadata push them over the threshold.
      const value = randomBytes(960);
      const plain = toPayload(value);
      expect(payloadProtoSize(plain)).toBeLessThan(threshold);
      const [encoded] = await codec.encode([plain]);
      if (encoded === undefined) throw new Error('no payload');
      expect(payloadProtoSize(encoded)).toBeGreaterThanOrEqual(threshold);
      const driver = new ChunkStoreDriver({ backend: new FileBackend({ directory: storeDirectory() }), keyring });
      const restored = await retrieveOne(driver, await storeOne(driver, encoded));
      const [decoded] = await codec.decode([restored]);
      expect(Buffer.from(decoded?.data ?? []).equals(value)).toBe(true);
      expect(fromPayload(decoded)).toEqual(new Uint8Array(value));
    });
  });
});
