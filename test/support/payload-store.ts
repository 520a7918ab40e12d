// What the payload store's tests share: an in-memory backend that records requests, payloads of
// agent-run shapes, storing one payload, and listing a store directory's objects.
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Payload, StorageDriverClaim } from '@temporalio/common';
import type { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import type { ObjectBackend } from '../../src/payloads/object-backend.js';

/** An in-memory backend that records every request. */
export class MemoryBackend implements ObjectBackend {
  readonly description = 'memory:test';
  readonly objects = new Map<string, Uint8Array>();
  readonly requests: Array<{ op: 'get' | 'put' | 'stat' | 'touch'; key: string }> = [];
  async get(key: string): Promise<Uint8Array | undefined> {
    this.requests.push({ op: 'get', key });
    return this.objects.get(key);
  }
  async put(key: string, body: Uint8Array): Promise<void> {
    this.requests.push({ op: 'put', key });
    this.objects.set(key, Uint8Array.from(body));
  }
  async stat(key: string): Promise<{ modifiedMs: number } | undefined> {
    this.requests.push({ op: 'stat', key });
    return this.objects.has(key) ? { modifiedMs: Date.now() } : undefined;
  }
  async touch(key: string): Promise<void> {
    this.requests.push({ op: 'touch', key });
  }
  /** The keys written, in order. */
  puts(): string[] {
    return this.requests.filter((request) => request.op === 'put').map((request) => request.key);
  }
}

/** A tool's result as an agent reads files: numbered lines of code, distinct per seed, some of them shared across seeds. */
export function toolMessage(seed: number, lines = 40): Record<string, string> {
  const content = Array.from(
    { length: lines },
    (_, line) =>
      `${line + 1}\tdef handler_${(seed * 7 + line) % 90}(self, request): return self.route(request, ${line})`,
  ).join('\n');
  return { role: 'tool', tool_call_id: `call_${seed}_${randomBytes(4).toString('hex')}`, content };
}

/** A JSON payload of `value`, as the SDK's default converter makes it. */
export const jsonPayload = (value: unknown): Payload => ({
  metadata: { encoding: Buffer.from('json/plain') },
  data: Buffer.from(JSON.stringify(value)),
});

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
