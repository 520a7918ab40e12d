// Writes the configuration table of docs/configuration.md (between its config-table markers) from
// the settings table in src/config.ts. `npm run docs:config` after adding or changing a setting;
// test/config.test.ts fails while the page differs from what this writes.
//
//   npm run docs:config              rewrite the table in docs/configuration.md
//   npm run docs:config -- --check   only say whether it is stale (exit code 1 if so)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configTable } from '../src/config.js';

const PAGE = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
const NAME = 'docs/configuration.md';
const START = '<!-- config-table:start -->';
const END = '<!-- config-table:end -->';

/** The configuration table as Markdown. */
export function configTableMarkdown(): string {
  const cell = (text: string): string => text.replace(/\|/g, '\\|');
  const rows = configTable().map(
    (row) =>
      `| \`${row.env}\` | ${row.flag === undefined ? 'env only' : `\`${row.flag}\``} | ${cell(row.default)} | ${cell(row.description)} |`,
  );
  return ['| Variable | Flag | Default | Description |', '|---|---|---|---|', ...rows].join('\n');
}

function main(): void {
  const text = readFileSync(PAGE, 'utf8');
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${NAME}: no ${START} … ${END} section to write the table into`);
  const updated = `${text.slice(0, start + START.length)}\n${configTableMarkdown()}\n${text.slice(end)}`;
  if (updated === text) {
    console.error(`${NAME}: the configuration table is up to date`);
    return;
  }
  if (process.argv.includes('--check')) {
    console.error(`${NAME}: the configuration table is stale; run npm run docs:config`);
    process.exitCode = 1;
    return;
  }
  writeFileSync(PAGE, updated);
  console.error(`${NAME}: configuration table rewritten`);
}

// test/config.test.ts imports the table without writing the page.
if (process.argv[1] === fileURLToPath(import.meta.url)) main();
