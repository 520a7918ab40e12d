// docs/design.md and the code that cites it (issue 10 §2). Comments cite the design by anchor
// (`docs/design.md#proof`); a citation whose anchor the document lacks points a reader nowhere, and
// a citation of the former design note by section number points at a file no clone has. Both
// fail here, each with the file and line, as do the document's own links and the files it names.
// The README (a guide) and the docs pages (the reference) link each other: every link must lead to
// a file that exists and to a heading or anchor it has.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
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

/** The anchors GitHub gives a document's headings (a repeated heading gets `-1`, `-2`, ...). */
function headingSlugs(markdown: string): Set<string> {
  const slugs = new Set<string>();
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inFence = !inFence;
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (inFence || heading?.[1] === undefined) continue;
    const base = slug(heading[1]);
    let candidate = base;
    for (let n = 1; slugs.has(candidate); n += 1) candidate = `${base}-${n}`;
    slugs.add(candidate);
  }
  return slugs;
}

interface Link {
  line: number;
  target: string;
  fragment: string | undefined;
}

/** The Markdown links of a document outside its code blocks (images too), with their line numbers. */
function markdownLinks(markdown: string): Link[] {
  const links: Link[] = [];
  let inFence = false;
  markdown.split('\n').forEach((text, index) => {
    if (text.startsWith('```')) inFence = !inFence;
    if (inFence) return;
    // Inline code is not a link, even when it looks like one.
    const prose = text.replace(/`[^`]*`/g, '');
    for (const match of prose.matchAll(/\]\(([^)\s]*)\)/g)) {
      const [target = '', fragment] = (match[1] ?? '').split('#');
      links.push({ line: index + 1, target, fragment });
    }
  });
  return links;
}

/** The README and every page of docs/: the guide and its reference. */
function guidePages(): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(root, 'docs', name));
  return [join(root, 'README.md'), ...docs];
}

/**
 * Where a link of `file` leads that is not there: a file or directory that does not exist, or an
 * anchor its Markdown target lacks (headings, and the explicit anchors of docs/design.md).
 */
function brokenLinks(file: string): string[] {
  const markdown = readFileSync(file, 'utf8');
  const broken: string[] = [];
  for (const { line, target, fragment } of markdownLinks(markdown)) {
    if (/^[a-z]+:/i.test(target)) continue; // https:, mailto: — not ours to check
    const path = target === '' ? file : resolve(dirname(file), target);
    const where = `${relative(root, file)}:${line}: ${target}${fragment === undefined ? '' : `#${fragment}`}`;
    if (!existsSync(path)) {
      broken.push(`${where}: no such file`);
      continue;
    }
    if (fragment === undefined || extname(path) !== '.md') continue;
    const text = path === file ? markdown : readFileSync(path, 'utf8');
    if (!headingSlugs(text).has(fragment) && !explicitAnchors(text).includes(fragment))
      broken.push(`${where}: no such heading or anchor`);
  }
  return broken;
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
    const cited = lines.flatMap((line) =>
      [...line.text.matchAll(citation)].map((match) => ({ ...line, anchor: match[1] ?? '' })),
    );
    // Vacuous if nothing cites the document: the sweep put the citations in, they must stay found.
    expect(cited.length).toBeGreaterThan(40);
    const missing = cited
      .filter(({ anchor }) => !anchorSet.has(anchor))
      .map(({ file, number, anchor }) => `${file}:${number} cites #${anchor}, which docs/design.md lacks`);
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
  it('names only files and directories that exist', () => {
    const named = [...design.matchAll(/`((?:src|test|bench|scripts|docs|interop|corpus|examples)\/[^`\s]*)`/g)].map(
      (match) => match[1] ?? '',
    );
    expect(named.length).toBeGreaterThan(40);
    const missing = [...new Set(named.map((path) => path.replace(/#.*$/, '')))].filter(
      (path) => !existsSync(join(root, path)),
    );
    expect(missing).toEqual([]);
  });

  it('is linked from the README', () => {
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain('](docs/design.md)');
  });
});

describe('the README and the docs pages', () => {
  const pages = guidePages();

  it('link only to files that exist and to headings or anchors those files have', () => {
    // Vacuous if the link finder finds nothing: the guide links every page, the pages each other.
    expect(pages.flatMap((file) => markdownLinks(readFileSync(file, 'utf8'))).length).toBeGreaterThan(60);
    expect(pages.flatMap(brokenLinks)).toEqual([]);
  });

  it("finds a missing file, a missing anchor and a repeated heading's anchor, and skips code (the checker itself)", () => {
    const links = markdownLinks('[a](docs/x.md#top) `[b](not-a-link.md)`\n```\n[c](in-a-fence.md)\n```\n[d](#here)');
    expect(links).toEqual([
      { line: 1, target: 'docs/x.md', fragment: 'top' },
      { line: 5, target: '', fragment: 'here' },
    ]);
    expect([...headingSlugs("# Setup\n## The store's format\n## Setup\n")]).toEqual([
      'setup',
      'the-stores-format',
      'setup-1',
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'doc-links-'));
    try {
      writeFileSync(join(dir, 'b.md'), '# B\n## There\n## There\n');
      writeFileSync(
        join(dir, 'a.md'),
        '# A\n[ok](b.md#there-1) [web](https://temporal.io/#x) [self](#a)\n[bad](b.md#nowhere) [gone](c.md) [self-bad](#b)\n',
      );
      expect(brokenLinks(join(dir, 'a.md')).map((problem) => problem.replace(/^.*a\.md:/, 'a.md:'))).toEqual([
        'a.md:3: b.md#nowhere: no such heading or anchor',
        'a.md:3: c.md: no such file',
        'a.md:3: #b: no such heading or anchor',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the README is a guide: at most 250 lines, linking every docs page', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    const unlinked = pages
      .slice(1)
      .map((file) => relative(root, file))
      .filter((page) => !readme.includes(`](${page})`));
    expect(unlinked).toEqual([]);
  });
});
