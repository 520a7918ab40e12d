import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import {
  CODEC_ENCODING,
  codecEnvelopeOf,
  CompactorCodec,
  MAX_CODEC_PAYLOAD_BYTES,
  payloadProtoSize,
} from '../../src/payloads/codec.js';
import { codecKey, keyringFromSettings } from '../../src/payloads/keyring.js';
import { keyringOf } from '../support/keyring.js';
import { PayloadDecodeError, PayloadKeyMissingError, PayloadTooLargeError } from '../../src/payloads/errors.js';

const text = new TextDecoder();
const toPayload = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);
const fromPayload = (payload: Payload): unknown => defaultPayloadConverter.fromPayload(payload);
const conversation = {
  messages: Array.from({ length: 40 }, (_, index) => ({
    role: index % 2 === 0 ? 'assistant' : 'tool',
    content: `step ${index}: the build failed in module ${index % 7} with the same error again`,
  })),
};
const metadataText = (payload: Payload, key: string): string | undefined => {
  const value = payload.metadata?.[key];
  return value === undefined || value === null ? undefined : text.decode(value);
};

describe('CompactorCodec', () => {
  describe('without a key (compression only)', () => {
    const codec = new CompactorCodec();

    it('round-trips and shrinks a compressible payload', async () => {
      const original = toPayload(conversation);
      const [encoded] = await codec.encode([original]);
      if (encoded === undefined) throw new Error('no payload');
      expect(metadataText(encoded, 'encoding')).toBe(CODEC_ENCODING);
      const inner = proto.temporal.api.common.v1.Payload.encode(original).finish().length;
      expect(codecEnvelopeOf(encoded)).toEqual({ compression: 'deflate', size: inner, keyId: undefined });
      expect(metadataText(encoded, 'compactor')).toBe(`deflate;size=${inner}`);
      expect(encoded.data?.length).toBeLessThan((original.data?.length ?? 0) / 3);
      const [decoded] = await codec.decode([encoded]);
      if (decoded === undefined) throw new Error('no payload');
      expect(fromPayload(decoded)).toEqual(conversation);
    });

    it('leaves a payload that would not shrink as it is', async () => {
      const original = toPayload(randomBytes(2000));
      const [encoded] = await codec.encode([original]);
      expect(encoded).toBe(original);
    });

    it('leaves payloads under 512 bytes plain, readable in the UI without a codec server', async () => {
      const summary = toPayload(`summarize 27 messages (21,079 chars) ${'and more '.repeat(40)}`);
      expect(payloadProtoSize(summary)).toBeLessThan(512);
      const [encoded] = await codec.encode([summary]);
      expect(encoded).toBe(summary);
    });

    it('rejects a malformed encoding description, naming it', async () => {
      const [encoded] = await codec.encode([toPayload(conversation)]);
      if (encoded === undefined) throw new Error('no payload');
      const broken = { ...encoded, metadata: { ...encoded.metadata, compactor: new TextEncoder().encode('zstd') } };
      await expect(codec.decode([broken])).rejects.toThrow('malformed "compactor" entry "zstd"');
    });

    it('passes payloads it did not encode through decode unchanged', async () => {
      const foreign = toPayload({ written: 'before the codec was on' });
      const [decoded] = await codec.decode([foreign]);
      expect(decoded).toBe(foreign);
    });
  });

  describe('with a key (AES-256-GCM)', () => {
    const key = codecKey(randomBytes(32), 'k1');
    const codec = new CompactorCodec({ keyring: keyringOf(key) });

    it('round-trips small and large payloads, and writes the key id', async () => {
      for (const value of [null, 'x', conversation, { big: 'y'.repeat(300_000) }]) {
        const [encoded] = await codec.encode([toPayload(value)]);
        if (encoded === undefined) throw new Error('no payload');
        expect(codecEnvelopeOf(encoded)?.keyId).toBe('k1');
        const [decoded] = await codec.decode([encoded]);
        if (decoded === undefined) throw new Error('no payload');
        expect(fromPayload(decoded)).toEqual(value);
      }
    });

    it('never writes the plaintext, and two encodings of one payload differ (random nonce)', async () => {
      const secret = { note: 'canary-4d1f0c-plaintext-must-not-appear' };
      const [first, second] = await codec.encode([toPayload(secret), toPayload(secret)]);
      if (first === undefined || second === undefined) throw new Error('no payload');
      expect(Buffer.from(first.data ?? []).includes('canary-4d1f0c')).toBe(false);
      expect(Buffer.from(first.data ?? []).equals(Buffer.from(second.data ?? []))).toBe(false);
    });

    it('detects a flipped bit anywhere in the ciphertext (tamper detection)', async () => {
      const [encoded] = await codec.encode([toPayload(conversation)]);
      if (encoded?.data === undefined || encoded.data === null) throw new Error('no payload');
      for (const position of [0, 12, Math.floor(encoded.data.length / 2), encoded.data.length - 1]) {
        const tampered = Buffer.from(encoded.data);
        tampered[position] = (tampered[position] ?? 0) ^ 0x01;
        await expect(codec.decode([{ ...encoded, data: tampered }])).rejects.toThrow(PayloadDecodeError);
      }
    });

    it('detects metadata rewritten to steer decoding (compression and stated size bound to the ciphertext)', async () => {
      const [encoded] = await codec.encode([toPayload(conversation)]);
      if (encoded === undefined) throw new Error('no payload');
      const size = codecEnvelopeOf(encoded)?.size ?? 0;
      expect(metadataText(encoded, 'compactor')).toBe(`deflate;size=${size};key=k1`);
      for (const description of ['none;key=k1', `deflate;size=${size + 1};key=k1`]) {
        const rewritten = {
          ...encoded,
          metadata: { ...encoded.metadata, compactor: new TextEncoder().encode(description) },
        };
        await expect(codec.decode([rewritten])).rejects.toThrow(/failed authentication/);
      }
    });

    it(`refuses to encrypt inline a payload over ${MAX_CODEC_PAYLOAD_BYTES} bytes (no reader would decode it), naming the store`, async () => {
      const large = toPayload('x'.repeat(MAX_CODEC_PAYLOAD_BYTES));
      await expect(codec.encode([large])).rejects.toThrow(PayloadTooLargeError);
      await expect(codec.encode([large])).rejects.toThrow(
        /more than the 4194304 it may have: .*COMPACTOR_PAYLOAD_STORE/,
      );
      // Without a key it stays as it is: not ours, for the server to judge.
      const [plain] = await new CompactorCodec().encode([large]);
      expect(plain).toBe(large);
    });

    it('leaves payloads at or over the store threshold untouched for External Storage, and encodes the rest', async () => {
      const storing = new CompactorCodec({ keyring: keyringOf(key), passThroughAtOrAbove: 1024 });
      const big = toPayload({ big: 'z'.repeat(2000) });
      const small = toPayload({ small: 'z'.repeat(100) });
      const exactly = toPayload('q'.repeat(1024 - 30));
      expect(payloadProtoSize(exactly)).toBeLessThan(1024);
      const atThreshold = toPayload('q'.repeat(1024 - 30 + (1024 - payloadProtoSize(exactly))));
      expect(payloadProtoSize(atThreshold)).toBe(1024);
      const [bigOut, smallOut, atOut, justUnder] = await storing.encode([big, small, atThreshold, exactly]);
      expect(bigOut).toBe(big);
      expect(atOut).toBe(atThreshold);
      expect(codecEnvelopeOf(smallOut ?? {})?.keyId).toBe('k1');
      expect(codecEnvelopeOf(justUnder ?? {})?.keyId).toBe('k1');
    });
  });

  describe('key rotation', () => {
    const oldKey = codecKey(randomBytes(32), 'old');
    const newKey = codecKey(randomBytes(32), 'new');

    it('decodes payloads of a retired key when it is supplied, and encodes with the current one', async () => {
      const [written] = await new CompactorCodec({ keyring: keyringOf(oldKey) }).encode([toPayload(conversation)]);
      if (written === undefined) throw new Error('no payload');
      const rotated = new CompactorCodec({ keyring: keyringOf(newKey, oldKey) });
      const [decoded] = await rotated.decode([written]);
      expect(fromPayload(decoded ?? {})).toEqual(conversation);
      const [fresh] = await rotated.encode([toPayload(conversation)]);
      expect(codecEnvelopeOf(fresh ?? {})?.keyId).toBe('new');
    });

    it('names the missing key id when the retired key is not supplied', async () => {
      const [written] = await new CompactorCodec({ keyring: keyringOf(oldKey) }).encode([toPayload(conversation)]);
      if (written === undefined) throw new Error('no payload');
      const withoutOld = new CompactorCodec({ keyring: keyringOf(newKey) });
      await expect(withoutOld.decode([written])).rejects.toThrow(PayloadKeyMissingError);
      await expect(withoutOld.decode([written])).rejects.toThrow(
        /key id "old", which is not configured: set it as COMPACTOR_CODEC_KEY .* or add it to COMPACTOR_CODEC_OLD_KEYS/,
      );
      await expect(new CompactorCodec().decode([written])).rejects.toThrow(/key id "old", which is not configured/);
    });

    it('says when the key under the right id is the wrong key', async () => {
      const [written] = await new CompactorCodec({ keyring: keyringOf(oldKey) }).encode([toPayload(conversation)]);
      if (written === undefined) throw new Error('no payload');
      const impostor = new CompactorCodec({ keyring: keyringOf(codecKey(randomBytes(32), 'old')) });
      await expect(impostor.decode([written])).rejects.toThrow(
        /key id "old"\) failed authentication: it was altered, or the key configured under that id is not the one that encrypted it/,
      );
    });

    it('reads retired keys from COMPACTOR_CODEC_OLD_KEYS (ID:BASE64, or BASE64 with the default id)', async () => {
      const rawOld = randomBytes(32);
      const rawOlder = randomBytes(32);
      const [byId, byDefaultId] = await Promise.all([
        new CompactorCodec({ keyring: keyringFromSettings({ key: rawOld.toString('base64'), keyId: 'v1' }) }).encode([
          toPayload('one'),
        ]),
        new CompactorCodec({ keyring: keyringFromSettings({ key: rawOlder.toString('base64') }) }).encode([
          toPayload('two'),
        ]),
      ]);
      const keyring = keyringFromSettings({
        key: randomBytes(32).toString('base64'),
        keyId: 'v3',
        oldKeys: ` v1:${rawOld.toString('base64')} , ${rawOlder.toString('base64url')}`,
      });
      expect([...(keyring?.byId.keys() ?? [])]).toHaveLength(3);
      const decoded = await new CompactorCodec({ keyring }).decode([...byId, ...byDefaultId]);
      expect(decoded.map(fromPayload)).toEqual(['one', 'two']);
    });
  });
});
