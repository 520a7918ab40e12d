// Node only: the encryption keys of the payload codec and the chunk store. One key encrypts
// (the current one); every configured key decrypts, found by the key id written next to the
// ciphertext, so keys can rotate without making older histories or stored chunks unreadable.
import { createHash, hkdfSync } from 'node:crypto';

/** AES-256: 32-byte keys. */
export const KEY_BYTES = 32;

/** Key ids travel in payload metadata and in object headers: short, printable, no separators that need escaping. */
export const KEY_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** One 256-bit key with its id and the sub-keys derived from it (never the raw key for two purposes). */
export interface CodecKey {
  readonly id: string;
  /** AES-256-GCM key of the payload codec (inline payloads, random nonces). */
  readonly codecKey: Buffer;
  /** AES-256-GCM key of stored objects. */
  readonly chunkKey: Buffer;
  /** HMAC-SHA256 key that names stored objects: equal plaintexts get equal ids, but ids say nothing without the key. */
  readonly chunkMacKey: Buffer;
  /** HMAC-SHA256 key that derives a stored object's nonce from the exact bytes it encrypts (sealed-object.ts). */
  readonly chunkNonceKey: Buffer;
}

/** The keys a process holds: `current` encrypts; every key (current first) decrypts. */
export interface Keyring {
  readonly current: CodecKey;
  /** Every key by id, the current one included. */
  readonly byId: ReadonlyMap<string, CodecKey>;
}

/** A key setting is malformed. `setting` names it (the caller's config layer turns this into a ConfigError). */
export class KeyFormatError extends Error {
  override readonly name = 'KeyFormatError';
  constructor(
    readonly setting: string,
    readonly expected: string,
  ) {
    super(`${setting}: expected ${expected}`);
  }
}

function derive(key: Buffer, purpose: string): Buffer {
  // HKDF with a fixed salt: the input is already a uniformly random key; the info string keeps the
  // codec, object-encryption, object-naming and nonce keys independent, so a flaw in one use cannot leak another.
  return Buffer.from(hkdfSync('sha256', key, 'temporal-compactor', `temporal-compactor ${purpose} v1`, KEY_BYTES));
}

/**
 * The default id of a key: `k-` and 8 hex digits of a hash of it. Stable for the key, so the same
 * key gets the same id on every worker and client without anyone choosing one; reveals nothing useful.
 */
export function defaultKeyId(key: Uint8Array): string {
  return `k-${createHash('sha256').update('temporal-compactor key id').update(key).digest('hex').slice(0, 8)}`;
}

/** Builds a key from its 32 raw bytes; `id` defaults to {@link defaultKeyId}. */
export function codecKey(raw: Uint8Array, id: string = defaultKeyId(raw)): CodecKey {
  if (raw.length !== KEY_BYTES) throw new RangeError(`an AES-256 key has ${KEY_BYTES} bytes, got ${raw.length}`);
  if (!KEY_ID_PATTERN.test(id)) throw new RangeError(`key id ${JSON.stringify(id)} must match ${KEY_ID_PATTERN}`);
  const key = Buffer.from(raw);
  return {
    id,
    codecKey: derive(key, 'payload codec'),
    chunkKey: derive(key, 'chunk encryption'),
    chunkMacKey: derive(key, 'chunk id'),
    chunkNonceKey: derive(key, 'chunk nonce'),
  };
}

/** Decodes base64 (standard or URL-safe, padding optional) to exactly 32 bytes, or undefined. */
export function decodeKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) return undefined;
  const bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return bytes.length === KEY_BYTES ? bytes : undefined;
}

/**
 * The keyring of the settings: `COMPACTOR_CODEC_KEY` (base64, 32 bytes) with the id
 * `COMPACTOR_CODEC_KEY_ID` (default {@link defaultKeyId}), plus older keys for decoding only from
 * `COMPACTOR_CODEC_OLD_KEYS`: comma-separated `ID:BASE64` (or `BASE64`, id by default).
 * Returns undefined when no key is set (no encryption).
 *
 * @throws KeyFormatError naming the setting at fault.
 */
export function keyringFromSettings(settings: {
  key?: string | undefined;
  keyId?: string | undefined;
  oldKeys?: string | undefined;
}): Keyring | undefined {
  if (settings.key === undefined) {
    if (settings.keyId !== undefined)
      throw new KeyFormatError(
        'COMPACTOR_CODEC_KEY_ID',
        'COMPACTOR_CODEC_KEY to be set as well (a key id names a key)',
      );
    if (settings.oldKeys !== undefined)
      throw new KeyFormatError(
        'COMPACTOR_CODEC_OLD_KEYS',
        'COMPACTOR_CODEC_KEY to be set as well (old keys only decrypt; the current key encrypts)',
      );
    return undefined;
  }
  const raw = decodeKey(settings.key);
  if (raw === undefined)
    throw new KeyFormatError(
      'COMPACTOR_CODEC_KEY',
      `base64 of exactly ${KEY_BYTES} random bytes, e.g. from \`openssl rand -base64 32\``,
    );
  if (settings.keyId !== undefined && !KEY_ID_PATTERN.test(settings.keyId)) {
    throw new KeyFormatError('COMPACTOR_CODEC_KEY_ID', '1-64 characters of A-Z, a-z, 0-9, ".", "_" or "-"');
  }
  const current = codecKey(raw, settings.keyId);
  const byId = new Map<string, CodecKey>([[current.id, current]]);
  const entries = (settings.oldKeys ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  entries.forEach((entry, index) => {
    const colon = entry.indexOf(':');
    const id = colon < 0 ? undefined : entry.slice(0, colon).trim();
    const oldRaw = decodeKey(colon < 0 ? entry : entry.slice(colon + 1));
    if (oldRaw === undefined || (id !== undefined && !KEY_ID_PATTERN.test(id))) {
      throw new KeyFormatError(
        'COMPACTOR_CODEC_OLD_KEYS',
        `comma-separated ID:BASE64 entries (ID optional) of ${KEY_BYTES}-byte keys; entry ${index + 1} is not one`,
      );
    }
    const old = codecKey(oldRaw, id);
    const known = byId.get(old.id);
    if (known !== undefined) {
      // The same id for two different keys would make decoding pick one at random; the same key twice is harmless.
      if (!known.codecKey.equals(old.codecKey))
        throw new KeyFormatError(
          'COMPACTOR_CODEC_OLD_KEYS',
          `distinct key ids; entry ${index + 1} reuses the id ${JSON.stringify(old.id)} for another key`,
        );
      return;
    }
    byId.set(old.id, old);
  });
  return { current, byId };
}

/** A keyring from keys already built (tests, embedding apps): the first encrypts. */
export function keyringOf(current: CodecKey, ...older: CodecKey[]): Keyring {
  const byId = new Map<string, CodecKey>();
  for (const key of [current, ...older]) if (!byId.has(key.id)) byId.set(key.id, key);
  return { current, byId };
}
