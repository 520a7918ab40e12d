// Node only: what storing a payload writes, planned before anything is written. A payload that
// extends a recent one (the previous chat input plus a message) is a manifest on that one's, listing
// what follows the prefix; a fresh one is a manifest alone; both hold their new slices inline, where
// later payloads list them (slice-index.ts). Otherwise (a chain at its depth, too many new entries, a
// fresh payload over FLAT_ENTRIES slices) a full manifest lists the closed nodes of a tree over the
// slices and the open entries after them, and the new slices go into one pack.
import { chunkBoundaries, type ChunkerLimits } from './chunker.js';
import type { CompressionChain } from './compression-chain.js';
import type { Keyring } from './keyring.js';
import {
  encodeManifest,
  encodeNode,
  entryLength,
  MAX_INLINE_BYTES,
  nodeEndsAfter,
  objectKey,
  type Entry,
  type Manifest,
  type ObjectKind,
} from './object-format.js';
import { contextualId, objectId, type SealContext } from './sealed-object.js';
import type { SliceIndex, SlicePlace } from './slice-index.js';

/** An object a store may have to write, with the objects it lists; one written before has no plaintext here (it can only be reused). */
export interface PlannedObject {
  kind: ObjectKind;
  id: string;
  plaintext: Uint8Array | undefined;
  children: PlannedObject[];
  /** A pack or manifest: the object it is deflated against (its id binds it). */
  context?: SealContext | undefined;
}

interface PlannedEntry {
  /** The id of the slice or node (inline bytes have one too: node boundaries are decided by ids). */
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

/** What storing one payload writes: its manifest (and below it what it lists), and what to remember once it is written. */
export interface WritePlan {
  manifest: PlannedObject;
  /** Records where the payload's new slices lie, and the manifest as a base for later payloads: once it is written. */
  settle: () => void;
}

interface PayloadSlice {
  end: number;
  plaintext: Uint8Array;
  id: string;
}

/** A manifest written lately, with the ids of its payload's leaves (for a later payload that extends it). */
interface RecentManifest {
  id: string;
  keyId: string | undefined;
  depth: number;
  leafIds: string[];
}

/** A payload that starts as no recent one does is listed by its manifest alone (no tree nodes) up to this many entries. */
const FLAT_ENTRIES = 1024;
/** Manifests remembered as bases. A worker runs many workflows; each one's next chat input extends its last. */
const RECENT_MANIFESTS = 64;
/** A chain of manifests on bases is cut (a full manifest written) at this depth: a cold reader reads at most this many manifests. */
const MAX_WRITTEN_DEPTH = 15;
/** A manifest on a base lists at most this many entries after the prefix (more: a full manifest, with nodes). */
const MAX_DELTA_ENTRIES = 64;

export interface WritePlannerSettings {
  keyring: Keyring | undefined;
  chunkerLimits: ChunkerLimits;
  /** A payload shorter than this is written inside its manifest. */
  inlineBelow: number;
  /** A slice shorter than this is written inside what lists it, never listed elsewhere. */
  literalBelow: number;
  /** Whether an object a plan would reuse is in the store (touched when old); false when it is gone. */
  stillStored: (key: string, signal: AbortSignal) => Promise<boolean>;
}

export class WritePlanner {
  /** Manifests written lately, newest first: bases for the payloads that extend them. */
  private recent: RecentManifest[] = [];

  constructor(
    private readonly settings: WritePlannerSettings,
    private readonly slices: SliceIndex,
    private readonly chain: CompressionChain,
  ) {}

  async plan(data: Uint8Array, metadata: Record<string, Uint8Array>, signal: AbortSignal): Promise<WritePlan> {
    const slices = this.slicesOf(data);
    const best = this.bestBase(slices);
    // On the manifest of a payload this one extends by at most MAX_DELTA_ENTRIES, when still in the
    // store: only what follows is listed. The chain is cut where it reaches its depth: a full manifest.
    const extendsBest = best !== undefined && best.keep * 2 >= data.length;
    const base =
      best !== undefined &&
      data.length >= this.settings.inlineBelow &&
      best.recent.depth < MAX_WRITTEN_DEPTH &&
      extendsBest &&
      slices.length - best.shared <= MAX_DELTA_ENTRIES &&
      (await this.settings.stillStored(objectKey('manifest', best.recent.id), signal))
        ? best
        : undefined;
    // A manifest on a base, or a fresh payload's, holds all its new bytes itself: no pack.
    const flat = base === undefined && !extendsBest && slices.length <= FLAT_ENTRIES;
    const inline = base !== undefined || flat;
    const { leaves, pack, settle: settlePack } = await this.packedLeaves(data, signal, inline, slices);
    const planned =
      base === undefined
        ? this.fullManifest(data, metadata, leaves, !flat)
        : this.manifestOf(
            data.length,
            metadata,
            { id: base.recent.id, keep: base.keep, depth: base.recent.depth + 1 },
            leaves.slice(base.shared),
          );
    // A manifest on a base lists what follows the prefix: the pack may hold only slices it does not list.
    const listed = base === undefined || planned.object.children.some((child) => child === pack);
    this.bindToChain(planned.object, listed ? pack : undefined);
    return {
      manifest: planned.object,
      settle: () => {
        settlePack();
        if (inline) this.indexInline(planned, data.length);
        this.remember(planned, leaves, data.length);
      },
    };
  }

  /** The payload's slices: small ones inline, the others where they already lie, else in its own pack (or inline). */
  private async packedLeaves(
    data: Uint8Array,
    signal: AbortSignal,
    inlineFresh: boolean,
    slices: PayloadSlice[],
  ): Promise<{ leaves: PlannedEntry[]; pack: PlannedObject | undefined; settle: () => void }> {
    const { keyring, literalBelow, inlineBelow, stillStored } = this.settings;
    const key = keyring?.current;
    const known = (id: string): SlicePlace | undefined => this.slices.find(key?.id, id);
    // The objects this payload would reuse must still be in the store (touched when old, like any reused object).
    const reused = new Map<string, ObjectKind>();
    for (const slice of slices) {
      const where = slice.plaintext.length >= literalBelow ? known(slice.id) : undefined;
      if (where !== undefined) reused.set(where.holder, where.of === 'manifest' ? 'manifest' : 'chunk');
    }
    await Promise.all(
      [...reused].map(async ([holder, kind]) => {
        if (!(await stillStored(objectKey(kind, holder), signal))) this.slices.markGone(holder);
      }),
    );
    const fresh = new Map<string, { offset: number; length: number }>();
    const parts: Uint8Array[] = [];
    let packLength = 0;
    const placed = slices.map((slice): { reused: SlicePlace } | { offset: number } | undefined => {
      if (slice.plaintext.length < literalBelow || data.length < inlineBelow) return undefined;
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
    // Deflated against the last object stored under the key, which its id binds.
    const context = parts.length === 0 ? undefined : this.chain.contextFor(key?.id);
    const plaintext = Buffer.concat(parts);
    const id = contextualId(plaintext, context, key);
    const pack: PlannedObject | undefined =
      parts.length === 0 ? undefined : { kind: 'chunk', id, plaintext, children: [], context };
    // Made as the slices name them, not from `reused`: while `stillStored` was awaited another
    // payload's plan may have placed a slice in a holder this one did not check.
    const existing = new Map<string, PlannedObject>();
    const leaves = slices.map((slice, index): PlannedEntry => {
      const where = placed[index];
      if (where === undefined)
        return { id: slice.id, end: slice.end, entry: { kind: 'inline', bytes: slice.plaintext } };
      if (!('reused' in where)) {
        if (pack === undefined) throw new RangeError('a slice was placed in a pack that was not planned');
        const { offset } = where;
        const entry: Entry = { kind: 'slice', of: 'pack', id: pack.id, offset, length: slice.plaintext.length };
        return { id: slice.id, end: slice.end, entry, object: pack };
      }
      const { holder, of, offset, length } = where.reused;
      const kind = of === 'manifest' ? 'manifest' : 'chunk';
      const object = existing.get(holder) ?? { kind, id: holder, plaintext: undefined, children: [] };
      existing.set(holder, object);
      return { id: slice.id, end: slice.end, entry: { kind: 'slice', of, id: holder, offset, length }, object };
    });
    const settle = (): void => {
      if (pack !== undefined) this.slices.addHolder(key?.id, pack.id, 'pack', fresh);
    };
    return { leaves, pack, settle };
  }

  /** The payload cut into chunker slices, each with its id under the current key; a small payload is one slice. */
  private slicesOf(data: Uint8Array): PayloadSlice[] {
    const { keyring, inlineBelow, chunkerLimits } = this.settings;
    const cuts = data.length > 0 && data.length < inlineBelow ? [data.length] : chunkBoundaries(data, chunkerLimits);
    let start = 0;
    return cuts.map((end) => {
      const plaintext = data.subarray(start, end);
      start = end;
      return { end, plaintext, id: objectId(plaintext, keyring?.current) };
    });
  }

  /** A manifest over the whole payload: its leaves alone, or the tree's closed nodes and then the open entries. */
  private fullManifest(
    data: Uint8Array,
    metadata: Record<string, Uint8Array>,
    leaves: PlannedEntry[],
    withNodes: boolean,
  ): PlannedManifest {
    if (!withNodes && leaves.length <= FLAT_ENTRIES) return this.manifestOf(data.length, metadata, undefined, leaves);
    const key = this.settings.keyring?.current;
    const spine: PlannedEntry[][] = [];
    let items = leaves;
    for (let level = 1; ; level += 1) {
      const closed: PlannedEntry[] = [];
      let group: PlannedEntry[] = [];
      for (const item of items) {
        group.push(item);
        if (!nodeEndsAfter(item.id, group.length)) continue;
        const entries = group.map((member) => member.entry);
        const plaintext = encodeNode(level, entries);
        const id = objectId(plaintext, key);
        const length = entries.reduce((sum, entry) => sum + entryLength(entry), 0);
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

  /** The recent manifest (under the current key) whose payload shares the most leading slices with this one. */
  private bestBase(slices: PayloadSlice[]): { recent: RecentManifest; shared: number; keep: number } | undefined {
    const keyId = this.settings.keyring?.current.id;
    let best: { recent: RecentManifest; shared: number } | undefined;
    for (const recent of this.recent) {
      if (recent.keyId !== keyId) continue;
      let shared = 0;
      while (shared < slices.length && recent.leafIds[shared] === slices[shared]?.id) shared += 1;
      if (shared > 0 && (best === undefined || shared > best.shared)) best = { recent, shared };
    }
    return best && { ...best, keep: slices[best.shared - 1]?.end ?? 0 };
  }

  private manifestOf(
    size: number,
    metadata: Record<string, Uint8Array>,
    base: Manifest['base'],
    entries: PlannedEntry[],
  ): PlannedManifest {
    const plaintext = encodeManifest({ size, metadata, base, entries: entries.map((entry) => entry.entry) });
    const id = objectId(plaintext, this.settings.keyring?.current);
    const children = entries.flatMap((entry) => (entry.object === undefined ? [] : [entry.object]));
    return { object: { kind: 'manifest', id, plaintext, children }, depth: base?.depth ?? 0, listed: entries };
  }

  /** Names a planned manifest by the object it will be deflated against (its new `pack`, if any), so it joins the chain. */
  private bindToChain(manifest: PlannedObject, pack: PlannedObject | undefined): void {
    if (manifest.plaintext === undefined) return;
    const key = this.settings.keyring?.current;
    const context = this.chain.manifestContext(pack, key?.id);
    if (context === undefined) return;
    manifest.context = context;
    manifest.id = contextualId(manifest.plaintext, context, key);
  }

  /** Remembers where the new slices a manifest holds inline lie in its inline bytes (a chat input holding the tool result lists them there). */
  private indexInline(planned: PlannedManifest, size: number): void {
    if (size < this.settings.inlineBelow) return;
    const held: Array<[string, { offset: number; length: number }]> = [];
    let offset = 0;
    for (const leaf of planned.listed) {
      if (leaf.entry.kind !== 'inline') continue;
      const { length } = leaf.entry.bytes;
      if (length >= this.settings.literalBelow) held.push([leaf.id, { offset, length }]);
      offset += length;
    }
    this.slices.addHolder(this.settings.keyring?.current.id, planned.object.id, 'manifest', held);
  }

  /** Keeps a stored manifest's leaves, for the next payload that extends it. */
  private remember(planned: PlannedManifest, leaves: PlannedEntry[], size: number): void {
    if (size < this.settings.inlineBelow) return;
    const keyId = this.settings.keyring?.current.id;
    this.recent = [
      { id: planned.object.id, keyId, depth: planned.depth, leafIds: leaves.map((leaf) => leaf.id) },
      ...this.recent.filter((recent) => recent.id !== planned.object.id),
    ].slice(0, RECENT_MANIFESTS);
  }
}
