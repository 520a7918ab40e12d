// Adversarial: the codec's inline payloads. Anyone who can start or signal a workflow puts a
// payload in its history, and a worker decodes every payload of a workflow task before the
// workflow sees it, again on every retry. A payload marked as ours must never make the codec
// allocate more than the size it states, which is at most MAX_CODEC_PAYLOAD_BYTES (4 MiB), however
// small it is on the wire; it is refused with a PayloadDecodeError naming why, and the next
// payload decodes as usual.
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { beforeAll, describe, expect, it } from 'vitest';
import { codecKey } from '../../src/payloads/keyring.js';
import { keyringOf } from '../support/keyring.js';
import { CompactorCodec } from '../../src/payloads/codec.js';
import { PayloadDecodeError } from '../../src/payloads/errors.js';
import { deflateBomb } from './bombs.js';
import { measured, MiB } from './memory.js';

/** The most a decode of one inline payload may allocate: the 4 MiB bound on what a payload states, and room for zlib's last chunk. */
const DECODE_BOUND = 4 * MiB + MiB;
const utf8 = new TextEncoder();

function ours(description: string, data: Uint8Array): Payload {
  return { metadata: { encoding: utf8.encode('binary/compactor'), compactor: utf8.encode(description) }, data };
}

describe('the codec meets a decompression bomb', () => {
  // The payload: 255 KB of raw deflate that inflates to 256 MiB of zeros, with no key id.
  let bomb: Buffer;
  beforeAll(async () => {
    bomb = await deflateBomb(256 * MiB);
  });
  const codec = new CompactorCodec({ keyring: keyringOf(codecKey(randomBytes(32), 'k-bombs')) });
  const good = defaultPayloadConverter.toPayload({ note: 'the next payload decodes', padding: 'x'.repeat(2_000) });

  const cases: Array<[string, () => Payload, RegExp]> = [
    ['without a stated size (refused before inflating)', () => ours('deflate', bomb), /malformed "compactor" entry/],
    [
      'stating a small size (inflating stops there)',
      () => ours('deflate;size=1000', bomb),
      /inflates to more than the 1000 bytes it states/,
    ],
    [
      'stating the largest size there is (inflating stops there)',
      () => ours('deflate;size=4194304', bomb),
      /inflates to more than the 4194304 bytes it states/,
    ],
    [
      'stating a size over the bound (refused before inflating)',
      () => ours('deflate;size=268435456', bomb),
      /states 268435456 bytes decoded, more than the 4194304 a payload may have/,
    ],
  ];
  for (const [name, payload, reason] of cases)
    it(`${name}: a PayloadDecodeError, at most 5 MiB allocated, and the next payload decodes`, async () => {
      expect(bomb.length).toBeLessThan(300 * 1024);
      const { outcome, use } = await measured(() => codec.decode([payload()]));
      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.error).toBeInstanceOf(PayloadDecodeError);
      expect(String(outcome.error)).toMatch(reason);
      expect(use.arrayBuffers).toBeLessThan(DECODE_BOUND);
      const [encoded] = await codec.encode([good]);
      const [decoded] = await codec.decode([encoded ?? good]);
      expect(defaultPayloadConverter.fromPayload(decoded ?? good)).toEqual(defaultPayloadConverter.fromPayload(good));
    });
});
