// Node only: the content-addressed chunk store, a `StorageDriver` for Temporal's External Storage.
// A stored payload becomes slices (chunker.ts) and one manifest, with the nodes of a tree over the
// slices when it is long (object-format.ts); the history keeps a claim naming the manifest
// (claims.ts). A manifest on a base, or a fresh payload's, holds its new slices inline, and later
// payloads list slices of those bytes there; a long payload listed over a tree puts its new slices
// end to end into one chunk, its pack. Every object is sealed (sealed-object.ts): named by its
// content's hash, deflated with preset dictionary 1 (dictionary.ts) — every pack and manifest
// against the window of the pack or manifest this process stored before it, a chain of contexts,
// and a node against that window when that makes it smaller — and with a key encrypted.
//
// What a round of an agent run costs: the chat input is the previous one with a message or two
// appended, so its manifest names the previous one's as its base (the first `keep` bytes are the
// base's) and lists only what follows: the new messages, most of them slices the tool's result and
// the model's reply already hold (the chunker cuts a message the same wherever it sits). A chain
// of bases is cut at MAX_WRITTEN_DEPTH (15): then a full manifest lists the tree's closed nodes (a
// node closes at a content-defined boundary, so an append never rewrites one) and the open entries
// after them. A payload that starts as no recent one does (a transcript, a summarizer request) is
// listed by its manifest alone, up to FLAT_ENTRIES (a payload starts as a recent one when their
// first leaves cover half of it).
//
// What a garbage collector can rely on (gc.ts is the one): an object is only written after every
// object it lists (a base manifest is checked to exist, and touched when old, before a manifest on
// it is written), so a manifest or node that exists has all its descendants; manifests are
// rewritten on every store, so their modification time says when a claim to them was last handed
// out; a pack, node or manifest that a store reuses is touched when older than `refreshAfterMs`
// (but what lies under it is not). An object is deflated against another only once that one is
// stored, and only when this process stored it within half of `refreshAfterMs` (so it is younger
// than any grace period). Mark from the claims of retained histories and from manifests, nodes and
// chunks younger than the grace period, follow manifests → base manifests, nodes, packs and the
// manifests whose inline bytes they list slices of, and every object → its context; sweep the rest
// that is older than the grace period (at least twice `refreshAfterMs`), parents before children.
import type {
  Payload,
  StorageDriver,
  StorageDriverRetrieveContext,
  StorageDriverStoreContext,
} from '@temporalio/common';
import { StorageDriverClaim } from '@temporalio/common';
import { InvalidInputError } from '../core/errors.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import { chunkBoundaries, DEFAULT_CHUNKER_LIMITS, type ChunkerLimits } from './chunker.js';
import { claimDataFor, readClaim } from './claims.js';
import { ChunkIntegrityError, ChunkMissingError } from './errors.js';
import { followSignal } from './follow-signal.js';
import type { Keyring } from './keyring.js';
import { Limiter } from './limiter.js';
import { LruMap } from './lru-map.js';
import type { ObjectBackend } from './object-backend.js';
import {
  decodeNode,
  encodeManifest,
  encodeNode,
  entryLength,
  inlineBytesOf,
  nodeEndsAfter,
  MAX_INLINE_BYTES,
  nodeLevel,
  objectKey,
  parseManifest,
  type Entry,
  type Manifest,
  type ObjectKind,
} from './object-format.js';
import {
  chainRoot,
  contextualId,
  inflateObject,
  objectId,
  sealedKeyId,
  sealObject,
  unsealObject,
  windowAfter,
  type ContextKind,
  type SealContext,
} from './sealed-object.js';

/** The driver name written into every reference payload: must never change. */
export const CHUNK_STORE_DRIVER_NAME = 'compactor-chunks';
/** Reported in worker heartbeats. */
export const CHUNK_STORE_DRIVER_TYPE = 'temporal-compactor.chunk-store';

/** An object a store call may have to write, with the objects it lists; a pack written before has no plaintext here (it can only be reused). */
interface PlannedObject {
  kind: ObjectKind;
  id: string;
  plaintext: Uint8Array | undefined;
  children: PlannedObject[];
  /** A pack or manifest: the object it is deflated against (its id binds it). */
  context?: SealContext;
}

/** A slice of a payload as the chunker cut it: where it ends in the payload, its bytes and its id. */
interface PayloadSlice {
  end: number;
  plaintext: Uint8Array;
  id: string;
}

/** Where a slice the driver stored lies: `length` bytes at `offset` of pack `pack`, or of manifest `pack`'s inline bytes. */
interface PackedSlice {
  pack: string;
  of: 'pack' | 'manifest';
  offset: number;
  length: number;
}

/** Where a payload that was read holds bytes of a pack (or of a manifest's inline bytes): `length` bytes at `start`, from `offset` of `pack`. */
interface PackSegment {
  start: number;
  length: number;
  pack: string;
  of: 'pack' | 'manifest';
  offset: number;
}

/** Slices remembered with the pack that holds them (dedup across the payloads of a process). */
const PACKED_SLICES = 200_000;

/** An object a stored object needs (a garbage collector follows these): what it lists, its base manifest, its context. */
export interface ListedChild {
  kind: ObjectKind;
  id: string;
}

/** What a stored object needs, as {@link ChunkStoreDriver.inspect} reads it (a chunk: the object it was deflated against, if any). */
export interface InspectedObject {
  /** A node's level; a manifest's highest node level (0: it lists no node); a chunk: 0. */
  level: number;
  /** A manifest's depth: 0, or 1 + its base manifest's. Nodes: 0. A chunk's context depth (0: none). */
  depth: number;
  children: ListedChild[];
}

/** An entry of a manifest or node being planned, with the object it refers to (none for a slice inline). */
interface PlannedEntry {
  /** The id of the slice or node (a slice inline has one too: node boundaries are decided by ids). */
  id: string;
  /** Where it ends in the payload. */
  end: number;
  entry: Entry;
  object?: PlannedObject;
}

interface PlannedManifest {
  object: PlannedObject;
  depth: number;
  /** What it lists after its base's prefix, in order. */
  listed: PlannedEntry[];
}

/** A manifest this driver wrote lately, with the ids of its payload's leaves (for a later payload that extends it). */
interface RecentManifest {
  id: string;
  keyId: string | undefined;
  depth: number;
  leafIds: string[];
}

/** A chain of objects deflated each against the one before is this long at most (then an object starts a new one). */
const WRITTEN_CONTEXT_DEPTH = 63;

/** A payload that starts as no recent one does is listed by its manifest alone (no tree nodes) up to this many entries. */
const FLAT_ENTRIES = 1024;
/** Bytes of windows kept in memory (a window is 32 KiB). */
const WINDOW_CACHE_BYTES = 16 * 1024 * 1024;

/** Manifests remembered as bases. A worker runs many workflows; each one's next chat input extends its last. */
const RECENT_MANIFESTS = 64;
/** A chain of manifests on bases is cut (a full manifest written) at this depth: a cold reader reads at most this many manifests. */
const MAX_WRITTEN_DEPTH = 15;
/** A manifest on a base lists at most this many entries after the prefix (more: a full manifest, with nodes). */
const MAX_DELTA_ENTRIES = 64;

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
  /** A payload shorter than this is written inside its manifest: one object. @default 512 */
  inlineBelow?: number;
  /** A slice shorter than this is written inside the manifest or node that lists it, never listed in a pack or another manifest. @default 256 */
  literalBelow?: number;
  /** @default Date.now */
  now?: () => number;
}

const DRIVER_OPTIONS = keysOf<ChunkStoreDriverOptions>({
  backend: true,
  keyring: true,
  concurrency: true,
  cacheBytes: true,
  refreshAfterMs: true,
  chunkerLimits: true,
  compressionLevel: true,
  inlineBelow: true,
  literalBelow: true,
  now: true,
});

/**
 * Refuses options the driver would not understand, naming the option (`driver.concurrency`): an
 * unknown key, a number out of its range. A JavaScript caller has no compiler to catch them, and a
 * driver that ignored one would write a store other than the one asked for.
 */
function checkDriverOptions(options: ChunkStoreDriverOptions): void {
  assertKnownKeys(options, DRIVER_OPTIONS, 'driver');
  const ranges: [keyof ChunkStoreDriverOptions, number, number][] = [
    ['concurrency', 1, Number.MAX_SAFE_INTEGER],
    ['cacheBytes', 0, Number.MAX_SAFE_INTEGER],
    ['refreshAfterMs', 0, Number.MAX_SAFE_INTEGER],
    ['compressionLevel', -1, 9],
    ['inlineBelow', 0, Number.MAX_SAFE_INTEGER],
    ['literalBelow', 0, Number.MAX_SAFE_INTEGER],
  ];
  for (const [name, least, most] of ranges) {
    const value: unknown = options[name];
    if (value !== undefined && !(Number.isInteger(value) && (value as number) >= least && (value as number) <= most))
      throw new InvalidInputError(
        `driver.${name}`,
        `must be an integer from ${least}${most === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${most}`}; got ${JSON.stringify(value)}`,
      );
  }
}

/** How many leading leaves a payload shares with a recent manifest's: the prefix a manifest on it keeps. */
function sharedLeaves(recent: RecentManifest, leaves: readonly PlannedEntry[]): number {
  const limit = Math.min(recent.leafIds.length, leaves.length);
  let shared = 0;
  while (shared < limit && recent.leafIds[shared] === leaves[shared]?.id) shared += 1;
  return shared;
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
  private readonly inlineBelow: number;
  private readonly literalBelow: number;
  /** Slices written in packs lately, by id (and key id): a later payload lists them where they are. */
  private readonly packed = new LruMap<PackedSlice>(PACKED_SLICES, () => 1);
  /** Packs whose slices are in `packed` (written or read by this process), by key id and pack id. */
  private readonly indexedPacks = new LruMap<true>(PACKED_SLICES, () => 1);
  /** Objects being fetched, by cache key: concurrent reads of one object share the fetch. */
  private readonly reading = new Map<string, Promise<Uint8Array>>();
  /** Packs found missing from the store (a gc took them): their slices are written again. */
  private readonly gonePacks = new Set<string>();
  /** The last pack or manifest stored under each key id (''): the context of the next one. */
  private readonly chains = new Map<string, SealContext & { at: number }>();
  /** Windows of packs and manifests written or read lately (32 KiB each), by cache key: an object deflated against one is opened with it. */
  private readonly windows = new LruMap<Uint8Array>(WINDOW_CACHE_BYTES, (bytes) => bytes.length);
  /** Manifests' inline bytes end to end, by cache key. */
  private readonly inlineCache = new LruMap<Uint8Array>(WINDOW_CACHE_BYTES, (bytes) => bytes.length);
  /** Windows being computed, by cache key. */
  private readonly windowing = new Map<string, Promise<Uint8Array>>();
  /** Manifests written lately, newest first: bases for the payloads that extend them. */
  private recent: RecentManifest[] = [];
  private readonly now: () => number;

  constructor(options: ChunkStoreDriverOptions) {
    checkDriverOptions(options);
    const {
      backend,
      keyring,
      concurrency = 16,
      cacheBytes = 64 * 1024 * 1024,
      refreshAfterMs = 24 * 3_600_000,
      chunkerLimits = DEFAULT_CHUNKER_LIMITS,
      compressionLevel = 6,
      inlineBelow = 512,
      literalBelow = 256,
      now = Date.now,
    } = options;
    this.backend = backend;
    this.keyring = keyring;
    this.limiter = new Limiter(concurrency);
    this.cache = new LruMap(cacheBytes, (bytes) => bytes.length);
    this.refreshAfterMs = refreshAfterMs;
    this.chunkerLimits = chunkerLimits;
    this.compressionLevel = compressionLevel;
    this.inlineBelow = Math.min(inlineBelow, MAX_INLINE_BYTES + 1);
    this.literalBelow = Math.min(literalBelow, MAX_INLINE_BYTES + 1);
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
        const data = payload.data ?? new Uint8Array(0);
        const metadata: Record<string, Uint8Array> = {};
        for (const [name, value] of Object.entries(payload.metadata ?? {}))
          if (value !== null && value !== undefined) metadata[name] = value;
        let packing = await this.packedLeaves(data, signal);
        let leaves = packing.leaves;
        // On the manifest of a payload this one extends (the previous round's chat input), when
        // that manifest is still in the store: then only what follows its prefix is listed.
        let manifest = this.deltaManifest(data, metadata, leaves);
        if (manifest !== undefined && !(await this.baseUsable(manifest.base, signal))) manifest = undefined;
        // A manifest on a base, or a fresh payload's, holds all its new bytes itself (later payloads
        // list slices of them there): no pack.
        const flat =
          manifest === undefined && !this.extendsRecent(leaves, data.length) && leaves.length <= FLAT_ENTRIES;
        const inline = manifest !== undefined || flat;
        if (inline) {
          // Placed again, on the slices already cut and hashed.
          packing = await this.packedLeaves(data, signal, true, packing.slices);
          leaves = packing.leaves;
          if (manifest !== undefined) {
            manifest = this.deltaManifest(data, metadata, leaves);
            if (manifest === undefined) throw new RangeError('a manifest on a base was planned and then was not');
          }
        }
        const planned = manifest ?? this.fullManifest(data, metadata, leaves, !flat);
        this.bindToChain(planned.object);
        await Promise.all(planned.object.children.map((child) => this.ensure(child, inFlight, signal)));
        // The manifest is always written, even when it exists: its modification time tells a gc
        // that a claim to it was handed out just now.
        await this.write(planned.object, signal);
        packing.commit();
        if (inline) this.indexInline(planned, data.length);
        this.remember(planned, leaves, data.length);
        this.stats.payloadsStored += 1;
        this.stats.payloadBytesStored += data.length;
        // The reference the SDK writes around the claim records the size already.
        return new StorageDriverClaim(claimDataFor({ manifestId: planned.object.id, keyId: this.keyring?.current.id }));
      }),
    );
  }

  /**
   * The payload's slices as the chunker cuts them, small ones inline; the others listed where a
   * pack or a manifest's inline bytes already hold them, or else in this payload's own pack (one
   * object: the new slices end to end), or with `inlineFresh` inline. `commit` remembers the new
   * ones once the manifest is written.
   */
  private async packedLeaves(
    data: Uint8Array,
    signal: AbortSignal,
    inlineFresh = false,
    slices: PayloadSlice[] = this.slicesOf(data),
  ): Promise<{ leaves: PlannedEntry[]; commit: () => void; slices: PayloadSlice[] }> {
    const key = this.keyring?.current;
    const indexKey = (id: string): string => `${key?.id ?? ''}\u0000${id}`;
    const known = (id: string): PackedSlice | undefined => {
      const where = this.packed.get(indexKey(id));
      return where === undefined || this.gonePacks.has(where.pack) ? undefined : where;
    };
    // The objects this payload would reuse must still be in the store (touched when old, like any reused object).
    const reused = new Map<string, ObjectKind>();
    for (const slice of slices) {
      const where = slice.plaintext.length >= this.literalBelow ? known(slice.id) : undefined;
      if (where !== undefined) reused.set(where.pack, where.of === 'manifest' ? 'manifest' : 'chunk');
    }
    await Promise.all(
      [...reused].map(async ([pack, kind]) => {
        if (!(await this.stillStored(objectKey(kind, pack), signal))) this.gonePacks.add(pack);
      }),
    );
    const fresh = new Map<string, { offset: number; length: number }>();
    const parts: Uint8Array[] = [];
    let packLength = 0;
    const placed = slices.map((slice): { reused: PackedSlice } | { offset: number } | undefined => {
      if (slice.plaintext.length < this.literalBelow || data.length < this.inlineBelow) return undefined;
      const where = known(slice.id);
      if (where !== undefined) return { reused: where };
      if (inlineFresh && slice.plaintext.length <= MAX_INLINE_BYTES) return undefined;
      let offset = fresh.get(slice.id)?.offset;
      if (offset === undefined) {
        offset = packLength;
        fresh.set(slice.id, { offset, length: slice.plaintext.length });
        parts.push(slice.plaintext);
        packLength += slice.plaintext.length;
      }
      return { offset };
    });
    const packPlaintext = Buffer.concat(parts);
    // Deflated against the last object stored under the key, which its id binds.
    const context = parts.length === 0 ? undefined : this.contextFor(key?.id);
    const pack: PlannedObject | undefined =
      parts.length === 0
        ? undefined
        : {
            kind: 'chunk',
            id:
              context === undefined
                ? objectId(packPlaintext, key)
                : contextualId(packPlaintext, context.id, key, context.kind),
            plaintext: packPlaintext,
            children: [],
            context,
          };
    const existing = new Map<string, PlannedObject>();
    const leaves = slices.map((slice, index): PlannedEntry => {
      const where = placed[index];
      if (where === undefined)
        return { id: slice.id, end: slice.end, entry: { kind: 'inline', bytes: slice.plaintext } };
      if (!('reused' in where)) {
        if (pack === undefined) throw new RangeError('a slice was placed in a pack that was not planned');
        const entry: Entry = {
          kind: 'slice',
          of: 'pack',
          id: pack.id,
          offset: where.offset,
          length: slice.plaintext.length,
        };
        return { id: slice.id, end: slice.end, entry, object: pack };
      }
      const { pack: holder, of, offset, length } = where.reused;
      let object = existing.get(holder);
      if (object === undefined) {
        object = { kind: of === 'manifest' ? 'manifest' : 'chunk', id: holder, plaintext: undefined, children: [] };
        existing.set(holder, object);
      }
      return { id: slice.id, end: slice.end, entry: { kind: 'slice', of, id: holder, offset, length }, object };
    });
    const commit = (): void => {
      if (pack === undefined) return;
      for (const [id, { offset, length }] of fresh)
        this.packed.set(indexKey(id), { pack: pack.id, of: 'pack', offset, length });
      this.indexedPacks.set(`${key?.id ?? ''}\u0000${pack.id}`, true);
    };
    return { leaves, commit, slices };
  }

  /** The payload cut into chunker slices, each with its id under the current key. */
  private slicesOf(data: Uint8Array): PayloadSlice[] {
    const key = this.keyring?.current;
    const cuts =
      data.length > 0 && data.length < this.inlineBelow ? [data.length] : chunkBoundaries(data, this.chunkerLimits);
    let start = 0;
    return cuts.map((end) => {
      const plaintext = data.subarray(start, end);
      start = end;
      return { end, plaintext, id: objectId(plaintext, key) };
    });
  }

  /**
   * A manifest over the whole payload: without `withNodes` (and up to FLAT_ENTRIES) its leaves
   * alone; else the tree's closed nodes (a node closes at a content-defined boundary, so appending
   * never reopens one) and, after them, the entries of the groups still open at each level.
   */
  private fullManifest(
    data: Uint8Array,
    metadata: Record<string, Uint8Array>,
    leaves: PlannedEntry[],
    withNodes: boolean,
  ): PlannedManifest {
    if (!withNodes && leaves.length <= FLAT_ENTRIES) return this.manifestOf(data.length, metadata, undefined, leaves);
    const key = this.keyring?.current;
    const spine: PlannedEntry[][] = [];
    let items = leaves;
    for (let level = 1; ; level += 1) {
      const closed: PlannedEntry[] = [];
      let group: PlannedEntry[] = [];
      for (const item of items) {
        group.push(item);
        if (!nodeEndsAfter(item.id, group.length)) continue;
        const plaintext = encodeNode(
          level,
          group.map((member) => member.entry),
        );
        const id = objectId(plaintext, key);
        const length = group.reduce((sum, member) => sum + entryLength(member.entry), 0);
        const children = group.flatMap((member) => (member.object === undefined ? [] : [member.object]));
        closed.push({
          id,
          end: group.at(-1)?.end ?? 0,
          entry: { kind: 'node', level, id, length },
          object: { kind: 'node', id, plaintext, children },
        });
        group = [];
      }
      spine.unshift(group);
      if (closed.length === 0) break;
      items = closed;
    }
    return this.manifestOf(data.length, metadata, undefined, spine.flat());
  }

  /**
   * Whether a recent manifest's payload starts as this one does (leaves covering at least half of
   * it, as a base must): then this one may be the next of a chain of bases.
   */
  private extendsRecent(leaves: PlannedEntry[], size: number): boolean {
    const keyId = this.keyring?.current.id;
    return this.recent.some((recent) => {
      if (recent.keyId !== keyId) return false;
      const shared = sharedLeaves(recent, leaves);
      return shared > 0 && (leaves[shared - 1]?.end ?? 0) * 2 >= size;
    });
  }

  /** A manifest on a recent one whose payload this one starts with, when one shares at least half of it. */
  private deltaManifest(
    data: Uint8Array,
    metadata: Record<string, Uint8Array>,
    leaves: PlannedEntry[],
  ): (PlannedManifest & { base: RecentManifest }) | undefined {
    if (data.length < this.inlineBelow) return undefined;
    const keyId = this.keyring?.current.id;
    let best: { recent: RecentManifest; shared: number } | undefined;
    for (const recent of this.recent) {
      if (recent.keyId !== keyId) continue;
      const shared = sharedLeaves(recent, leaves);
      if (shared > 0 && (best === undefined || shared > best.shared)) best = { recent, shared };
    }
    // The chain is cut where it reaches its depth: a full manifest, the base of the next ones.
    if (best === undefined || best.recent.depth >= MAX_WRITTEN_DEPTH) return undefined;
    const keep = leaves[best.shared - 1]?.end ?? 0;
    const tail = leaves.slice(best.shared);
    if (keep * 2 < data.length || tail.length > MAX_DELTA_ENTRIES) return undefined;
    return {
      ...this.manifestOf(data.length, metadata, { id: best.recent.id, keep, depth: best.recent.depth + 1 }, tail),
      base: best.recent,
    };
  }

  private manifestOf(
    size: number,
    metadata: Record<string, Uint8Array>,
    base: Manifest['base'],
    entries: PlannedEntry[],
  ): PlannedManifest {
    const plaintext = encodeManifest({ size, metadata, base, entries: entries.map((entry) => entry.entry) });
    const id = objectId(plaintext, this.keyring?.current);
    const children = entries.flatMap((entry) => (entry.object === undefined ? [] : [entry.object]));
    return { object: { kind: 'manifest', id, plaintext, children }, depth: base?.depth ?? 0, listed: entries };
  }

  /** Whether a base manifest is in the store (touched when old, so a gc keeps it); false when it is gone. */
  private async baseUsable(base: RecentManifest | undefined, signal: AbortSignal): Promise<boolean> {
    if (base === undefined) return false;
    return this.stillStored(objectKey('manifest', base.id), signal);
  }

  /** Whether an object this driver would reuse is in the store (touched when old, so a gc keeps it); false when it is gone. */
  private async stillStored(key: string, signal: AbortSignal): Promise<boolean> {
    const confirmed = this.present.get(key);
    if (confirmed !== undefined && this.now() - confirmed < this.refreshAfterMs / 2) return true;
    const found = await this.limiter.run(() => this.backend.stat(key, signal));
    if (found === undefined) return false;
    if (this.now() - found.modifiedMs >= this.refreshAfterMs && !(await this.touched(key, signal))) return false;
    this.present.set(key, this.now());
    return true;
  }

  /** Keeps a stored manifest's leaves, for the next payload that extends it. */
  private remember(planned: PlannedManifest, leaves: PlannedEntry[], size: number): void {
    if (size < this.inlineBelow) return;
    const keyId = this.keyring?.current.id;
    this.recent = [
      { id: planned.object.id, keyId, depth: planned.depth, leafIds: leaves.map((leaf) => leaf.id) },
      ...this.recent.filter((recent) => recent.id !== planned.object.id),
    ].slice(0, RECENT_MANIFESTS);
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
      if (object.plaintext === undefined) {
        // A pack written before, gone since it was checked (a gc took it): this store fails, and
        // the next attempt writes its slices again.
        this.gonePacks.add(object.id);
        throw new ChunkMissingError(key, this.backend.description);
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
    if (object.plaintext === undefined) throw new ChunkMissingError(key, this.backend.description);
    const keyId = this.keyring?.current.id;
    // A pack or manifest is deflated against the context it was planned with (its id binds it;
    // one without a context starts a chain) and continues the chain; a node against the last
    // object's window when that makes it smaller.
    const chained = object.kind !== 'node';
    const { sealed, context, before } = sealObject(object.plaintext, object.id, this.keyring?.current, {
      compressionLevel: this.compressionLevel,
      context: chained ? object.context : this.contextFor(keyId),
      contextIfSmaller: !chained,
    });
    await this.limiter.run(() => this.backend.put(key, sealed, signal));
    if (chained) {
      // Only once it is stored may a later object be deflated against it.
      const window = windowAfter(before, object.plaintext);
      const depth = context === undefined ? 0 : context.depth + 1;
      const kind = object.kind === 'manifest' ? 'manifest' : 'chunk';
      this.chains.set(keyId ?? '', { id: object.id, kind, depth, window, at: this.now() });
      this.windows.set(cacheKeyOf(key, keyId), window);
    }
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

  /**
   * Remembers where the new slices a manifest holds inline lie in its inline bytes, so a
   * later payload that holds them lists them there (a chat input holding the tool result).
   */
  private indexInline(planned: PlannedManifest, size: number): void {
    if (size < this.inlineBelow) return;
    const keyId = this.keyring?.current.id ?? '';
    let offset = 0;
    for (const leaf of planned.listed) {
      if (leaf.entry.kind !== 'inline') continue;
      const { length } = leaf.entry.bytes;
      if (length >= this.literalBelow)
        this.packed.set(`${keyId}\u0000${leaf.id}`, { pack: planned.object.id, of: 'manifest', offset, length });
      offset += length;
    }
    this.indexedPacks.set(`${keyId}\u0000${planned.object.id}`, true);
  }

  /**
   * Names a planned manifest by the object it will be deflated against, so it joins the
   * chain (later objects are deflated against its window): its payload's new pack when it has one
   * (written just before it), else the last object stored under the key.
   */
  private bindToChain(manifest: PlannedObject): void {
    if (manifest.plaintext === undefined) return;
    const key = this.keyring?.current;
    const pack = manifest.children.find((child) => child.kind === 'chunk' && child.plaintext !== undefined);
    let context: SealContext | undefined;
    if (pack?.plaintext !== undefined) {
      const depth = pack.context === undefined ? 0 : pack.context.depth + 1;
      if (depth + 1 <= WRITTEN_CONTEXT_DEPTH)
        context = {
          id: pack.id,
          kind: 'chunk',
          depth,
          window: windowAfter(pack.context?.window ?? chainRoot(), pack.plaintext),
        };
    } else context = this.contextFor(key?.id);
    if (context === undefined) return;
    manifest.context = context;
    manifest.id = contextualId(manifest.plaintext, context.id, key, context.kind);
  }

  /**
   * The object a new pack or manifest is deflated against: the last this driver stored under the key,
   * when that was lately (so a gc keeps it: younger than half the refresh period) and its chain is
   * not at its length.
   */
  private contextFor(keyId: string | undefined): SealContext | undefined {
    const link = this.chains.get(keyId ?? '');
    if (link === undefined || link.depth + 1 > WRITTEN_CONTEXT_DEPTH || this.gonePacks.has(link.id)) return undefined;
    return this.now() - link.at < this.refreshAfterMs / 2 ? link : undefined;
  }

  /**
   * The window of pack or manifest `id` (sealed-object.ts), which an object names as its context, at context depth `depth` as that object says: cached, else read
   * and opened (its own context first).
   */
  private async windowOf(
    id: string,
    kind: ContextKind,
    depth: number,
    keyId: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Uint8Array> {
    const key = objectKey(kind, id);
    const cacheKey = cacheKeyOf(key, keyId);
    const cached = this.windows.get(cacheKey);
    if (cached !== undefined) return cached;
    return this.fetchOnce(this.windowing, cacheKey, key, signal, async (sealed) => {
      const { plaintext, window } = await this.openChunk(sealed, id, key, keyId, signal, depth, kind);
      this.cache.set(cacheKey, plaintext);
      this.windows.set(cacheKey, window);
      return window;
    });
  }

  /**
   * Fetches the object at `key` and opens it with `open`, once however many ask at the same time
   * (`running` holds the fetches under way, by cache key); counts what it fetched.
   */
  private async fetchOnce<T>(
    running: Map<string, Promise<T>>,
    cacheKey: string,
    key: string,
    signal: AbortSignal | undefined,
    open: (sealed: Uint8Array) => Promise<T>,
  ): Promise<T> {
    const pending = running.get(cacheKey);
    if (pending !== undefined) return pending;
    const fetching = (async () => {
      const sealed = await this.limiter.run(() => this.backend.get(key, signal));
      if (sealed === undefined) throw new ChunkMissingError(key, this.backend.description);
      this.stats.fetched.objects += 1;
      this.stats.fetched.bytes += sealed.length;
      return open(sealed);
    })();
    running.set(cacheKey, fetching);
    try {
      return await fetching;
    } finally {
      running.delete(cacheKey);
    }
  }

  /** Opens a sealed object, with its context's window when it names one; keeps a pack's or manifest's window. */
  private async openChunk(
    sealed: Uint8Array,
    id: string,
    key: string,
    keyId: string | undefined,
    signal: AbortSignal | undefined,
    depth: number | undefined,
    kind: ObjectKind = 'chunk',
  ): Promise<{ plaintext: Uint8Array; window: Uint8Array }> {
    const unsealed = unsealObject(sealed, key, keyId, this.keyring);
    const own = unsealed.context?.depth ?? 0;
    if (depth !== undefined && own !== depth)
      throw new ChunkIntegrityError(
        key,
        `is at context depth ${own} where the object deflated against it says ${depth}`,
      );
    const contextWindow =
      unsealed.context === undefined
        ? undefined
        : await this.windowOf(unsealed.context.id, unsealed.context.kind, unsealed.context.depth - 1, keyId, signal);
    const { plaintext, before } = inflateObject(unsealed, kind, id, key, contextWindow);
    const window = windowAfter(before, plaintext);
    // A pack or a manifest may be the context of later objects.
    if (kind !== 'node') this.windows.set(cacheKeyOf(key, keyId), window);
    return { plaintext, window };
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
    // The slices of a pack are filled at once: one fetch for all of them.
    return this.fetchOnce(this.reading, cacheKey, key, signal, async (sealed) => {
      const plaintext = (await this.openChunk(sealed, id, key, keyId, signal, undefined, kind)).plaintext;
      this.cache.set(cacheKey, plaintext);
      return plaintext;
    });
  }

  /**
   * What a stored object needs, read with whichever configured key sealed it (a garbage collector
   * does not know which claim an object belongs to): a manifest its base, the nodes it lists, the
   * packs and manifests it lists slices of and its context; a node what it lists and its context;
   * a pack its context (from its header; its content is not checked). Not cached.
   *
   * @throws ChunkMissingError when there is no such object.
   * @throws PayloadKeyMissingError when it is sealed with a key that is not configured.
   * @throws ChunkIntegrityError when it is corrupted or malformed.
   */
  async inspect(kind: ObjectKind, id: string, signal?: AbortSignal): Promise<InspectedObject> {
    const key = objectKey(kind, id);
    const sealed = await this.limiter.run(() => this.backend.get(key, signal));
    if (sealed === undefined) throw new ChunkMissingError(key, this.backend.description);
    const keyId = sealedKeyId(sealed, key);
    const { context } = unsealObject(sealed, key, keyId, this.keyring);
    const contextChild: ListedChild[] = context === undefined ? [] : [{ kind: context.kind, id: context.id }];
    if (kind === 'chunk') return { level: 0, depth: context?.depth ?? 0, children: contextChild };
    const { plaintext } = await this.openChunk(sealed, id, key, keyId, signal, undefined, kind);
    const referenced = (entries: Entry[]): ListedChild[] =>
      entries.flatMap((entry): ListedChild[] =>
        entry.kind === 'node'
          ? [{ kind: 'node', id: entry.id }]
          : entry.kind === 'slice'
            ? [{ kind: entry.of === 'manifest' ? 'manifest' : 'chunk', id: entry.id }]
            : [],
      );
    if (kind === 'manifest') {
      const manifest = parseManifest(plaintext, key);
      const base: ListedChild[] = manifest.base === undefined ? [] : [{ kind: 'manifest', id: manifest.base.id }];
      return {
        level: Math.max(0, ...manifest.entries.map((entry) => (entry.kind === 'node' ? entry.level : 0))),
        depth: manifest.base?.depth ?? 0,
        children: [...base, ...referenced(manifest.entries), ...contextChild],
      };
    }
    const level = nodeLevel(plaintext, key);
    return { level, depth: 0, children: [...referenced(decodeNode(plaintext, level, key)), ...contextChild] };
  }

  private async retrieveOne(claim: StorageDriverClaim, signal: AbortSignal | undefined): Promise<Payload> {
    const { manifestId, keyId } = readClaim(claim.claimData);
    const segments: PackSegment[] = [];
    const { data, metadata } = await this.payloadOf(manifestId, keyId, undefined, signal, segments);
    this.stats.payloadsRetrieved += 1;
    if (segments.length > 0 && keyId === this.keyring?.current.id) this.rememberRead(data, segments, keyId);
    return { metadata, data };
  }

  /**
   * Remembers where the slices of a payload read from packs lie, as the chunker cuts it, so a later
   * payload of this process that holds them lists them there (a workflow's next chat input holding
   * the tool result another worker stored) instead of writing them again. Slices already known keep
   * their place.
   */
  private rememberRead(data: Uint8Array, segments: PackSegment[], keyId: string | undefined): void {
    if (data.length < this.inlineBelow) return;
    // What this process wrote (or already read) is indexed already: nothing to cut and hash again.
    const packKey = (pack: string): string => `${keyId ?? ''}\u0000${pack}`;
    if (segments.every((segment) => this.indexedPacks.get(packKey(segment.pack)) !== undefined)) return;
    for (const segment of segments) this.indexedPacks.set(packKey(segment.pack), true);
    segments.sort((a, b) => a.start - b.start);
    const key = this.keyring?.current;
    let start = 0;
    let segment = 0;
    for (const end of chunkBoundaries(data, this.chunkerLimits)) {
      const from = start;
      start = end;
      if (end - from < this.literalBelow) continue;
      while (segment < segments.length && (segments[segment]?.start ?? 0) + (segments[segment]?.length ?? 0) <= from)
        segment += 1;
      const holder = segments[segment];
      if (holder === undefined || holder.start > from || holder.start + holder.length < end) continue;
      const id = objectId(data.subarray(from, end), key);
      const indexKey = `${keyId ?? ''}\u0000${id}`;
      if (this.packed.get(indexKey) !== undefined) continue;
      this.packed.set(indexKey, {
        pack: holder.pack,
        of: holder.of,
        offset: holder.offset + (from - holder.start),
        length: end - from,
      });
    }
  }

  /** The data and metadata a manifest stands for; `depth`: what the manifest that names it as its base says its depth is. */
  private async payloadOf(
    manifestId: string,
    keyId: string | undefined,
    depth: number | undefined,
    signal: AbortSignal | undefined,
    segments?: PackSegment[],
  ): Promise<{ data: Uint8Array; metadata: Record<string, Uint8Array> }> {
    const manifestKey = objectKey('manifest', manifestId);
    const manifest = parseManifest(await this.read('manifest', manifestId, keyId, signal), manifestKey);
    const ownDepth = manifest.base?.depth ?? 0;
    if (depth !== undefined && ownDepth !== depth)
      throw new ChunkIntegrityError(manifestKey, `is at depth ${ownDepth} where its successor says ${depth}`);
    const data = new Uint8Array(manifest.size);
    let offset = 0;
    if (manifest.base !== undefined) {
      const fromBase: PackSegment[] | undefined = segments === undefined ? undefined : [];
      const base = await this.payloadOf(manifest.base.id, keyId, manifest.base.depth - 1, signal, fromBase);
      // What the base's slices of packs cover within the prefix this payload keeps.
      for (const segment of fromBase ?? []) {
        const length = Math.min(segment.length, manifest.base.keep - segment.start);
        if (length > 0) segments?.push({ ...segment, length });
      }
      if (base.data.length < manifest.base.keep)
        throw new ChunkIntegrityError(
          manifestKey,
          `keeps ${manifest.base.keep} bytes of base manifest ${manifest.base.id}, which has ${base.data.length}`,
        );
      data.set(base.data.subarray(0, manifest.base.keep));
      offset = manifest.base.keep;
    }
    const starts = manifest.entries.map((entry) => {
      const at = offset;
      offset += entryLength(entry);
      return at;
    });
    await Promise.all(
      manifest.entries.map((entry, index) =>
        this.fill(entry, data, starts[index] ?? 0, keyId, manifestKey, signal, segments),
      ),
    );
    return { data, metadata: manifest.metadata };
  }

  /** The inline bytes of manifest `id` end to end, which a slice of it is a range of. */
  private async inlineBytes(
    id: string,
    keyId: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Uint8Array> {
    const key = objectKey('manifest', id);
    const cacheKey = cacheKeyOf(key, keyId);
    const cached = this.inlineCache.get(cacheKey);
    if (cached !== undefined) return cached;
    const bytes = inlineBytesOf(parseManifest(await this.read('manifest', id, keyId, signal), key));
    this.inlineCache.set(cacheKey, bytes);
    return bytes;
  }

  /** Writes what `entry` stands for into `data` at `offset`, checking every length against what its parent lists. */
  private async fill(
    entry: Entry,
    data: Uint8Array,
    offset: number,
    keyId: string | undefined,
    parentKey: string,
    signal: AbortSignal | undefined,
    segments?: PackSegment[],
  ): Promise<void> {
    if (entry.kind === 'inline') {
      data.set(entry.bytes, offset);
      return;
    }
    if (offset + entry.length > data.length)
      throw new ChunkIntegrityError(parentKey, `lists more bytes than the payload's size`);
    if (entry.kind === 'slice') {
      const pack =
        entry.of === 'manifest'
          ? await this.inlineBytes(entry.id, keyId, signal)
          : await this.read('chunk', entry.id, keyId, signal);
      if (entry.offset + entry.length > pack.length)
        throw new ChunkIntegrityError(
          parentKey,
          `lists bytes ${entry.offset}–${entry.offset + entry.length} of ${entry.of} ${entry.id}, which has ${pack.length}`,
        );
      data.set(pack.subarray(entry.offset, entry.offset + entry.length), offset);
      segments?.push({ start: offset, length: entry.length, pack: entry.id, of: entry.of, offset: entry.offset });
      return;
    }
    const { id, level, length } = entry;
    const nodeKey = objectKey('node', id);
    const children = decodeNode(await this.read('node', id, keyId, signal), level, nodeKey);
    const total = children.reduce((sum, child) => sum + entryLength(child), 0);
    if (total !== length) throw new ChunkIntegrityError(nodeKey, `covers ${total} bytes where ${length} were expected`);
    let at = offset;
    await Promise.all(
      children.map((child) => {
        const childOffset = at;
        at += entryLength(child);
        return this.fill(child, data, childOffset, keyId, nodeKey, signal, segments);
      }),
    );
  }
}
