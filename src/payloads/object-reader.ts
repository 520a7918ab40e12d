// Node only: reads stored objects and opens them (sealed-object.ts), keeping in memory the
// plaintexts of objects written or read lately, the windows of contexts, manifests' inline bytes,
// and the fetches under way (one object asked for by many at once is fetched once). Also says what a
// stored object needs to stay readable, the objects a garbage collector (gc.ts) must keep with it.
import { ChunkIntegrityError, ChunkMissingError } from './errors.js';
import type { Keyring } from './keyring.js';
import type { Limiter } from './limiter.js';
import { LruMap } from './lru-map.js';
import { addTo, tooLarge, type ObjectBackend } from './object-backend.js';
import {
  decodeNode,
  inlineBytesOf,
  MAX_SEALED_OBJECT_BYTES,
  nodeLevel,
  objectKey,
  parseManifest,
  type Entry,
  type ObjectKind,
} from './object-format.js';
import { inflateObject, sealedKeyId, unsealObject, windowAfter } from './sealed-object.js';

/** Plaintext bytes of objects written or read lately, kept in memory for reads. */
const CACHE_BYTES = 64 * 1024 * 1024;
/** Bytes of windows and of manifests' inline bytes kept in memory (a window is 32 KiB). */
const WINDOW_CACHE_BYTES = 16 * 1024 * 1024;

/** The caches' key of an object: its key and the key id its payload was stored with (objects are content-addressed, so a hit is the object's content). */
const cacheKeyOf = (key: string, keyId: string | undefined): string => `${key}\u0000${keyId ?? ''}`;

/** An object a stored object needs (a garbage collector follows these): what it lists, its base manifest, its context. */
interface ListedChild {
  kind: ObjectKind;
  id: string;
}

/** What a stored object needs, as {@link ObjectReader.inspect} reads it (a pack: the object it was deflated against, if any). */
export interface InspectedObject {
  /** A node's level; a manifest's highest node level (0: it lists no node); a chunk: 0. */
  level: number;
  /** A manifest's depth: 0, or 1 + its base manifest's. Nodes: 0. A chunk's context depth (0: none). */
  depth: number;
  children: ListedChild[];
}

const referenced = (entries: Entry[]): ListedChild[] =>
  entries.flatMap((entry): ListedChild[] =>
    entry.kind === 'node'
      ? [{ kind: 'node', id: entry.id }]
      : entry.kind === 'slice'
        ? [{ kind: entry.of === 'manifest' ? 'manifest' : 'chunk', id: entry.id }]
        : [],
  );

export class ObjectReader {
  private readonly cache = new LruMap<Uint8Array>(CACHE_BYTES, (bytes) => bytes.length);
  private readonly windows = new LruMap<Uint8Array>(WINDOW_CACHE_BYTES, (bytes) => bytes.length);
  private readonly inline = new LruMap<Uint8Array>(WINDOW_CACHE_BYTES, (bytes) => bytes.length);
  /** Objects being fetched, by cache key: concurrent reads of one object share the fetch. */
  private readonly reading = new Map<string, Promise<Uint8Array>>();
  private readonly windowing = new Map<string, Promise<Uint8Array>>();

  constructor(
    private readonly backend: ObjectBackend,
    private readonly keyring: Keyring | undefined,
    private readonly limiter: Limiter,
    /** Counts the objects fetched from the backend and their sealed bytes. */
    private readonly fetched: { objects: number; bytes: number },
  ) {}

  /** The inline bytes of manifest `id` end to end, which a slice of it is a range of. */
  async inlineBytes(id: string, keyId: string | undefined, signal: AbortSignal | undefined): Promise<Uint8Array> {
    const key = objectKey('manifest', id);
    const cacheKey = cacheKeyOf(key, keyId);
    const cached = this.inline.get(cacheKey);
    if (cached !== undefined) return cached;
    const bytes = inlineBytesOf(parseManifest(await this.read('manifest', id, keyId, signal), key));
    this.inline.set(cacheKey, bytes);
    return bytes;
  }

  /** The sealed bytes of the object at `key`, uncached. @throws ChunkMissingError when there is none. */
  private async fetch(key: string, signal: AbortSignal | undefined): Promise<Uint8Array> {
    const sealed = await this.limiter.run(() => this.backend.get(key, signal, MAX_SEALED_OBJECT_BYTES));
    if (sealed === undefined) throw new ChunkMissingError(key, this.backend.description);
    // A backend of someone else's may not take the bound: refused all the same.
    if (sealed.length > MAX_SEALED_OBJECT_BYTES) throw tooLarge(key, sealed.length, MAX_SEALED_OBJECT_BYTES);
    addTo(this.fetched, sealed.length);
    return sealed;
  }

  /** Opens a sealed object with its context's window, checking the depth the object on it states; keeps its window. */
  private async open(
    sealed: Uint8Array,
    kind: ObjectKind,
    id: string,
    keyId: string | undefined,
    signal: AbortSignal | undefined,
    depth?: number,
  ): Promise<{ plaintext: Uint8Array; window: Uint8Array }> {
    const key = objectKey(kind, id);
    const unsealed = unsealObject(sealed, key, keyId, this.keyring);
    const own = unsealed.context?.depth ?? 0;
    if (depth !== undefined && own !== depth)
      throw new ChunkIntegrityError(
        key,
        `is at context depth ${own} where the object deflated against it says ${depth}`,
      );
    const { context } = unsealed;
    const contextWindow =
      context === undefined
        ? undefined
        : await this.cachedOrOpened(context.kind, context.id, keyId, signal, 'window', context.depth - 1);
    const { plaintext, before } = inflateObject(unsealed, kind, id, key, contextWindow);
    const window = windowAfter(before, plaintext);
    // A pack or a manifest may be the context of later objects.
    if (kind !== 'node') this.windows.set(cacheKeyOf(key, keyId), window);
    return { plaintext, window };
  }

  /** What a stored object needs, read with whichever configured key sealed it (a pack: from its header only). Not cached. */
  async inspect(kind: ObjectKind, id: string): Promise<InspectedObject> {
    const key = objectKey(kind, id);
    const sealed = await this.fetch(key, undefined);
    const keyId = sealedKeyId(sealed, key);
    const { context } = unsealObject(sealed, key, keyId, this.keyring);
    const contextChild: ListedChild[] = context === undefined ? [] : [{ kind: context.kind, id: context.id }];
    if (kind === 'chunk') return { level: 0, depth: context?.depth ?? 0, children: contextChild };
    const { plaintext } = await this.open(sealed, kind, id, keyId, undefined);
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

  /** Keeps what a store just wrote: the next read of it (the activity taking the input this worker's workflow stored) needs no fetch. */
  remember(
    kind: ObjectKind,
    id: string,
    keyId: string | undefined,
    plaintext: Uint8Array,
    window: Uint8Array | undefined,
  ): void {
    const cacheKey = cacheKeyOf(objectKey(kind, id), keyId);
    // A copy, so an object does not keep its whole payload's buffer alive in the cache.
    this.cache.set(cacheKey, Uint8Array.from(plaintext));
    if (window !== undefined) this.windows.set(cacheKey, window);
  }

  /**
   * Object `id`'s plaintext, whose payload was stored with `keyId`: from the cache, else fetched and
   * opened (its plaintext cached), once however many ask at the same time. The slices of a pack are
   * filled at once: one fetch for all of them.
   */
  read(kind: ObjectKind, id: string, keyId: string | undefined, signal: AbortSignal | undefined): Promise<Uint8Array> {
    return this.cachedOrOpened(kind, id, keyId, signal, 'plaintext');
  }

  /** {@link read}, or the object's window as a context of the object `depth` below it. */
  private async cachedOrOpened(
    kind: ObjectKind,
    id: string,
    keyId: string | undefined,
    signal: AbortSignal | undefined,
    want: 'plaintext' | 'window',
    depth?: number,
  ): Promise<Uint8Array> {
    const [cache, running] = want === 'plaintext' ? [this.cache, this.reading] : [this.windows, this.windowing];
    const key = objectKey(kind, id);
    const cacheKey = cacheKeyOf(key, keyId);
    const found = cache.get(cacheKey) ?? running.get(cacheKey);
    if (found !== undefined) return found;
    const fetching = (async () => {
      const opened = await this.open(await this.fetch(key, signal), kind, id, keyId, signal, depth);
      this.cache.set(cacheKey, opened.plaintext);
      return opened[want];
    })();
    running.set(cacheKey, fetching);
    try {
      return await fetching;
    } finally {
      running.delete(cacheKey);
    }
  }
}
