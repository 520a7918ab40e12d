// Node (test support): digests of what a slow step of the tests is built from, so that its result
// can be kept under node_modules/.cache between runs and used again while nothing it reads changed
// (the workflow bundles, bundle-cache.ts; the API report, test/package/api-report.test.ts).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where results are kept between runs: npm ci empties it, as it does the compilers' caches. */
export const KEPT_DIR = join(ROOT, 'node_modules/.cache');

/** What the installed packages and the compiler settings are (paths from the repository's root). */
export const INSTALLED = ['package-lock.json', 'node_modules/.package-lock.json', 'tsconfig.json'];

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/**
 * A digest of `files` and every file under `dirs` (paths from `root`), each by its path and
 * content; a missing file counts as missing. The root is in it too: what is built may name the
 * files it was built from by their absolute path.
 */
export function inputsDigest(root: string, files: readonly string[], dirs: readonly string[]): string {
  const hash = createHash('sha256').update(`${root}\0`);
  const paths = [
    ...files.map((file) => join(root, file)),
    ...dirs.flatMap((dir) => filesUnder(join(root, dir)).sort()),
  ];
  for (const path of paths) {
    hash.update(`${relative(root, path)}\0`);
    hash.update(existsSync(path) ? readFileSync(path) : '(missing)');
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** Writes `text` to `file` aside and renames it: a reader never sees half a file. */
export function writeWhole(file: string, text: string): void {
  const aside = `${file}.${process.pid}.tmp`;
  writeFileSync(aside, text);
  renameSync(aside, file);
}
