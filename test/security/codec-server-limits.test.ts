// Adversarial: the codec server's callers. It hands decrypted payloads to whoever reaches it and
// resolves claims through the store, so what one request may cost is bounded: a body of at most
// 8 MiB, at most 1,000 payloads, at most 64 MiB decoded (a claim's size is read from its manifest
// and counted before its payload is read), two requests at work at once and 32 waiting (more are
// answered 503 at once). A token is required by default (generated at start, carried in the
// endpoint's path, or as a bearer token), and /encode writes to the store only when asked to.
// Every refusal has its status and its type (`X-Compactor-Refusal`), and the next good request is
// answered as usual.
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { defaultPayloadConverter, ExternalStorage, type Payload } from '@temporalio/common';
import { encodeReferencePayload, isReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';
import proto from '@temporalio/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startCodecServer, type CodecServer, type CodecServerOptions } from '../../src/payloads/codec-server.js';
import { CHUNK_STORE_DRIVER_NAME, ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { keyringFromSettings } from '../../src/payloads/keyring.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import { type ObjectBackend } from '../../src/payloads/object-backend.js';
import { temporaryDirectory } from '../support/cleanup.js';
import { measured, MiB } from './memory.js';

const PayloadProto = proto.temporal.api.common.v1.Payload;
const toJson = (payload: Payload) =>
  PayloadProto.toObject(PayloadProto.fromObject(payload), { bytes: String, longs: String });
const plain = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);

const servers: CodecServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

function storeEnv(): { env: Record<string, string>; directory: string } {
  const directory = temporaryDirectory('compactor-codec-limits-');
  return {
    directory,
    env: {
      COMPACTOR_PAYLOAD_STORE: `file:${directory}`,
      COMPACTOR_CODEC_KEY: randomBytes(32).toString('base64'),
      COMPACTOR_CODEC_KEY_ID: 'k-limits',
    },
  };
}

async function serve(options: Partial<CodecServerOptions> & Pick<CodecServerOptions, 'dataConverter'>) {
  const server = await startCodecServer({ port: 0, ...options });
  servers.push(server);
  return server;
}

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body,
  });
  return { status: response.status, type: response.headers.get('x-compactor-refusal'), text: await response.text() };
}

const bodyOf = (payloads: Payload[]): string => JSON.stringify({ payloads: payloads.map(toJson) });

/** The next good request is answered as usual. */
async function expectStillServing(server: CodecServer): Promise<void> {
  const answer = await post(`${server.url}/decode`, bodyOf([plain({ still: 'serving' })]));
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.text)).toEqual({ payloads: [toJson(plain({ still: 'serving' }))] });
}

describe('the codec server wants a token by default', () => {
  it('generates one at start: its url carries it, a request without it is refused 401', async () => {
    const { env } = storeEnv();
    const server = await serve({ dataConverter: payloadConverterFromConfig(loadConfig({ env })).dataConverter });
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{32}$/);
    expect(server.url.startsWith(`${server.origin}/`)).toBe(true);
    const without = await post(`${server.origin}/decode`, bodyOf([plain(1)]));
    expect([without.status, without.type]).toEqual([401, 'Unauthorized']);
    const guessed = await post(`${server.origin}/${'A'.repeat(32)}/decode`, bodyOf([plain(1)]));
    expect(guessed.status).toBe(401);
    // In the path (what the UI's codec endpoint setting can hold), or as a bearer token (the CLI's --codec-auth).
    expect((await post(`${server.url}/decode`, bodyOf([plain(1)]))).status).toBe(200);
    const token = server.url.slice(server.origin.length + 1);
    expect(
      (await post(`${server.origin}/decode`, bodyOf([plain(1)]), { Authorization: `Bearer ${token}` })).status,
    ).toBe(200);
  });
});

describe('what one request may cost', () => {
  it('a body over 8 MiB: 413 BodyTooLarge, and the next request is served', async () => {
    const { env } = storeEnv();
    const server = await serve({ dataConverter: payloadConverterFromConfig(loadConfig({ env })).dataConverter });
    const answer = await post(`${server.url}/decode`, bodyOf([plain('x'.repeat(9 * MiB))]));
    expect([answer.status, answer.type]).toEqual([413, 'BodyTooLarge']);
    await expectStillServing(server);
  });

  it('more than 1,000 payloads: 413 TooManyPayloads, before any is decoded', async () => {
    const { env } = storeEnv();
    const server = await serve({ dataConverter: payloadConverterFromConfig(loadConfig({ env })).dataConverter });
    const answer = await post(
      `${server.url}/decode`,
      bodyOf(Array.from({ length: 1_001 }, (_, index) => plain(index))),
    );
    expect([answer.status, answer.type]).toEqual([413, 'TooManyPayloads']);
    expect(answer.text).toContain('1001 payloads; at most 1000');
    await expectStillServing(server);
  });

  it('claims that all name one large payload: 413 DecodedTooLarge once 64 MiB would be passed, memory bounded', async () => {
    const { env } = storeEnv();
    const payloads = payloadConverterFromConfig(loadConfig({ env }));
    const server = await serve({ dataConverter: payloads.dataConverter });
    // One stored payload of 8 MiB; 20 claims to it would decode to 160 MiB.
    const large = plain({ text: randomBytes(6 * MiB).toString('base64') });
    const [claim] = (await payloads.driver?.store({}, [large])) ?? [];
    if (claim === undefined) throw new Error('no claim');
    const reference = encodeReferencePayload({ driverName: CHUNK_STORE_DRIVER_NAME, claim, sizeBytes: 100 });
    const { outcome, use } = await measured(() =>
      post(`${server.url}/decode`, bodyOf(Array.from({ length: 20 }, () => reference))),
    );
    if (!outcome.ok) throw outcome.error;
    expect([outcome.value.status, outcome.value.type]).toEqual([413, 'DecodedTooLarge']);
    expect(outcome.value.text).toMatch(/decode to more than 67108864 bytes/);
    // The budget, and the payloads in flight at once (4 of 8 MiB), and room.
    expect(use.arrayBuffers).toBeLessThan(64 * MiB + 4 * 8 * MiB + 16 * MiB);
    await expectStillServing(server);
  });

  it('a burst of requests: two at work, 32 waiting, the rest 503 Busy at once; then served as usual', async () => {
    const { env, directory } = storeEnv();
    const keyring = keyringFromSettings({ key: env.COMPACTOR_CODEC_KEY, keyId: env.COMPACTOR_CODEC_KEY_ID });
    const inner = new FileBackend({ directory });
    // A store that takes 300 ms a read: each request waits on it.
    const slow: ObjectBackend = {
      description: inner.description,
      get: async (key, signal, maxBytes) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return inner.get(key, signal, maxBytes);
      },
      put: (key, body, signal) => inner.put(key, body, signal),
      stat: (key) => inner.stat(key),
      touch: (key) => inner.touch(key),
    };
    const writer = new ChunkStoreDriver({ backend: inner, keyring });
    const claims = await Promise.all(
      Array.from({ length: 40 }, async (_, index) => {
        const [stored] = await writer.store({}, [plain({ index, text: `payload ${index} `.repeat(100) })]);
        if (stored === undefined) throw new Error('no claim');
        return encodeReferencePayload({ driverName: CHUNK_STORE_DRIVER_NAME, claim: stored, sizeBytes: 2_000 });
      }),
    );
    const configured = payloadConverterFromConfig(loadConfig({ env }), {});
    const server = await serve({
      dataConverter: {
        payloadCodecs: configured.dataConverter.payloadCodecs,
        externalStorage: new ExternalStorage({
          drivers: [new ChunkStoreDriver({ backend: slow, keyring })],
          payloadSizeThreshold: 256,
        }),
      },
    });
    const answers = await Promise.all(claims.map((claim) => post(`${server.url}/decode`, bodyOf([claim]))));
    const statuses = answers.map(({ status }) => status);
    expect(statuses.filter((status) => status === 503).length).toBeGreaterThanOrEqual(6);
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThanOrEqual(2);
    expect(statuses.every((status) => status === 200 || status === 503)).toBe(true);
    expect(answers.find(({ status }) => status === 503)?.type).toBe('Busy');
    await expectStillServing(server);
  });
});

describe('/encode', () => {
  it('writes nothing to the store unless asked to: a large payload comes back encrypted inline', async () => {
    const { env, directory } = storeEnv();
    const server = await serve({ dataConverter: payloadConverterFromConfig(loadConfig({ env })).dataConverter });
    const before = readdirSync(directory, { recursive: true }).length;
    const answer = await post(`${server.url}/encode`, bodyOf([plain({ signal: 'y'.repeat(5_000) })]));
    expect(answer.status).toBe(200);
    const [encoded] = (JSON.parse(answer.text) as { payloads: unknown[] }).payloads.map((value) =>
      PayloadProto.fromObject(value as Record<string, unknown>),
    );
    expect(isReferencePayload(encoded ?? {})).toBe(false);
    expect(Buffer.from(encoded?.metadata?.compactor ?? []).toString()).toMatch(/^deflate;size=\d+;key=k-limits$/);
    expect(readdirSync(directory, { recursive: true }).length).toBe(before);
    // Asked to, it stores as a worker would.
    const storing = await serve({
      dataConverter: payloadConverterFromConfig(loadConfig({ env })).dataConverter,
      encodeToStore: true,
    });
    const stored = await post(`${storing.url}/encode`, bodyOf([plain({ signal: 'z'.repeat(5_000) })]));
    const [claim] = (JSON.parse(stored.text) as { payloads: unknown[] }).payloads.map((value) =>
      PayloadProto.fromObject(value as Record<string, unknown>),
    );
    expect(isReferencePayload(claim ?? {})).toBe(true);
  });
});
