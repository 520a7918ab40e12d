// What `npm run test:package` reads of a project's installed node_modules: which copies of a package
// it holds, which copy a package resolves another from, and how many bytes it takes.
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, relative, sep } from 'node:path';

/** One installed copy of a package: its version and its folder, relative to the project. */
export interface InstalledCopy {
  version: string;
  path: string;
}

/** The version in a package folder's package.json. */
function versionAt(folder: string): string {
  const manifest: unknown = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
  const version: unknown =
    typeof manifest === 'object' && manifest !== null ? Reflect.get(manifest, 'version') : undefined;
  return typeof version === 'string' ? version : '?';
}

/** Every installed copy of each of `names` under the project's node_modules, nested ones included. */
export function installedCopies(project: string, names: readonly string[]): Map<string, InstalledCopy[]> {
  const found = new Map<string, InstalledCopy[]>(names.map((name) => [name, []]));
  const visit = (modules: string, depth: number): void => {
    if (!existsSync(modules) || depth > 8) return;
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith('.')) continue;
      const packages = entry.startsWith('@')
        ? readdirSync(join(modules, entry)).map((inner) => `${entry}/${inner}`)
        : [entry];
      for (const name of packages) {
        const folder = join(modules, name);
        if (!existsSync(join(folder, 'package.json'))) continue;
        found.get(name)?.push({ version: versionAt(folder), path: relative(project, folder) });
        visit(join(folder, 'node_modules'), depth + 1);
      }
    }
  };
  visit(join(project, 'node_modules'), 0);
  return found;
}

/**
 * The folder (relative to the project) of the copy of `name` that the package in `from` loads, as a
 * new Node process resolves it (this process's resolution cache would outlive a reinstall).
 */
export function resolvedCopy(project: string, from: string, name: string): string | undefined {
  const script = [
    "const { createRequire } = require('node:module');",
    "const { dirname, join, relative } = require('node:path');",
    "const { existsSync, readFileSync } = require('node:fs');",
    'const [project, from, name] = process.argv.slice(1);',
    "let folder = dirname(createRequire(join(project, from, 'package.json')).resolve(name));",
    "const nameAt = (dir) => existsSync(join(dir, 'package.json')) ? JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name : undefined;",
    'while (nameAt(folder) !== name && dirname(folder) !== folder) folder = dirname(folder);',
    "console.log(nameAt(folder) === name ? relative(project, folder) : '');",
  ].join('\n');
  const result = spawnSync(process.execPath, ['-e', script, project, from, name], { encoding: 'utf8' });
  const folder = result.status === 0 ? result.stdout.trim() : '';
  return folder === '' ? undefined : folder.split(sep).join('/');
}

/** Bytes of the files under `folder` (their sizes as listed; symlinks count as links). */
export function folderBytes(folder: string): number {
  let total = 0;
  const visit = (path: string): void => {
    const stat = lstatSync(path);
    if (stat.isDirectory()) for (const entry of readdirSync(path)) visit(join(path, entry));
    else total += stat.size;
  };
  if (existsSync(folder)) visit(folder);
  return total;
}
