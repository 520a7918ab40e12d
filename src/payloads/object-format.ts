// Node only: the chunk store's objects: their keys, and the bytes of manifests and tree nodes. A
// payload is listed by one manifest (on an optional base manifest), with a tree of nodes over its
// slices when it is long; its bytes sit inline in manifests and level-1 nodes, or in packs (chunks
// holding the new slices of one payload end to end). docs/payloads.md#the-stores-format gives the
// bytes for readers in other languages. Keys: `v1/{chunks,nodes,manifests}/<id[0:2]>/<id[2:4]>/<id>`.
import { MAX_STORED_PAYLOAD_BYTES } from '../core/limits/payload-size.js';
import { ChunkIntegrityError } from './errors.js';

const OBJECT_KINDS = ['chunk', 'node', 'manifest'] as const;
export type ObjectKind = (typeof OBJECT_KINDS)[number];

const ID_BYTES = 32;
const MANIFEST_MAGIC = [0x63, 0x74, 0x6d, 0x01];
const NODE_MAGIC = 0x4e;
const ENTRY_NODE = 0;
const ENTRY_INLINE = 1;
const ENTRY_PACK_SLICE = 2;
const ENTRY_MANIFEST_SLICE = 3;
const NODE_REF_BYTES = ID_BYTES + 4;
const SLICE_BYTES = ID_BYTES + 8;
// A node ends after a child whose first id byte has its low four bits zero (one in 16), with 4 to 64
// children: content-defined, so appending rewrites only the last node of each level.
const NODE_MIN_CHILDREN = 4;
const NODE_MAX_CHILDREN = 64;
/** The longest slice a manifest or node holds inline (its length is a u16). */
export const MAX_INLINE_BYTES = 0xffff;
/** The longest chain of manifests on base manifests (a reader follows at most this many). */
export const MAX_MANIFEST_DEPTH = 16;
export { MAX_STORED_PAYLOAD_BYTES };
/** The largest plaintext of any object: a manifest holding a whole payload inline, with its metadata and entries. */
export const MAX_OBJECT_BYTES = MAX_STORED_PAYLOAD_BYTES + 1024 * 1024;
/** The largest sealed object: its plaintext, deflate's framing when it does not shrink, and the header and tag. */
export const MAX_SEALED_OBJECT_BYTES = MAX_OBJECT_BYTES + 64 * 1024;

export function objectKey(kind: ObjectKind, id: string): string {
  return `v1/${kind}s/${id.slice(0, 2)}/${id.slice(2, 4)}/${id}`;
}

/** The id of an object key `v1/<kind>s/xx/yy/<id>`, with its kind; undefined for other keys (temporary files). */
export function parseObjectKey(key: string): { kind: ObjectKind; id: string } | undefined {
  const kind = OBJECT_KINDS.find((name) => key.startsWith(`v1/${name}s/`));
  const id = key.slice(-64);
  return kind !== undefined && /^[0-9a-f]{64}$/.test(id) && objectKey(kind, id) === key ? { kind, id } : undefined;
}

/** Whether a node whose children so far are `childCount`, the last one `lastChildId`, ends here. */
export function nodeEndsAfter(lastChildId: string, childCount: number): boolean {
  const boundary = (parseInt(lastChildId.slice(0, 2), 16) & 0x0f) === 0;
  return (childCount >= NODE_MIN_CHILDREN && boundary) || childCount >= NODE_MAX_CHILDREN;
}

/** An entry of a manifest or node: a node (of `level` ≥ 1), inline bytes, or a slice of a pack or of a manifest's inline bytes. */
export type Entry =
  | { kind: 'node'; level: number; id: string; length: number }
  | { kind: 'inline'; bytes: Uint8Array }
  | { kind: 'slice'; of: 'pack' | 'manifest'; id: string; offset: number; length: number };

export const entryLength = (entry: Entry): number => (entry.kind === 'inline' ? entry.bytes.length : entry.length);

/** A manifest's inline bytes end to end: what a slice of that manifest (`of: 'manifest'`) is a range of. */
export function inlineBytesOf(manifest: Manifest): Buffer {
  return Buffer.concat(manifest.entries.flatMap((entry) => (entry.kind === 'inline' ? [entry.bytes] : [])));
}

/** Adjacent slices of one object as one entry (what a writer writes). */
export function mergeSlices(entries: readonly Entry[]): Entry[] {
  const merged: Entry[] = [];
  for (const entry of entries) {
    const last = merged.at(-1);
    if (
      entry.kind === 'slice' &&
      last?.kind === 'slice' &&
      last.id === entry.id &&
      last.of === entry.of &&
      last.offset + last.length === entry.offset &&
      last.length + entry.length <= MAX_STORED_PAYLOAD_BYTES
    )
      merged[merged.length - 1] = { ...last, length: last.length + entry.length };
    else merged.push(entry);
  }
  return merged;
}

/** The bytes of entries; in a node (`withLevels` false) node entries have no level byte. */
function encodeEntries(entries: readonly Entry[], withLevels: boolean): Buffer[] {
  return entries.map((entry) => {
    if (entry.kind === 'inline') {
      const bytes = Buffer.alloc(3 + entry.bytes.length);
      bytes[0] = ENTRY_INLINE;
      bytes.writeUInt16BE(entry.bytes.length, 1);
      bytes.set(entry.bytes, 3);
      return bytes;
    }
    if (entry.kind === 'slice') {
      const bytes = Buffer.alloc(1 + SLICE_BYTES);
      bytes[0] = entry.of === 'manifest' ? ENTRY_MANIFEST_SLICE : ENTRY_PACK_SLICE;
      bytes.write(entry.id, 1, 'hex');
      bytes.writeUInt32BE(entry.offset, 1 + ID_BYTES);
      bytes.writeUInt32BE(entry.length, 5 + ID_BYTES);
      return bytes;
    }
    const at = withLevels ? 2 : 1;
    const bytes = Buffer.alloc(at + NODE_REF_BYTES);
    bytes[0] = ENTRY_NODE;
    if (withLevels) bytes[1] = entry.level;
    bytes.write(entry.id, at, 'hex');
    bytes.writeUInt32BE(entry.length, at + ID_BYTES);
    return bytes;
  });
}

/** Reads entries from `at` to the end; in a node (`childLevel`: its level − 1) node entries have no level byte. */
function decodeEntries(bytes: Buffer, at: number, key: string, childLevel: number | undefined): Entry[] {
  const entries: Entry[] = [];
  let offset = at;
  const malformed = (what: string): ChunkIntegrityError => new ChunkIntegrityError(key, `malformed entry: ${what}`);
  while (offset < bytes.length) {
    const tag = bytes[offset];
    if (tag === ENTRY_INLINE) {
      if (childLevel !== undefined && childLevel !== 0) throw malformed('inline bytes in a node above level 1');
      if (offset + 3 > bytes.length) throw malformed('truncated');
      const length = bytes.readUInt16BE(offset + 1);
      if (length === 0 || offset + 3 + length > bytes.length) throw malformed('inline bytes of a wrong length');
      entries.push({ kind: 'inline', bytes: Uint8Array.from(bytes.subarray(offset + 3, offset + 3 + length)) });
      offset += 3 + length;
    } else if (tag === ENTRY_PACK_SLICE || tag === ENTRY_MANIFEST_SLICE) {
      if (childLevel !== undefined && childLevel !== 0) throw malformed('a slice in a node above level 1');
      if (offset + 1 + SLICE_BYTES > bytes.length) throw malformed('truncated');
      const length = bytes.readUInt32BE(offset + 5 + ID_BYTES);
      if (length === 0 || length > MAX_STORED_PAYLOAD_BYTES) throw malformed('a slice of a wrong length');
      entries.push({
        kind: 'slice',
        of: tag === ENTRY_PACK_SLICE ? 'pack' : 'manifest',
        id: bytes.toString('hex', offset + 1, offset + 1 + ID_BYTES),
        offset: bytes.readUInt32BE(offset + 1 + ID_BYTES),
        length,
      });
      offset += 1 + SLICE_BYTES;
    } else if (tag === ENTRY_NODE) {
      offset += 1;
      const level = childLevel ?? bytes[offset++];
      if (level === undefined || offset + NODE_REF_BYTES > bytes.length) throw malformed('truncated');
      if (level < 1) throw malformed('a node of level 0');
      entries.push({
        kind: 'node',
        level,
        id: bytes.toString('hex', offset, offset + ID_BYTES),
        length: bytes.readUInt32BE(offset + ID_BYTES),
      });
      offset += NODE_REF_BYTES;
    } else throw malformed(`unknown tag ${String(tag)}`);
  }
  return entries;
}

/** A node of `level` (≥ 1) over `entries` (nodes of level `level - 1`; inline bytes and slices only at level 1, adjacent slices merged). */
export function encodeNode(level: number, entries: readonly Entry[]): Uint8Array {
  return Buffer.concat([Uint8Array.of(NODE_MAGIC, level), ...encodeEntries(mergeSlices(entries), false)]);
}

/** A node's level, as the node itself says. */
export function nodeLevel(plaintext: Uint8Array, key: string): number {
  if (plaintext.length < 2 || plaintext[0] !== NODE_MAGIC) throw new ChunkIntegrityError(key, 'malformed tree node');
  const level = plaintext[1] ?? 0;
  if (level < 1) throw new ChunkIntegrityError(key, 'tree node of level 0');
  return level;
}

/** What a node lists, after checking it is of `level`: nodes of level `level - 1`, or at level 1 inline bytes and slices. */
export function decodeNode(plaintext: Uint8Array, level: number, key: string): Entry[] {
  const bytes = Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength);
  const actual = nodeLevel(bytes, key);
  if (actual !== level)
    throw new ChunkIntegrityError(key, `tree node of level ${actual} where level ${level} was expected`);
  return decodeEntries(bytes, 2, key, level - 1);
}

export interface Manifest {
  size: number;
  metadata: Record<string, Uint8Array>;
  /** The payload starts with the first `keep` bytes of the base manifest's payload; `depth` is 1 + the base's. */
  base: { id: string; keep: number; depth: number } | undefined;
  /** What follows, in order: `size - keep` bytes in all. */
  entries: Entry[];
}

/** The bytes of a manifest (adjacent slices of one object merged). */
export function encodeManifest({ size, metadata, base, entries }: Manifest): Uint8Array {
  const named = Object.entries(metadata).map(([name, value]) => [Buffer.from(name, 'utf8'), value] as const);
  if (named.length > 0xffff || named.some(([name]) => name.length > 0xffff))
    throw new RangeError('payload metadata has more than 65,535 entries or a name longer than 65,535 bytes');
  const header = Buffer.alloc(base === undefined ? 11 : 11 + ID_BYTES + 4);
  header.set(MANIFEST_MAGIC, 0);
  header.writeUInt32BE(size, 4);
  header[8] = base?.depth ?? 0;
  if (base !== undefined) {
    header.write(base.id, 9, 'hex');
    header.writeUInt32BE(base.keep, 9 + ID_BYTES);
  }
  header.writeUInt16BE(named.length, header.length - 2);
  const fields = named.map(([name, value]) => {
    const field = Buffer.alloc(6 + name.length + value.length);
    field.writeUInt16BE(name.length, 0);
    field.set(name, 2);
    field.writeUInt32BE(value.length, 2 + name.length);
    field.set(value, 6 + name.length);
    return field;
  });
  return Buffer.concat([header, ...fields, ...encodeEntries(mergeSlices(entries), true)]);
}

/** A manifest's fields, checked (a ChunkIntegrityError names the manifest when it is not one). */
export function parseManifest(plaintext: Uint8Array, key: string): Manifest {
  const bytes = Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength);
  const malformed = (what: string): ChunkIntegrityError => new ChunkIntegrityError(key, `manifest ${what}`);
  if (!MANIFEST_MAGIC.every((byte, index) => bytes[index] === byte))
    throw new ChunkIntegrityError(key, 'is not a temporal-compactor manifest');
  if (bytes.length < 11) throw malformed('is truncated');
  const size = bytes.readUInt32BE(4);
  if (size > MAX_STORED_PAYLOAD_BYTES)
    throw malformed(`states a payload of ${size} bytes, more than the ${MAX_STORED_PAYLOAD_BYTES} the store holds`);
  const depth = bytes[8] ?? 0;
  let at = 9;
  let base: Manifest['base'];
  if (depth > 0) {
    if (depth > MAX_MANIFEST_DEPTH)
      throw malformed(`is on a chain of ${depth} manifests (at most ${MAX_MANIFEST_DEPTH})`);
    if (bytes.length < at + ID_BYTES + 6) throw malformed('is truncated');
    base = { id: bytes.toString('hex', at, at + ID_BYTES), keep: bytes.readUInt32BE(at + ID_BYTES), depth };
    if (base.keep > size) throw malformed('keeps more of its base than its size');
    at += ID_BYTES + 4;
  }
  if (at + 2 > bytes.length) throw malformed('is truncated');
  const count = bytes.readUInt16BE(at);
  at += 2;
  const metadata: Record<string, Uint8Array> = {};
  for (let index = 0; index < count; index += 1) {
    if (at + 2 > bytes.length) throw malformed('metadata is truncated');
    const nameLength = bytes.readUInt16BE(at);
    if (at + 2 + nameLength + 4 > bytes.length) throw malformed('metadata is truncated');
    const name = bytes.toString('utf8', at + 2, at + 2 + nameLength);
    at += 2 + nameLength;
    const valueLength = bytes.readUInt32BE(at);
    if (at + 4 + valueLength > bytes.length) throw malformed('metadata is truncated');
    metadata[name] = Uint8Array.from(bytes.subarray(at + 4, at + 4 + valueLength));
    at += 4 + valueLength;
  }
  const entries = decodeEntries(bytes, at, key, undefined);
  const listed = entries.reduce((sum, entry) => sum + entryLength(entry), 0);
  if (listed !== size - (base?.keep ?? 0))
    throw malformed(`lists ${listed} bytes where ${size - (base?.keep ?? 0)} were expected`);
  return { size, metadata, base, entries };
}
