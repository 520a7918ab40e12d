// No import cycles in src/: walks the import graph (every relative import, `import type` and
// `export … from` included, as the TypeScript compiler reads them) and fails naming each cycle,
// between files and between the parts of src/ (a top-level folder, or a loose file at its root).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

/** Cycles left on purpose, each as the exact set of files of its strongly connected component: none. */
const ALLOWED_FILE_CYCLES: readonly (readonly string[])[] = [];

type Graph = ReadonlyMap<string, readonly string[]>;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** `src/…` paths, as the messages name them. */
function shown(path: string): string {
  return relative(resolve(SRC, '..'), path).split('\\').join('/');
}

/** The file a relative specifier names (`./x.js` → `x.ts`, a folder → its `index.ts`), or undefined. */
function resolveImport(from: string, specifier: string): string | undefined {
  const target = resolve(dirname(from), specifier);
  const candidates = [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, join(target, 'index.ts')];
  return candidates.find((candidate) => candidate.endsWith('.ts') && existsSync(candidate));
}

/** Every file of src/ with the files it imports; throws naming a relative import that names no file. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles
      .map((imported) => imported.fileName)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => {
        const target = resolveImport(file, specifier);
        if (target === undefined)
          throw new Error(`${shown(file)} imports ${specifier}, which names no file under src/`);
        return shown(target);
      });
    graph.set(shown(file), [...new Set(targets)]);
  }
  return graph;
}

/** The strongly connected components of more than one node, or of one that imports itself (Tarjan). */
function cyclicComponents(graph: Graph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) components.push(component.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return components.sort((left, right) => (left[0] ?? '').localeCompare(right[0] ?? ''));
}

/** One cycle through a component, from its first node back to it (a shortest one): `a → b → a`. */
function cycleThrough(graph: Graph, component: readonly string[]): string[] {
  const members = new Set(component);
  const start = component[0] ?? '';
  const cameFrom = new Map<string, string>();
  const queue = [start];
  /** The node whose import closes the cycle back to start. */
  let last: string | undefined;
  for (let at = 0; at < queue.length && last === undefined; at += 1) {
    const node = queue[at] ?? start;
    for (const next of graph.get(node) ?? []) {
      if (next === start) {
        last = node;
        break;
      }
      if (members.has(next) && !cameFrom.has(next)) {
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
  }
  const path: string[] = [];
  for (let node = last; node !== undefined && node !== start; node = cameFrom.get(node)) path.unshift(node);
  return [start, ...path, start];
}

/** The part of src/ a file belongs to: its top-level folder (`payloads/`), a subfolder of core/ (`core/agent/`), or itself when loose. */
function partOf(file: string): string {
  const [, first = '', second = '', ...rest] = file.split('/');
  if (second === '') return first;
  // The core's subfolders (compaction/, counting/, agent/, limits/) are parts of their own.
  if (first === 'core') return rest.length === 0 ? `core/${second}` : `core/${second}/`;
  return `${first}/`;
}

/** The graph of the parts, and for each edge between two parts one import that makes it. */
function partGraph(files: Graph): { graph: Map<string, string[]>; witness: Map<string, string> } {
  const edges = new Map<string, Set<string>>();
  const witness = new Map<string, string>();
  for (const [file, targets] of files) {
    const from = partOf(file);
    const out = edges.get(from) ?? new Set<string>();
    edges.set(from, out);
    for (const target of targets) {
      const to = partOf(target);
      if (to === from) continue;
      out.add(to);
      if (!witness.has(`${from} ${to}`)) witness.set(`${from} ${to}`, `${file} imports ${target}`);
    }
  }
  return { graph: new Map([...edges].map(([part, out]) => [part, [...out].sort()])), witness };
}

const describeCycle = (cycle: readonly string[]): string => cycle.join(' → ');

describe('import cycles in src/', () => {
  const files = importGraph();

  it('walks every file (relative imports, type-only ones included)', () => {
    // Two known edges, one of them type-only, so a walk that missed either kind would show here.
    expect(files.get('src/payloads/gc.ts')).toEqual(
      expect.arrayContaining(['src/payloads/chunk-store.ts', 'src/payloads/object-format.ts']),
    );
    expect(readFileSync(join(SRC, 'payloads/gc.ts'), 'utf8')).toContain(
      "import type { ChunkStoreDriver } from './chunk-store.js';",
    );
    expect(files.size).toBe(sourceFiles(SRC).length);
  });

  it('no cycle between files, but the one allowed while it is being broken elsewhere', () => {
    const components = cyclicComponents(files);
    const allowed = (component: readonly string[]): boolean =>
      ALLOWED_FILE_CYCLES.some(
        (entry) => entry.length === component.length && entry.every((file) => component.includes(file)),
      );
    const found = components
      .filter((component) => !allowed(component))
      .map((component) => describeCycle(cycleThrough(files, component)));
    expect(found, 'import cycles between files of src/').toEqual([]);
    const stale = ALLOWED_FILE_CYCLES.filter(
      (entry) => !components.some((component) => allowed(component) && entry.every((file) => component.includes(file))),
    );
    expect(stale, 'allowed cycles that no longer exist: remove them from ALLOWED_FILE_CYCLES').toEqual([]);
  });

  it('no cycle between the parts of src/ (its folders, the subfolders of core/, and loose files)', () => {
    const { graph, witness } = partGraph(files);
    const found = cyclicComponents(graph).map((component) => {
      const cycle = cycleThrough(graph, component);
      const steps = cycle
        .slice(1)
        .map((part, step) => `${part} (${witness.get(`${cycle[step] ?? ''} ${part}`) ?? '?'})`);
      return `${cycle[0] ?? ''} → ${steps.join(' → ')}`;
    });
    expect(found, 'import cycles between parts of src/').toEqual([]);
  });
});

describe('the cycle finder', () => {
  const graph: Graph = new Map([
    ['a', ['b']],
    ['b', ['c', 'd']],
    ['c', ['a']],
    ['d', []],
    ['e', ['e']],
    ['f', ['a']],
  ]);

  it('finds every cycle, a module importing itself included, and nothing else', () => {
    expect(cyclicComponents(graph)).toEqual([['a', 'b', 'c'], ['e']]);
  });

  it('names a cycle from its first module back to it', () => {
    expect(describeCycle(cycleThrough(graph, ['a', 'b', 'c']))).toBe('a → b → c → a');
    expect(describeCycle(cycleThrough(graph, ['e']))).toBe('e → e');
  });
});
