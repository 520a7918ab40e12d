// Node only: the encryption keys of the codec and the chunk store. The current key encrypts; every
// key decrypts, found by the key id written next to the ciphertext, so keys rotate without making
// older histories or stored objects unreadable.
import { createHash, hkdfSync } from 'node:crypto';

export const KEY_BYTES = 32;

/** Key ids travel in payload metadata and object headers: short, printable, nothing to escape. */
export const KEY_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** One 256-bit key with its id and the sub-keys derived from it (never the raw key for two purposes). */
export interface CodecKey {
  readonly id: string;
  readonly codecKey: Buffer;
  readonly chunkKey: Buffer;
  /** Names stored objects: equal plaintexts get equal ids, which say nothing without the key. */
  readonly chunkMacKey: Buffer;
  readonly chunkNonceKey: Buffer;
}

export interface Keyring {
  readonly current: CodecKey;
  /** Every key by id, the current one included. */
  readonly byId: ReadonlyMap<string, CodecKey>;
}

/** A malformed key setting, named by `setting` (the config layer turns this into a ConfigError). */
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
  // The input is already uniformly random; the info string keeps each use's key independent.
  return Buffer.from(hkdfSync('sha256', key, 'temporal-compactor', `temporal-compactor ${purpose} v1`, KEY_BYTES));
}

/** `k-` and 8 hex digits of a hash of the key: the same id on every worker and client without anyone choosing one. */
export function defaultKeyId(key: Uint8Array): string {
  return `k-${createHash('sha256').update('temporal-compactor key id').update(key).digest('hex').slice(0, 8)}`;
}

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

/** Base64 (standard or URL-safe) of exactly 32 bytes, or undefined. */
export function decodeKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) return undefined;
  const bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return bytes.length === KEY_BYTES ? bytes : undefined;
}

/**
 * `COMPACTOR_CODEC_KEY` with the id `COMPACTOR_CODEC_KEY_ID`, plus keys that only decrypt from
 * `COMPACTOR_CODEC_OLD_KEYS` (comma-separated `ID:BASE64` or `BASE64`); undefined without a key.
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
  if (settings.keyId !== undefined && !KEY_ID_PATTERN.test(settings.keyId))
    throw new KeyFormatError('COMPACTOR_CODEC_KEY_ID', '1-64 characters of A-Z, a-z, 0-9, ".", "_" or "-"');
  const current = codecKey(raw, settings.keyId);
  const byId = new Map<string, CodecKey>([[current.id, current]]);
  const entries = (settings.oldKeys ?? '').split(',').filter((entry) => entry.trim() !== '');
  entries.forEach((entry, index) => {
    const colon = entry.indexOf(':');
    const id = colon < 0 ? undefined : entry.slice(0, colon).trim();
    const oldRaw = decodeKey(colon < 0 ? entry : entry.slice(colon + 1));
    if (oldRaw === undefined || (id !== undefined && !KEY_ID_PATTERN.test(id)))
      throw new KeyFormatError(
        'COMPACTOR_CODEC_OLD_KEYS',
        `comma-separated ID:BASE64 entries (ID optional) of ${KEY_BYTES}-byte keys; entry ${index + 1} is not one`,
      );
    const old = codecKey(oldRaw, id);
    const known = byId.get(old.id);
    // One id for two keys would make decoding pick one at random; the same key twice is harmless.
    if (known !== undefined && !known.codecKey.equals(old.codecKey))
      throw new KeyFormatError(
        'COMPACTOR_CODEC_OLD_KEYS',
        `distinct key ids; entry ${index + 1} reuses the id ${JSON.stringify(old.id)} for another key`,
      );
    if (known === undefined) byId.set(old.id, old);
  });
  return { current, byId };
}
