// Writes the JSON Schemas of compactConversation's input and result into docs/, from the zod
// schemas in src/shared/json-schemas.ts (built on the validators' own). `npm run docs:schemas` after changing
// them; test/schemas.test.ts fails while the committed files differ from what this writes.
//
//   npm run docs:schemas              write docs/*.schema.json
//   npm run docs:schemas -- --check   only say which files are stale (exit code 1 if any)
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compactConversationJsonSchemas } from '../src/shared/json-schemas.js';

/** Where the schemas are committed. */
export const DOCS_DIR = fileURLToPath(new URL('../docs/', import.meta.url));

/** Each schema file's path and the text it must hold. */
export function jsonSchemaFiles(): Array<{ path: string; text: string }> {
  return Object.entries(compactConversationJsonSchemas()).map(([name, schema]) => ({
    path: join(DOCS_DIR, name),
    text: `${JSON.stringify(schema, null, 2)}\n`,
  }));
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

function main(): void {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const { path, text } of jsonSchemaFiles()) {
    if (readOrNull(path) === text) {
      process.stdout.write(`up to date: ${path}\n`);
      continue;
    }
    stale += 1;
    if (check) {
      process.stdout.write(`stale: ${path}\n`);
    } else {
      writeFileSync(path, text);
      process.stdout.write(`wrote ${path}\n`);
    }
  }
  if (check && stale > 0) {
    process.stdout.write('run `npm run docs:schemas` to regenerate\n');
    process.exitCode = 1;
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main();
