// Adversarial: the Python reader (interop/python/compactor_payloads.py) meets the bombs the
// TypeScript side refuses — an inline codec payload of 255 KB that inflates to 256 MiB, a pack
// that does the same, a sealed object of 80 MiB, a manifest stating 2 GiB — and refuses each with
// the error the TypeScript side raises, with at most twice the size stated allocated
// (tracemalloc's peak), then decodes the next payload.
import { randomBytes } from 'node:crypto';
import { truncateSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultPayloadConverter, type Payload, type StorageDriverClaim } from '@temporalio/common';
import { encodeReferencePayload } from '@temporalio/common/lib/internal-non-workflow/extstore-helpers.js';
import proto from '@temporalio/proto';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolvePythonSdk } from '../../scripts/python-sdk.mjs';
import { CHUNK_STORE_DRIVER_NAME } from '../../src/payloads/chunk-store.js';
import { objectKey } from '../../src/payloads/object-format.js';
import { PRESET_DICTIONARIES } from '../../src/payloads/dictionary.js';
import { runPythonScript } from '../support/python-script.js';
import { deflateBomb } from './bombs.js';
import { fakeId, FLAG_DEFLATE, hostileStore, MAGIC, placeManifest } from './hostile-store.js';
import { MiB } from './memory.js';

const SCRIPT = fileURLToPath(new URL('./python/bombs.py', import.meta.url));
const PayloadProto = proto.temporal.api.common.v1.Payload;
const toBase64 = (payload: Payload): string => Buffer.from(PayloadProto.encode(payload).finish()).toString('base64');
const utf8 = new TextEncoder();

interface BombReport {
  read: Array<{ name: string; class: string | null; message: string; peak: number }>;
  good: unknown;
}

describe('the Python reader meets the bombs', () => {
  let python: string;
  let bomb: Buffer;
  let storeBomb: Buffer;
  beforeAll(async () => {
    python = await resolvePythonSdk();
    bomb = await deflateBomb(256 * MiB);
    const dictionary = PRESET_DICTIONARIES.get(1);
    if (dictionary === undefined) throw new Error('no preset dictionary 1');
    storeBomb = await deflateBomb(256 * MiB, dictionary);
  });

  it(
    'refuses every one naming why, allocating at most the bound, and decodes the next payload',
    { timeout: 120_000 },
    async () => {
      const { directory, place } = hostileStore();
      const inline = (description: string): Payload => ({
        metadata: { encoding: utf8.encode('binary/compactor'), compactor: utf8.encode(description) },
        data: bomb,
      });
      const claim = (stored: StorageDriverClaim, size: number): Payload =>
        encodeReferencePayload({ driverName: CHUNK_STORE_DRIVER_NAME, claim: stored, sizeBytes: size });
      const pack = fakeId(0xd0);
      place('chunk', pack, Buffer.concat([MAGIC, Uint8Array.of(FLAG_DEFLATE, 1), storeBomb]));
      const large = fakeId(0xd1);
      place('chunk', large, Buffer.concat([MAGIC, Uint8Array.of(0)]));
      truncateSync(join(directory, ...objectKey('chunk', large).split('/')), 80 * MiB);
      const vectors: Array<[string, Payload, string, RegExp, number]> = [
        ['codec, no stated size', inline('deflate'), 'PayloadDecodeError', /malformed "compactor" entry/, MiB],
        [
          'codec, stating the bound',
          inline('deflate;size=4194304'),
          'PayloadDecodeError',
          /inflates to more than the 4194304 bytes it states/,
          // CPython's zlib grows its output buffer and copies it once: twice what is stated, at most.
          2 * 4 * MiB + 2 * MiB,
        ],
        [
          'store, a pack bomb',
          claim(placeManifest(place, 10, [{ kind: 'slice', of: 'pack', id: pack, offset: 0, length: 10 }]), 10),
          'ChunkIntegrityError',
          /states a plaintext of \d+ bytes, more than/,
          // The 255 KB object, read and sliced a few times before its stated length refuses it.
          2 * MiB,
        ],
        [
          'store, an 80 MiB object',
          claim(placeManifest(place, 10, [{ kind: 'slice', of: 'pack', id: large, offset: 0, length: 10 }]), 10),
          'ChunkIntegrityError',
          /is 83886080 bytes, more than the \d+ any object of the store takes/,
          MiB,
        ],
        [
          'store, a manifest stating 2 GiB',
          claim(
            placeManifest(place, 2 ** 31 - 1, [{ kind: 'node', level: 1, id: fakeId(0xd2), length: 2 ** 31 - 1 }]),
            2 ** 31 - 1,
          ),
          'ChunkIntegrityError',
          /states a payload of 2147483647 bytes, more than the \d+ the store holds/,
          MiB,
        ],
      ];
      const good = defaultPayloadConverter.toPayload({ the: 'next payload' });
      const report = await runPythonScript<BombReport>(python, SCRIPT, {
        env: { COMPACTOR_PAYLOAD_STORE: `file:${directory}`, COMPACTOR_CODEC_KEY: randomBytes(32).toString('base64') },
        read: vectors.map(([name, payload]) => ({ name, payload: toBase64(payload) })),
        good: toBase64(good),
      });
      expect(report.read.map(({ name }) => name)).toEqual(vectors.map(([name]) => name));
      for (const [index, [name, , errorClass, reason, bound]] of vectors.entries()) {
        const outcome = report.read[index];
        expect(outcome?.class, name).toBe(errorClass);
        expect(outcome?.message, name).toMatch(reason);
        expect(outcome?.peak, name).toBeLessThan(bound);
      }
      expect(report.good).toEqual({ the: 'next payload' });
    },
  );
});
