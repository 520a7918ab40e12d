// Adversarial: paths swapped under a writer. The file store writes an object to a fresh temporary
// file (created exclusively, 0600) and renames it over the object's name, so a symbolic link
// planted at that name is replaced, never written through. (`compact --out` and the plugin's
// bundle are covered where they live: test/cli/compact.test.ts refuses a link at --out, and the
// plugin writes no file at all: test/workflows/plugin.test.ts.)
import { existsSync, lstatSync, mkdirSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { claimManifestId } from '../../src/payloads/claims.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { objectKey } from '../../src/payloads/object-format.js';
import { temporaryDirectory } from '../support/cleanup.js';
import { jsonPayload, sha, toolMessage } from '../support/payload-store.js';

describe('a symbolic link planted at an object name', () => {
  it('is replaced by the object, and what it pointed at is never created or written', async () => {
    const parent = temporaryDirectory('compactor-swapped-');
    const store = join(parent, 'store');
    const victim = join(parent, 'victim');
    const payload = jsonPayload({ messages: [toolMessage(7, 20)] });
    // Where the payload's manifest will go: learnt from a store of the same payload elsewhere.
    const probe = new ChunkStoreDriver({
      backend: new FileBackend({ directory: temporaryDirectory('compactor-probe-') }),
    });
    const [probed] = await probe.store({}, [payload]);
    const manifest = objectKey('manifest', claimManifestId(probed?.claimData ?? {}) ?? '');
    const path = join(store, ...manifest.split('/'));
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    symlinkSync(victim, path);

    const driver = new ChunkStoreDriver({ backend: new FileBackend({ directory: store }) });
    const [claim] = await driver.store({}, [payload]);
    expect(existsSync(victim)).toBe(false);
    expect(lstatSync(path).isSymbolicLink()).toBe(false);
    const cold = new ChunkStoreDriver({ backend: new FileBackend({ directory: store }) });
    const [back] = await cold.retrieve({}, claim === undefined ? [] : [claim]);
    expect(sha(back?.data)).toBe(sha(payload.data));
  });
});
