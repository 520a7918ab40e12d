// A store an earlier version of the driver wrote (test/fixtures/store-v*): its claims file, a
// backend over it that refuses nothing but records every write (reading an old store must not need
// to write to it), and the two checks every such fixture gets — each claim reads back byte for byte
// with its metadata, and a garbage collection over a copy keeps everything the claims name.
import { createHash } from 'node:crypto';
import { cpSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StorageDriverClaim, type Payload } from '@temporalio/common';
import { expect } from 'vitest';
import { z } from 'zod';
import {
  ChunkStoreDriver,
  codecKey,
  collectGarbage,
  FileBackend,
  keyringOf,
  readClaim,
  type Keyring,
  type ObjectBackend,
} from '../../src/payloads/index.js';
import { temporaryDirectory } from './cleanup.js';

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

export type FixtureClaim = z.infer<typeof Claims>['claims'][number];

export interface StoreFixture {
  /** The fixture's directory: `plain/` and `encrypted/` stores beside `claims.json`. */
  directory: string;
  claims: FixtureClaim[];
  /** The key the `encrypted` store was written with. */
  keyring: Keyring;
}

/** test/fixtures/<name>: its claims and its key. */
export function readStoreFixture(name: string): StoreFixture {
  const directory = new URL(`../fixtures/${name}/`, import.meta.url).pathname;
  const parsed = Claims.parse(JSON.parse(readFileSync(join(directory, 'claims.json'), 'utf8')));
  return {
    directory,
    claims: parsed.claims,
    keyring: keyringOf(codecKey(Buffer.from(parsed.key.hex, 'hex'), parsed.key.id)),
  };
}

/** A backend over `directory` that records the keys of every put and touch instead of writing. */
export function recordingBackend(directory: string, writes: string[]): ObjectBackend {
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

export const sha256 = (data: Uint8Array | null | undefined): string =>
  createHash('sha256')
    .update(data ?? new Uint8Array(0))
    .digest('hex');

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
    expect(sha256(payload?.data), `${entry.store} ${entry.payload}`).toBe(entry.sha256);
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

/** A copy of the fixture's plain store (removed after the file's tests), with a driver over it and the claims into it. */
export function plainCopy(
  fixture: StoreFixture,
  prefix: string,
): { backend: FileBackend; driver: ChunkStoreDriver; claimed: FixtureClaim[] } {
  const copy = temporaryDirectory(prefix);
  cpSync(join(fixture.directory, 'plain'), copy, { recursive: true });
  const backend = new FileBackend({ directory: copy });
  return {
    backend,
    driver: new ChunkStoreDriver({ backend }),
    claimed: fixture.claims.filter((entry) => entry.store === 'plain'),
  };
}

/**
 * A garbage collection over the copy `plainCopy` made: nothing missing, nothing deleted, and every
 * claimed payload still reads back (by a new driver). Returns the report for the caller's counts.
 */
export async function expectGcKeepsEverything({
  backend,
  driver,
  claimed,
}: ReturnType<typeof plainCopy>): Promise<Awaited<ReturnType<typeof collectGarbage>>> {
  const report = await collectGarbage({
    driver,
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
    const [payload] = await new ChunkStoreDriver({ backend }).retrieve({}, [new StorageDriverClaim(entry.claimData)]);
    expect(sha256(payload?.data), entry.payload).toBe(entry.sha256);
  }
  return report;
}

/** The hex SHA-256 of a payload's data (none: of no bytes), for comparing what was stored with what came back. */
export const sha = (data: Uint8Array | null | undefined): string =>
  createHash('sha256')
    .update(data ?? new Uint8Array(0))
    .digest('hex');

/** Stores one payload and returns its claim. */
export async function storeOne(driver: ChunkStoreDriver, payload: Payload): Promise<StorageDriverClaim> {
  const [claim] = await driver.store({}, [payload]);
  if (claim === undefined) throw new Error('no claim');
  return claim;
}

/**
 * The keys of every object file under `directory` (a store's root, or with `kind` only its
 * `v1/<kind>` objects), relative to the root; none when that directory does not exist.
 */
export function keysUnder(directory: string, kind?: 'chunks' | 'manifests' | 'nodes'): string[] {
  let entries;
  try {
    entries = readdirSync(kind === undefined ? directory : join(directory, 'v1', kind), {
      recursive: true,
      withFileTypes: true,
    });
  } catch {
    return [];
  }
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(directory.length + 1));
}
