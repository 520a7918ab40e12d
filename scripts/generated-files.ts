// Node, dev only: writing files generated from the source (the JSON Schemas, the API reports), or
// with --check only saying which committed copies are stale, for the scripts that generate them.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A generated file: where it is committed and the text it must hold. */
export interface GeneratedFile {
  path: string;
  text: string;
}

const ROOT = fileURLToPath(new URL('../', import.meta.url));

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/**
 * Writes every file whose committed text differs (`check`: only names it, and sets exit code 1 with
 * the `command` that regenerates them), one line a file on stdout.
 */
export function writeGeneratedFiles(
  files: readonly GeneratedFile[],
  { check, command }: { check: boolean; command: string },
): void {
  let stale = 0;
  for (const { path, text } of files) {
    const shown = relative(ROOT, path);
    if (readOrNull(path) === text) {
      process.stdout.write(`up to date: ${shown}\n`);
      continue;
    }
    stale += 1;
    if (check) {
      process.stdout.write(`stale: ${shown}\n`);
    } else {
      writeFileSync(path, text);
      process.stdout.write(`wrote ${shown}\n`);
    }
  }
  if (check && stale > 0) {
    process.stdout.write(`run \`${command}\` to regenerate\n`);
    process.exitCode = 1;
  }
}
