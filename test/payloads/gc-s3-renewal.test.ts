// S3 has no delete conditional on an object's time, and renewing an object (storing the same
// payload again rewrites its manifest; reusing an old object copies it onto itself) leaves its
// bytes, so its ETag, as they were: a gc that checks an object's time, then deletes it, can delete
// one a store renewed in between, and the claim that store just handed out then names nothing.
// gc on S3 therefore moves what it removes to `quarantine/` for one more grace period, where reads
// still find it: the claim of that store resolves, the next gc (which sees the claim in a history)
// puts the object back, and one that finds it claimed by nothing removes it for good. Against
// moto, with the renewal made to land between gc's check and its delete.
import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { defaultPayloadConverter, type StorageDriverClaim } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Server, type S3TestServer } from '../../scripts/s3-test-server.js';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { claimManifestId } from '../../src/payloads/claims.js';
import { codecKey } from '../../src/payloads/keyring.js';
import { keyringOf } from '../support/keyring.js';
import { collectGarbage, totalOf } from '../../src/payloads/gc.js';
import { objectKey } from '../../src/payloads/object-format.js';
import { S3Backend } from '../../src/payloads/s3-backend.js';

let s3: S3TestServer;
beforeAll(async () => {
  s3 = await startS3Server({ bucket: 'compactor-gc-renewal' });
}, 180_000);
afterAll(async () => {
  await s3?.stop();
});

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function keysUnder(client: S3Client, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix, ContinuationToken: token }),
    );
    keys.push(...(page.Contents ?? []).flatMap((object) => (object.Key === undefined ? [] : [object.Key])));
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return keys;
}

describe('gc on S3 and a store renewing an object during the removal', () => {
  it(
    'loses nothing: the claim handed out meanwhile resolves, the next gc puts it back, a later one removes it for good',
    { timeout: 120_000 },
    async () => {
      const prefix = `renewal-${process.pid}-${randomBytes(4).toString('hex')}`;
      const keyring = keyringOf(codecKey(randomBytes(32), 'k-renewal'));
      const payload = defaultPayloadConverter.toPayload({
        messages: Array.from({ length: 200 }, (_, index) => ({
          role: 'tool',
          content: `${index} ${randomBytes(40).toString('hex')}`,
        })),
      });
      // Writers renew what they reuse once it is 1 s old: half the 2 s grace period of the gc below, as
      // the defaults are (24 h and 48 h). A fresh writer stores the same payload under the same names.
      const writer = () =>
        new ChunkStoreDriver({
          backend: new S3Backend({ bucket: s3.bucket, prefix, client: s3.client() }),
          keyring,
          refreshAfterMs: 1_000,
        });
      const [first] = await writer().store({}, [payload]);
      const manifest = claimManifestId(first?.claimData ?? {}) ?? '';
      const manifestKey = `${prefix}/${objectKey('manifest', manifest)}`;

      // gc's own client: right before it deletes the manifest, the writer stores the same payload
      // again (the manifest is written anew: a renewal) and hands out a claim.
      let renewed: StorageDriverClaim | undefined;
      const gcClient = s3.client();
      gcClient.middlewareStack.add(
        (next, context) => async (args) => {
          const input = args.input as { Key?: string };
          if (context.commandName === 'DeleteObjectCommand' && input.Key === manifestKey && renewed === undefined)
            [renewed] = await writer().store({}, [payload]);
          return next(args);
        },
        { step: 'initialize', name: 'renewBeforeDelete' },
      );
      const collector = new ChunkStoreDriver({
        backend: new S3Backend({ bucket: s3.bucket, prefix, client: gcClient }),
        keyring,
      });
      // S3 keeps its own times: a grace period of 2 s, judged 3 s after the payload was stored.
      await wait(3_000);
      const first_gc = await collectGarbage({ driver: collector, claimedManifests: [], graceMs: 2_000 });
      expect(claimManifestId(renewed?.claimData ?? {})).toBe(manifest);
      // The rest was renewed (touched) by that store, and kept.
      expect(totalOf(first_gc.deleted).objects).toBe(1);
      expect(await keysUnder(gcClient, `${prefix}/v1/`)).not.toContain(manifestKey);

      // The claim handed out during the removal resolves, for a reader that never saw the payload.
      const reader = new ChunkStoreDriver({
        backend: new S3Backend({ bucket: s3.bucket, prefix, client: s3.client() }),
        keyring,
      });
      const [back] = await reader.retrieve({}, [renewed ?? (first as StorageDriverClaim)]);
      expect(Buffer.from(back?.data ?? []).equals(Buffer.from(payload.data ?? []))).toBe(true);

      // The next gc finds the claim in a history: the objects go back where they were.
      await wait(2_500);
      const second = await collectGarbage({ driver: collector, claimedManifests: [manifest], graceMs: 2_000 });
      expect(second.restored.objects).toBe(1);
      expect(await keysUnder(gcClient, `${prefix}/v1/`)).toContain(manifestKey);
      expect(await keysUnder(gcClient, `${prefix}/quarantine/`)).toEqual([]);

      // Claimed by nothing any more: removed, then, once the quarantine is older than the grace period, for good.
      await wait(2_500);
      const third = await collectGarbage({ driver: collector, claimedManifests: [], graceMs: 2_000 });
      expect(totalOf(third.deleted).objects).toBeGreaterThan(0);
      await wait(2_500);
      const fourth = await collectGarbage({ driver: collector, claimedManifests: [], graceMs: 2_000 });
      expect(fourth.purged.objects).toBe(totalOf(third.deleted).objects);
      expect(await keysUnder(gcClient, `${prefix}/`)).toEqual([]);
    },
  );
});
