// The compatibility policy (docs/compatibility.md), kept true: every `patched()` or
// `deprecatePatch()` id in src/ is listed in CHANGELOG.md under the current minor's releases, and
// every id listed there is still asked in src/. The scanner and the CHANGELOG reader are tested on
// samples first, so the check cannot pass by finding nothing.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** What a scan of source files found: the ids asked, and the calls whose id it could not read. */
interface PatchScan {
  ids: Array<{ id: string; at: string }>;
  unreadable: string[];
}

const PATCH_FUNCTIONS = new Set(['patched', 'deprecatePatch']);

/**
 * The patch ids a source text asks: `patched(...)` and `deprecatePatch(...)` calls (also as
 * `workflow.patched(...)`), their argument a string literal or a `const` of one in the same file.
 */
function scanSource(text: string, file: string): PatchScan {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const constants = new Map<string, string>();
  const calls: ts.CallExpression[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer !== undefined) {
      const value = node.initializer;
      if (ts.isStringLiteral(value) || ts.isNoSubstitutionTemplateLiteral(value))
        constants.set(node.name.text, value.text);
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee)
        ? callee.text
        : ts.isPropertyAccessExpression(callee)
          ? callee.name.text
          : undefined;
      if (name !== undefined && PATCH_FUNCTIONS.has(name)) calls.push(node);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const scan: PatchScan = { ids: [], unreadable: [] };
  for (const call of calls) {
    const at = `${file}:${source.getLineAndCharacterOfPosition(call.getStart()).line + 1}`;
    const [argument] = call.arguments;
    const id =
      argument === undefined
        ? undefined
        : ts.isStringLiteral(argument) || ts.isNoSubstitutionTemplateLiteral(argument)
          ? argument.text
          : ts.isIdentifier(argument)
            ? constants.get(argument.text)
            : undefined;
    if (id === undefined) scan.unreadable.push(`${at}: ${call.getText(source)}`);
    else scan.ids.push({ id, at });
  }
  return scan;
}

/** Every `.ts` file under `directory`, as paths from the repository root. */
function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [relative(root, path)] : [];
  });
}

/** The minor of a version: `0.1` of `0.1.3`. */
function minorOf(version: string): string {
  const match = /^(\d+)\.(\d+)\.\d+/.exec(version);
  if (match === null) throw new Error(`not a version: ${version}`);
  return `${match[1]}.${match[2]}`;
}

/**
 * What CHANGELOG.md lists for one minor: the releases whose `## X.Y.Z` heading is of that minor, and
 * the patch ids (`` `temporal-compactor:…` `` in backticks) their sections name.
 */
function changelogOf(markdown: string, minor: string): { releases: string[]; ids: string[] } {
  const releases: string[] = [];
  const ids: string[] = [];
  let current: string | undefined;
  for (const line of markdown.split('\n')) {
    const heading = /^## (\d+\.\d+\.\d+)\b/.exec(line);
    if (heading?.[1] !== undefined) {
      current = minorOf(heading[1]) === minor ? heading[1] : undefined;
      if (current !== undefined) releases.push(current);
      continue;
    }
    if (/^#{1,2} /.test(line)) current = undefined;
    if (current === undefined) continue;
    for (const match of line.matchAll(/`(temporal-compactor:[^`\s]+)`/g))
      if (match[1] !== undefined) ids.push(match[1]);
  }
  return { releases, ids };
}

/** What the policy finds wrong: ids asked in the code but not listed, and ids listed but asked nowhere. */
function policyProblems(scan: PatchScan, listed: readonly string[]): string[] {
  const asked = new Set(scan.ids.map(({ id }) => id));
  return [
    ...scan.unreadable.map((call) => `${call}: the id is not a string literal or a const of one`),
    ...scan.ids.filter(({ id }) => !listed.includes(id)).map(({ id, at }) => `${at}: ${id} is not in CHANGELOG.md`),
    ...listed.filter((id) => !asked.has(id)).map((id) => `CHANGELOG.md lists ${id}, which no code asks`),
  ];
}

describe('the patch scanner and the CHANGELOG reader (on samples)', () => {
  const sample = [
    "import { deprecatePatch, patched } from '@temporalio/workflow';",
    "import * as workflow from '@temporalio/workflow';",
    "const LONG_RUN = 'temporal-compactor:long-run';",
    "if (patched('temporal-compactor:first')) run();",
    'deprecatePatch(LONG_RUN);',
    "if (workflow.patched('temporal-compactor:third')) run();",
    '// patched(`in a comment`) is not a call',
    'const note = \'patched("in a string")\';',
    'patched(idOf(run));',
  ].join('\n');

  it('finds every call, by literal, by const and through a namespace, and names a call it cannot read', () => {
    const scan = scanSource(sample, 'sample.ts');
    expect(scan.ids).toEqual([
      { id: 'temporal-compactor:first', at: 'sample.ts:4' },
      { id: 'temporal-compactor:long-run', at: 'sample.ts:5' },
      { id: 'temporal-compactor:third', at: 'sample.ts:6' },
    ]);
    expect(scan.unreadable).toEqual(['sample.ts:9: patched(idOf(run))']);
  });

  it("reads the ids of the current minor's releases only", () => {
    const changelog = [
      '# Changelog',
      '## 0.2.1',
      'Patches: `temporal-compactor:next-minor`',
      '## 0.1.1',
      '- **Patches:** `temporal-compactor:first`, `temporal-compactor:long-run`',
      '## 0.1.0',
      'Patches: none. (Not an id: `npm test`.)',
      '## 0.0.9',
      'Patches: `temporal-compactor:old`',
    ].join('\n');
    expect(changelogOf(changelog, '0.1')).toEqual({
      releases: ['0.1.1', '0.1.0'],
      ids: ['temporal-compactor:first', 'temporal-compactor:long-run'],
    });
  });

  it('reports an id asked but not listed, one listed but not asked, and a call it cannot read', () => {
    const scan = scanSource(sample, 'sample.ts');
    expect(
      policyProblems(scan, ['temporal-compactor:first', 'temporal-compactor:long-run', 'temporal-compactor:gone']),
    ).toEqual([
      'sample.ts:9: patched(idOf(run)): the id is not a string literal or a const of one',
      'sample.ts:6: temporal-compactor:third is not in CHANGELOG.md',
      'CHANGELOG.md lists temporal-compactor:gone, which no code asks',
    ]);
  });
});

describe('the compatibility policy (docs/compatibility.md)', () => {
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  const changelog = changelogOf(readFileSync(join(root, 'CHANGELOG.md'), 'utf8'), minorOf(version));

  it("CHANGELOG.md has a section for this package's version", () => {
    expect(changelog.releases).toContain(version);
  });

  it("every patch id in src/ is listed under the current minor's releases, and every id listed there is asked", () => {
    const files = sourceFiles(join(root, 'src'));
    // The whole source, workflow code included: the scan cannot pass by reading nothing.
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain('src/workflows/compact.ts');
    const scans = files.map((file) => scanSource(readFileSync(join(root, file), 'utf8'), file));
    const scan: PatchScan = {
      ids: scans.flatMap(({ ids }) => ids),
      unreadable: scans.flatMap(({ unreadable }) => unreadable),
    };
    expect(policyProblems(scan, changelog.ids)).toEqual([]);
  });
});
