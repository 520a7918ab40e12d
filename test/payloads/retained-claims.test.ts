// What the claims in a history keep from the garbage collector, without a server: claims anywhere
// in an event name their manifests, so a collection keeps those and all under them; a claim of
// another driver or a malformed one names nothing.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter, StorageDriverClaim, type Payload } from '@temporalio/common';
import { encodeReferencePayload } from '@temporalio/common/lib/internal-non-workflow/extstore-helpers.js';
import { afterAll, describe, expect, it } from 'vitest';
import { CHUNK_STORE_DRIVER_NAME, ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { ChunkMissingError } from '../../src/payloads/errors.js';
import { claimedManifestsIn } from '../../src/payloads/retained-claims.js';
import { codecKey } from '../../src/payloads/keyring.js';
import { keyringOf } from '../support/keyring.js';
import { collectGarbage } from '../../src/payloads/gc.js';
import { FileBackend } from '../../src/payloads/file-backend.js';

const directories: string[] = [];
afterAll(() => directories.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

/** Distinct per seed: two conversations share no chunk. */
function conversation(seed: string) {
  return {
    messages: Array.from({ length: 50 }, (_, index) => ({
      role: 'tool',
      content: `${seed} ${index}: ${randomBytes(200).toString('hex')}`,
    })),
  };
}

/** The reference payload the SDK writes into history for a claim. */
function reference(claim: StorageDriverClaim, driverName = CHUNK_STORE_DRIVER_NAME): Payload {
  return encodeReferencePayload({ driverName, claim, sizeBytes: 20_000 });
}

/** A claim's manifest id in hex, decoded here rather than by the code under test. */
const hexOf = (claim: StorageDriverClaim): string => Buffer.from(claim.claimData.m ?? '', 'base64url').toString('hex');

describe('claimedManifestsIn', () => {
  it('names the manifests of claims anywhere in an event, and a collection keeps them', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'compactor-retained-'));
    directories.push(directory);
    const backend = new FileBackend({ directory, durable: false });
    const keyring = keyringOf(codecKey(randomBytes(32), 'k1'));
    const values = {
      newer: conversation('newer'),
      older: conversation('older'),
      unclaimed: conversation('unclaimed'),
      foreign: conversation('foreign'),
    };
    const [newer, older, unclaimed, foreign] = await new ChunkStoreDriver({ backend, keyring }).store(
      {},
      [values.newer, values.older, values.unclaimed, values.foreign].map(
        (value) => defaultPayloadConverter.toPayload(value) ?? {},
      ),
    );
    if (newer === undefined || older === undefined || unclaimed === undefined || foreign === undefined)
      throw new Error('four claims expected');
    expect(Object.keys(older.claimData).sort()).toEqual(['k', 'm']);
    // Shaped like a history event: payloads a few levels down, in lists and maps.
    const event = {
      eventId: 7,
      activityTaskScheduledEventAttributes: {
        input: { payloads: [reference(newer)] },
        header: { fields: { carried: reference(older) } },
      },
      markerRecordedEventAttributes: {
        details: {
          data: {
            payloads: [
              reference(foreign, 'another-driver'),
              reference(new StorageDriverClaim({ m: hexOf(unclaimed), k: 'k1' })),
              reference(new StorageDriverClaim({ manifest: hexOf(unclaimed), keyId: 'k1' })),
            ],
          },
        },
      },
    };
    const found: string[] = [];
    claimedManifestsIn(event, (manifest) => found.push(manifest));
    expect(found.sort()).toEqual([hexOf(newer), hexOf(older)].sort());

    // Everything is older than the grace period: what no claim names goes.
    const then = new Date(Date.now() - 72 * 3_600_000);
    for (const entry of readdirSync(directory, { recursive: true, withFileTypes: true }))
      if (entry.isFile()) utimesSync(join(entry.parentPath, entry.name), then, then);
    const driver = new ChunkStoreDriver({ backend, keyring });
    const report = await collectGarbage({ driver, claimedManifests: found });
    expect(report.deleted.manifest.objects).toBe(2);
    const reader = new ChunkStoreDriver({ backend, keyring });
    const kept = await reader.retrieve({}, [newer, older]);
    expect(kept.map((payload) => defaultPayloadConverter.fromPayload(payload))).toEqual([values.newer, values.older]);
    await expect(reader.retrieve({}, [unclaimed])).rejects.toThrow(ChunkMissingError);
    await expect(reader.retrieve({}, [foreign])).rejects.toThrow(ChunkMissingError);
  });
});
