// The codec server over real sockets: the remote codec protocol (decode, encode, download), the
// claims it resolves through the store, CORS for the UI's origin, the token (in the path or as a
// bearer token), and refusals that name what was wrong; and `temporal-compactor codec-server` as a
// process. What a request may cost: test/security/codec-server-limits.test.ts.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { encodeReferencePayload, isReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { StorageDriverClaim } from '@temporalio/common';
import proto from '@temporalio/proto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startCodecServer, type CodecServer, type CodecServerOptions } from '../../src/payloads/codec-server.js';
import { loadConfig } from '../../src/config.js';
import { CHUNK_STORE_DRIVER_NAME } from '../../src/payloads/chunk-store.js';
import { payloadConverterFromConfig, type ConfiguredPayloads } from '../../src/payloads/index.js';
import { claimOf, metadataOf } from '../support/history-payloads.js';

const PayloadProto = proto.temporal.api.common.v1.Payload;
const root = fileURLToPath(new URL('../..', import.meta.url));
const UI = 'http://127.0.0.1:8233';

const directories: string[] = [];
const servers: CodecServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
afterAll(() => directories.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

function storeEnv(key = randomBytes(32).toString('base64')): Record<string, string> {
  const directory = mkdtempSync(join(tmpdir(), 'compactor-codec-server-'));
  directories.push(directory);
  return { COMPACTOR_PAYLOAD_STORE: `file:${directory}`, COMPACTOR_CODEC_KEY: key, COMPACTOR_CODEC_KEY_ID: 'k-test' };
}

async function serve(payloads: ConfiguredPayloads, options: Partial<CodecServerOptions> = {}): Promise<CodecServer> {
  const server = await startCodecServer({
    dataConverter: payloads.dataConverter,
    port: 0,
    allowedOrigins: [UI],
    ...options,
  });
  servers.push(server);
  return server;
}

const toJson = (payload: Payload) =>
  PayloadProto.toObject(PayloadProto.fromObject(payload), { bytes: String, longs: String });
const fromJson = (value: unknown): Payload => {
  if (typeof value !== 'object' || value === null) throw new Error(`not a payload: ${JSON.stringify(value)}`);
  return PayloadProto.fromObject(Object.fromEntries(Object.entries(value)));
};

async function call(
  server: CodecServer,
  path: string,
  payloads: Payload[],
  headers: Record<string, string> = {},
): Promise<{ status: number; payloads: Payload[]; text: string; headers: Headers }> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Namespace': 'default', ...headers },
    body: JSON.stringify({ payloads: payloads.map(toJson) }),
  });
  const text = await response.text();
  const body: unknown = response.ok ? JSON.parse(text) : undefined;
  const list: unknown = typeof body === 'object' && body !== null ? Reflect.get(body, 'payloads') : [];
  return {
    status: response.status,
    payloads: Array.isArray(list) ? list.map(fromJson) : [],
    text,
    headers: response.headers,
  };
}

const plain = (value: unknown): Payload => {
  const payload = defaultPayloadConverter.toPayload(value);
  if (payload === undefined) throw new Error('not convertible');
  return payload;
};
const valueOf = (payload: Payload | undefined): unknown =>
  payload === undefined ? undefined : defaultPayloadConverter.fromPayload(payload);

const conversation = {
  messages: Array.from({ length: 40 }, (_, index) => ({
    role: index % 2 === 0 ? 'user' : 'assistant',
    content: `turn ${index}: the build failed at line ${index * 7}`,
  })),
};

describe('codec server: the remote codec protocol', () => {
  it('encodes as a worker does when let store (large values become claims, small ones ciphertext) and decodes both back', async () => {
    const payloads = payloadConverterFromConfig(loadConfig({ env: storeEnv() }));
    const server = await serve(payloads, { encodeToStore: true });
    const encoded = await call(server, '/encode', [plain(conversation), plain('short')]);
    expect(encoded.status).toBe(200);
    const [claim, small] = encoded.payloads;
    if (claim === undefined || small === undefined) throw new Error('two payloads expected');
    expect(isReferencePayload(claim)).toBe(true);
    expect(claimOf(claim)?.claimData).toEqual({ m: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), k: 'k-test' });
    expect(metadataOf(small, 'encoding')).toBe('binary/compactor');
    expect(metadataOf(small, 'compactor')).toMatch(/;key=k-test$/);
    expect(Buffer.from(small.data ?? []).toString('utf8')).not.toContain('short');

    const decoded = await call(server, '/decode', encoded.payloads);
    expect(decoded.status).toBe(200);
    expect(decoded.payloads.map(valueOf)).toEqual([conversation, 'short']);
    expect(decoded.headers.get('content-type')).toBe('application/json');
  });

  it('resolves a claim the chunk store driver wrote, and passes payloads that are not its own through', async () => {
    const payloads = payloadConverterFromConfig(loadConfig({ env: storeEnv() }));
    const [stored] = (await payloads.driver?.store({}, [plain(conversation)])) ?? [];
    if (stored === undefined) throw new Error('no claim');
    const reference = encodeReferencePayload({ driverName: CHUNK_STORE_DRIVER_NAME, claim: stored, sizeBytes: 5000 });
    const server = await serve(payloads);
    const decoded = await call(server, '/default/decode', [reference, plain({ note: 'not encoded' })]);
    expect(decoded.status).toBe(200);
    expect(decoded.payloads.map(valueOf)).toEqual([conversation, { note: 'not encoded' }]);
  });

  describe('claims when the caller asks to keep them (preserveStorageRefs, as the Temporal UI always does)', () => {
    it('resolves claims of payloads up to the inline limit anyway', async () => {
      const payloads = payloadConverterFromConfig(loadConfig({ env: storeEnv() }));
      const server = await serve(payloads, { encodeToStore: true });
      const [claim] = (await call(server, '/encode', [plain(conversation)])).payloads;
      if (claim === undefined) throw new Error('no claim');
      const decoded = await call(server, '/decode?preserveStorageRefs=true', [claim]);
      expect(decoded.payloads.map(valueOf)).toEqual([conversation]);
    });

    it('keeps claims of larger payloads for /download, which resolves them', async () => {
      const payloads = payloadConverterFromConfig(loadConfig({ env: storeEnv() }));
      const server = await serve(payloads, { inlineLimit: 100, encodeToStore: true });
      const [claim] = (await call(server, '/encode', [plain(conversation)])).payloads;
      if (claim === undefined) throw new Error('no claim');
      const kept = await call(server, '/decode?preserveStorageRefs=true', [claim, plain('inline')]);
      expect(kept.status).toBe(200);
      expect(toJson(kept.payloads[0] ?? {})).toEqual(toJson(claim));
      expect(valueOf(kept.payloads[1])).toBe('inline');
      // Without the parameter (the temporal CLI) every claim is resolved.
      expect((await call(server, '/decode', [claim])).payloads.map(valueOf)).toEqual([conversation]);
      const downloaded = await call(server, '/download?preserveStorageRefs=true', [claim]);
      expect(downloaded.payloads.map(valueOf)).toEqual([conversation]);
      const refused = await call(server, '/download', [claim, plain('not a claim')]);
      expect([refused.status, refused.text]).toEqual([
        400,
        'payloads[1]: not a storage reference: /download takes claims only\n',
      ]);
    });
  });

  describe('refusals name what was wrong', () => {
    it('a claim meeting a server without a store names the setting (regression: it came back as the payload)', async () => {
      const withStore = await serve(payloadConverterFromConfig(loadConfig({ env: storeEnv() })), {
        encodeToStore: true,
      });
      const [claim] = (await call(withStore, '/encode', [plain(conversation)])).payloads;
      if (claim === undefined || !isReferencePayload(claim)) throw new Error('no claim');
      const server = await serve(payloadConverterFromConfig(loadConfig({ env: {} })));
      for (const [path, payloads] of [
        ['/decode', [plain('inline'), claim]],
        ['/download', [plain('inline'), claim].slice(1)],
      ] as const) {
        const refused = await call(server, path, [...payloads]);
        expect(refused.status).toBe(400);
        expect(refused.headers.get('X-Compactor-Refusal')).toBe('PayloadStoreNotConfigured');
        expect(refused.text).toBe(
          `payloads[${payloads.length - 1}]: cannot ${path.slice(1)}: the run's payloads are in a payload store (claims of driver "${CHUNK_STORE_DRIVER_NAME}") and this codec server was given none: set COMPACTOR_PAYLOAD_STORE to the store the run's worker uses, as its start line names it (e.g. COMPACTOR_PAYLOAD_STORE=file:/var/lib/compactor or COMPACTOR_PAYLOAD_STORE=s3://bucket/prefix), with COMPACTOR_CODEC_KEY when the worker has one\n`,
        );
      }
      // Asked to keep claims (the Temporal UI), it keeps them: the UI shows a claim as a claim.
      const kept = await call(server, '/decode?preserveStorageRefs=true', [claim]);
      expect(kept.status).toBe(200);
      expect(toJson(kept.payloads[0] ?? {})).toEqual(toJson(claim));
    });

    it('answers 400 for a body that is not the protocol, naming the field', async () => {
      const server = await serve(payloadConverterFromConfig(loadConfig({ env: storeEnv() })));
      const post = async (body: string) => {
        const response = await fetch(`${server.url}/decode`, { method: 'POST', body });
        return [response.status, await response.text()];
      };
      expect(await post('not json')).toEqual([400, 'the body is not JSON: expected {"payloads": [...]}\n']);
      expect(await post('{"payloads": 3}')).toEqual([400, 'payloads: expected an array of payloads\n']);
      expect(await post('{"payloads": [{"data": "aGk="}, {"data": "%%%"}]}')).toEqual([
        400,
        'payloads[1].data: expected a base64 string\n',
      ]);
      expect(await post('{"payloads": [{"metadata": {"encoding": 5}}]}')).toEqual([
        400,
        'payloads[0].metadata.encoding: expected a base64 string\n',
      ]);
      expect(await post('{"payloads": ["x"]}')).toEqual([400, 'payloads[0]: expected a payload object\n']);
      // Protobuf's JSON form leaves an empty list out.
      expect(await post('{}')).toEqual([200, '{"payloads":[]}']);
    });

    it('answers 400 naming the payload and the kind of failure, never a store path or a raw error; the log has the detail', async () => {
      const env = storeEnv();
      const payloads = payloadConverterFromConfig(loadConfig({ env }));
      const logged: string[] = [];
      const server = await serve(payloads, { log: (line) => logged.push(line) });
      const missing = encodeReferencePayload({
        driverName: CHUNK_STORE_DRIVER_NAME,
        claim: new StorageDriverClaim({ m: Buffer.from('ab'.repeat(32), 'hex').toString('base64url'), k: 'k-test' }),
        sizeBytes: 10,
      });
      const unresolvable = await call(server, '/decode', [plain('fine'), missing]);
      expect([unresolvable.status, unresolvable.text]).toEqual([
        400,
        "payloads[1]: cannot decode (ChunkMissingError): a stored object it needs is not in the payload store; the codec server's log has the detail\n",
      ]);
      const directory = String(env.COMPACTOR_PAYLOAD_STORE).slice('file:'.length);
      expect(unresolvable.text).not.toContain(directory);
      expect(logged).toEqual([
        expect.stringMatching(
          /^POST \/<token>\/decode \(namespace default\): 400 payloads\[1\]: cannot decode \(ChunkMissingError\): .* — payload store object v1\/manifests\/ab\/ab\/(ab){32} is missing from file:/,
        ),
      ]);
      expect(logged[0]).toContain(directory);

      const [encrypted] = (await call(server, '/encode', [plain('secret')])).payloads;
      const otherKey = await serve(
        payloadConverterFromConfig(
          loadConfig({
            env: { COMPACTOR_CODEC_KEY: randomBytes(32).toString('base64'), COMPACTOR_CODEC_KEY_ID: 'k-other' },
          }),
        ),
      );
      const wrongKey = await call(otherKey, '/decode', [encrypted ?? {}]);
      expect([wrongKey.status, wrongKey.text]).toEqual([
        400,
        'payloads[0]: cannot decode (PayloadKeyMissingError): it is encrypted with key id "k-test", which this server does not hold; the codec server\'s log has the detail\n',
      ]);
    });

    it('answers a codec failure of any other kind (a raw message naming a path) with its type alone, and logs the message', async () => {
      const logged: string[] = [];
      const failing = {
        payloadCodecs: [
          {
            encode: () => Promise.reject(new Error('EACCES: permission denied, open /srv/secret-store/key.bin')),
            decode: () => Promise.reject(new Error('EACCES: permission denied, open /srv/secret-store/key.bin')),
          },
        ],
      };
      const server = await startCodecServer({ dataConverter: failing, port: 0, log: (line) => logged.push(line) });
      servers.push(server);
      const answer = await call(server, '/encode', [plain('x')]);
      expect([answer.status, answer.text]).toEqual([
        400,
        "payloads[0]: cannot encode (Error): an error of the codec server; the codec server's log has the detail\n",
      ]);
      expect(logged).toEqual([expect.stringContaining('EACCES: permission denied, open /srv/secret-store/key.bin')]);
    });

    it('serves /decode, /encode and /download at any depth, by POST only', async () => {
      const server = await serve(payloadConverterFromConfig(loadConfig({ env: storeEnv() })));
      expect((await call(server, '/my-namespace/decode', [plain(1)])).status).toBe(200);
      const elsewhere = await call(server, '/decoder', [plain(1)]);
      expect([elsewhere.status, elsewhere.text]).toEqual([
        404,
        'no such endpoint /<token>/decoder: POST /decode, /encode or /download\n',
      ]);
      expect(elsewhere.headers.get('x-compactor-refusal')).toBe('NotFound');
      const get = await fetch(`${server.url}/decode`);
      expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST, OPTIONS']);
    });

    it('refuses a body over the limit with 413', async () => {
      const server = await serve(payloadConverterFromConfig(loadConfig({ env: storeEnv() })), { maxBodyBytes: 1000 });
      const response = await call(server, '/decode', [plain('x'.repeat(5000))]);
      expect(response.status).toBe(413);
      expect(response.text).toMatch(/at most 1000 are accepted/);
    });
  });
});

describe('codec server: CORS for the UI', () => {
  const preflight = (server: CodecServer, origin: string, extra: Record<string, string> = {}) =>
    fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: {
        Origin: origin,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type,x-namespace,authorization',
        ...extra,
      },
    });

  it('answers the preflight of an allowed origin with the headers the UI sends', async () => {
    const server = await serve(payloadConverterFromConfig(loadConfig({ env: storeEnv() })));
    const response = await preflight(server, UI, { 'Access-Control-Request-Private-Network': 'true' });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(UI);
    expect(response.headers.get('access-control-allow-credentials')).toBe('true');
    expect(response.headers.get('access-control-allow-methods')).toBe('POST, OPTIONS');
    expect(response.headers.get('access-control-allow-headers')?.split(', ')).toEqual([
      'Content-Type',
      'X-Namespace',
      'Authorization',
      'Authorization-Extras',
    ]);
    expect(response.headers.get('access-control-allow-private-network')).toBe('true');
    const post = await call(server, '/decode', [plain(1)], { Origin: UI });
    expect([post.status, post.headers.get('access-control-allow-origin'), post.headers.get('vary')]).toEqual([
      200,
      UI,
      'Origin',
    ]);
  });

  it('refuses other origins, preflight and request alike, without CORS headers', async () => {
    const server = await serve(payloadConverterFromConfig(loadConfig({ env: storeEnv() })));
    const response = await preflight(server, 'https://evil.example');
    expect(response.status).toBe(403);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    const post = await call(server, '/decode', [plain(1)], { Origin: 'https://evil.example' });
    expect(post.status).toBe(403);
    expect(post.text).toBe('origin https://evil.example is not allowed: add it to COMPACTOR_CODEC_SERVER_ORIGINS\n');
  });

  it('learns an origin after start (the demo adds its UI once the dev server picked a port), and `*` answers any', async () => {
    const server = await serve(payloadConverterFromConfig(loadConfig({ env: storeEnv() })), { allowedOrigins: [] });
    expect((await preflight(server, 'http://127.0.0.1:41234')).status).toBe(403);
    server.allowOrigin('http://127.0.0.1:41234/');
    expect((await preflight(server, 'http://127.0.0.1:41234')).status).toBe(204);
    const any = await serve(payloadConverterFromConfig(loadConfig({ env: storeEnv() })), { allowedOrigins: ['*'] });
    const response = await preflight(any, 'https://cloud.temporal.io');
    expect([response.status, response.headers.get('access-control-allow-origin')]).toEqual([
      204,
      'https://cloud.temporal.io',
    ]);
  });
});

describe('codec server: the token', () => {
  const token = 'a-long-enough-codec-token';
  /** A call to the server's origin, without the token in the path. */
  const atOrigin = (server: CodecServer): CodecServer => ({ ...server, url: server.origin });

  it('requires the configured token on requests, in the path or as a bearer token, not on preflights (browsers send none there)', async () => {
    const server = await serve(payloadConverterFromConfig(loadConfig({ env: storeEnv() })), { token });
    expect(server.url).toBe(`${server.origin}/${token}`);
    const without = await call(atOrigin(server), '/decode', [plain(1)]);
    expect([without.status, without.headers.get('www-authenticate')]).toEqual([401, 'Bearer']);
    expect(without.headers.get('x-compactor-refusal')).toBe('Unauthorized');
    expect((await call(atOrigin(server), '/decode', [plain(1)], { Authorization: `Bearer ${token}x` })).status).toBe(
      401,
    );
    expect((await call(atOrigin(server), '/decode', [plain(1)], { Authorization: token })).status).toBe(401);
    expect((await call(atOrigin(server), `/${token}x/decode`, [plain(1)])).status).toBe(401);
    const allowed = await call(atOrigin(server), '/decode', [plain(1)], { Authorization: `Bearer ${token}` });
    expect(allowed.payloads.map(valueOf)).toEqual([1]);
    const inPath = await call(atOrigin(server), `/${token}/my-namespace/decode`, [plain(2)]);
    expect(inPath.payloads.map(valueOf)).toEqual([2]);
    const preflight = await fetch(`${server.origin}/decode`, {
      method: 'OPTIONS',
      headers: { Origin: UI, 'Access-Control-Request-Method': 'POST' },
    });
    expect(preflight.status).toBe(204);
  });
});

describe('temporal-compactor codec-server (a process)', () => {
  function start(env: Record<string, string>) {
    return spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'codec-server', '--codec-server-port', '0'], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }

  it('serves the configured store and codec until SIGTERM, then exits 0', { timeout: 60_000 }, async () => {
    const env = storeEnv();
    const payloads = payloadConverterFromConfig(loadConfig({ env }));
    const [stored] = (await payloads.driver?.store({}, [plain(conversation)])) ?? [];
    if (stored === undefined) throw new Error('no claim');
    const child = start({ ...env, COMPACTOR_CODEC_SERVER_ORIGINS: 'http://localhost:8080' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await expect.poll(() => /^Codec server at (http:\S+) /m.test(stdout), { timeout: 30_000 }).toBe(true);
      const url = /^Codec server at (http:\S+) /m.exec(stdout)?.[1] ?? '';
      expect(stdout).toContain(
        `(payload store file:${env.COMPACTOR_PAYLOAD_STORE?.slice('file:'.length)} (payloads of 256 B and more), codec deflate + AES-256-GCM (key id k-test))`,
      );
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{32}$/);
      expect(stdout).toContain('the URL holds its token (new at every start; COMPACTOR_CODEC_SERVER_TOKEN keeps one)');
      expect(stdout).toContain(
        'browsers allowed from: http://localhost:8080; /encode encodes inline, writing nothing to the store',
      );
      expect(stdout).toContain(`temporal server start-dev --ui-codec-endpoint ${url}`);
      // The token is written down once, on stdout, never in the log.
      expect(stdout.split(url.slice(url.lastIndexOf('/') + 1)).length - 1).toBe(3);
      expect(stderr).not.toContain(url.slice(url.lastIndexOf('/') + 1));
      const reference = encodeReferencePayload({ driverName: CHUNK_STORE_DRIVER_NAME, claim: stored, sizeBytes: 5000 });
      const response = await fetch(`${url}/decode`, {
        method: 'POST',
        body: JSON.stringify({ payloads: [toJson(reference)] }),
      });
      const body: unknown = await response.json();
      const list: unknown = typeof body === 'object' && body !== null ? Reflect.get(body, 'payloads') : undefined;
      expect(Array.isArray(list) ? list.map(fromJson).map(valueOf) : list).toEqual([conversation]);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr).toBe(0);
    expect(stdout).toContain('Codec server stopped (SIGTERM).');
  });

  it('refuses to start with nothing to decode', { timeout: 60_000 }, async () => {
    const child = start({ COMPACTOR_PAYLOAD_STORE: '', COMPACTOR_CODEC_KEY: '' });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
    expect(code).toBe(2);
    expect(stderr).toContain(
      'temporal-compactor codec-server: nothing to decode: set COMPACTOR_PAYLOAD_STORE and/or COMPACTOR_CODEC_KEY as the workers have them',
    );
  });
});
