// Node only: how one stored object (a chunk, a manifest tree node, a manifest) is named, sealed
// and opened. Names are content addresses: SHA-256 of the plaintext, or with a key its
// HMAC-SHA256 under a key-derived MAC key (so a name reveals nothing to someone without the key).
// Sealing compresses and, with a key, encrypts deterministically (AES-256-GCM with the nonce taken
// from the name): equal plaintexts give equal objects, which is what lets the store dedup
// encrypted chunks. Opening checks everything: the header, the authentication tag, and that the
// plaintext hashes to the name it was fetched by.
//
// Layout of a sealed object:
//   "cps" 0x01 | flags (bit 0: deflate-raw, bit 1: AES-256-GCM, bit 2: a preset dictionary,
//                       bit 3: a context object, bit 4: the context is a manifest, bit 5: the
//                       name binds the context; other bits: refused)
//   [encrypted: key id length (1 byte) | key id (ASCII) | nonce (12 bytes)]
//   body (encrypted: ciphertext | 16-byte tag)
// The body (the plaintext of the ciphertext) is the object's bytes, deflated when bit 0 is set; with
// bit 2 it starts with the number of the preset dictionary (dictionary.ts) the rest was deflated
// with (format 3 writes it; an object without bit 2 is read as before). With bit 3 (format 4, chunks
// only; bits 0 and 2 set too) the dictionary number is followed by the context's depth (1 byte) and
// the context's id (32 bytes): the rest was deflated with the context's window as the dictionary,
// not the preset alone. The window of a chunk is the last 32 KiB of its context's window (a chunk
// without a context, of any format: preset dictionary 1) followed by its plaintext, so a chunk
// compresses against the chunks written before it, along a chain of at most MAX_CONTEXT_DEPTH
// (depth: 1 + its context's; a chunk without a context is at depth 0). Such a chunk is named by
// its context and its plaintext (contextualId), so its window is one whoever wrote it; a manifest
// or node deflated against a context keeps the id of its plaintext, unless bit 5 says it is named
// like a chunk (format 5: a manifest in the chain, whose window later objects are deflated
// against). With bit 4 (format 5) the context is a manifest, its window made by the same rule.
// Compressed, then encrypted.
import { createCipheriv, createDecipheriv, createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { PRESET_DICTIONARIES } from './dictionary.js';
import { ChunkIntegrityError, PayloadKeyMissingError } from './errors.js';
import type { CodecKey, Keyring } from './keyring.js';

const MAGIC = [0x63, 0x70, 0x73, 0x01];
const FLAG_DEFLATE = 1;
const FLAG_ENCRYPTED = 2;
const FLAG_DICTIONARY = 4;
const FLAG_CONTEXT = 8;
const FLAG_CONTEXT_MANIFEST = 16;
const FLAG_BOUND = 32;
const KNOWN_FLAGS = 63;
/** The bytes of a chunk's window: its dictionary and plaintext, end to end, the last 32 KiB (deflate's reach). */
export const WINDOW_BYTES = 32 * 1024;
/** The longest chain of context chunks a reader follows (a chunk's depth is at most this). */
export const MAX_CONTEXT_DEPTH = 64;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
// A header-only object would be a truncated one.
const MIN_COMPRESS_BYTES = 64;

/** Hex content address of a plaintext: HMAC-SHA256 with the key's MAC key, else SHA-256. */
export function objectId(plaintext: Uint8Array, key: CodecKey | undefined): string {
  return (key === undefined ? createHash('sha256') : createHmac('sha256', key.chunkMacKey))
    .update(plaintext)
    .digest('hex');
}

/** A chunk's window: the last {@link WINDOW_BYTES} of `before` (its context's window, or {@link chainRoot}) followed by its plaintext. */
export function windowAfter(before: Uint8Array, plaintext: Uint8Array): Buffer {
  if (plaintext.length >= WINDOW_BYTES) return Buffer.from(plaintext.subarray(plaintext.length - WINDOW_BYTES));
  const keep = Math.min(before.length, WINDOW_BYTES - plaintext.length);
  return Buffer.concat([before.subarray(before.length - keep), plaintext]);
}

const CONTEXT_ID_PREFIX = Buffer.from('temporal-compactor context chunk\u0000', 'latin1');
const MANIFEST_CONTEXT_ID_PREFIX = Buffer.from('temporal-compactor context manifest\u0000', 'latin1');

/** What a context is: a chunk (formats 4 and 5) or a manifest (format 5). */
export type ContextKind = 'chunk' | 'manifest';

/**
 * The id of a chunk deflated against context chunk `contextId`: {@link objectId} of a fixed prefix,
 * the context's 32-byte id and the plaintext. A chunk's window depends on its context's, so the
 * id binds it: two writers that deflate the same bytes against different contexts store two
 * objects, never one under the other's name. (A manifest or node, which no object is deflated
 * against, keeps the id of its plaintext.)
 */
export function contextualId(
  plaintext: Uint8Array,
  contextId: string,
  key: CodecKey | undefined,
  contextKind: ContextKind = 'chunk',
): string {
  return (key === undefined ? createHash('sha256') : createHmac('sha256', key.chunkMacKey))
    .update(contextKind === 'chunk' ? CONTEXT_ID_PREFIX : MANIFEST_CONTEXT_ID_PREFIX)
    .update(Buffer.from(contextId, 'hex'))
    .update(plaintext)
    .digest('hex');
}

/** What the window of a chunk without a context starts from: preset dictionary 1, whatever the chunk's format. */
export function chainRoot(): Buffer {
  const root = PRESET_DICTIONARIES.get(1);
  if (root === undefined) throw new RangeError('no preset dictionary 1');
  return root;
}

/** A chunk written before, whose window a new chunk is deflated against (format 4). */
export interface SealContext {
  id: string;
  depth: number;
  window: Uint8Array;
  /** @default 'chunk' */
  kind?: ContextKind;
}

/**
 * Seals `plaintext` (whose id is `id`, from {@link objectId} with the same key), deflated with the
 * preset dictionary numbered `dictionary` when given (0: none), or with `context`'s window (then
 * `dictionary` must be given: the object names it too). Deterministic. Says whether the context
 * was used (not when the object is stored uncompressed) and the dictionary it was deflated with.
 */
export function sealObject(
  plaintext: Uint8Array,
  id: string,
  key: CodecKey | undefined,
  compressionLevel = 6,
  dictionary = 0,
  context?: SealContext,
): Buffer {
  return sealWithContext(plaintext, id, key, compressionLevel, dictionary, context).sealed;
}

/** {@link sealObject}, saying whether the context was used (an object stored uncompressed uses none) and what the object's window starts from ({@link windowAfter}). */
export function sealWithContext(
  plaintext: Uint8Array,
  id: string,
  key: CodecKey | undefined,
  compressionLevel: number,
  dictionary: number,
  context: SealContext | undefined,
  preferSmaller = false,
  bindsContext = false,
): { sealed: Buffer; context: SealContext | undefined; before: Uint8Array } {
  const preset = dictionary === 0 ? undefined : PRESET_DICTIONARIES.get(dictionary);
  if (dictionary !== 0 && preset === undefined) throw new RangeError(`no preset dictionary ${dictionary}`);
  if (context !== undefined && (preset === undefined || context.depth >= MAX_CONTEXT_DEPTH))
    throw new RangeError('a context needs a preset dictionary and a depth under MAX_CONTEXT_DEPTH');
  let compressed: Buffer | undefined;
  let usedContext: SealContext | undefined;
  // A chunk whose id binds its context (contextualId) is always deflated against it, however small.
  if (plaintext.length >= MIN_COMPRESS_BYTES || (context !== undefined && !preferSmaller)) {
    compressed =
      preset === undefined
        ? deflateRawSync(plaintext, { level: compressionLevel })
        : Buffer.concat([
            Uint8Array.of(dictionary),
            deflateRawSync(plaintext, { level: compressionLevel, dictionary: preset }),
          ]);
    if (context !== undefined) {
      const against = Buffer.concat([
        Uint8Array.of(dictionary, context.depth + 1),
        Buffer.from(context.id, 'hex'),
        deflateRawSync(plaintext, { level: compressionLevel, dictionary: context.window }),
      ]);
      if (!preferSmaller || against.length < compressed.length) {
        compressed = against;
        usedContext = context;
      }
    }
  }
  const useCompression =
    compressed !== undefined && (compressed.length < plaintext.length || (usedContext !== undefined && !preferSmaller));
  const body = compressed !== undefined && useCompression ? compressed : plaintext;
  if (!useCompression) usedContext = undefined;
  const flags =
    (useCompression ? FLAG_DEFLATE | (preset === undefined ? 0 : FLAG_DICTIONARY) : 0) |
    (usedContext === undefined
      ? 0
      : FLAG_CONTEXT |
        (usedContext.kind === 'manifest' ? FLAG_CONTEXT_MANIFEST : 0) |
        (bindsContext ? FLAG_BOUND : 0)) |
    (key === undefined ? 0 : FLAG_ENCRYPTED);
  return { sealed: seal(body, flags, id, key), context: usedContext, before: usedContext?.window ?? chainRoot() };
}

function seal(body: Uint8Array, flags: number, id: string, key: CodecKey | undefined): Buffer {
  if (key === undefined) return Buffer.concat([Uint8Array.from(MAGIC), Uint8Array.of(flags), body]);
  const keyId = Buffer.from(key.id, 'ascii');
  // The name is a keyed MAC of the plaintext, so the nonce repeats only when the plaintext does,
  // and then the whole object repeats too: nothing leaks beyond "these two chunks are equal".
  const nonce = Buffer.from(id, 'hex').subarray(0, NONCE_BYTES);
  const header = Buffer.concat([Uint8Array.from(MAGIC), Uint8Array.of(flags, keyId.length), keyId, nonce]);
  const cipher = createCipheriv('aes-256-gcm', key.chunkKey, nonce);
  cipher.setAAD(header);
  return Buffer.concat([header, cipher.update(body), cipher.final(), cipher.getAuthTag()]);
}

/** The key id a sealed object was encrypted with (undefined: not encrypted). Throws on a malformed header. */
export function sealedKeyId(sealed: Uint8Array, objectKey: string): string | undefined {
  if (sealed.length < 5 || MAGIC.some((byte, index) => sealed[index] !== byte))
    throw new ChunkIntegrityError(objectKey, 'not a temporal-compactor object (bad header)');
  const flags = sealed[4] ?? 0;
  if ((flags & FLAG_ENCRYPTED) === 0) return undefined;
  const length = sealed[5] ?? 0;
  if (length === 0 || sealed.length < 6 + length + NONCE_BYTES + TAG_BYTES)
    throw new ChunkIntegrityError(objectKey, 'truncated header');
  return Buffer.from(sealed.subarray(6, 6 + length)).toString('ascii');
}

/**
 * Opens a sealed object fetched as `id` and verifies it. `expectedKeyId` is the key the claim
 * says the payload was stored with (undefined: stored without encryption); an object sealed
 * otherwise is rejected, so a plaintext object cannot stand in for an encrypted one.
 *
 * @throws ChunkIntegrityError when the object is malformed, fails authentication, or does not hash to `id`.
 * @throws PayloadKeyMissingError when the key it was encrypted with is not in `keyring`.
 */
export function openObject(
  sealed: Uint8Array,
  id: string,
  objectKey: string,
  expectedKeyId: string | undefined,
  keyring: Keyring | undefined,
): Uint8Array {
  const unsealed = unsealObject(sealed, objectKey, expectedKeyId, keyring);
  if (unsealed.context !== undefined)
    throw new ChunkIntegrityError(objectKey, 'is compressed against a context chunk, which only a chunk may be');
  return inflateObject(unsealed, id, objectKey, undefined, 'manifest').plaintext;
}

/** An object decrypted and its header read, not yet inflated: a chunk with a context needs the context's window first. */
export interface UnsealedObject {
  flags: number;
  key: CodecKey | undefined;
  body: Uint8Array;
  /** The preset dictionary it names (bit 2). */
  dictionary: Buffer | undefined;
  /** The object whose window it was deflated with (bit 3; a manifest with bit 4), and its own depth (1 + the context's). */
  context: { id: string; depth: number; kind: ContextKind } | undefined;
  /** Bit 5: a manifest or node named by its context and plaintext ({@link contextualId}), as a chunk with a context always is. */
  bound: boolean;
}

/**
 * Decrypts a sealed object fetched as `objectKey` and reads its header (see {@link openObject} for
 * what `expectedKeyId` checks).
 *
 * @throws ChunkIntegrityError when the object is malformed or fails authentication.
 * @throws PayloadKeyMissingError when the key it was encrypted with is not in `keyring`.
 */
export function unsealObject(
  sealed: Uint8Array,
  objectKey: string,
  expectedKeyId: string | undefined,
  keyring: Keyring | undefined,
): UnsealedObject {
  const keyId = sealedKeyId(sealed, objectKey);
  if (keyId !== expectedKeyId) {
    throw new ChunkIntegrityError(
      objectKey,
      `sealed ${keyId === undefined ? 'without encryption' : `with key id ${JSON.stringify(keyId)}`}, but its payload was stored ${expectedKeyId === undefined ? 'without encryption' : `with key id ${JSON.stringify(expectedKeyId)}`}`,
    );
  }
  const flags = sealed[4] ?? 0;
  if ((flags & ~KNOWN_FLAGS) !== 0)
    throw new ChunkIntegrityError(
      objectKey,
      `has header flags ${flags} this version does not know (written by a newer one)`,
    );
  if ((flags & (FLAG_CONTEXT_MANIFEST | FLAG_BOUND)) !== 0 && (flags & FLAG_CONTEXT) === 0)
    throw new ChunkIntegrityError(objectKey, 'says what its context is but names none (malformed header)');
  let key: CodecKey | undefined;
  let body: Uint8Array;
  if (keyId === undefined) {
    body = sealed.subarray(5);
  } else {
    key = keyring?.byId.get(keyId);
    if (key === undefined) throw new PayloadKeyMissingError(keyId, `payload store object ${objectKey}`);
    const headerLength = 6 + keyId.length + NONCE_BYTES;
    const decipher = createDecipheriv(
      'aes-256-gcm',
      key.chunkKey,
      sealed.subarray(headerLength - NONCE_BYTES, headerLength),
    );
    decipher.setAAD(sealed.subarray(0, headerLength));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    try {
      body = Buffer.concat([
        decipher.update(sealed.subarray(headerLength, sealed.length - TAG_BYTES)),
        decipher.final(),
      ]);
    } catch {
      throw new ChunkIntegrityError(
        objectKey,
        `failed authentication under key id ${JSON.stringify(keyId)} (altered, or another key was configured under that id)`,
      );
    }
  }
  let dictionary: Buffer | undefined;
  let context: UnsealedObject['context'];
  if ((flags & FLAG_DICTIONARY) !== 0) {
    const number = body[0] ?? 0;
    dictionary = PRESET_DICTIONARIES.get(number);
    if ((flags & FLAG_DEFLATE) === 0 || dictionary === undefined)
      throw new ChunkIntegrityError(
        objectKey,
        (flags & FLAG_DEFLATE) === 0
          ? 'names a preset dictionary but is not compressed (malformed header)'
          : `is compressed with preset dictionary ${number}, which this version does not know (written by a newer one)`,
      );
    body = body.subarray(1);
    if ((flags & FLAG_CONTEXT) !== 0) {
      const depth = body[0] ?? 0;
      if (body.length < 33 || depth < 1 || depth > MAX_CONTEXT_DEPTH)
        throw new ChunkIntegrityError(
          objectKey,
          depth > MAX_CONTEXT_DEPTH
            ? `is on a chain of ${depth} context chunks (at most ${MAX_CONTEXT_DEPTH})`
            : 'names a context chunk in a malformed header',
        );
      context = {
        depth,
        id: Buffer.from(body.subarray(1, 33)).toString('hex'),
        kind: (flags & FLAG_CONTEXT_MANIFEST) === 0 ? 'chunk' : 'manifest',
      };
      body = body.subarray(33);
    }
  } else if ((flags & FLAG_CONTEXT) !== 0)
    throw new ChunkIntegrityError(objectKey, 'names a context chunk but no preset dictionary (malformed header)');
  return { flags, key, body, dictionary, context, bound: (flags & FLAG_BOUND) !== 0 };
}

/**
 * Inflates an unsealed object — with the window of its context chunk, when it names one — and
 * checks that its plaintext hashes to `id`. Returns the plaintext and what its window starts from
 * ({@link windowAfter}: the context's window, else {@link chainRoot}).
 *
 * @throws ChunkIntegrityError when it does not inflate or does not hash to `id`.
 */
export function inflateObject(
  unsealed: UnsealedObject,
  id: string,
  objectKey: string,
  contextWindow: Uint8Array | undefined,
  kind: 'chunk' | 'node' | 'manifest' = 'chunk',
): { plaintext: Uint8Array; before: Uint8Array } {
  const { flags, key, body, context, bound } = unsealed;
  if (context !== undefined && contextWindow === undefined)
    throw new RangeError(`${objectKey} is compressed against context chunk ${context.id}: its window is needed`);
  const dictionary = context === undefined ? unsealed.dictionary : contextWindow;
  let plaintext: Uint8Array;
  try {
    plaintext =
      (flags & FLAG_DEFLATE) === 0
        ? body
        : dictionary === undefined
          ? inflateRawSync(body)
          : inflateRawSync(body, { dictionary });
  } catch {
    throw new ChunkIntegrityError(objectKey, 'does not inflate (corrupted)');
  }
  // A chunk deflated against a context is named by both (contextualId), and so is a manifest or
  // node that says so (bit 5, format 5); other manifests and nodes by their plaintext.
  const actual = Buffer.from(
    context !== undefined && (kind === 'chunk' || bound)
      ? contextualId(plaintext, context.id, key, context.kind)
      : objectId(plaintext, key),
    'hex',
  );
  const expected = Buffer.from(id, 'hex');
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected))
    throw new ChunkIntegrityError(objectKey, 'content does not match its name (hash mismatch: corrupted or replaced)');
  return { plaintext, before: contextWindow ?? chainRoot() };
}
