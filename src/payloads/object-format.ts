// Node only: the chunk store's objects — their keys, the tree nodes' bytes and the manifests'.
// A stored payload becomes chunks (chunker.ts), the nodes of a tree over them, and one manifest;
// every object is sealed (sealed-object.ts) and named by its content's hash.
//
// Layout (the same under a directory and under an S3 prefix):
//   v1/chunks/<id[0:2]>/<id[2:4]>/<id>      slices of payload data
//   v1/nodes/<id[0:2]>/<id[2:4]>/<id>       tree nodes: level, then entries
//   v1/manifests/<id[0:2]>/<id[2:4]>/<id>   one per stored payload
// Object names are 64 hex digits in every claim format (claims.ts).
//
// Several formats of each, all read forever (a store keeps what older versions wrote):
// - Format 1 (written before chunker 2): a manifest is JSON (size, metadata in base64, the id and
//   level of one root); a node (0x4e) lists (child id, byte length).
// - Format 2 (written now): a manifest is binary and lists entries itself — the closed nodes of
//   the tree's spine, the chunks after them, and small slices of the payload inline (a payload
//   under a few hundred bytes is its manifest alone) — and may start with a prefix of a base
//   manifest's payload (the previous round's chat input), so a round writes its new entries, not
//   the whole spine again. A node (0x4f) lists entries too, with slices inline.
// - Format 3 (written now): format 2 whose entries may also be a slice of a pack: a chunk object
//   that holds the new slices of one stored payload end to end (compressed as one, so small slices
//   compress with their neighbours), named as (pack id, offset, length); adjacent slices of one
//   pack are listed as one. A manifest starts "ctm" 0x03, a node 0x50. Chunks of formats 1 and 2
//   are packs of one slice: a reader treats every chunk alike.
// - Format 5 (written now): format 3 whose entries may also be a slice of a manifest's inline bytes
//   (the bytes of its literal entries end to end: a fresh payload's manifest is its own pack), named
//   as (manifest id, offset, length), tag 3. A manifest starts "ctm" 0x05, a node 0x51.
import { ChunkIntegrityError } from './errors.js';

export type ObjectKind = 'chunk' | 'node' | 'manifest';

/** An object id: 32 bytes (SHA-256 or HMAC-SHA256) in lowercase hex. */
export const OBJECT_ID_PATTERN = /^[0-9a-f]{64}$/;
const ID_BYTES = 32;
const NODE_MAGIC = 0x4e;
const NODE_ENTRY_BYTES = ID_BYTES + 4;
// Node boundaries are content-defined by the child ids (uniformly random): a node ends after a
// child whose first id byte has its low four bits zero (one in 16), with at least 4 and at most 64
// children. Appending chunks then rewrites only the last node of each level, about 0.6 KB each.
const NODE_MIN_CHILDREN = 4;
const NODE_MAX_CHILDREN = 64;
export const MANIFEST_FORMAT = 'temporal-compactor manifest';
const NODE2_MAGIC = 0x4f;
const MANIFEST2_MAGIC = [0x63, 0x74, 0x6d, 0x02];
const ENTRY_REF = 0;
const ENTRY_LITERAL = 1;
const ENTRY_SLICE = 2;
const MANIFEST3_MAGIC = [0x63, 0x74, 0x6d, 0x03];
const NODE3_MAGIC = 0x50;
const ENTRY_INLINE_SLICE = 3;
const MANIFEST5_MAGIC = [0x63, 0x74, 0x6d, 0x05];
const NODE5_MAGIC = 0x51;
/** The encodings of manifests and nodes: format 2, format 3 (slices of packs), format 5 (and of manifests' inline bytes). */
export type EntryFormat = 2 | 3 | 5;
/**
 * The format a driver writes: 1 (JSON manifests over 0x4e nodes), 2 (binary, on bases), 3 (2 with
 * slices of packs), 4 (format-3 manifests and nodes, each pack deflated against the chunks written
 * before it: sealed-object.ts, a context chunk), 5 (new bytes inline in manifests, listed as slices
 * of them; manifests in the chain of contexts).
 */
export type ManifestFormat = 1 | 2 | 3 | 4 | 5;
/** The longest slice a format-2 manifest or node holds inline (its length is a u16). */
export const MAX_LITERAL_BYTES = 0xffff;
/** The longest chain of format-2 manifests on base manifests (a reader follows at most this many). */
export const MAX_MANIFEST_DEPTH = 16;
const MAX_PAYLOAD_BYTES = 2 ** 31 - 1;

/** The key of an object: `v1/<kind>s/<2 hex>/<2 hex>/<id>`. */
export function objectKey(kind: ObjectKind, id: string): string {
  return `v1/${kind}s/${id.slice(0, 2)}/${id.slice(2, 4)}/${id}`;
}

/** The id of an object key `v1/<kind>s/xx/yy/<id>`, with its kind; undefined for other keys (temporary files). */
export function parseObjectKey(key: string): { kind: ObjectKind; id: string } | undefined {
  const match = /^v1\/(chunk|node|manifest)s\/([0-9a-f]{2})\/([0-9a-f]{2})\/([0-9a-f]{64})$/.exec(key);
  if (match === null) return undefined;
  const [, kind, first, second, id = ''] = match;
  if (kind !== 'chunk' && kind !== 'node' && kind !== 'manifest') return undefined;
  return id.startsWith(`${first}${second}`) ? { kind, id } : undefined;
}

/** A node's entry: a child's id and the payload bytes under it. */
export interface ChildRef {
  id: string;
  length: number;
}

/** Whether a node whose children so far are `childCount`, the last one `lastChildId`, ends here. */
export function nodeEndsAfter(lastChildId: string, childCount: number): boolean {
  const boundary = (parseInt(lastChildId.slice(0, 2), 16) & 0x0f) === 0;
  return (childCount >= NODE_MIN_CHILDREN && boundary) || childCount >= NODE_MAX_CHILDREN;
}

export function encodeNode(level: number, children: ChildRef[]): Uint8Array {
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
export function nodeLevel(plaintext: Uint8Array, key: string): number {
  const formatOne = plaintext[0] === NODE_MAGIC && (plaintext.length - 2) % NODE_ENTRY_BYTES === 0;
  const magic = plaintext[0];
  if (plaintext.length < 2 || !(formatOne || magic === NODE2_MAGIC || magic === NODE3_MAGIC || magic === NODE5_MAGIC))
    throw new ChunkIntegrityError(key, 'malformed tree node');
  const level = plaintext[1] ?? 0;
  if (level < 1) throw new ChunkIntegrityError(key, 'tree node of level 0');
  return level;
}

/** What a node (either format) lists, after checking it is of `level`: its children of level `level - 1`, and in format 2 slices inline. */
export function decodeNode(plaintext: Uint8Array, level: number, key: string): Entry[] {
  const bytes = Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength);
  const actual = nodeLevel(bytes, key);
  if (actual !== level)
    throw new ChunkIntegrityError(key, `tree node of level ${actual} where level ${level} was expected`);
  if (bytes[0] === NODE2_MAGIC || bytes[0] === NODE3_MAGIC || bytes[0] === NODE5_MAGIC)
    return decodeEntries(bytes, 2, key, level - 1, bytes[0] === NODE2_MAGIC ? 2 : bytes[0] === NODE3_MAGIC ? 3 : 5);
  const children: Entry[] = [];
  for (let at = 2; at < bytes.length; at += NODE_ENTRY_BYTES)
    children.push({
      kind: 'ref',
      level: level - 1,
      id: bytes.toString('hex', at, at + ID_BYTES),
      length: bytes.readUInt32BE(at + ID_BYTES),
    });
  return children;
}

/**
 * An entry of a format-2 or 3 manifest or node: an object it refers to (a chunk: level 0; a node of
 * that level), a slice of the payload inline, or (format 3) `length` bytes at `offset` of a pack.
 */
export type Entry =
  | { kind: 'ref'; level: number; id: string; length: number }
  | { kind: 'literal'; bytes: Uint8Array }
  | { kind: 'slice'; id: string; offset: number; length: number; of?: 'manifest' };

export const entryLength = (entry: Entry): number => (entry.kind === 'literal' ? entry.bytes.length : entry.length);

/** Format 5: a manifest's inline bytes end to end, what a slice of that manifest (`of: 'manifest'`) is a range of. */
export function inlineBytesOf(manifest: ManifestBody | ManifestV2): Buffer {
  return manifest.v === 1
    ? Buffer.alloc(0)
    : Buffer.concat(manifest.entries.flatMap((entry) => (entry.kind === 'literal' ? [entry.bytes] : [])));
}

/** Adjacent slices of one pack as one entry (what format 3 writes). */
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
      last.length + entry.length <= MAX_PAYLOAD_BYTES
    )
      merged[merged.length - 1] = { ...last, length: last.length + entry.length };
    else merged.push(entry);
  }
  return merged;
}

function entriesBytes(entries: readonly Entry[], withLevels: boolean): number {
  return entries.reduce(
    (sum, entry) =>
      sum +
      (entry.kind === 'ref'
        ? 1 + (withLevels ? 1 : 0) + NODE_ENTRY_BYTES
        : entry.kind === 'slice'
          ? 1 + ID_BYTES + 8
          : 3 + entry.bytes.length),
    0,
  );
}

function writeEntries(bytes: Buffer, at: number, entries: readonly Entry[], withLevels: boolean): number {
  let offset = at;
  for (const entry of entries) {
    if (entry.kind === 'literal') {
      bytes[offset] = ENTRY_LITERAL;
      bytes.writeUInt16BE(entry.bytes.length, offset + 1);
      bytes.set(entry.bytes, offset + 3);
      offset += 3 + entry.bytes.length;
    } else if (entry.kind === 'slice') {
      bytes[offset] = entry.of === 'manifest' ? ENTRY_INLINE_SLICE : ENTRY_SLICE;
      bytes.write(entry.id, offset + 1, 'hex');
      bytes.writeUInt32BE(entry.offset, offset + 1 + ID_BYTES);
      bytes.writeUInt32BE(entry.length, offset + 5 + ID_BYTES);
      offset += 1 + ID_BYTES + 8;
    } else {
      bytes[offset] = ENTRY_REF;
      offset += 1;
      if (withLevels) bytes[offset++] = entry.level;
      bytes.write(entry.id, offset, 'hex');
      bytes.writeUInt32BE(entry.length, offset + ID_BYTES);
      offset += NODE_ENTRY_BYTES;
    }
  }
  return offset;
}

/**
 * Reads entries from `at` to the end. In a node (`childLevel` given) every reference is of that
 * level and slices are allowed only among chunks; in a manifest each reference says its level.
 * Slices of packs only in format 3 (`packs`).
 */
function decodeEntries(
  bytes: Buffer,
  at: number,
  key: string,
  childLevel: number | undefined,
  format: EntryFormat,
): Entry[] {
  const entries: Entry[] = [];
  let offset = at;
  const malformed = (what: string): ChunkIntegrityError => new ChunkIntegrityError(key, `malformed entry: ${what}`);
  while (offset < bytes.length) {
    const tag = bytes[offset];
    if (tag === ENTRY_LITERAL) {
      if (childLevel !== undefined && childLevel !== 0) throw malformed('inline bytes in a node above level 1');
      if (offset + 3 > bytes.length) throw malformed('truncated');
      const length = bytes.readUInt16BE(offset + 1);
      if (length === 0 || offset + 3 + length > bytes.length) throw malformed('inline bytes of a wrong length');
      entries.push({ kind: 'literal', bytes: Uint8Array.from(bytes.subarray(offset + 3, offset + 3 + length)) });
      offset += 3 + length;
    } else if ((tag === ENTRY_SLICE && format >= 3) || (tag === ENTRY_INLINE_SLICE && format >= 5)) {
      if (childLevel !== undefined && childLevel !== 0) throw malformed('a slice of a pack in a node above level 1');
      if (offset + 1 + ID_BYTES + 8 > bytes.length) throw malformed('truncated');
      const length = bytes.readUInt32BE(offset + 5 + ID_BYTES);
      if (length === 0 || length > MAX_PAYLOAD_BYTES) throw malformed('a slice of a wrong length');
      const id = bytes.toString('hex', offset + 1, offset + 1 + ID_BYTES);
      const from = bytes.readUInt32BE(offset + 1 + ID_BYTES);
      entries.push(
        tag === ENTRY_SLICE
          ? { kind: 'slice', id, offset: from, length }
          : { kind: 'slice', id, offset: from, length, of: 'manifest' },
      );
      offset += 1 + ID_BYTES + 8;
    } else if (tag === ENTRY_REF) {
      offset += 1;
      const level = childLevel ?? bytes[offset++];
      if (level === undefined || offset + NODE_ENTRY_BYTES > bytes.length) throw malformed('truncated');
      entries.push({
        kind: 'ref',
        level,
        id: bytes.toString('hex', offset, offset + ID_BYTES),
        length: bytes.readUInt32BE(offset + ID_BYTES),
      });
      offset += NODE_ENTRY_BYTES;
    } else throw malformed(`unknown tag ${String(tag)}`);
  }
  return entries;
}

/**
 * A format-2 or 3 node of `level` (≥ 1) over `entries` (references of level `level - 1`; slices
 * inline and of packs only at level 1, of packs only in format 3, where adjacent ones are merged).
 */
export function encodeNodeV2(level: number, entries: readonly Entry[], format: EntryFormat = 2): Uint8Array {
  const listed = checkedEntries(entries, format, 'node');
  const bytes = Buffer.alloc(2 + entriesBytes(listed, false));
  bytes[0] = format === 5 ? NODE5_MAGIC : format === 3 ? NODE3_MAGIC : NODE2_MAGIC;
  bytes[1] = level;
  writeEntries(bytes, 2, listed, false);
  return bytes;
}

/** What `format` may list (format 2: no slices; 3: slices of packs; 5: of manifests' inline bytes too), adjacent slices of one object merged from format 3 on. */
function checkedEntries(entries: readonly Entry[], format: EntryFormat, what: string): readonly Entry[] {
  if (format === 2 && entries.some((entry) => entry.kind === 'slice'))
    throw new RangeError(`a format-2 ${what} cannot list slices of packs`);
  if (format === 3 && entries.some((entry) => entry.kind === 'slice' && entry.of === 'manifest'))
    throw new RangeError(`a format-3 ${what} cannot list slices of manifests`);
  return format === 2 ? entries : mergeSlices(entries);
}

/** A format-2, 3 or 5 manifest: binary, its entries listed in it, on an optional base manifest. */
export interface ManifestV2 {
  v: EntryFormat;
  chunker: number;
  size: number;
  /** The payload's metadata. */
  metadata: Record<string, Uint8Array>;
  /** The payload starts with the first `keep` bytes of the base manifest's payload; `depth` is 1 + the base's. */
  base: { id: string; keep: number; depth: number } | undefined;
  /** What follows, in order: `size - keep` bytes in all. */
  entries: Entry[];
}

/** The bytes of a format-2 or 3 manifest (format 3: adjacent slices of a pack merged). */
export function encodeManifestV2(manifest: Omit<ManifestV2, 'v'>, format: EntryFormat = 2): Uint8Array {
  const listed = checkedEntries(manifest.entries, format, 'manifest');
  const metadata = Object.entries(manifest.metadata).map(
    ([name, value]) => [Buffer.from(name, 'utf8'), value] as const,
  );
  if (metadata.length > 0xffff || metadata.some(([name]) => name.length > 0xffff))
    throw new RangeError('payload metadata has more than 65,535 entries or a name longer than 65,535 bytes');
  const header = 4 + 4 + 1 + 1 + (manifest.base === undefined ? 0 : ID_BYTES + 4) + 2;
  const metadataBytes = metadata.reduce((sum, [name, value]) => sum + 2 + name.length + 4 + value.length, 0);
  const bytes = Buffer.alloc(header + metadataBytes + entriesBytes(listed, true));
  bytes.set(format === 5 ? MANIFEST5_MAGIC : format === 3 ? MANIFEST3_MAGIC : MANIFEST2_MAGIC, 0);
  bytes.writeUInt32BE(manifest.size, 4);
  bytes[8] = manifest.chunker;
  let at = 10;
  if (manifest.base === undefined) bytes[9] = 0;
  else {
    bytes[9] = manifest.base.depth;
    bytes.write(manifest.base.id, at, 'hex');
    bytes.writeUInt32BE(manifest.base.keep, at + ID_BYTES);
    at += ID_BYTES + 4;
  }
  bytes.writeUInt16BE(metadata.length, at);
  at += 2;
  for (const [name, value] of metadata) {
    bytes.writeUInt16BE(name.length, at);
    bytes.set(name, at + 2);
    at += 2 + name.length;
    bytes.writeUInt32BE(value.length, at);
    bytes.set(value, at + 4);
    at += 4 + value.length;
  }
  writeEntries(bytes, at, listed, true);
  return bytes;
}

function parseManifestV2(bytes: Buffer, key: string, format: EntryFormat): ManifestV2 {
  const malformed = (what: string): ChunkIntegrityError =>
    new ChunkIntegrityError(key, `format-${format} manifest ${what}`);
  if (bytes.length < 12) throw malformed('is truncated');
  const size = bytes.readUInt32BE(4);
  if (size > MAX_PAYLOAD_BYTES) throw malformed('size is not a plausible byte count');
  const chunker = bytes[8] ?? 0;
  const depth = bytes[9] ?? 0;
  let at = 10;
  let base: ManifestV2['base'];
  if (depth > 0) {
    if (depth > MAX_MANIFEST_DEPTH)
      throw malformed(`is on a chain of ${depth} manifests (at most ${MAX_MANIFEST_DEPTH})`);
    if (bytes.length < at + ID_BYTES + 5) throw malformed('is truncated');
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
  const entries = decodeEntries(bytes, at, key, undefined, format);
  const listed = entries.reduce((sum, entry) => sum + entryLength(entry), 0);
  if (listed !== size - (base?.keep ?? 0))
    throw malformed(`lists ${listed} bytes where ${size - (base?.keep ?? 0)} were expected`);
  return { v: format, chunker, size, metadata, base, entries };
}

/** A manifest of any format, as its bytes say (format 1 is JSON, format 2 starts with "ctm" 0x02, format 3 with "ctm" 0x03). */
export function parseAnyManifest(plaintext: Uint8Array, key: string): ManifestBody | ManifestV2 {
  const bytes = Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength);
  if (MANIFEST2_MAGIC.every((byte, index) => bytes[index] === byte)) return parseManifestV2(bytes, key, 2);
  if (MANIFEST3_MAGIC.every((byte, index) => bytes[index] === byte)) return parseManifestV2(bytes, key, 3);
  if (MANIFEST5_MAGIC.every((byte, index) => bytes[index] === byte)) return parseManifestV2(bytes, key, 5);
  return parseManifest(plaintext, key);
}

export interface ManifestBody {
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

export function parseManifest(plaintext: Uint8Array, key: string): ManifestBody {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(plaintext).toString('utf8'));
  } catch {
    throw new ChunkIntegrityError(key, 'manifest is not JSON');
  }
  if (typeof value !== 'object' || value === null) throw new ChunkIntegrityError(key, 'manifest is not an object');
  const fields: Record<string, unknown> = Object.fromEntries(Object.entries(value));
  const { format, v, size, level, root, metadata, chunker } = fields;
  const metadataOk =
    typeof metadata === 'object' &&
    metadata !== null &&
    Object.values(metadata).every((entry) => typeof entry === 'string');
  if (format !== MANIFEST_FORMAT || v !== 1)
    throw new ChunkIntegrityError(key, 'not a version-1 temporal-compactor manifest');
  // Temporal payloads stay far below 2 GiB; a larger size could only make a reader allocate wildly.
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0 || size > MAX_PAYLOAD_BYTES)
    throw new ChunkIntegrityError(key, 'manifest size is not a plausible byte count');
  if (typeof level !== 'number' || !Number.isInteger(level) || level < 0 || level > 255)
    throw new ChunkIntegrityError(key, 'manifest level is out of range');
  const rootId = typeof root === 'string' && OBJECT_ID_PATTERN.test(root) ? root : null;
  if (rootId === null && (root !== null || size !== 0))
    throw new ChunkIntegrityError(key, 'manifest root is not an object id');
  if (!metadataOk) throw new ChunkIntegrityError(key, 'manifest metadata is malformed');
  const entries: Record<string, string> = {};
  for (const [name, entry] of Object.entries(metadata)) if (typeof entry === 'string') entries[name] = entry;
  return {
    format,
    v,
    size,
    level,
    root: rootId,
    metadata: entries,
    chunker: typeof chunker === 'number' ? chunker : 0,
  };
}
