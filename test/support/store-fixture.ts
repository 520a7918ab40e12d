// test/fixtures/store: a small store in the store's format, written by the driver from fixed
// payloads with a fixed key and clock, without and with encryption (`plain/`, `encrypted/`), and
// `claims.json` listing each claim with its payload's size, digest and metadata. The payloads make
// the writer use every part of the format: an empty and a small payload, fresh payloads held in
// their manifests, chat inputs on base manifests listing slices of other manifests, a long one
// listed over a tree of nodes with a pack, objects deflated against the objects before them.
// test/payloads/store-bytes.test.ts checks that the driver writes these bytes again and reads every
// claim back; test/interop/python-payloads.test.ts has the Python module read them.
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StorageDriverClaim } from '@temporalio/common';
import { expect } from 'vitest';
import { z } from 'zod';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { codecKey, type Keyring } from '../../src/payloads/keyring.js';
import { keyringOf } from './keyring.js';
import { collectGarbage } from '../../src/payloads/gc.js';
import { DEFAULT_CHUNKER_LIMITS } from '../../src/payloads/chunker.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { readClaim } from '../../src/payloads/claims.js';
import { type ObjectBackend } from '../../src/payloads/object-backend.js';
import { temporaryDirectory } from './cleanup.js';
import { sha } from './payload-store.js';

/** Where the fixture lives. */
export const STORE_FIXTURE_DIR = fileURLToPath(new URL('../fixtures/store/', import.meta.url));

/** The key of the `encrypted` store: a fixed test key, never a real one. */
const FIXTURE_KEY = { id: 'fixture-key', hex: '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef' };

const Claims = z.object({
  key: z.object({ id: z.string(), hex: z.string() }),
  claims: z.array(
    z.object({
      store: z.enum(['plain', 'encrypted']),
      payload: z.string(),
      claimData: z.record(z.string(), z.string()),
      size: z.number(),
      sha256: z.string(),
      metadata: z.record(z.string(), z.string()),
    }),
  ),
});

export type FixtureClaims = z.infer<typeof Claims>;
export type FixtureClaim = FixtureClaims['claims'][number];

export interface StoreFixture {
  /** The fixture's directory: `plain/` and `encrypted/` stores beside `claims.json`. */
  directory: string;
  claims: FixtureClaim[];
  /** The key the `encrypted` store was written with, and as a keyring. */
  key: { id: string; hex: string };
  keyring: Keyring;
}

/** The payloads of the fixture, in the order they are stored (each its own store call). */
function fixturePayloads(): Array<{ name: string; data: Uint8Array; metadata: Record<string, Uint8Array> }> {
  let state = 12345;
  const words = ['build', 'failed', 'module', 'import', 'error', 'line', 'config', 'patch', 'test', 'trace'];
  const word = (): string => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return words[(state >>> 16) % words.length] ?? 'x';
  };
  const text = (count: number): string => Array.from({ length: count }, word).join(' ');
  const history = Array.from({ length: 134 }, (_, index) =>
    index % 2 === 0
      ? {
          role: 'assistant',
          content: text(8),
          tool_calls: [
            {
              id: `call_${index}`,
              type: 'function',
              function: { name: 'bash', arguments: `{"command":"${text(3)}"}` },
            },
          ],
        }
      : { role: 'tool', tool_call_id: `call_${index - 1}`, content: text(index % 7 === 0 ? 60 : 16) },
  );
  const json = { encoding: Buffer.from('json/plain') };
  const conversation = (messages: number) => ({
    name: `conversation-${messages}`,
    data: Buffer.from(JSON.stringify({ messages: history.slice(0, messages), tools: [] })),
    metadata: { ...json, messageType: Buffer.from('chat') },
  });
  return [
    { name: 'empty', data: new Uint8Array(0), metadata: { encoding: Buffer.from('binary/plain') } },
    { name: 'small', data: Buffer.from(JSON.stringify({ role: 'user', content: text(12) })), metadata: json },
    { name: 'tool-result', data: Buffer.from(JSON.stringify(history[13])), metadata: json },
    conversation(16),
    conversation(18),
    conversation(66),
    // More new entries than a manifest on a base lists: a full manifest over a tree, with a pack.
    conversation(132),
    conversation(134),
    {
      name: 'transcript',
      data: Buffer.from(history.map((message) => JSON.stringify({ message })).join('\n')),
      metadata: json,
    },
  ];
}

/** Writes the fixture's stores and claims into `directory` (replacing what is there); returns the claims. */
export async function writeStoreFixture(directory: string): Promise<FixtureClaims> {
  const key = codecKey(Buffer.from(FIXTURE_KEY.hex, 'hex'), FIXTURE_KEY.id);
  const claims: FixtureClaim[] = [];
  for (const [store, keyring] of [
    ['plain', undefined],
    ['encrypted', keyringOf(key)],
  ] as const) {
    const storeDirectory = join(directory, store);
    rmSync(storeDirectory, { recursive: true, force: true });
    mkdirSync(storeDirectory, { recursive: true });
    // Small slices, so that a few KB make a tree; a fixed clock.
    const driver = new ChunkStoreDriver({
      backend: new FileBackend({ directory: storeDirectory, durable: false }),
      keyring,
      chunkerLimits: { ...DEFAULT_CHUNKER_LIMITS, minChunk: 32, soloElement: 4096, groupMax: 64, maxChunk: 1024 },
      literalBelow: 48,
      inlineBelow: 96,
      now: () => Date.UTC(2027, 0, 1),
    });
    for (const payload of fixturePayloads()) {
      const [claim] = await driver.store({}, [{ data: payload.data, metadata: payload.metadata }]);
      if (claim === undefined) throw new Error('no claim');
      claims.push({
        store,
        payload: payload.name,
        claimData: claim.claimData,
        size: payload.data.length,
        sha256: sha(payload.data),
        metadata: Object.fromEntries(
          Object.entries(payload.metadata).map(([name, value]) => [name, Buffer.from(value).toString('base64')]),
        ),
      });
    }
  }
  const written: FixtureClaims = { key: FIXTURE_KEY, claims };
  writeFileSync(join(directory, 'claims.json'), `${JSON.stringify(written, null, 2)}\n`);
  return written;
}

/** test/fixtures/store: its claims and its key. */
export function readStoreFixture(): StoreFixture {
  const parsed = Claims.parse(JSON.parse(readFileSync(join(STORE_FIXTURE_DIR, 'claims.json'), 'utf8')));
  return {
    directory: STORE_FIXTURE_DIR,
    claims: parsed.claims,
    key: parsed.key,
    keyring: keyringOf(codecKey(Buffer.from(parsed.key.hex, 'hex'), parsed.key.id)),
  };
}

/** A backend over `directory` that records the keys of every put and touch instead of writing. */
function recordingBackend(directory: string, writes: string[]): ObjectBackend {
  const files = new FileBackend({ directory });
  return {
    description: files.description,
    get: (key, signal) => files.get(key, signal),
    stat: (key) => files.stat(key),
    put: async (key) => {
      writes.push(key);
    },
    touch: async (key) => {
      writes.push(key);
    },
  };
}

/** Every claim, each by a cold driver (with the key for the encrypted store): size, digest and metadata as written, and nothing written. */
export async function expectEveryClaimReads(fixture: StoreFixture): Promise<void> {
  const writes: string[] = [];
  for (const entry of fixture.claims) {
    const driver = new ChunkStoreDriver({
      backend: recordingBackend(join(fixture.directory, entry.store), writes),
      keyring: entry.store === 'encrypted' ? fixture.keyring : undefined,
    });
    const [payload] = await driver.retrieve({}, [new StorageDriverClaim(entry.claimData)]);
    expect(payload?.data?.length ?? 0, `${entry.store} ${entry.payload}`).toBe(entry.size);
    expect(sha(payload?.data), `${entry.store} ${entry.payload}`).toBe(entry.sha256);
    const metadata = Object.fromEntries(
      Object.entries(payload?.metadata ?? {}).map(([name, value]) => [
        name,
        Buffer.from(value ?? []).toString('base64'),
      ]),
    );
    expect(metadata).toEqual(entry.metadata);
  }
  expect(writes).toEqual([]);
}

/**
 * A garbage collection over a copy of the fixture's `store` store keeps everything its claims
 * name: nothing missing, nothing deleted, and every claimed payload still reads back (by a new
 * driver). Returns the report for the caller's counts.
 */
export async function expectGcKeepsEverything(
  fixture: StoreFixture,
  store: 'plain' | 'encrypted',
): Promise<Awaited<ReturnType<typeof collectGarbage>>> {
  const copy = temporaryDirectory('compactor-store-fixture-');
  cpSync(join(fixture.directory, store), copy, { recursive: true });
  const backend = new FileBackend({ directory: copy });
  const keyring = store === 'encrypted' ? fixture.keyring : undefined;
  const claimed = fixture.claims.filter((entry) => entry.store === store);
  const report = await collectGarbage({
    driver: new ChunkStoreDriver({ backend, keyring }),
    claimedManifests: claimed.map((entry) => readClaim(entry.claimData).manifestId),
    graceMs: 0,
    now: () => Date.now() + 1_000,
  });
  expect(report.missingCount).toBe(0);
  expect(report.deleted).toEqual({
    manifest: { objects: 0, bytes: 0 },
    node: { objects: 0, bytes: 0 },
    chunk: { objects: 0, bytes: 0 },
    temporary: { objects: 0, bytes: 0 },
  });
  for (const entry of claimed) {
    const [payload] = await new ChunkStoreDriver({ backend, keyring }).retrieve({}, [
      new StorageDriverClaim(entry.claimData),
    ]);
    expect(sha(payload?.data), entry.payload).toBe(entry.sha256);
  }
  return report;
}
