// The payload formats a caller in another language meets (docs/other-languages.md; the formats: docs/payloads.md),
// checked byte for byte between our TypeScript codec and chunk store and the Python module
// interop/python/compactor_payloads.py, without a server: Python reads what TypeScript wrote (a
// claim, a manifest on a base deflated against another manifest, inline payloads under the current
// and a retired key, test/fixtures/store) and fails as the TypeScript side does on what it must
// not read (altered, unknown key, corrupted or missing objects, malformed claims); TypeScript reads
// what Python wrote (a claim of a payload held in its manifest, an encrypted inline payload).
import { createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultPayloadConverter, StorageDriverClaim, type Payload } from '@temporalio/common';
import { encodeReferencePayload } from '@temporalio/common/lib/internal-non-workflow/extstore-helpers.js';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTrajectory } from '../../corpus/index.js';
import { resolvePythonSdk } from '../../scripts/python-sdk.mjs';
import { DEFAULT_PAYLOAD_THRESHOLD, loadConfig } from '../../src/config.js';
import { CHUNK_STORE_DRIVER_NAME, ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { ChunkIntegrityError } from '../../src/payloads/errors.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { claimManifestId } from '../../src/payloads/claims.js';
import { codecKey } from '../../src/payloads/keyring.js';
import { keyringOf } from '../support/keyring.js';
import { CompactorCodec, payloadProtoSize } from '../../src/payloads/codec.js';
import { objectKey } from '../../src/payloads/object-format.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import { claimOf, decodeHistoryPayload } from '../support/history-payloads.js';
import { runPythonScript } from '../support/python-script.js';
import { sha } from '../support/payload-store.js';
import { readStoreFixture } from '../support/store-fixture.js';

const VECTORS = fileURLToPath(new URL('./python/vectors.py', import.meta.url));
const PayloadProto = proto.temporal.api.common.v1.Payload;

const toBase64 = (payload: Payload): string => Buffer.from(PayloadProto.encode(payload).finish()).toString('base64');
const fromBase64 = (text: string): Payload => {
  const decoded = PayloadProto.decode(Buffer.from(text, 'base64'));
  return { metadata: decoded.metadata ?? {}, data: decoded.data ?? new Uint8Array(0) };
};

interface VectorReport {
  read: Array<{ name: string; ok: true; value: unknown } | { name: string; ok: false; class: string; message: string }>;
  written: Record<string, string>;
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile());
}

describe('payload formats between TypeScript and interop/python/compactor_payloads.py', () => {
  let python: string;
  const dirs: string[] = [];
  beforeAll(async () => {
    python = await resolvePythonSdk();
  });
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('has the same default threshold on both sides, so a Python caller offloads what a TypeScript worker does', () => {
    const module = readFileSync(
      fileURLToPath(new URL('../../interop/python/compactor_payloads.py', import.meta.url)),
      'utf8',
    );
    const pythonDefault = /^DEFAULT_THRESHOLD = (\d+)$/m.exec(module)?.[1];
    expect(Number(pythonDefault)).toBe(DEFAULT_PAYLOAD_THRESHOLD);
  });

  it('each side reads what the other wrote, and Python refuses what it must, naming why', async () => {
    const store = mkdtempSync(join(tmpdir(), 'compactor-vectors-'));
    dirs.push(store);
    const [current, retired, stranger] = [randomBytes(32), randomBytes(32), randomBytes(32)];
    // A 1 KiB threshold (not the default 256) so that `note`, 681 bytes of JSON, stays inline: compressed and encrypted.
    const env = {
      COMPACTOR_PAYLOAD_STORE: `file:${store}`,
      COMPACTOR_PAYLOAD_THRESHOLD: '1024',
      COMPACTOR_CODEC_KEY: current.toString('base64'),
      COMPACTOR_CODEC_OLD_KEYS: retired.toString('base64'),
    };
    const ours = payloadConverterFromConfig(loadConfig({ env }));
    const codec = ours.codec as CompactorCodec;
    const driver = ours.driver as ChunkStoreDriver;
    const messages = findTrajectory('openhands_gpt4o_Project-MONAI__MONAI-3715').messages;
    const note = { note: 'a small value that stays inline, compressed and encrypted', padding: 'abc '.repeat(150) };

    const referenceTo = (claim: StorageDriverClaim): Payload =>
      encodeReferencePayload({ driverName: CHUNK_STORE_DRIVER_NAME, claim, sizeBytes: 50_000 });
    const claimFor = async (value: unknown): Promise<Payload> => {
      const payload = defaultPayloadConverter.toPayload(value);
      const [claim] = await driver.store({}, [payload]);
      if (claim === undefined) throw new Error('no claim');
      return encodeReferencePayload({
        driverName: CHUNK_STORE_DRIVER_NAME,
        claim,
        sizeBytes: payloadProtoSize(payload),
      });
    };
    const encodedWith = (codecOf: CompactorCodec, value: unknown): Payload =>
      codecOf.encodeOne(defaultPayloadConverter.toPayload(value));
    const inline = encodedWith(codec, note);
    const altered = {
      ...inline,
      data: Uint8Array.from(inline.data ?? [], (byte, index) => (index === 20 ? byte ^ 1 : byte)),
    };
    const claim = await claimFor({ messages });
    // The next round's input: its manifest stands on the last one's.
    const grownValue = {
      messages: [
        ...messages,
        { role: 'user', content: 'one more message, long enough for a pack of its own. '.repeat(30) },
      ],
    };
    const grown = await claimFor(grownValue);
    expect(
      (await driver.reader.inspect('manifest', claimManifestId(claimOf(grown)?.claimData ?? {}) ?? '')).depth,
    ).toBe(1);
    // The grown input's manifest holds its new bytes and is deflated against the first one's
    // manifest (flags 4 | 8), which Python must open first.
    const sealedManifests = filesUnder(join(store, 'v1', 'manifests')).map((path) => readFileSync(path));
    expect(sealedManifests.filter((sealed) => ((sealed[4] ?? 0) & 12) === 12).length).toBeGreaterThan(0);
    const corruptedClaim = await claimFor({ messages: messages.slice(0, 12) });
    const missingClaim = await claimFor({ messages: messages.slice(0, 5) });
    // After the claims are written: delete the manifest of the third.
    const manifestOf = (payload: Payload): string => claimManifestId(claimOf(payload)?.claimData ?? {}) ?? '';
    const missing = filesUnder(join(store, 'v1', 'manifests')).find((path) => path.endsWith(manifestOf(missingClaim)));
    if (missing === undefined) throw new Error('no manifest to delete');
    rmSync(missing);
    const { m = '', k = '' } = claimOf(claim)?.claimData ?? {};
    expect(Object.keys(claimOf(claim)?.claimData ?? {}).sort()).toEqual(['k', 'm']);
    expect(m).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Refused on both sides, for the same reason.
    const malformed: Record<string, Record<string, string>> = {
      'short m': { m: m.slice(0, 42), k },
      'padded m': { m: `${m.slice(0, 42)}=`, k },
      'hex in m': { m: manifestOf(claim), k },
      'hex manifest': { manifest: manifestOf(claim), keyId: k },
      'an extra field': { m, k, keyId: k },
      'no manifest id': { k },
    };

    const read = [
      { name: 'claim', payload: claim },
      { name: 'grown', payload: grown },
      { name: 'inline', payload: inline },
      {
        name: 'retired key',
        payload: encodedWith(new CompactorCodec({ keyring: keyringOf(codecKey(retired)) }), note),
      },
      { name: 'altered', payload: altered },
      {
        name: 'unknown key',
        payload: encodedWith(new CompactorCodec({ keyring: keyringOf(codecKey(stranger, 'k-stranger')) }), note),
      },
      { name: 'missing manifest', payload: missingClaim },
      ...Object.entries(malformed).map(([name, claimData]) => ({
        name,
        payload: referenceTo(new StorageDriverClaim(claimData)),
      })),
    ];
    const first = await runPythonScript<VectorReport>(python, VECTORS, {
      env,
      read: read.map(({ name, payload }) => ({ name, payload: toBase64(payload) })),
      write: { big: { messages }, small: note },
    });
    const byName = Object.fromEntries(first.read.map((entry) => [entry.name, entry]));
    expect(byName.claim).toEqual({ name: 'claim', ok: true, value: { messages } });
    expect(byName.grown).toEqual({ name: 'grown', ok: true, value: grownValue });
    expect(byName.inline).toEqual({ name: 'inline', ok: true, value: note });
    expect(byName['retired key']).toEqual({ name: 'retired key', ok: true, value: note });
    expect(byName.altered).toMatchObject({
      ok: false,
      class: 'PayloadDecodeError',
      message: expect.stringContaining('failed authentication'),
    });
    expect(byName['unknown key']).toMatchObject({
      ok: false,
      class: 'PayloadKeyMissingError',
      message: expect.stringContaining('"k-stranger"'),
    });
    expect(byName['missing manifest']).toMatchObject({
      ok: false,
      class: 'ChunkMissingError',
      message: expect.stringContaining(`v1/manifests/${manifestOf(missingClaim).slice(0, 2)}`),
    });
    const reasonOf = (message: string): string | undefined =>
      /^payload store object claim \{.*\}: is not a temporal-compactor claim: it (.+)$/.exec(message)?.[1];
    for (const [name, claimData] of Object.entries(malformed)) {
      const theirs = byName[name];
      const ours = await driver.retrieve({}, [new StorageDriverClaim(claimData)]).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(ours, name).toBeInstanceOf(ChunkIntegrityError);
      const ourReason = reasonOf(ours instanceof Error ? ours.message : '');
      expect(ourReason, name).toBeDefined();
      expect(theirs, name).toMatchObject({ ok: false, class: 'ChunkIntegrityError' });
      expect(theirs !== undefined && !theirs.ok ? reasonOf(theirs.message) : undefined, name).toBe(ourReason);
    }

    // TypeScript reads what Python wrote: the big value as a claim (held in its manifest), the small one encrypted inline.
    const big = fromBase64(first.written.big ?? '');
    const small = fromBase64(first.written.small ?? '');
    expect(Object.keys(claimOf(big)?.claimData ?? {}).sort()).toEqual(['k', 'm']);
    expect(claimOf(big)?.claimData.m).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new TextDecoder().decode(small.metadata?.compactor ?? new Uint8Array(0))).toMatch(/;key=k-[0-9a-f]{8}$/);
    const bigBack = await decodeHistoryPayload(big, { driver, codec });
    expect(defaultPayloadConverter.fromPayload(bigBack)).toEqual({ messages });
    expect(defaultPayloadConverter.fromPayload(await decodeHistoryPayload(small, { codec }))).toEqual(note);
    const pythonManifest = claimManifestId(claimOf(big)?.claimData ?? {}) ?? '';
    expect((await driver.reader.inspect('manifest', pythonManifest)).children).toEqual([]);
    // Its nonce is derived from the bytes it encrypts, as the TypeScript writer derives it.
    const sealed = readFileSync(join(store, ...objectKey('manifest', pythonManifest).split('/')));
    const key = driver.keyring?.current;
    if (key === undefined) throw new Error('a key is configured');
    const nonceAt = 6 + (sealed[5] ?? 0);
    const nonce = sealed.subarray(nonceAt, nonceAt + 12);
    const decipher = createDecipheriv('aes-256-gcm', key.chunkKey, nonce);
    decipher.setAAD(sealed.subarray(0, nonceAt + 12));
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    const body = Buffer.concat([decipher.update(sealed.subarray(nonceAt + 12, sealed.length - 16)), decipher.final()]);
    const expected = createHmac('sha256', key.chunkNonceKey).update(sealed.subarray(0, nonceAt)).update(body).digest();
    expect(Buffer.from(nonce).toString('hex')).toBe(expected.subarray(0, 12).toString('hex'));

    // Corrupted objects (every manifest but the one claim's, which stands on or was deflated against
    // others): each claim fails on the Python side, naming the object it met.
    const own = manifestOf(corruptedClaim);
    for (const path of filesUnder(join(store, 'v1', 'manifests')))
      if (!path.endsWith(own))
        writeFileSync(path, Buffer.concat([readFileSync(path).subarray(0, 40), Buffer.from('garbage')]));
    const second = await runPythonScript<VectorReport>(python, VECTORS, {
      env,
      read: [
        { name: 'corrupted', payload: toBase64(corruptedClaim) },
        { name: 'grown again', payload: toBase64(grown) },
      ],
      write: {},
    });
    for (const entry of second.read)
      expect(entry).toMatchObject({
        ok: false,
        class: 'ChunkIntegrityError',
        message: expect.stringMatching(
          /^payload store object v1\/manifests\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}: failed authentication/,
        ),
      });
  }, 60_000);

  it('reads what the TypeScript driver writes: test/fixtures/store, and a store of a recorded run, with and without a key', async () => {
    const readStore = fileURLToPath(new URL('./python/read-store.py', import.meta.url));
    const fixture = readStoreFixture();
    for (const store of ['plain', 'encrypted'] as const) {
      const ofStore = fixture.claims.filter((claim) => claim.store === store);
      const report = await runPythonScript<
        Array<{ size?: number; sha256?: string; metadata?: Record<string, string>; class?: string; message?: string }>
      >(python, readStore, {
        directory: join(fixture.directory, store),
        key: store === 'encrypted' ? fixture.key : null,
        claims: ofStore.map((claim) => claim.claimData),
      });
      expect(report, store).toEqual(
        ofStore.map((claim) => ({ size: claim.size, sha256: claim.sha256, metadata: claim.metadata })),
      );
    }
    // Payloads of a recorded run as the driver writes them with its default settings.
    const directory = mkdtempSync(join(tmpdir(), 'compactor-store-'));
    dirs.push(directory);
    const hex = randomBytes(32).toString('hex');
    for (const keyed of [false, true]) {
      const keyring = keyed ? keyringOf(codecKey(Buffer.from(hex, 'hex'), 'k-five')) : undefined;
      const store = join(directory, keyed ? 'encrypted' : 'plain');
      const writer = new ChunkStoreDriver({ backend: new FileBackend({ directory: store }), keyring });
      const messages = findTrajectory('openhands_gpt4o_Project-MONAI__MONAI-3715').messages;
      const payloads = [
        ...messages.slice(2, 12).map((message) => defaultPayloadConverter.toPayload(message)),
        ...[12, 14, 16, 18].map((count) => defaultPayloadConverter.toPayload({ messages: messages.slice(0, count) })),
      ];
      const written: StorageDriverClaim[] = [];
      for (const payload of payloads) written.push(...(await writer.store({}, [payload])));
      const report = await runPythonScript<Array<{ size?: number; sha256?: string }>>(python, readStore, {
        directory: store,
        key: keyed ? { id: 'k-five', hex } : null,
        claims: written.map((claim) => claim.claimData),
      });
      expect(report.map(({ size, sha256 }) => ({ size, sha256 }))).toEqual(
        payloads.map((payload) => ({ size: payload.data?.length, sha256: sha(payload.data) })),
      );
    }
  }, 120_000);
});
