// Node only: the payload codec. Compresses every payload that stays inline in history and, with a
// key, encrypts it (AES-256-GCM, random nonce, key id in the metadata for rotation). A compressed
// payload states its decoded size, at most MAX_CODEC_PAYLOAD_BYTES, and decoding never inflates past
// it: anyone who can start or signal a workflow writes payloads a worker decodes.
//
// Payloads the store will take pass through untouched (the SDK runs codecs before External Storage):
// the store dedups plaintext chunks, and compressing or encrypting the whole payload first would make
// every copy of a conversation different bytes, so the store would grow by the whole conversation.
// Payloads marked for the UI (src/shared/ui-payload.ts) stay as written without a key, and keep their
// mark outside the ciphertext with one, so the store leaves them in history either way.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { PayloadDecodeError, PayloadKeyMissingError, PayloadTooLargeError } from './errors.js';
import type { Keyring } from './keyring.js';
import { UI_PAYLOAD_MAX_BYTES, UI_PAYLOAD_METADATA_KEY } from '../shared/ui-payload.js';

const PayloadProto = proto.temporal.api.common.v1.Payload;

export const CODEC_ENCODING = 'binary/compactor';
/** Metadata key of how the payload is encoded: `deflate;size=<N>` or `none`, then `;key=<id>` when encrypted. */
export const CODEC_METADATA_KEY = 'compactor';

/** 4 MiB, the default gRPC message limit of Temporal's frontend (twice its default payload limit, for servers that raise it). */
export const MAX_CODEC_PAYLOAD_BYTES = 4 * 1024 * 1024;

export interface CodecEnvelope {
  compression: 'deflate' | 'none';
  /** Deflated: the decoded size it states. */
  size?: number;
  keyId: string | undefined;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
// Below this, deflate's own framing eats the gain.
const MIN_COMPRESS_BYTES = 64;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** The size External Storage compares with its threshold, measured as the SDK's runner does. */
export function payloadProtoSize(payload: Payload): number {
  return PayloadProto.encode(payload).pos;
}

/**
 * Whether `payload` is marked for the UI (src/shared/ui-payload.ts) and small enough for the mark to
 * count: the codec leaves it readable without a key, and the store leaves it in history.
 */
export function isUiPayload(payload: Payload, size?: number): boolean {
  // The mark first: an unmarked payload (any large one the store is asked about) is never encoded to be measured.
  return (
    payload.metadata?.[UI_PAYLOAD_METADATA_KEY] != null && (size ?? payloadProtoSize(payload)) <= UI_PAYLOAD_MAX_BYTES
  );
}

export interface CompactorCodecOptions {
  /** Encrypts with `current`, decrypts with any key by id. @default undefined — compression only */
  keyring?: Keyring;
  /**
   * Leave payloads of at least this many bytes untouched for External Storage with the same threshold;
   * only with that storage configured, or large payloads reach history unencrypted. @default encode every payload
   */
  passThroughAtOrAbove?: number;
}

/** Without a key, payloads under this many bytes stay readable in the UI without a codec server. */
export const CODEC_PLAIN_BELOW = 512;

function compressionText({ compression, size }: CodecEnvelope): string {
  return compression === 'deflate' ? `deflate;size=${size ?? 0}` : 'none';
}

function additionalData(envelope: CodecEnvelope, keyId: string): Uint8Array {
  // Binds the metadata that steers decoding to the ciphertext.
  return utf8.encode(`temporal-compactor codec v1\u0000${compressionText(envelope)}\u0000${keyId}`);
}

function metadataText(payload: Payload, key: string): string | undefined {
  const value = payload.metadata?.[key];
  return value === undefined || value === null ? undefined : fromUtf8.decode(value);
}

const corrupt = (what: string, options?: ErrorOptions): PayloadDecodeError =>
  new PayloadDecodeError(`payload encoded by temporal-compactor ${what}`, options);

/** How `payload` is encoded if this codec wrote it; undefined for any other payload. */
export function codecEnvelopeOf(payload: Payload): CodecEnvelope | undefined {
  if (metadataText(payload, 'encoding') !== CODEC_ENCODING) return undefined;
  const description = metadataText(payload, CODEC_METADATA_KEY) ?? '';
  const match = /^(?:none|deflate;size=(0|[1-9][0-9]{0,9}))(?:;key=([A-Za-z0-9._-]{1,64}))?$/.exec(description);
  if (match === null)
    throw corrupt(`has a malformed ${JSON.stringify(CODEC_METADATA_KEY)} entry ${JSON.stringify(description)}`);
  const [, size, keyId] = match;
  return size === undefined ? { compression: 'none', keyId } : { compression: 'deflate', size: Number(size), keyId };
}

/** Deflate for every inline payload, AES-256-GCM with a keyring; decoding passes foreign payloads through. */
export class CompactorCodec implements PayloadCodec {
  constructor(readonly options: CompactorCodecOptions = {}) {}

  /** The same codec encoding every payload, none left for a store. */
  inlineOnly(): CompactorCodec {
    return new CompactorCodec({ keyring: this.options.keyring });
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encodeOne(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.decodeOne(payload));
  }

  /**
   * A payload over MAX_CODEC_PAYLOAD_BYTES is left for the server to judge, unless it must be
   * encrypted; one marked for the UI is left as it is unless it must be encrypted.
   */
  encodeOne(payload: Payload): Payload {
    const size = payloadProtoSize(payload);
    const forUi = isUiPayload(payload, size);
    const { keyring, passThroughAtOrAbove } = this.options;
    if (forUi && keyring === undefined) return payload;
    if (!forUi && passThroughAtOrAbove !== undefined && size >= passThroughAtOrAbove) return payload;
    if (keyring === undefined && size < CODEC_PLAIN_BELOW) return payload;
    const key = keyring?.current;
    if (size > MAX_CODEC_PAYLOAD_BYTES) {
      if (key === undefined) return payload;
      throw new PayloadTooLargeError(
        'a payload to encrypt inline',
        size,
        MAX_CODEC_PAYLOAD_BYTES,
        'no reader decodes more; configure a payload store (COMPACTOR_PAYLOAD_STORE), which takes large payloads out of history',
      );
    }
    const inner = PayloadProto.encode(payload).finish();
    const compressed = inner.length >= MIN_COMPRESS_BYTES ? deflateRawSync(inner) : undefined;
    const useCompression = compressed !== undefined && compressed.length < inner.length;
    // Without encryption, wrapping a payload that does not shrink would only add bytes.
    if (key === undefined && !useCompression) return payload;
    const compression = useCompression ? 'deflate' : 'none';
    const envelope: CodecEnvelope = { compression, size: inner.length, keyId: key?.id };
    let data: Uint8Array = useCompression ? compressed : inner;
    let description = compressionText(envelope);
    if (key !== undefined) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key.codecKey, nonce);
      cipher.setAAD(additionalData(envelope, key.id));
      data = Buffer.concat([nonce, cipher.update(data), cipher.final(), cipher.getAuthTag()]);
      description += `;key=${key.id}`;
    }
    const metadata = { encoding: utf8.encode(CODEC_ENCODING), [CODEC_METADATA_KEY]: utf8.encode(description) };
    const encoded: Payload = { metadata, data };
    if (!forUi) return encoded;
    // The mark outside the ciphertext (a routing hint for the store, not authenticated: it steers no decoding).
    const marked: Payload = { data, metadata: { ...metadata, [UI_PAYLOAD_METADATA_KEY]: utf8.encode('1') } };
    return isUiPayload(marked) ? marked : encoded;
  }

  /** A payload of ours without a key id is read with a key configured too (docs/payloads.md). */
  decodeOne(payload: Payload): Payload {
    const envelope = codecEnvelopeOf(payload);
    if (envelope === undefined) return payload;
    const { compression, size = 0, keyId } = envelope;
    const data = payload.data ?? new Uint8Array(0);
    if (compression === 'deflate' && size > MAX_CODEC_PAYLOAD_BYTES)
      throw corrupt(`states ${size} bytes decoded, more than the ${MAX_CODEC_PAYLOAD_BYTES} a payload may have`);
    if (data.length > MAX_CODEC_PAYLOAD_BYTES + NONCE_BYTES + TAG_BYTES)
      throw corrupt(`is ${data.length} bytes, more than a payload of at most ${MAX_CODEC_PAYLOAD_BYTES} bytes takes`);
    let body: Uint8Array = data;
    if (keyId !== undefined) {
      const key = this.options.keyring?.byId.get(keyId);
      if (key === undefined) throw new PayloadKeyMissingError(keyId, 'a payload');
      if (data.length < NONCE_BYTES + TAG_BYTES)
        throw new PayloadDecodeError(
          `encrypted payload (key id ${JSON.stringify(keyId)}) is truncated: ${data.length} bytes`,
        );
      const decipher = createDecipheriv('aes-256-gcm', key.codecKey, data.subarray(0, NONCE_BYTES));
      decipher.setAAD(additionalData(envelope, keyId));
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
    const inner = compression === 'deflate' ? inflateStated(body, size) : body;
    try {
      const decoded = PayloadProto.decode(inner);
      return { metadata: decoded.metadata ?? {}, data: decoded.data ?? new Uint8Array(0) };
    } catch (error) {
      throw corrupt('does not hold a payload: it is corrupted', { cause: error });
    }
  }
}

/** zlib stops one byte past the stated `size`, so a bomb costs no more than it states. */
function inflateStated(body: Uint8Array, size: number): Uint8Array {
  let inner: Buffer;
  try {
    inner = inflateRawSync(body, { maxOutputLength: size + 1 });
  } catch (error) {
    const what =
      error instanceof RangeError
        ? `inflates to more than the ${size} bytes it states`
        : 'does not inflate: it is corrupted';
    throw corrupt(what, { cause: error });
  }
  if (inner.length !== size) throw corrupt(`inflates to ${inner.length} bytes where it states ${size}`);
  return inner;
}
