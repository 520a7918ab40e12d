// Node only: the content-addressed chunk store, a `StorageDriver` for Temporal's External Storage.
// A stored payload becomes chunks (chunker.ts), a small tree of nodes listing them, and one
// manifest; the history keeps a claim naming the manifest. Consecutive chat inputs share almost
// all chunks and most nodes, so the store grows with what is new in a round, not with the
// conversation.
//
// Layout (the same under a directory and under an S3 prefix):
//   v1/chunks/<id[0:2]>/<id[2:4]>/<id>      slices of payload data
//   v1/nodes/<id[0:2]>/<id[2:4]>/<id>       tree nodes: level, then (child id, byte length) entries
//   v1/manifests/<id[0:2]>/<id[2:4]>/<id>   one per stored payload: size, metadata, root id and level
// Every object is sealed (sealed-object.ts): named by its content's hash, compressed, and with a
// key encrypted. A claim is `{ m, k? }`: the manifest id in base64url and the key id (format 2,
// what every writer writes); claims of format 1, `{ manifest, keyId? }` with the id in hex, stay
// readable. Object names stay hex in both: only the claim's text is shorter, by 28 bytes (32 with
// a key), which every claim in every history pays.
//
// What a garbage collector can rely on (gc.ts is the one): an object is only written after every
// object it lists, so a node that exists has all its descendants; manifests are rewritten on every
// store, so their modification time says when a claim to them was last handed out; a chunk or
// node that a store reuses is touched when older than `refreshAfterMs` (but what lies under a
// reused node is not). Mark from the claims of retained histories and from manifests and nodes
// younger than the grace period, follow manifests → nodes → chunks, sweep the rest that is older
// than the grace period (at least twice `refreshAfterMs`), parents before children.
import { setMaxListeners } from 'node:events';
import type { Payload, StorageDriver, StorageDriverRetrieveContext, StorageDriverStoreContext } from '@temporalio/common';
import { StorageDriverClaim } from '@temporalio/common';
import { CHUNKER_VERSION, chunkBoundaries, DEFAULT_CHUNKER_LIMITS, type ChunkerLimits } from './chunker.js';
import { ChunkIntegrityError, ChunkMissingError } from './errors.js';
import { KEY_ID_PATTERN, type Keyring } from './keyring.js';
import type { ObjectBackend } from './object-backend.js';
import { objectId, openObject, sealedKeyId, sealObject } from './sealed-object.js';

/** The driver name written into every reference payload: must never change. */
export const CHUNK_STORE_DRIVER_NAME = 'compactor-chunks';
/** Reported in worker heartbeats. */
export const CHUNK_STORE_DRIVER_TYPE = 'temporal-compactor.chunk-store';

export type ObjectKind = 'chunk' | 'node' | 'manifest';

/** The key of an object: `v1/<kind>s/<2 hex>/<2 hex>/<id>`. */
export function objectKey(kind: ObjectKind, id: string): string {
  return `v1/${kind}s/${id.slice(0, 2)}/${id.slice(2, 4)}/${id}`;
}

const ID_PATTERN = /^[0-9a-f]{64}$/;
const ID_BYTES = 32;
/** 32 bytes in base64url without padding: a format-2 claim's `m`. */
const CLAIM_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const NODE_MAGIC = 0x4e;
const NODE_ENTRY_BYTES = ID_BYTES + 4;
// Node boundaries are content-defined by the child ids (uniformly random): a node ends after a
// child whose first id byte has its low four bits zero (one in 16), with at least 4 and at most 64
// children. Appending chunks then rewrites only the last node of each level, about 0.6 KB each.
const NODE_MIN_CHILDREN = 4;
const NODE_MAX_CHILDREN = 64;
const MANIFEST_FORMAT = 'temporal-compactor manifest';
const MAX_PAYLOAD_BYTES = 2 ** 31 - 1;

interface ChildRef {
  id: string;
  length: number;
}

/** An object a store call may have to write, with the objects it lists. */
interface PlannedObject {
  kind: ObjectKind;
  id: string;
  plaintext: Uint8Array;
  children: PlannedObject[];
}

interface ManifestBody {
  format: typeof MANIFEST_FORMAT;
  v: 1;
  chunker: number;
  size: number;
  /** 0: the root is a chunk (or absent for an empty payload); n: a node whose children are level n-1. */
  level: number;
  root: string | null;
  /** The payload's metadata, values base64. */
  metadata: Record<string, string>;
}

function encodeNode(level: number, children: ChildRef[]): Uint8Array {
  const bytes = Buffer.alloc(2 + children.length * NODE_ENTRY_BYTES);
  bytes[0] = NODE_MAGIC;
  bytes[1] = level;
  children.forEach((child, index) => {
    const at = 2 + index * NODE_ENTRY_BYTES;
    bytes.write(child.id, at, 'hex');
    bytes.writeUInt32BE(child.length, at + ID_BYTES);
  });
  return bytes;
}

/** A node's level (its children are of the level below; level-1 nodes list chunks), as the node itself says. */
function nodeLevel(plaintext: Uint8Array, key: string): number {
  if (plaintext.length < 2 || plaintext[0] !== NODE_MAGIC || (plaintext.length - 2) % NODE_ENTRY_BYTES !== 0) throw new ChunkIntegrityError(key, 'malformed tree node');
  const level = plaintext[1] ?? 0;
  if (level < 1) throw new ChunkIntegrityError(key, 'tree node of level 0');
  return level;
}

function decodeNode(plaintext: Uint8Array, level: number, key: string): ChildRef[] {
  const bytes = Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength);
  const actual = nodeLevel(bytes, key);
  if (actual !== level) throw new ChunkIntegrityError(key, `tree node of level ${actual} where level ${level} was expected`);
  const children: ChildRef[] = [];
  for (let at = 2; at < bytes.length; at += NODE_ENTRY_BYTES) children.push({ id: bytes.toString('hex', at, at + ID_BYTES), length: bytes.readUInt32BE(at + ID_BYTES) });
  return children;
}

function parseManifest(plaintext: Uint8Array, key: string): ManifestBody {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(plaintext).toString('utf8'));
  } catch {
    throw new ChunkIntegrityError(key, 'manifest is not JSON');
  }
  if (typeof value !== 'object' || value === null) throw new ChunkIntegrityError(key, 'manifest is not an object');
  const fields: Record<string, unknown> = Object.fromEntries(Object.entries(value));
  const { format, v, size, level, root, metadata, chunker } = fields;
  const metadataOk = typeof metadata === 'object' && metadata !== null && Object.values(metadata).every((entry) => typeof entry === 'string');
  if (format !== MANIFEST_FORMAT || v !== 1) throw new ChunkIntegrityError(key, 'not a version-1 temporal-compactor manifest');
  // Temporal payloads stay far below 2 GiB; a larger size could only make a reader allocate wildly.
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0 || size > MAX_PAYLOAD_BYTES) throw new ChunkIntegrityError(key, 'manifest size is not a plausible byte count');
  if (typeof level !== 'number' || !Number.isInteger(level) || level < 0 || level > 255) throw new ChunkIntegrityError(key, 'manifest level is out of range');
  const rootId = typeof root === 'string' && ID_PATTERN.test(root) ? root : null;
  if (rootId === null && (root !== null || size !== 0)) throw new ChunkIntegrityError(key, 'manifest root is not an object id');
  if (!metadataOk) throw new ChunkIntegrityError(key, 'manifest metadata is malformed');
  const entries: Record<string, string> = {};
  for (const [name, entry] of Object.entries(metadata)) if (typeof entry === 'string') entries[name] = entry;
  return { format, v, size, level, root: rootId, metadata: entries, chunker: typeof chunker === 'number' ? chunker : 0 };
}

/**
 * A signal of our own that follows the caller's. One store or retrieve has many backend calls in
 * flight on it, and the S3 client adds a listener per request: on the caller's signal that would
 * trip Node's listener-leak warning; on ours the limit is lifted, and the caller's gets one listener.
 */
function followSignal(parent: AbortSignal | undefined): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  if (parent === undefined) return { signal: controller.signal, release: () => undefined };
  if (parent.aborted) controller.abort(parent.reason);
  const onAbort = (): void => controller.abort(parent.reason);
  parent.addEventListener('abort', onAbort, { once: true });
  return { signal: controller.signal, release: () => parent.removeEventListener('abort', onAbort) };
}

/** Runs at most `limit` operations at once; waiting callers hold nothing (no deadlock across recursion). */
class Limiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(private readonly limit: number) {}

  async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active += 1;
    try {
      return await operation();
    } finally {
      this.active -= 1;
      this.waiting.shift()?.();
    }
  }
}

/** A map that forgets its oldest entries past a budget (plaintext bytes, or entries). */
class LruMap<V> {
  private readonly entries = new Map<string, { value: V; weight: number }>();
  private total = 0;
  constructor(
    private readonly budget: number,
    private readonly weigh: (value: V) => number,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V): void {
    const weight = this.weigh(value);
    if (weight > this.budget) return;
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.total -= old.weight;
      this.entries.delete(key);
    }
    this.entries.set(key, { value, weight });
    this.total += weight;
    for (const [oldest, entry] of this.entries) {
      if (this.total <= this.budget) break;
      this.entries.delete(oldest);
      this.total -= entry.weight;
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.total -= entry.weight;
    this.entries.delete(key);
  }
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

/** The id of an object key `v1/<kind>s/xx/yy/<id>`, with its kind; undefined for other keys (temporary files). */
export function parseObjectKey(key: string): { kind: ObjectKind; id: string } | undefined {
  const match = /^v1\/(chunk|node|manifest)s\/([0-9a-f]{2})\/([0-9a-f]{2})\/([0-9a-f]{64})$/.exec(key);
  if (match === null) return undefined;
  const [, kind, first, second, id = ''] = match;
  if (kind !== 'chunk' && kind !== 'node' && kind !== 'manifest') return undefined;
  return id.startsWith(`${first}${second}`) ? { kind, id } : undefined;
}

/** What a claim of the store names, whichever format it was written in. */
export interface ClaimFields {
  /** The manifest's id in hex, as the store names objects. */
  manifestId: string;
  /** The key its objects are sealed with; undefined when they are not encrypted. */
  keyId: string | undefined;
}

/** The claim formats: 2, written by default, and 1, written before it (every reader reads both). */
export type ClaimFormat = 1 | 2;

/**
 * The claim data this driver writes. Format 2 (the default): `{ m }`, the manifest id's 32 bytes in
 * base64url without padding (43 characters instead of 64 hex digits), and `k`, the key id, when
 * encrypted; the short field names and the shorter id save 28 bytes of every claim (32 with a
 * key). Format 1: `{ manifest, keyId? }` with the id in hex, what workers from before format 2 read.
 */
export function claimDataFor({ manifestId, keyId }: ClaimFields, format: ClaimFormat = 2): Record<string, string> {
  if (format === 1) return keyId === undefined ? { manifest: manifestId } : { manifest: manifestId, keyId };
  const m = Buffer.from(manifestId, 'hex').toString('base64url');
  return keyId === undefined ? { m } : { m, k: keyId };
}

/** The fields of a claim, or why it is not one of ours. */
function parseClaim(claimData: Readonly<Record<string, unknown>>): ClaimFields | { problem: string } {
  const { m, k, manifest, keyId } = claimData;
  const formatTwo = m !== undefined || k !== undefined;
  const formatOne = manifest !== undefined || keyId !== undefined;
  // No writer ever mixed them: a claim that does was made by hand or altered, and which field wins would be a guess.
  if (formatTwo && formatOne) return { problem: 'mixes the fields of claim format 2 (m, k) and format 1 (manifest, keyId)' };
  let manifestId: string;
  if (formatTwo) {
    if (m === undefined) return { problem: 'has a key id (k) but no manifest id (m)' };
    const bytes = typeof m === 'string' && CLAIM_ID_PATTERN.test(m) ? Buffer.from(m, 'base64url') : undefined;
    // Round-tripping refuses the other spellings of the same bytes (the unused low bits of the last character set).
    if (bytes === undefined || bytes.toString('base64url') !== m) return { problem: 'has an m that is not a manifest id (43 characters of base64url without padding)' };
    manifestId = bytes.toString('hex');
  } else {
    if (manifest === undefined) return { problem: keyId === undefined ? 'has no manifest id (m, or manifest in format 1)' : 'has a key id (keyId) but no manifest id (manifest)' };
    if (typeof manifest !== 'string' || !ID_PATTERN.test(manifest)) return { problem: 'has a manifest that is not a manifest id (64 lowercase hex digits)' };
    manifestId = manifest;
  }
  const key = formatTwo ? k : keyId;
  if (key !== undefined && (typeof key !== 'string' || !KEY_ID_PATTERN.test(key))) return { problem: `has a ${formatTwo ? 'k' : 'keyId'} that is not a key id (1-64 characters of A-Z, a-z, 0-9, '.', '_', '-')` };
  return { manifestId, keyId: key };
}

/**
 * What a claim's data names, from either format: 2 (`{ m, k? }`, written now) or 1
 * (`{ manifest, keyId? }`, written before; readable forever).
 *
 * @throws ChunkIntegrityError naming the claim when it is neither: no manifest id, a malformed id
 * or key id, or fields of both formats at once.
 */
export function readClaim(claimData: Readonly<Record<string, unknown>>): ClaimFields {
  const parsed = parseClaim(claimData);
  if ('problem' in parsed) throw new ChunkIntegrityError(`claim ${JSON.stringify(claimData)}`, `is not a temporal-compactor claim: it ${parsed.problem}`);
  return parsed;
}

/** The hex id of the manifest a claim's data names (format 2 or 1), or undefined when it is not a valid claim of the store. */
export function claimManifestId(claimData: Readonly<Record<string, unknown>>): string | undefined {
  const parsed = parseClaim(claimData);
  return 'problem' in parsed ? undefined : parsed.manifestId;
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
  /** Plaintext bytes of chunks and nodes kept in memory for reads (consecutive payloads share most of them). @default 64 MiB */
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

  private storeAll(payloads: Payload[], inFlight: Map<string, Promise<void>>, signal: AbortSignal): Promise<StorageDriverClaim[]> {
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
        return new StorageDriverClaim(claimDataFor({ manifestId: manifest.id, keyId: this.keyring?.current.id }, this.claimFormat));
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
        lengthOf.set(node, children.reduce((sum, child) => sum + child.length, 0));
        parents.push(node);
        group = [];
      };
      for (const child of level) {
        group.push(child);
        const boundary = (parseInt(child.id.slice(0, 2), 16) & 0x0f) === 0;
        if ((group.length >= NODE_MIN_CHILDREN && boundary) || group.length >= NODE_MAX_CHILDREN) close();
      }
      if (group.length > 0) close();
      level = parents;
    }
    const root = level[0];
    const metadata: Record<string, string> = {};
    for (const [name, value] of Object.entries(payload.metadata ?? {})) if (value !== null && value !== undefined) metadata[name] = Buffer.from(value).toString('base64');
    const body: ManifestBody = { format: MANIFEST_FORMAT, v: 1, chunker: CHUNKER_VERSION, size: data.length, level: depth, root: root?.id ?? null, metadata };
    const plaintext = Buffer.from(JSON.stringify(body), 'utf8');
    return { manifest: { kind: 'manifest', id: objectId(plaintext, key), plaintext, children: root === undefined ? [] : [root] }, size: data.length };
  }

  /** Makes sure `object` and everything below it is in the store, children before parents. */
  private ensure(object: PlannedObject | undefined, inFlight: Map<string, Promise<void>>, signal: AbortSignal | undefined): Promise<void> {
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
  }

  private async read(kind: ObjectKind, id: string, keyId: string | undefined, signal: AbortSignal | undefined): Promise<Uint8Array> {
    const key = objectKey(kind, id);
    const cacheKey = `${key}\u0000${keyId ?? ''}`;
    const cached = kind === 'manifest' ? undefined : this.cache.get(cacheKey);
    if (cached !== undefined) return cached;
    const sealed = await this.limiter.run(() => this.backend.get(key, signal));
    if (sealed === undefined) throw new ChunkMissingError(key, this.backend.description);
    this.stats.fetched.objects += 1;
    this.stats.fetched.bytes += sealed.length;
    const plaintext = openObject(sealed, id, key, keyId, this.keyring);
    if (kind !== 'manifest') this.cache.set(cacheKey, plaintext);
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
      return { level: manifest.level, children: manifest.root === null ? [] : [{ kind: childKind(manifest.level), id: manifest.root }] };
    }
    const level = nodeLevel(plaintext, key);
    return { level, children: decodeNode(plaintext, level, key).map((child) => ({ kind: childKind(level - 1), id: child.id })) };
  }

  private async retrieveOne(claim: StorageDriverClaim, signal: AbortSignal | undefined): Promise<Payload> {
    const { manifestId, keyId } = readClaim(claim.claimData);
    const manifestKey = objectKey('manifest', manifestId);
    const manifest = parseManifest(await this.read('manifest', manifestId, keyId, signal), manifestKey);
    const data = new Uint8Array(manifest.size);
    const fill = async (id: string, level: number, offset: number, length: number, parentKey: string): Promise<void> => {
      if (level === 0) {
        const chunk = await this.read('chunk', id, keyId, signal);
        if (chunk.length !== length) throw new ChunkIntegrityError(parentKey, `lists chunk ${id} as ${length} bytes, but it has ${chunk.length}`);
        data.set(chunk, offset);
        return;
      }
      const nodeKey = objectKey('node', id);
      const children = decodeNode(await this.read('node', id, keyId, signal), level, nodeKey);
      const total = children.reduce((sum, child) => sum + child.length, 0);
      if (total !== length) throw new ChunkIntegrityError(nodeKey, `covers ${total} bytes where ${length} were expected`);
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
