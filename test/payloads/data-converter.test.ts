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
    expect(configured.codec?.passThroughAtOrAbove).toBe(4096);
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
});
