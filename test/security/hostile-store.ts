// Node (tests): a payload store an attacker wrote to — raw bytes under objects' names, and
// manifests (unencrypted, without a context) over whatever entries the test wants.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { StorageDriverClaim } from '@temporalio/common';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { claimDataFor } from '../../src/payloads/claims.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { objectKey } from '../../src/payloads/object-format.js';
import { encodeManifest, type Entry } from '../../src/payloads/object-format.js';
import { objectId, sealObject } from '../../src/payloads/sealed-object.js';
import { temporaryDirectory } from '../support/cleanup.js';

export const MAGIC = Buffer.from('cps\u0001', 'latin1');
export const FLAG_DEFLATE = 1;

/** A store directory, a cold driver on it, and a way to put raw bytes under an object's name. */
export function hostileStore(): {
  directory: string;
  driver: () => ChunkStoreDriver;
  place: (kind: 'chunk' | 'node' | 'manifest', id: string, bytes: Uint8Array) => void;
} {
  const directory = temporaryDirectory('compactor-hostile-store-');
  return {
    directory,
    driver: () => new ChunkStoreDriver({ backend: new FileBackend({ directory, durable: false }) }),
    place: (kind, id, bytes) => {
      const path = join(directory, ...objectKey(kind, id).split('/'));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, bytes);
    },
  };
}

/** A manifest (unencrypted, no context) over `entries`, placed in the store: its claim. */
export function placeManifest(
  place: ReturnType<typeof hostileStore>['place'],
  size: number,
  entries: Entry[],
  base?: { id: string; keep: number; depth: number },
): StorageDriverClaim {
  const plaintext = encodeManifest({ size, metadata: {}, base, entries });
  const id = objectId(plaintext, undefined);
  place('manifest', id, sealObject(plaintext, undefined).sealed);
  return new StorageDriverClaim(claimDataFor({ manifestId: id, keyId: undefined }));
}

export const fakeId = (seed: number): string => seed.toString(16).padStart(2, '0').repeat(32);
