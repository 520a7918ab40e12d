// docs/design.md and the code that cites it (issue 10 §2). Comments cite the design by anchor
// (`docs/design.md#proof`); a citation whose anchor the document lacks points a reader nowhere, and
// a citation of the former design note by section number points at a file no clone has. Both
// fail here, each with the file and line, as do the document's own links and the files it names.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const designPath = join(root, 'docs', 'design.md');
const design = readFileSync(designPath, 'utf8');

/** Where code lives that may cite the design (the README is checked as well). */
const SCANNED_DIRECTORIES = ['src', 'test', 'bench', 'scripts', 'corpus', 'interop'];
const SCANNED_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs', '.md', '.py', '.sh']);
const SKIPPED_DIRECTORIES = new Set(['node_modules', 'dist', '.temporal', 'histories']);

function scannedFiles(): string[] {
  const files: string[] = [join(root, 'README.md')];
  const walk = (directory: string): void => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const path = join(directory, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRECTORIES.has(entry.name)) walk(path);
      } else if (SCANNED_EXTENSIONS.has(extname(entry.name))) files.push(path);
    }
  };
  for (const directory of SCANNED_DIRECTORIES) {
    const path = join(root, directory);
    if (existsSync(path) && statSync(path).isDirectory()) walk(path);
  }
  return files;
}

interface Line {
  file: string;
  number: number;
  text: string;
}

function linesOf(files: readonly string[]): Line[] {
  return files.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .map((text, index) => ({ file: relative(root, file), number: index + 1, text })),
  );
}

/** The explicit anchors of the document (`<a id="...">`), in order. */
function explicitAnchors(markdown: string): string[] {
  return [...markdown.matchAll(/<a id="([^"]+)"><\/a>/g)].map((match) => match[1] ?? '');
}

/** GitHub's slug of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function headingSlugs(markdown: string): Set<string> {
  const slugs = new Set<string>();
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inFence = !inFence;
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (!inFence && heading?.[1] !== undefined) slugs.add(slug(heading[1]));
  }
  return slugs;
}

const anchors = explicitAnchors(design);
const anchorSet = new Set(anchors);
const lines = linesOf(scannedFiles());
const SECTION_SIGN = '\u00a7';

describe('docs/design.md anchors', () => {
  it('has explicit anchors, each once', () => {
    expect(anchors.length).toBeGreaterThan(40);
    const repeated = anchors.filter((anchor, index) => anchors.indexOf(anchor) !== index);
    expect(repeated).toEqual([]);
  });

  it('holds every anchor a citation in the code names', () => {
    const citation = /docs\/design\.md#([A-Za-z0-9_-]+)/g;
    const cited = lines.flatMap((line) => [...line.text.matchAll(citation)].map((match) => ({ ...line, anchor: match[1] ?? '' })));
    // Vacuous if nothing cites the document: the sweep put the citations in, they must stay found.
    expect(cited.length).toBeGreaterThan(40);
    const missing = cited.filter(({ anchor }) => !anchorSet.has(anchor)).map(({ file, number, anchor }) => `${file}:${number} cites #${anchor}, which docs/design.md lacks`);
    expect(missing).toEqual([]);
  });

  it('is what the code cites: no citation of the former design note by section number', () => {
    const former = new RegExp(`DESIGN\\s*${SECTION_SIGN}`);
    // A section sign before a number is a design citation unless it names another document.
    const bare = new RegExp(`${SECTION_SIGN}\\s*\\d`, 'g');
    const otherDocument = /(?:issue\s+\d+|FIPS\s+180-4|RFC\s+\d+)\s*$/i;
    const stale = lines.flatMap(({ file, number, text }) => {
      if (former.test(text)) return [`${file}:${number}: ${text.trim()}`];
      const bareCitations = [...text.matchAll(bare)].filter((match) => !otherDocument.test(text.slice(0, match.index)));
      return bareCitations.length > 0 ? [`${file}:${number}: ${text.trim()}`] : [];
    });
    expect(stale).toEqual([]);
  });
});

describe('docs/design.md itself', () => {
  it('links only to its own anchors and headings, and to README headings that exist', () => {
    const ownSlugs = headingSlugs(design);
    const readmeSlugs = headingSlugs(readFileSync(join(root, 'README.md'), 'utf8'));
    const broken: string[] = [];
    for (const match of design.matchAll(/\]\(([^)\s]*)#([^)\s]+)\)/g)) {
      const [, target = '', fragment = ''] = match;
      if (target === '' && !anchorSet.has(fragment) && !ownSlugs.has(fragment)) broken.push(`#${fragment}`);
      if (target === '../README.md' && !readmeSlugs.has(fragment)) broken.push(`${target}#${fragment}`);
    }
    expect(broken).toEqual([]);
  });

  it('names only files and directories that exist', () => {
    const named = [...design.matchAll(/`((?:src|test|bench|scripts|docs|interop|corpus|examples)\/[^`\s]*)`/g)].map((match) => match[1] ?? '');
    expect(named.length).toBeGreaterThan(40);
    const missing = [...new Set(named.map((path) => path.replace(/#.*$/, '')))].filter((path) => !existsSync(join(root, path)));
    expect(missing).toEqual([]);
  });

  it('is linked from the README', () => {
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain('](docs/design.md)');
  });
});
