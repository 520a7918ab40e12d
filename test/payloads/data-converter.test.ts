import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { CHUNK_STORE_DRIVER_NAME } from '../../src/payloads/chunk-store.js';
import { codecEnvelopeOf, payloadProtoSize } from '../../src/payloads/codec.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import { UI_PAYLOAD_MAX_BYTES, UI_PAYLOAD_METADATA_KEY, uiPayload } from '../../src/shared/ui-payload.js';

const directory = mkdtempSync(join(tmpdir(), 'compactor-converter-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const key = randomBytes(32).toString('base64');
const big = defaultPayloadConverter.toPayload({ text: 'y'.repeat(5000) });
const metadataText = (payload: { metadata?: Record<string, Uint8Array> | null } | undefined, name: string) => {
  const value = payload?.metadata?.[name];
  return value === undefined || value === null ? undefined : new TextDecoder().decode(value);
};

describe('payloadConverterFromConfig', () => {
  it('off and no key: the SDK defaults (nothing encoded, nothing offloaded)', () => {
    const configured = payloadConverterFromConfig(loadConfig({ env: {} }));
    expect(configured.dataConverter).toEqual({});
    expect(configured.codec).toBeUndefined();
    expect(configured.driver).toBeUndefined();
    expect(configured.describe).toBe('payloads inline (no store, no codec)');
  });

  it('a key without a store: the codec encrypts every payload, large ones included', async () => {
    const configured = payloadConverterFromConfig(
      loadConfig({ env: { COMPACTOR_CODEC_KEY: key, COMPACTOR_CODEC_KEY_ID: 'only-key' } }),
    );
    expect(configured.dataConverter.externalStorage).toBeUndefined();
    const [encoded] = (await configured.codec?.encode([big])) ?? [];
    expect(codecEnvelopeOf(encoded ?? {})?.keyId).toBe('only-key');
    expect(configured.describe).toBe('payloads inline (no store), codec deflate + AES-256-GCM (key id only-key)');
  });

  it('a store: the start-up line says whether the codec has anything to compress', async () => {
    const line = (env: Record<string, string>): string =>
      payloadConverterFromConfig(loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: `file:${directory}`, ...env } }))
        .describe;
    // The default threshold: the store takes every payload the codec would compress (512 B and more).
    expect(line({})).toBe(
      `payload store file:${directory} (payloads of 256 B and more; smaller ones stay inline, too small to compress), no compression, no encryption`,
    );
    const small = defaultPayloadConverter.toPayload('s'.repeat(220));
    expect(payloadProtoSize(small)).toBeLessThan(256);
    const [unchanged] =
      (await payloadConverterFromConfig(
        loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: `file:${directory}` } }),
      ).codec?.encode([small])) ?? [];
    expect(unchanged).toBe(small);
    expect(line({ COMPACTOR_PAYLOAD_THRESHOLD: '2048' })).toBe(
      `payload store file:${directory} (payloads of 2048 B and more), codec deflate, no encryption`,
    );
    expect(line({ COMPACTOR_CODEC_KEY: key, COMPACTOR_CODEC_KEY_ID: 'store-key' })).toBe(
      `payload store file:${directory} (payloads of 256 B and more), codec deflate + AES-256-GCM (key id store-key)`,
    );
  });

  it('a store: External Storage and the codec share the threshold, so what the codec leaves alone is what the store takes', async () => {
    const configured = payloadConverterFromConfig(
      loadConfig({
        env: {
          COMPACTOR_PAYLOAD_STORE: `file:${directory}`,
          COMPACTOR_PAYLOAD_THRESHOLD: '4096',
          COMPACTOR_CODEC_KEY: key,
        },
      }),
    );
    const storage = configured.dataConverter.externalStorage;
    expect(storage?.payloadSizeThreshold).toBe(4096);
    expect(storage?.drivers.map((driver) => driver.name)).toEqual([CHUNK_STORE_DRIVER_NAME]);
    expect(configured.codec?.options.passThroughAtOrAbove).toBe(4096);
    const justUnder = defaultPayloadConverter.toPayload('z'.repeat(4000));
    expect(payloadProtoSize(justUnder)).toBeLessThan(4096);
    const [kept, encrypted] = (await configured.codec?.encode([big, justUnder])) ?? [];
    expect(payloadProtoSize(big)).toBeGreaterThanOrEqual(4096);
    expect(kept).toBe(big);
    expect(metadataText(encrypted, 'encoding')).toBe('binary/compactor');
  });

  it('the demo default applies only when COMPACTOR_PAYLOAD_STORE is unset; `off` turns it off', () => {
    const demoDefault = { kind: 'file' as const, directory };
    expect(payloadConverterFromConfig(loadConfig({ env: {} }), { defaultStore: demoDefault }).store).toEqual(
      demoDefault,
    );
    expect(
      payloadConverterFromConfig(loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: 'off' } }), { defaultStore: demoDefault })
        .store,
    ).toEqual({ kind: 'off' });
  });

  describe("a payload marked for the UI (the memo's compaction table)", () => {
    // As the memo is at its largest: 2,000 bytes of JSON, far over the default threshold and the codec's 512-byte floor.
    const table = uiPayload(
      `\n${'| 12 | 340 | 9,120 → 2,210 | summary (1,729 chars) | 14 | 3 | 412,880 |\n'.repeat(27)}`,
    ).payload;
    const unmarked = defaultPayloadConverter.toPayload(defaultPayloadConverter.fromPayload(table));
    const store = { COMPACTOR_PAYLOAD_STORE: `file:${directory}` };

    it('is the JSON payload of the value, readable by any data converter, with the mark beside its encoding', () => {
      expect(payloadProtoSize(table)).toBeGreaterThan(1900);
      expect(payloadProtoSize(table)).toBeLessThanOrEqual(UI_PAYLOAD_MAX_BYTES);
      expect(metadataText(table, 'encoding')).toBe('json/plain');
      expect(metadataText(table, UI_PAYLOAD_METADATA_KEY)).toBe('1');
      expect(defaultPayloadConverter.fromPayload(table)).toBe(defaultPayloadConverter.fromPayload(unmarked));
    });

    it('with a store and no key: the codec leaves it as written, and the store leaves it in history', async () => {
      for (const threshold of ['0', '256', '1024', '8192']) {
        const configured = payloadConverterFromConfig(
          loadConfig({ env: { ...store, COMPACTOR_PAYLOAD_THRESHOLD: threshold } }),
        );
        const [encoded, other] = (await configured.codec?.encode([table, unmarked])) ?? [];
        expect(encoded, `threshold ${threshold}`).toBe(table);
        const storage = configured.dataConverter.externalStorage;
        if (storage === undefined || other === undefined) throw new Error('no External Storage');
        expect(storage.driverSelector({}, table), `threshold ${threshold}`).toBeNull();
        // The same value unmarked: compressed under the threshold, stored at or over it.
        if (payloadProtoSize(unmarked) >= Number(threshold))
          expect(storage.driverSelector({}, other)?.name).toBe(CHUNK_STORE_DRIVER_NAME);
        else expect(metadataText(other, 'encoding')).toBe('binary/compactor');
      }
    });

    it('with a store and a key: encrypted, the mark outside the ciphertext, so it stays in history and decodes', async () => {
      const configured = payloadConverterFromConfig(
        loadConfig({ env: { ...store, COMPACTOR_CODEC_KEY: key, COMPACTOR_CODEC_KEY_ID: 'ui-key' } }),
      );
      const [encoded] = (await configured.codec?.encode([table])) ?? [];
      if (encoded === undefined) throw new Error('no payload');
      expect(codecEnvelopeOf(encoded)?.keyId).toBe('ui-key');
      expect(metadataText(encoded, UI_PAYLOAD_METADATA_KEY)).toBe('1');
      expect(Buffer.from(encoded.data ?? []).includes('summary (1,729 chars)')).toBe(false);
      expect(configured.dataConverter.externalStorage?.driverSelector({}, encoded)).toBeNull();
      const [decoded] = (await configured.codec?.decode([encoded])) ?? [];
      if (decoded === undefined) throw new Error('no payload');
      expect(metadataText(decoded, UI_PAYLOAD_METADATA_KEY)).toBe('1');
      expect(defaultPayloadConverter.fromPayload(decoded)).toBe(defaultPayloadConverter.fromPayload(table));
    });

    it(`over ${UI_PAYLOAD_MAX_BYTES} bytes the mark is ignored: the store takes it like any payload (bounded history)`, async () => {
      const large = uiPayload('x'.repeat(UI_PAYLOAD_MAX_BYTES)).payload;
      const configured = payloadConverterFromConfig(loadConfig({ env: store }));
      const [encoded] = (await configured.codec?.encode([large])) ?? [];
      expect(encoded).toBe(large);
      expect(configured.dataConverter.externalStorage?.driverSelector({}, large)?.name).toBe(CHUNK_STORE_DRIVER_NAME);
    });
  });
});
