// Node only: where the slices this process wrote or read lately lie — in a pack, or in a
// manifest's inline bytes — so that a later payload holding them lists them there instead of
// writing them again (the chat input holding the tool result the activity returned). Per key id:
// a slice's id depends on the key. Packs found gone from the store (a gc took them) are forgotten.
import { chunkBoundaries, type ChunkerLimits } from './chunker.js';
import type { CodecKey } from './keyring.js';
import { LruMap } from './lru-map.js';
import { objectId } from './sealed-object.js';

/** Where a slice lies: `length` bytes at `offset` of pack `holder`, or of manifest `holder`'s inline bytes. */
export interface SlicePlace {
  holder: string;
  of: 'pack' | 'manifest';
  offset: number;
  length: number;
}

/** Where a payload that was read holds bytes of a pack or of a manifest's inline bytes: `length` bytes at `start`, from `offset` of `holder`. */
export interface ReadSegment extends SlicePlace {
  start: number;
}

const REMEMBERED_SLICES = 200_000;

const indexKey = (keyId: string | undefined, id: string): string => `${keyId ?? ''}\u0000${id}`;

export class SliceIndex {
  private readonly places = new LruMap<SlicePlace>(REMEMBERED_SLICES, () => 1);
  /** Packs and manifests whose slices are in `places` (written or read by this process). */
  private readonly indexed = new LruMap<true>(REMEMBERED_SLICES, () => 1);
  /** Packs and manifests found missing from the store: their slices are written again. */
  private readonly gone = new Set<string>();

  constructor(
    /** The chunker's limits and the driver's `literalBelow`, `inlineBelow`: how payloads are cut, what is too small to list elsewhere. */
    private readonly cutting: { chunkerLimits: ChunkerLimits; literalBelow: number; inlineBelow: number },
  ) {}

  /** Where slice `id` (under key `keyId`) lies, unless its holder is gone. */
  find(keyId: string | undefined, id: string): SlicePlace | undefined {
    const place = this.places.get(indexKey(keyId, id));
    return place === undefined || this.gone.has(place.holder) ? undefined : place;
  }

  /** Forgets the slices of `holder`, which is not in the store any more. */
  markGone(holder: string): void {
    this.gone.add(holder);
  }

  isGone(holder: string): boolean {
    return this.gone.has(holder);
  }

  /** Remembers the slices `holder` holds (written now: it is a new pack, or a manifest's inline bytes). */
  addHolder(
    keyId: string | undefined,
    holder: string,
    of: 'pack' | 'manifest',
    slices: Iterable<[string, { offset: number; length: number }]>,
  ): void {
    for (const [id, { offset, length }] of slices) this.places.set(indexKey(keyId, id), { holder, of, offset, length });
    this.indexed.set(indexKey(keyId, holder), true);
  }

  /** Remembers where the slices of a payload that was read lie, so a later payload lists them there. */
  addRead(data: Uint8Array, segments: ReadSegment[], key: CodecKey | undefined): void {
    const { chunkerLimits, literalBelow, inlineBelow } = this.cutting;
    if (data.length < inlineBelow) return;
    const keyId = key?.id;
    // What this process wrote (or already read) is indexed already: nothing to cut and hash again.
    if (segments.every((segment) => this.indexed.get(indexKey(keyId, segment.holder)) !== undefined)) return;
    for (const segment of segments) this.indexed.set(indexKey(keyId, segment.holder), true);
    segments.sort((a, b) => a.start - b.start);
    let start = 0;
    let segment = 0;
    for (const end of chunkBoundaries(data, chunkerLimits)) {
      const from = start;
      start = end;
      if (end - from < literalBelow) continue;
      while (segment < segments.length && (segments[segment]?.start ?? 0) + (segments[segment]?.length ?? 0) <= from)
        segment += 1;
      const holder = segments[segment];
      if (holder === undefined || holder.start > from || holder.start + holder.length < end) continue;
      const id = objectId(data.subarray(from, end), key);
      if (this.places.get(indexKey(keyId, id)) !== undefined) continue;
      this.places.set(indexKey(keyId, id), {
        holder: holder.holder,
        of: holder.of,
        offset: holder.offset + (from - holder.start),
        length: end - from,
      });
    }
  }
}
