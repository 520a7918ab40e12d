// Writes the README's configuration table (between its config-table markers) from the settings
// table in src/config.ts. `npm run docs:config` after adding or changing a setting;
// test/config.test.ts fails while the README differs from what this writes.
//
//   npm run docs:config              rewrite the table in README.md
//   npm run docs:config -- --check   only say whether it is stale (exit code 1 if so)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configTableMarkdown } from '../src/config.js';

const README = fileURLToPath(new URL('../README.md', import.meta.url));
const START = '<!-- config-table:start -->';
const END = '<!-- config-table:end -->';

function main(): void {
  const text = readFileSync(README, 'utf8');
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md: no ${START} … ${END} section to write the table into`);
  const updated = `${text.slice(0, start + START.length)}\n${configTableMarkdown()}\n${text.slice(end)}`;
  if (updated === text) {
    console.error('README.md: the configuration table is up to date');
    return;
  }
  if (process.argv.includes('--check')) {
    console.error('README.md: the configuration table is stale; run npm run docs:config');
    process.exitCode = 1;
    return;
  }
  writeFileSync(README, updated);
  console.error('README.md: configuration table rewritten');
}

main();
