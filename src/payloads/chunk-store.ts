// Node only: the content-addressed chunk store, a `StorageDriver` for Temporal's External Storage.
// A stored payload becomes chunks (chunker.ts), a small tree of nodes listing them, and one
// manifest (object-format.ts); the history keeps a claim naming the manifest (claims.ts).
// Consecutive chat inputs share almost all chunks and most nodes, so the store grows with what is
// new in a round, not with the conversation. Every object is sealed (sealed-object.ts): named by
// its content's hash, compressed, and with a key encrypted.
//
// What a garbage collector can rely on (gc.ts is the one): an object is only written after every
// object it lists, so a node that exists has all its descendants; manifests are rewritten on every
// store, so their modification time says when a claim to them was last handed out; a chunk or
// node that a store reuses is touched when older than `refreshAfterMs` (but what lies under a
// reused node is not). Mark from the claims of retained histories and from manifests and nodes
// younger than the grace period, follow manifests → nodes → chunks, sweep the rest that is older
// than the grace period (at least twice `refreshAfterMs`), parents before children.
import type {
  Payload,
  StorageDriver,
  StorageDriverRetrieveContext,
  StorageDriverStoreContext,
} from '@temporalio/common';
import { StorageDriverClaim } from '@temporalio/common';
import { CHUNKER_VERSION, chunkBoundaries, DEFAULT_CHUNKER_LIMITS, type ChunkerLimits } from './chunker.js';
import { claimDataFor, readClaim, type ClaimFormat } from './claims.js';
import { ChunkIntegrityError, ChunkMissingError } from './errors.js';
import { followSignal } from './follow-signal.js';
import type { Keyring } from './keyring.js';
import { Limiter } from './limiter.js';
import { LruMap } from './lru-map.js';
import type { ObjectBackend } from './object-backend.js';
import {
  decodeNode,
  encodeNode,
  MANIFEST_FORMAT,
  nodeEndsAfter,
  nodeLevel,
  objectKey,
  parseManifest,
  type ManifestBody,
  type ObjectKind,
} from './object-format.js';
import { objectId, openObject, sealedKeyId, sealObject } from './sealed-object.js';

/** The driver name written into every reference payload: must never change. */
export const CHUNK_STORE_DRIVER_NAME = 'compactor-chunks';
/** Reported in worker heartbeats. */
export const CHUNK_STORE_DRIVER_TYPE = 'temporal-compactor.chunk-store';

/** An object a store call may have to write, with the objects it lists. */
interface PlannedObject {
  kind: ObjectKind;
  id: string;
  plaintext: Uint8Array;
  children: PlannedObject[];
}

/** An object a manifest or node lists (a garbage collector follows these). */
export interface ListedChild {
  kind: 'node' | 'chunk';
  id: string;
}

/** What a stored manifest or node lists, as {@link ChunkStoreDriver.inspect} reads it. */
export interface InspectedObject {
  /** A node's level; a manifest's root level (0: its root is a chunk). */
  level: number;
  children: ListedChild[];
}

/** Counters of what a driver wrote and read, by object kind (benchmarks and tests read them). */
export interface ChunkStoreStats {
  /** Objects written, and their sealed bytes (what the store grew by) and plaintext bytes. */
  written: Record<ObjectKind, { objects: number; bytes: number; plaintextBytes: number }>;
  /** Objects a store found already present (dedup hits), not counting in-memory hits. */
  reused: Record<ObjectKind, number>;
  /** Objects fetched from the backend (cache misses) and their sealed bytes. */
  fetched: { objects: number; bytes: number };
  /** Payloads stored and retrieved, and their data bytes. */
  payloadsStored: number;
  payloadBytesStored: number;
  payloadsRetrieved: number;
}

/** The read cache's key of an object: its key and the key id its payload was stored with (objects are content-addressed, so a hit is the object's content). */
function cacheKeyOf(objectKey: string, keyId: string | undefined): string {
  return `${objectKey}\u0000${keyId ?? ''}`;
}

function emptyStats(): ChunkStoreStats {
  const perKind = () => ({ objects: 0, bytes: 0, plaintextBytes: 0 });
  return {
    written: { chunk: perKind(), node: perKind(), manifest: perKind() },
    reused: { chunk: 0, node: 0, manifest: 0 },
    fetched: { objects: 0, bytes: 0 },
    payloadsStored: 0,
    payloadBytesStored: 0,
    payloadsRetrieved: 0,
  };
}

export interface ChunkStoreDriverOptions {
  backend: ObjectBackend;
  /** Encrypt new objects with `keyring.current`; read objects of any key in it. @default undefined — no encryption */
  keyring?: Keyring;
  /** Backend operations in flight at once per driver. @default 16 */
  concurrency?: number;
  /** Plaintext bytes of objects kept in memory for reads: those it wrote and those it read (consecutive payloads share most of them; a worker reads what it just wrote). @default 64 MiB */
  cacheBytes?: number;
  /** A reused object older than this is touched, so a gc with a grace period of twice this never takes it. @default 24 h */
  refreshAfterMs?: number;
  /** @default DEFAULT_CHUNKER_LIMITS */
  chunkerLimits?: ChunkerLimits;
  /** zlib level of chunks. @default 6 */
  compressionLevel?: number;
  /**
   * The format of the claims this driver writes (it reads both). 1 only while processes from
   * before format 2, which read format 1 alone, may still read this store's claims (a rolling
   * upgrade). @default 2
   */
  claimFormat?: ClaimFormat;
  /** @default Date.now */
  now?: () => number;
}

/**
 * The chunk store as a Temporal External Storage driver.
 *
 * @example
 * const driver = new ChunkStoreDriver({ backend: new FileBackend({ directory: '/var/lib/compactor' }) });
 * const dataConverter = { externalStorage: new ExternalStorage({ drivers: [driver], payloadSizeThreshold: 256 }) };
 */
export class ChunkStoreDriver implements StorageDriver {
  readonly name = CHUNK_STORE_DRIVER_NAME;
  readonly type = CHUNK_STORE_DRIVER_TYPE;
  readonly backend: ObjectBackend;
  readonly keyring: Keyring | undefined;
  readonly stats: ChunkStoreStats = emptyStats();
  private readonly limiter: Limiter;
  private readonly cache: LruMap<Uint8Array>;
  /** Objects known to be in the store, with when that was last confirmed. */
  private readonly present = new LruMap<number>(200_000, () => 1);
  private readonly refreshAfterMs: number;
  private readonly chunkerLimits: ChunkerLimits;
  private readonly compressionLevel: number;
  /** The format of the claims this driver writes. */
  readonly claimFormat: ClaimFormat;
  private readonly now: () => number;

  constructor({
    backend,
    keyring,
    concurrency = 16,
    cacheBytes = 64 * 1024 * 1024,
    refreshAfterMs = 24 * 3_600_000,
    chunkerLimits = DEFAULT_CHUNKER_LIMITS,
    compressionLevel = 6,
    claimFormat = 2,
    now = Date.now,
  }: ChunkStoreDriverOptions) {
    this.backend = backend;
    this.keyring = keyring;
    this.limiter = new Limiter(concurrency);
    this.cache = new LruMap(cacheBytes, (bytes) => bytes.length);
    this.refreshAfterMs = refreshAfterMs;
    this.chunkerLimits = chunkerLimits;
    this.compressionLevel = compressionLevel;
    this.claimFormat = claimFormat;
    this.now = now;
  }

  async store(context: StorageDriverStoreContext, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    const { signal, release } = followSignal(context.abortSignal);
    // One call's payloads often share chunks (a workflow's input and its first activity's input):
    // each object is checked and written once per call.
    const inFlight = new Map<string, Promise<void>>();
    try {
      return await this.storeAll(payloads, inFlight, signal);
    } finally {
      release();
    }
  }

  async retrieve(context: StorageDriverRetrieveContext, claims: StorageDriverClaim[]): Promise<Payload[]> {
    const { signal, release } = followSignal(context.abortSignal);
    try {
      return await Promise.all(claims.map((claim) => this.retrieveOne(claim, signal)));
    } finally {
      release();
    }
  }

  private storeAll(
    payloads: Payload[],
    inFlight: Map<string, Promise<void>>,
    signal: AbortSignal,
  ): Promise<StorageDriverClaim[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const { manifest, size } = this.plan(payload);
        await this.ensure(manifest.children[0], inFlight, signal);
        // The manifest is always written, even when it exists: its modification time tells a gc
        // that a claim to it was handed out just now.
        await this.write(manifest, signal);
        this.stats.payloadsStored += 1;
        this.stats.payloadBytesStored += size;
        // The reference the SDK writes around the claim records the size already.
        return new StorageDriverClaim(
          claimDataFor({ manifestId: manifest.id, keyId: this.keyring?.current.id }, this.claimFormat),
        );
      }),
    );
  }

  /** Chunks, tree and manifest of one payload, with ids; nothing written yet. */
  private plan(payload: Payload): { manifest: PlannedObject; size: number } {
    const key = this.keyring?.current;
    const data = payload.data ?? new Uint8Array(0);
    let level: PlannedObject[] = [];
    let start = 0;
    for (const end of chunkBoundaries(data, this.chunkerLimits)) {
      const plaintext = data.subarray(start, end);
      level.push({ kind: 'chunk', id: objectId(plaintext, key), plaintext, children: [] });
      start = end;
    }
    let depth = 0;
    const lengthOf = new Map<PlannedObject, number>(level.map((chunk) => [chunk, chunk.plaintext.length]));
    while (level.length > 1) {
      depth += 1;
      const parents: PlannedObject[] = [];
      let group: PlannedObject[] = [];
      const close = (): void => {
        const children = group.map((child) => ({ id: child.id, length: lengthOf.get(child) ?? 0 }));
        const plaintext = encodeNode(depth, children);
        const node: PlannedObject = { kind: 'node', id: objectId(plaintext, key), plaintext, children: group };
        lengthOf.set(
          node,
          children.reduce((sum, child) => sum + child.length, 0),
        );
        parents.push(node);
        group = [];
      };
      for (const child of level) {
        group.push(child);
        if (nodeEndsAfter(child.id, group.length)) close();
      }
      if (group.length > 0) close();
      level = parents;
    }
    const root = level[0];
    const metadata: Record<string, string> = {};
    for (const [name, value] of Object.entries(payload.metadata ?? {}))
      if (value !== null && value !== undefined) metadata[name] = Buffer.from(value).toString('base64');
    const body: ManifestBody = {
      format: MANIFEST_FORMAT,
      v: 1,
      chunker: CHUNKER_VERSION,
      size: data.length,
      level: depth,
      root: root?.id ?? null,
      metadata,
    };
    const plaintext = Buffer.from(JSON.stringify(body), 'utf8');
    return {
      manifest: {
        kind: 'manifest',
        id: objectId(plaintext, key),
        plaintext,
        children: root === undefined ? [] : [root],
      },
      size: data.length,
    };
  }

  /** Makes sure `object` and everything below it is in the store, children before parents. */
  private ensure(
    object: PlannedObject | undefined,
    inFlight: Map<string, Promise<void>>,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    if (object === undefined) return Promise.resolve();
    const key = objectKey(object.kind, object.id);
    const running = inFlight.get(key);
    if (running !== undefined) return running;
    const work = (async () => {
      const confirmed = this.present.get(key);
      if (confirmed !== undefined && this.now() - confirmed < this.refreshAfterMs / 2) return;
      const found = await this.limiter.run(() => this.backend.stat(key, signal));
      if (found !== undefined) {
        // A node that exists has all its descendants (they were written first): nothing below to check.
        if (this.now() - found.modifiedMs < this.refreshAfterMs || (await this.touched(key, signal))) {
          this.stats.reused[object.kind] += 1;
          this.present.set(key, this.now());
          return;
        }
      }
      await Promise.all(object.children.map((child) => this.ensure(child, inFlight, signal)));
      await this.write(object, signal);
    })();
    inFlight.set(key, work);
    return work;
  }

  /** Touches an old object; false when it vanished meanwhile (a gc took it), so it is written anew. */
  private async touched(key: string, signal: AbortSignal | undefined): Promise<boolean> {
    try {
      await this.limiter.run(() => this.backend.touch(key, signal));
      return true;
    } catch (error) {
      if ((await this.limiter.run(() => this.backend.stat(key, signal))) === undefined) return false;
      throw error;
    }
  }

  private async write(object: PlannedObject, signal: AbortSignal | undefined): Promise<void> {
    const key = objectKey(object.kind, object.id);
    const sealed = sealObject(object.plaintext, object.id, this.keyring?.current, this.compressionLevel);
    await this.limiter.run(() => this.backend.put(key, sealed, signal));
    const counters = this.stats.written[object.kind];
    counters.objects += 1;
    counters.bytes += sealed.length;
    counters.plaintextBytes += object.plaintext.length;
    this.present.set(key, this.now());
    // What was just written is what the next retrieve of it reads (the activity that takes the
    // input this worker's workflow stored, the workflow that takes this activity's result): a copy,
    // so a chunk does not keep its whole payload's buffer alive in the cache.
    this.cache.set(cacheKeyOf(key, this.keyring?.current.id), Uint8Array.from(object.plaintext));
  }

  private async read(
    kind: ObjectKind,
    id: string,
    keyId: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Uint8Array> {
    const key = objectKey(kind, id);
    const cacheKey = cacheKeyOf(key, keyId);
    const cached = this.cache.get(cacheKey);
    if (cached !== undefined) return cached;
    const sealed = await this.limiter.run(() => this.backend.get(key, signal));
    if (sealed === undefined) throw new ChunkMissingError(key, this.backend.description);
    this.stats.fetched.objects += 1;
    this.stats.fetched.bytes += sealed.length;
    const plaintext = openObject(sealed, id, key, keyId, this.keyring);
    this.cache.set(cacheKey, plaintext);
    return plaintext;
  }

  /**
   * What a stored manifest or node lists, read with whichever configured key sealed it (a garbage
   * collector does not know which claim an object belongs to). Not cached.
   *
   * @throws ChunkMissingError when there is no such object.
   * @throws PayloadKeyMissingError when it is sealed with a key that is not configured.
   * @throws ChunkIntegrityError when it is corrupted or malformed.
   */
  async inspect(kind: 'manifest' | 'node', id: string, signal?: AbortSignal): Promise<InspectedObject> {
    const key = objectKey(kind, id);
    const sealed = await this.limiter.run(() => this.backend.get(key, signal));
    if (sealed === undefined) throw new ChunkMissingError(key, this.backend.description);
    const plaintext = openObject(sealed, id, key, sealedKeyId(sealed, key), this.keyring);
    const childKind = (level: number): 'node' | 'chunk' => (level === 0 ? 'chunk' : 'node');
    if (kind === 'manifest') {
      const manifest = parseManifest(plaintext, key);
      return {
        level: manifest.level,
        children: manifest.root === null ? [] : [{ kind: childKind(manifest.level), id: manifest.root }],
      };
    }
    const level = nodeLevel(plaintext, key);
    return {
      level,
      children: decodeNode(plaintext, level, key).map((child) => ({ kind: childKind(level - 1), id: child.id })),
    };
  }

  private async retrieveOne(claim: StorageDriverClaim, signal: AbortSignal | undefined): Promise<Payload> {
    const { manifestId, keyId } = readClaim(claim.claimData);
    const manifestKey = objectKey('manifest', manifestId);
    const manifest = parseManifest(await this.read('manifest', manifestId, keyId, signal), manifestKey);
    const data = new Uint8Array(manifest.size);
    const fill = async (
      id: string,
      level: number,
      offset: number,
      length: number,
      parentKey: string,
    ): Promise<void> => {
      if (level === 0) {
        const chunk = await this.read('chunk', id, keyId, signal);
        if (chunk.length !== length)
          throw new ChunkIntegrityError(parentKey, `lists chunk ${id} as ${length} bytes, but it has ${chunk.length}`);
        data.set(chunk, offset);
        return;
      }
      const nodeKey = objectKey('node', id);
      const children = decodeNode(await this.read('node', id, keyId, signal), level, nodeKey);
      const total = children.reduce((sum, child) => sum + child.length, 0);
      if (total !== length)
        throw new ChunkIntegrityError(nodeKey, `covers ${total} bytes where ${length} were expected`);
      let at = offset;
      await Promise.all(
        children.map((child) => {
          const childOffset = at;
          at += child.length;
          return fill(child.id, level - 1, childOffset, child.length, nodeKey);
        }),
      );
    };
    if (manifest.root !== null) await fill(manifest.root, manifest.level, 0, manifest.size, manifestKey);
    this.stats.payloadsRetrieved += 1;
    const metadata: Record<string, Uint8Array> = {};
    for (const [name, value] of Object.entries(manifest.metadata)) metadata[name] = Buffer.from(value, 'base64');
    return { metadata, data };
  }
}
