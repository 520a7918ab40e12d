// The chunk store driver refuses options it would not understand, naming the option: a caller
// without a compiler (JavaScript, a config object built at run time) must not get a store other
// than the one they asked for.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/core/errors.js';
import { ChunkStoreDriver, type ChunkStoreDriverOptions } from '../../src/payloads/chunk-store.js';
import { FileBackend } from '../../src/payloads/file-backend.js';

const directory = mkdtempSync(join(tmpdir(), 'compactor-driver-options-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const backend = new FileBackend({ directory });

/** The driver's constructor with options a type check would refuse, as a JavaScript caller passes them. */
const driverWith = (options: Record<string, unknown>): ChunkStoreDriver =>
  new ChunkStoreDriver({ backend, ...options } as unknown as ChunkStoreDriverOptions);

describe('ChunkStoreDriver options', () => {
  it('accepts every option it knows, at the ends of their ranges', () => {
    const driver = driverWith({
      keyring: undefined,
      refreshAfterMs: 0,
      inlineBelow: 0,
      literalBelow: 0,
      now: Date.now,
    });
    expect(driver.backend).toBe(backend);
    expect(driverWith({ refreshAfterMs: Number.MAX_SAFE_INTEGER }).backend).toBe(backend);
  });

  it.each([
    [{ literalBelw: 4 }, 'driver.literalBelw: unknown option; did you mean literalBelow?'],
    [{ windowBytes: 1 }, 'driver.windowBytes: unknown option; the options are backend, keyring, refreshAfterMs'],
    [{ manifestFormat: 4 }, 'driver.manifestFormat: unknown option'],
    [{ concurrency: 4 }, 'driver.concurrency: unknown option'],
    [{ refreshAfterMs: -1 }, 'driver.refreshAfterMs: must be an integer from 0 up; got -1'],
    [{ inlineBelow: 1.5 }, 'driver.inlineBelow: must be an integer from 0 up; got 1.5'],
    [{ literalBelow: '256' }, 'driver.literalBelow: must be an integer from 0 up; got "256"'],
  ])('refuses %j, naming the option', (options, message) => {
    expect(() => driverWith(options)).toThrow(InvalidInputError);
    expect(() => driverWith(options)).toThrow(message);
  });
});
