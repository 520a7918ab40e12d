// Node only: the payload codec. Compresses every payload that stays inline in workflow history
// and, with a key, encrypts it (AES-256-GCM, random nonce, key id in the metadata for rotation).
//
// Payloads the external store will take (at or over its threshold) pass through untouched: the
// SDK runs codecs before External Storage, and the chunk store dedups plaintext chunks and
// compresses and encrypts each chunk itself. Compressing or encrypting (random nonce) the whole
// payload first would make every copy of the same conversation different bytes, and the store
// would grow with the whole conversation every round instead of with what is new.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { PayloadDecodeError, PayloadKeyMissingError } from './errors.js';
import type { Keyring } from './keyring.js';

const PayloadProto = proto.temporal.api.common.v1.Payload;

/** `encoding` of a payload this codec wrote. */
export const CODEC_ENCODING = 'binary/compactor';
/**
 * Metadata key of how the payload is encoded: `deflate` or `none` (raw deflate of the original
 * payload's protobuf bytes, or those bytes), then `;key=<id>` when encrypted. One short entry:
 * every inline payload of every round carries it.
 */
export const CODEC_METADATA_KEY = 'compactor';

/** How a payload this codec wrote is encoded. */
export interface CodecEnvelope {
  compression: 'deflate' | 'none';
  /** The id of the key that encrypted it; undefined: not encrypted. */
  keyId: string | undefined;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
// Below this, deflate's own framing eats the gain: such payloads are only encrypted (or left alone).
const MIN_COMPRESS_BYTES = 64;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/**
 * The size External Storage compares with its threshold: the payload's protobuf encoding, measured
 * exactly as the SDK's runner measures it, so the codec and the store agree on which side of the
 * threshold a payload is.
 */
export function payloadProtoSize(payload: Payload): number {
  return PayloadProto.encode(payload).pos;
}

export interface CompactorCodecOptions {
  /** Encrypts with `current`, decrypts with any key by id. @default undefined — compression only */
  keyring?: Keyring;
  /**
   * Leave payloads of at least this many bytes (protobuf size) untouched: External Storage with
   * the same threshold takes them. Set it only when that storage is configured in the same data
   * converter — otherwise large payloads would reach history unencrypted.
   * @default undefined — encode every payload
   */
  passThroughAtOrAbove?: number;
  /** zlib level of inline payloads. @default 6 */
  compressionLevel?: number;
  /**
   * Without a key, payloads under this many bytes stay as they are: compression saves little
   * there, and they (activity summaries, small results) stay readable in the Temporal UI without
   * a codec server. With a key every payload is encrypted. @default 512
   */
  plainBelow?: number;
}

function additionalData(compression: string, keyId: string): Uint8Array {
  // Binds the metadata that steers decoding to the ciphertext: flipping "compression" or the key id fails authentication.
  return utf8.encode(`temporal-compactor codec v1\u0000${compression}\u0000${keyId}`);
}

function metadataText(payload: Payload, key: string): string | undefined {
  const value = payload.metadata?.[key];
  return value === undefined || value === null ? undefined : fromUtf8.decode(value);
}

/**
 * How `payload` is encoded if this codec wrote it; undefined for any other payload.
 * @throws PayloadDecodeError when it claims to be ours but its description is malformed.
 */
export function codecEnvelopeOf(payload: Payload): CodecEnvelope | undefined {
  if (metadataText(payload, 'encoding') !== CODEC_ENCODING) return undefined;
  const description = metadataText(payload, CODEC_METADATA_KEY) ?? '';
  const match = /^(deflate|none)(?:;key=([A-Za-z0-9._-]{1,64}))?$/.exec(description);
  if (match === null)
    throw new PayloadDecodeError(
      `payload encoded by temporal-compactor has a malformed ${JSON.stringify(CODEC_METADATA_KEY)} entry ${JSON.stringify(description)}`,
    );
  return { compression: match[1] === 'deflate' ? 'deflate' : 'none', keyId: match[2] };
}

/**
 * The compactor's payload codec: deflate for every inline payload, AES-256-GCM when a keyring is
 * given. Decoding passes foreign payloads (another encoding, or written before the codec was on)
 * through unchanged.
 *
 * @example
 * const codec = new CompactorCodec({ keyring: keyringFromSettings({ key: process.env.COMPACTOR_CODEC_KEY }) });
 * const client = new Client({ connection, dataConverter: { payloadCodecs: [codec] } });
 */
export class CompactorCodec implements PayloadCodec {
  readonly keyring: Keyring | undefined;
  readonly passThroughAtOrAbove: number | undefined;
  readonly compressionLevel: number;
  readonly plainBelow: number;

  constructor({ keyring, passThroughAtOrAbove, compressionLevel = 6, plainBelow = 512 }: CompactorCodecOptions = {}) {
    this.keyring = keyring;
    this.passThroughAtOrAbove = passThroughAtOrAbove;
    this.compressionLevel = compressionLevel;
    this.plainBelow = plainBelow;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encodeOne(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.decodeOne(payload));
  }

  /** Encodes one payload (synchronous; `encode` is the codec interface). */
  encodeOne(payload: Payload): Payload {
    const size = payloadProtoSize(payload);
    if (this.passThroughAtOrAbove !== undefined && size >= this.passThroughAtOrAbove) return payload;
    if (this.keyring === undefined && size < this.plainBelow) return payload;
    const inner = PayloadProto.encode(payload).finish();
    const compressed =
      inner.length >= MIN_COMPRESS_BYTES ? deflateRawSync(inner, { level: this.compressionLevel }) : undefined;
    const useCompression = compressed !== undefined && compressed.length < inner.length;
    const compression = useCompression ? 'deflate' : 'none';
    const body = useCompression ? compressed : inner;
    const key = this.keyring?.current;
    if (key === undefined) {
      // Without encryption, wrapping a payload that does not shrink would only add bytes.
      if (!useCompression) return payload;
      return {
        metadata: { encoding: utf8.encode(CODEC_ENCODING), [CODEC_METADATA_KEY]: utf8.encode(compression) },
        data: body,
      };
    }
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key.codecKey, nonce);
    cipher.setAAD(additionalData(compression, key.id));
    const sealed = Buffer.concat([nonce, cipher.update(body), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: {
        encoding: utf8.encode(CODEC_ENCODING),
        [CODEC_METADATA_KEY]: utf8.encode(`${compression};key=${key.id}`),
      },
      data: sealed,
    };
  }

  /** Decodes one payload (synchronous; `decode` is the codec interface). */
  decodeOne(payload: Payload): Payload {
    const envelope = codecEnvelopeOf(payload);
    if (envelope === undefined) return payload;
    const { compression, keyId } = envelope;
    const data = payload.data ?? new Uint8Array(0);
    let body: Uint8Array = data;
    if (keyId !== undefined) {
      const key = this.keyring?.byId.get(keyId);
      if (key === undefined) throw new PayloadKeyMissingError(keyId, 'a payload');
      if (data.length < NONCE_BYTES + TAG_BYTES)
        throw new PayloadDecodeError(
          `encrypted payload (key id ${JSON.stringify(keyId)}) is truncated: ${data.length} bytes`,
        );
      const decipher = createDecipheriv('aes-256-gcm', key.codecKey, data.subarray(0, NONCE_BYTES));
      decipher.setAAD(additionalData(compression, keyId));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      try {
        body = Buffer.concat([decipher.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      } catch (error) {
        throw new PayloadDecodeError(
          `encrypted payload (key id ${JSON.stringify(keyId)}) failed authentication: it was altered, or the key configured under that id is not the one that encrypted it`,
          { cause: error },
        );
      }
    }
    let inner: Uint8Array;
    try {
      inner = compression === 'deflate' ? inflateRawSync(body) : body;
    } catch (error) {
      throw new PayloadDecodeError('payload encoded by temporal-compactor does not inflate: it is corrupted', {
        cause: error,
      });
    }
    try {
      const decoded = PayloadProto.decode(inner);
      return { metadata: decoded.metadata ?? {}, data: decoded.data ?? new Uint8Array(0) };
    } catch (error) {
      throw new PayloadDecodeError('payload encoded by temporal-compactor does not hold a payload: it is corrupted', {
        cause: error,
      });
    }
  }
}
