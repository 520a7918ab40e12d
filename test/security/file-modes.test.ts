// Adversarial: other users of the machine. A file store holds payloads (the demo's unencrypted),
// so what the store creates is its owner's alone: directories 0700 and objects 0600, created so
// (never loosened then tightened, which leaves a window), temporary files included — by the
// TypeScript driver and by the Python module alike. A directory the user made keeps its own mode.
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { resolvePythonSdk } from '../../scripts/python-sdk.mjs';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { temporaryDirectory } from '../support/cleanup.js';
import { jsonPayload, storeOne, toolMessage } from '../support/payload-store.js';
import { runPythonScript } from '../support/python-script.js';

const VECTORS = fileURLToPath(new URL('../interop/python/vectors.py', import.meta.url));

/** Every directory and file under `root` with its permission bits (`root` itself excluded). */
function modesUnder(root: string): { directories: Map<string, number>; files: Map<string, number> } {
  const directories = new Map<string, number>();
  const files = new Map<string, number>();
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    (entry.isDirectory() ? directories : files).set(path.slice(root.length), statSync(path).mode & 0o777);
  }
  return { directories, files };
}

function expectPrivate(root: string): void {
  const { directories, files } = modesUnder(root);
  expect(files.size).toBeGreaterThan(0);
  for (const [path, mode] of directories) expect(mode.toString(8), path).toBe('700');
  for (const [path, mode] of files) expect(mode.toString(8), path).toBe('600');
}

describe('a file store is private to its owner', () => {
  it('the driver creates the store directory, its directories 0700 and its objects 0600', async () => {
    const parent = temporaryDirectory('compactor-modes-');
    const store = join(parent, 'store');
    const driver = new ChunkStoreDriver({ backend: new FileBackend({ directory: store }) });
    for (let seed = 0; seed < 4; seed += 1) await storeOne(driver, jsonPayload({ messages: [toolMessage(seed, 200)] }));
    expect(statSync(store).mode & 0o777).toBe(0o700);
    expectPrivate(store);
  });

  it('leaves the mode of a directory the user made as it is', async () => {
    const store = temporaryDirectory('compactor-modes-own-');
    mkdirSync(join(store, 'v1'), { mode: 0o750 });
    const driver = new ChunkStoreDriver({ backend: new FileBackend({ directory: store }) });
    await storeOne(driver, jsonPayload({ messages: [toolMessage(1, 200)] }));
    expect(statSync(join(store, 'v1')).mode & 0o777).toBe(0o750);
    expect(statSync(join(store, 'v1', 'manifests')).mode & 0o777).toBe(0o700);
  });

  it('the Python module writes the same modes', async () => {
    const parent = temporaryDirectory('compactor-modes-python-');
    const store = join(parent, 'store');
    await runPythonScript(await resolvePythonSdk(), VECTORS, {
      env: { COMPACTOR_PAYLOAD_STORE: `file:${store}` },
      read: [],
      write: { big: { messages: [toolMessage(2, 200)] } },
    });
    expect(statSync(store).mode & 0o777).toBe(0o700);
    expectPrivate(store);
  });
});
