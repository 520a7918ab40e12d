// A keyring from keys already built, for tests and benchmarks (the package reads its keys from settings).
import type { CodecKey, Keyring } from '../../src/payloads/keyring.js';

/** The first key encrypts, and the first of an id counts. */
export function keyringOf(current: CodecKey, ...older: CodecKey[]): Keyring {
  return { current, byId: new Map([current, ...older].reverse().map((key) => [key.id, key])) };
}
