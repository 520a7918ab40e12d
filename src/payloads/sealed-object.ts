// Node only: how one stored object (a chunk, a node, a manifest) is named, sealed and opened; the
// layout is in docs/payloads.md#objects. Names are content addresses (SHA-256, or with a key an
// HMAC, so a name reveals nothing without the key). Sealing deflates, against the window of a context
// when there is one, and with a key encrypts with AES-256-GCM under a nonce derived from the exact
// bytes it encrypts (as SIV does): the same body gives the same object, and two different bodies
// under one name never share a nonce. Opening checks the header, the tag, the stated length before
// inflating, and that the plaintext hashes to the name it was fetched by.
import { createCipheriv, createDecipheriv, createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { CURRENT_DICTIONARY, PRESET_DICTIONARIES } from './dictionary.js';
import { ChunkIntegrityError, PayloadKeyMissingError } from './errors.js';
import type { CodecKey, Keyring } from './keyring.js';
import { MAX_OBJECT_BYTES, type ObjectKind } from './object-format.js';

const MAGIC = [0x63, 0x70, 0x73, 0x01];
const FLAG_DEFLATE = 1;
const FLAG_ENCRYPTED = 2;
const FLAG_CONTEXT = 4;
const FLAG_CONTEXT_MANIFEST = 8;
const KNOWN_FLAGS = 15;
/** The bytes of an object's window: its context's window and its plaintext, end to end, the last 32 KiB (deflate's reach). */
export const WINDOW_BYTES = 32 * 1024;
/** The longest chain of contexts a reader follows (an object's depth is at most this). */
export const MAX_CONTEXT_DEPTH = 64;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const CONTEXT_HEADER_BYTES = 1 + 32;
const LENGTH_BYTES = 4;
const MIN_COMPRESS_BYTES = 64;

/** Hex content address of a plaintext: HMAC-SHA256 with the key's MAC key, else SHA-256. */
export function objectId(plaintext: Uint8Array, key: CodecKey | undefined): string {
  return contextualId(plaintext, undefined, key);
}

/** An object's window: the last {@link WINDOW_BYTES} of `before` (its context's window, or {@link chainRoot}) followed by its plaintext. */
export function windowAfter(before: Uint8Array, plaintext: Uint8Array): Buffer {
  if (plaintext.length >= WINDOW_BYTES) return Buffer.from(plaintext.subarray(plaintext.length - WINDOW_BYTES));
  const keep = Math.min(before.length, WINDOW_BYTES - plaintext.length);
  return Buffer.concat([before.subarray(before.length - keep), plaintext]);
}

const CONTEXT_ID_PREFIX = Buffer.from('temporal-compactor context chunk\u0000', 'latin1');
const MANIFEST_CONTEXT_ID_PREFIX = Buffer.from('temporal-compactor context manifest\u0000', 'latin1');

/** What a context is: a chunk (a pack) or a manifest. */
export type ContextKind = 'chunk' | 'manifest';

/**
 * The id of a chunk or manifest deflated against `context` (none: {@link objectId}): its window depends
 * on the context's, so the id binds the context, and the same bytes against two contexts are two objects.
 */
export function contextualId(
  plaintext: Uint8Array,
  context: Pick<SealContext, 'id' | 'kind'> | undefined,
  key: CodecKey | undefined,
): string {
  const hash = key === undefined ? createHash('sha256') : createHmac('sha256', key.chunkMacKey);
  if (context !== undefined)
    hash
      .update(context.kind === 'chunk' ? CONTEXT_ID_PREFIX : MANIFEST_CONTEXT_ID_PREFIX)
      .update(Buffer.from(context.id, 'hex'));
  return hash.update(plaintext).digest('hex');
}

/** What the window of an object without a context starts from: preset dictionary 1. */
export function chainRoot(): Buffer {
  const root = PRESET_DICTIONARIES.get(1);
  if (root === undefined) throw new RangeError('no preset dictionary 1');
  return root;
}

/** An object written before, whose window a new object is deflated against. */
export interface SealContext {
  id: string;
  kind: ContextKind;
  /** 0: the context has no context of its own. */
  depth: number;
  window: Uint8Array;
}

export interface SealOptions {
  /** zlib level. @default 6 */
  compressionLevel?: number;
  /** The object to deflate against (else the preset dictionary). */
  context?: SealContext | undefined;
  /** Use the context, or deflating, only when that makes the object smaller (a node, named by its plaintext). @default false */
  contextIfSmaller?: boolean;
}

/** Seals `plaintext`, deterministically; says which context was used and what its window starts from. */
export function sealObject(
  plaintext: Uint8Array,
  key: CodecKey | undefined,
  { compressionLevel = 6, context, contextIfSmaller = false }: SealOptions = {},
): { sealed: Buffer; context: SealContext | undefined; before: Uint8Array } {
  const preset = PRESET_DICTIONARIES.get(CURRENT_DICTIONARY);
  if (preset === undefined) throw new RangeError(`no preset dictionary ${CURRENT_DICTIONARY}`);
  if (context !== undefined && context.depth >= MAX_CONTEXT_DEPTH)
    throw new RangeError('a context needs a depth under MAX_CONTEXT_DEPTH');
  if (plaintext.length > MAX_OBJECT_BYTES)
    throw new RangeError(`an object of ${plaintext.length} bytes is over MAX_OBJECT_BYTES (${MAX_OBJECT_BYTES})`);
  const length = Buffer.alloc(LENGTH_BYTES);
  length.writeUInt32BE(plaintext.length);
  const deflated = (header: Uint8Array, dictionary: Uint8Array): Buffer =>
    Buffer.concat([header, length, deflateRawSync(plaintext, { level: compressionLevel, dictionary })]);
  const against = (on: SealContext): Buffer =>
    deflated(Buffer.concat([Uint8Array.of(CURRENT_DICTIONARY, on.depth + 1), Buffer.from(on.id, 'hex')]), on.window);
  // The context when it must be used, else the smallest of the plaintext and its deflations.
  let body: Uint8Array = plaintext;
  let used: SealContext | undefined;
  if (context !== undefined && !contextIfSmaller) {
    body = against(context);
    used = context;
  } else if (plaintext.length >= MIN_COMPRESS_BYTES) {
    const withPreset = deflated(Uint8Array.of(CURRENT_DICTIONARY), preset);
    if (withPreset.length < body.length) body = withPreset;
    const withContext = context === undefined ? undefined : against(context);
    if (withContext !== undefined && withContext.length < body.length) {
      body = withContext;
      used = context;
    }
  }
  const flags =
    (body === plaintext ? 0 : FLAG_DEFLATE) |
    (used === undefined ? 0 : FLAG_CONTEXT | (used.kind === 'manifest' ? FLAG_CONTEXT_MANIFEST : 0)) |
    (key === undefined ? 0 : FLAG_ENCRYPTED);
  return { sealed: seal(body, flags, key), context: used, before: used?.window ?? chainRoot() };
}

function seal(body: Uint8Array, flags: number, key: CodecKey | undefined): Buffer {
  if (key === undefined) return Buffer.concat([Uint8Array.from(MAGIC), Uint8Array.of(flags), body]);
  const keyId = Buffer.from(key.id, 'ascii');
  const prefix = Buffer.concat([Uint8Array.from(MAGIC), Uint8Array.of(flags, keyId.length), keyId]);
  // The nonce repeats only when the whole object does, which leaks no more than "these two are equal".
  const nonce = createHmac('sha256', key.chunkNonceKey).update(prefix).update(body).digest().subarray(0, NONCE_BYTES);
  const header = Buffer.concat([prefix, nonce]);
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

/** An object decrypted and its header read, not yet inflated (one with a context needs the context's window). */
export interface UnsealedObject {
  key: CodecKey | undefined;
  /** The preset dictionary it was deflated with (undefined: stored as it is). */
  dictionary: Buffer | undefined;
  /** The object whose window it was deflated against, and its own depth (1 + the context's). */
  context: { id: string; depth: number; kind: ContextKind } | undefined;
  /** Deflated: the plaintext's length as the object states it (at most {@link MAX_OBJECT_BYTES}). */
  length: number | undefined;
  /** What is left to inflate (or, not deflated, the plaintext). */
  body: Uint8Array;
}

/**
 * Decrypts a sealed object and reads its header. An object sealed otherwise than `expectedKeyId` (the
 * claim's key; undefined: none) is refused, so a plaintext object cannot stand in for an encrypted one.
 */
export function unsealObject(
  sealed: Uint8Array,
  objectKey: string,
  expectedKeyId: string | undefined,
  keyring: Keyring | undefined,
): UnsealedObject {
  const broken = (what: string): ChunkIntegrityError => new ChunkIntegrityError(objectKey, what);
  const keyId = sealedKeyId(sealed, objectKey);
  if (keyId !== expectedKeyId)
    throw broken(
      `sealed ${keyId === undefined ? 'without encryption' : `with key id ${JSON.stringify(keyId)}`}, but its payload was stored ${expectedKeyId === undefined ? 'without encryption' : `with key id ${JSON.stringify(expectedKeyId)}`}`,
    );
  const flags = sealed[4] ?? 0;
  if ((flags & ~KNOWN_FLAGS) !== 0) throw broken(`has header flags ${flags} this version does not know`);
  if ((flags & FLAG_CONTEXT_MANIFEST) !== 0 && (flags & FLAG_CONTEXT) === 0)
    throw broken('says what its context is but names none (malformed header)');
  if ((flags & FLAG_CONTEXT) !== 0 && (flags & FLAG_DEFLATE) === 0)
    throw broken('names a context but is not deflated (malformed header)');
  let key: CodecKey | undefined;
  let body: Uint8Array = sealed.subarray(5);
  if (keyId !== undefined) {
    key = keyring?.byId.get(keyId);
    if (key === undefined) throw new PayloadKeyMissingError(keyId, `payload store object ${objectKey}`);
    const headerLength = 6 + keyId.length + NONCE_BYTES;
    const nonce = sealed.subarray(headerLength - NONCE_BYTES, headerLength);
    const decipher = createDecipheriv('aes-256-gcm', key.chunkKey, nonce);
    decipher.setAAD(sealed.subarray(0, headerLength));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    const ciphertext = sealed.subarray(headerLength, sealed.length - TAG_BYTES);
    try {
      body = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
    } catch {
      throw broken(
        `failed authentication under key id ${JSON.stringify(keyId)} (altered, or another key was configured under that id)`,
      );
    }
  }
  if ((flags & FLAG_DEFLATE) === 0) return { key, dictionary: undefined, context: undefined, length: undefined, body };
  const number = body[0];
  const dictionary = number === undefined ? undefined : PRESET_DICTIONARIES.get(number);
  if (dictionary === undefined)
    throw broken(
      number === undefined
        ? 'is deflated but empty (malformed)'
        : `is deflated with preset dictionary ${number}, which this version does not know`,
    );
  body = body.subarray(1);
  let context: UnsealedObject['context'];
  if ((flags & FLAG_CONTEXT) !== 0) {
    const depth = body[0] ?? 0;
    if (body.length < CONTEXT_HEADER_BYTES || depth < 1 || depth > MAX_CONTEXT_DEPTH)
      throw broken(
        depth > MAX_CONTEXT_DEPTH
          ? `is on a chain of ${depth} contexts (at most ${MAX_CONTEXT_DEPTH})`
          : 'names a context in a malformed header',
      );
    const id = Buffer.from(body.subarray(1, CONTEXT_HEADER_BYTES)).toString('hex');
    context = { depth, id, kind: (flags & FLAG_CONTEXT_MANIFEST) === 0 ? 'chunk' : 'manifest' };
    body = body.subarray(CONTEXT_HEADER_BYTES);
  }
  // The plaintext's length, checked before anything is inflated.
  if (body.length < LENGTH_BYTES) throw broken('is deflated but truncated (malformed)');
  const length = Buffer.from(body.buffer, body.byteOffset, LENGTH_BYTES).readUInt32BE(0);
  if (length > MAX_OBJECT_BYTES)
    throw broken(`states a plaintext of ${length} bytes, more than the ${MAX_OBJECT_BYTES} any object has`);
  return { key, dictionary, context, length, body: body.subarray(LENGTH_BYTES) };
}

/** Inflates an unsealed object, never past the length it states, and checks that its plaintext hashes to `id`. */
export function inflateObject(
  unsealed: UnsealedObject,
  kind: ObjectKind,
  id: string,
  objectKey: string,
  contextWindow: Uint8Array | undefined,
): { plaintext: Uint8Array; before: Uint8Array } {
  const { key, body, context, length = 0 } = unsealed;
  if (context !== undefined && contextWindow === undefined)
    throw new RangeError(`${objectKey} is deflated against ${context.kind} ${context.id}: its window is needed`);
  const dictionary = context === undefined ? unsealed.dictionary : contextWindow;
  let plaintext: Uint8Array;
  try {
    // One byte more than stated: zlib refuses to go further, so an object costs what it states.
    plaintext = dictionary === undefined ? body : inflateRawSync(body, { dictionary, maxOutputLength: length + 1 });
  } catch (error) {
    throw new ChunkIntegrityError(
      objectKey,
      error instanceof RangeError
        ? `inflates to more than the ${length} bytes it states`
        : 'does not inflate (corrupted)',
    );
  }
  if (dictionary !== undefined && plaintext.length !== length)
    throw new ChunkIntegrityError(objectKey, `inflates to ${plaintext.length} bytes where it states ${length}`);
  const actual = Buffer.from(contextualId(plaintext, kind === 'node' ? undefined : context, key), 'hex');
  const expected = Buffer.from(id, 'hex');
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected))
    throw new ChunkIntegrityError(objectKey, 'content does not match its name (hash mismatch: corrupted or replaced)');
  return { plaintext, before: contextWindow ?? chainRoot() };
}
