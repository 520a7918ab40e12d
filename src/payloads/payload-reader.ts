// Node only: a stored payload rebuilt from its manifest — its base manifest's prefix, then its
// entries: inline bytes, slices of packs and of other manifests' inline bytes, and tree nodes,
// every length checked against what lists it. Says where the payload's bytes lay in packs and
// manifests, so the slice index can list them there later.
import { ChunkIntegrityError } from './errors.js';
import { decodeNode, entryLength, objectKey, parseManifest, type Entry } from './object-format.js';
import type { ObjectReader } from './object-reader.js';
import type { ReadSegment } from './slice-index.js';

/** The payload a manifest stands for, and where its bytes lay (`segments`); `depth` is what a manifest on it states. */
export async function readPayload(
  reader: ObjectReader,
  manifestId: string,
  keyId: string | undefined,
  signal: AbortSignal | undefined,
  segments: ReadSegment[],
  depth?: number,
): Promise<{ data: Uint8Array; metadata: Record<string, Uint8Array> }> {
  const manifestKey = objectKey('manifest', manifestId);
  const manifest = parseManifest(await reader.read('manifest', manifestId, keyId, signal), manifestKey);
  const ownDepth = manifest.base?.depth ?? 0;
  if (depth !== undefined && ownDepth !== depth)
    throw new ChunkIntegrityError(manifestKey, `is at depth ${ownDepth} where its successor says ${depth}`);
  const data = new Uint8Array(manifest.size);
  let offset = 0;
  if (manifest.base !== undefined) {
    const { id, keep } = manifest.base;
    const fromBase: ReadSegment[] = [];
    const base = await readPayload(reader, id, keyId, signal, fromBase, manifest.base.depth - 1);
    // What the base's slices cover within the prefix this payload keeps.
    for (const segment of fromBase) {
      const length = Math.min(segment.length, keep - segment.start);
      if (length > 0) segments.push({ ...segment, length });
    }
    if (base.data.length < keep)
      throw new ChunkIntegrityError(
        manifestKey,
        `keeps ${keep} bytes of base manifest ${id}, which has ${base.data.length}`,
      );
    data.set(base.data.subarray(0, keep));
    offset = keep;
  }
  await fillFrom(reader, data, keyId, signal, segments)(manifest.entries, offset, manifestKey);
  return { data, metadata: manifest.metadata };
}

/** Writes what entries stand for into `data` from `offset` on, checking every length against what their parent (`parentKey`) lists. */
function fillFrom(
  reader: ObjectReader,
  data: Uint8Array,
  keyId: string | undefined,
  signal: AbortSignal | undefined,
  segments: ReadSegment[],
): (entries: readonly Entry[], offset: number, parentKey: string) => Promise<void> {
  const fillAll = async (entries: readonly Entry[], offset: number, parentKey: string): Promise<void> => {
    let at = offset;
    await Promise.all(
      entries.map((entry) => {
        const entryOffset = at;
        at += entryLength(entry);
        return fill(entry, entryOffset, parentKey);
      }),
    );
  };
  const fill = async (entry: Entry, offset: number, parentKey: string): Promise<void> => {
    if (entry.kind === 'inline') {
      data.set(entry.bytes, offset);
      return;
    }
    if (offset + entry.length > data.length)
      throw new ChunkIntegrityError(parentKey, `lists more bytes than the payload's size`);
    if (entry.kind === 'slice') {
      const holder =
        entry.of === 'manifest'
          ? await reader.inlineBytes(entry.id, keyId, signal)
          : await reader.read('chunk', entry.id, keyId, signal);
      if (entry.offset + entry.length > holder.length)
        throw new ChunkIntegrityError(
          parentKey,
          `lists bytes ${entry.offset}–${entry.offset + entry.length} of ${entry.of} ${entry.id}, which has ${holder.length}`,
        );
      data.set(holder.subarray(entry.offset, entry.offset + entry.length), offset);
      segments.push({ start: offset, length: entry.length, holder: entry.id, of: entry.of, offset: entry.offset });
      return;
    }
    const { id, level, length } = entry;
    const nodeKey = objectKey('node', id);
    const children = decodeNode(await reader.read('node', id, keyId, signal), level, nodeKey);
    const total = children.reduce((sum, child) => sum + entryLength(child), 0);
    if (total !== length) throw new ChunkIntegrityError(nodeKey, `covers ${total} bytes where ${length} were expected`);
    await fillAll(children, offset, nodeKey);
  };
  return fillAll;
}
