// bench/README.md states what each bench measures: for every bench one table, the command that
// measures it, the machine and the date, and how to read it, in at most 250 lines. The benches
// write their sections between markers (bench/readme-section.ts, and bench/agent.ts's own),
// so every marker a bench writes between must be there. The links into the page are checked by
// design-doc.test.ts with every other docs link.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const readme = readFileSync(join(root, 'bench', 'README.md'), 'utf8');

/** The page's `## ` sections: heading and body. */
function sections(markdown: string): Array<{ heading: string; body: string }> {
  return markdown
    .split(/^(?=## )/m)
    .filter((part) => part.startsWith('## '))
    .map((part) => ({ heading: part.split('\n', 1)[0] ?? '', body: part }));
}

/** The tables of a Markdown text, counted by their header separator rows (`|---|--:|`). */
function tableCount(markdown: string): number {
  return markdown.split('\n').filter((line) => /^\|(?:\s*:?-+:?\s*\|)+\s*$/.test(line)).length;
}

/** What a section lacks of what every bench's section states. */
function missing(body: string): string[] {
  const wanted: Array<[string, RegExp]> = [
    ['one table', /^/],
    ['a command', /`(?:CHAOS_\w+=\S+ )?npm run [\w:-]+/],
    ['a date', /Date: \d{4}-\d{2}-\d{2}/],
    ['a machine', /\d+ (?:CPUs|cores)/],
    ['how to read it', /\*\*How to read it\.\*\*/],
  ];
  return wanted
    .filter(([what, pattern]) => (what === 'one table' ? tableCount(body) !== 1 : !pattern.test(body)))
    .map(([what]) => what);
}

/** The markers the benches write between: `writeReadmeSection('NAME', …)` and marker constants. */
function writtenMarkers(): string[] {
  const names = new Set<string>();
  for (const file of readdirSync(join(root, 'bench')).filter((name) => name.endsWith('.ts'))) {
    const text = readFileSync(join(root, 'bench', file), 'utf8');
    for (const match of text.matchAll(/writeReadmeSection\('([\w:-]+)'/g)) names.add(match[1] ?? '');
    for (const match of text.matchAll(/'<!-- bench:([\w:-]+):start -->'/g)) names.add(match[1] ?? '');
  }
  return [...names].sort();
}

describe('bench/README.md', () => {
  it('is at most 250 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
  });

  it('gives every bench one table, its command, machine and date, and how to read it', () => {
    const found = sections(readme);
    // Vacuous if the sections are not found: there are eight (the six benches, chaos, install).
    expect(found.map(({ heading }) => heading)).toHaveLength(8);
    const lacking = found.flatMap(({ heading, body }) => missing(body).map((what) => `${heading}: no ${what}`));
    expect(lacking).toEqual([]);
  });

  it('holds every marker a bench writes between, start before end', () => {
    const names = writtenMarkers();
    expect(names).toEqual(expect.arrayContaining(['agent', 'agent-long', 'cost', 'payloads', 'temporal']));
    const absent = names.filter((name) => {
      const start = readme.indexOf(`<!-- bench:${name}:start -->`);
      const end = readme.indexOf(`<!-- bench:${name}:end -->`);
      return start < 0 || end < start;
    });
    expect(absent).toEqual([]);
  });

  it('states what is: no history of runs', () => {
    const narration = /\b(?:stop \d|stops? before|issue \d+|previous run|said beforehand|previously|former)\b/i;
    const lines = readme.split('\n').filter((line) => narration.test(line));
    expect(lines).toEqual([]);
  });

  it('finds a missing table, date and reading, and a second table (the checker itself)', () => {
    const good =
      '## A\n\n`npm run bench:a`. Date: 2026-01-02. 2 CPUs.\n\n| a |\n|--:|\n| 1 |\n\n**How to read it.** x\n';
    expect(missing(good)).toEqual([]);
    expect(missing('## B\n\n`npm run bench:b`, 2 cores.\n')).toEqual(['one table', 'a date', 'how to read it']);
    expect(missing(`${good}\n| b | c |\n|---|:-:|\n`)).toEqual(['one table']);
    expect(sections(`# T\n\n${good}## C\n`).map(({ heading }) => heading)).toEqual(['## A', '## C']);
  });
});
