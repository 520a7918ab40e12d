// Writes the JSON Schemas of compactConversation's input and result into docs/, from the zod
// schemas in scripts/compact-conversation-schemas.ts (built on the validators' own). `npm run docs:schemas` after changing
// them; test/shared/json-schemas.test.ts fails while the committed files differ from what this writes.
//
//   npm run docs:schemas              write docs/*.schema.json
//   npm run docs:schemas -- --check   only say which files are stale (exit code 1 if any)
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeGeneratedFiles } from './generated-files.js';
import { compactConversationJsonSchemas } from './compact-conversation-schemas.js';

/** Where the schemas are committed. */
export const DOCS_DIR = fileURLToPath(new URL('../docs/', import.meta.url));

/** Each schema file's path and the text it must hold. */
export function jsonSchemaFiles(): Array<{ path: string; text: string }> {
  return Object.entries(compactConversationJsonSchemas()).map(([name, schema]) => ({
    path: join(DOCS_DIR, name),
    text: `${JSON.stringify(schema, null, 2)}\n`,
  }));
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeGeneratedFiles(jsonSchemaFiles(), { check: process.argv.includes('--check'), command: 'npm run docs:schemas' });
}
