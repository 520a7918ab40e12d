// Node only: the package's version, read from its package.json (two folders up from src/cli and
// from dist/cli alike), for `temporal-compactor --version`.
import { readFileSync } from 'node:fs';

/** The `version` of the package.json this module was installed with. */
export function packageVersion(): string {
  const manifest: unknown = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  const version: unknown =
    typeof manifest === 'object' && manifest !== null ? Reflect.get(manifest, 'version') : undefined;
  if (typeof version !== 'string') throw new Error('package.json has no version');
  return version;
}
