// Node only: the chunk store's objects — their keys, the tree node's bytes and the manifest's JSON.
// A stored payload becomes chunks (chunker.ts), a small tree of nodes listing them, and one
// manifest; every object is sealed (sealed-object.ts) and named by its content's hash.
//
// Layout (the same under a directory and under an S3 prefix):
//   v1/chunks/<id[0:2]>/<id[2:4]>/<id>      slices of payload data
//   v1/nodes/<id[0:2]>/<id[2:4]>/<id>       tree nodes: level, then (child id, byte length) entries
//   v1/manifests/<id[0:2]>/<id[2:4]>/<id>   one per stored payload: size, metadata, root id and level
// Object names are 64 hex digits in every claim format (claims.ts).
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
  if (plaintext.length < 2 || plaintext[0] !== NODE_MAGIC || (plaintext.length - 2) % NODE_ENTRY_BYTES !== 0)
    throw new ChunkIntegrityError(key, 'malformed tree node');
  const level = plaintext[1] ?? 0;
  if (level < 1) throw new ChunkIntegrityError(key, 'tree node of level 0');
  return level;
}

export function decodeNode(plaintext: Uint8Array, level: number, key: string): ChildRef[] {
  const bytes = Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength);
  const actual = nodeLevel(bytes, key);
  if (actual !== level)
    throw new ChunkIntegrityError(key, `tree node of level ${actual} where level ${level} was expected`);
  const children: ChildRef[] = [];
  for (let at = 2; at < bytes.length; at += NODE_ENTRY_BYTES)
    children.push({ id: bytes.toString('hex', at, at + ID_BYTES), length: bytes.readUInt32BE(at + ID_BYTES) });
  return children;
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
