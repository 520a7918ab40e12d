// Node: the TypeScript blocks of markdown files, as `npm run test:package` writes them into a fresh
// project. A block opened with ```ts (or ```typescript) and a file name (```ts worker.ts) becomes
// that file, one block per name; every other TypeScript block becomes a snippet file of its own.
// Each file starts with the block's first line, so a compiler position maps back to the markdown
// line by an offset (`markdownPosition`).
import { readFileSync } from 'node:fs';
import { isAbsolute, normalize } from 'node:path';

/** One TypeScript block of a markdown file. */
export interface TsBlock {
  /** The markdown file, as given. */
  source: string;
  /** The 1-based markdown line of the block's first code line (the line after the fence). */
  firstLine: number;
  /** The file name after `ts` in the fence's info string; undefined for an unnamed block. */
  name: string | undefined;
  /** The block's code, without the fences. */
  code: string;
}

/** A block written to a file of the project, and where it came from. */
export interface ProjectFile {
  /** Relative to the project: `worker.ts`, or `snippets/README-L42.ts`. */
  path: string;
  content: string;
  block: TsBlock;
}

/** A markdown file's blocks cannot be laid out (a fence never closed, a bad or repeated file name). */
export class MarkdownBlockError extends Error {
  override readonly name = 'MarkdownBlockError';
}

const OPENING = /^( {0,3})(`{3,}|~{3,})\s*(ts|typescript)(?:\s+(\S+))?\s*$/;
const ANY_OPENING = /^( {0,3})(`{3,}|~{3,})/;

/** The TypeScript blocks of `text` (the contents of the markdown file `source`), in order. */
export function tsBlocks(source: string, text: string): TsBlock[] {
  const lines = text.split(/\r?\n/);
  const blocks: TsBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? '';
    const fence = ANY_OPENING.exec(line);
    if (fence === null) continue;
    const marker = fence[2] ?? '```';
    const closing = new RegExp(`^ {0,3}${marker[0] === '`' ? '`' : '~'}{${marker.length},}\\s*$`);
    const end = lines.findIndex((candidate, at) => at > index && closing.test(candidate));
    if (end < 0) throw new MarkdownBlockError(`${source}:${index + 1}: the code fence opened here is never closed`);
    const opening = OPENING.exec(line);
    if (opening !== null) {
      const indent = (opening[1] ?? '').length;
      const code = lines
        .slice(index + 1, end)
        .map((codeLine) => codeLine.replace(new RegExp(`^ {0,${indent}}`), ''))
        .join('\n');
      blocks.push({ source, firstLine: index + 2, name: opening[4], code });
    }
    // Fences of other languages are skipped whole: a ```ts line inside one is not a block.
    index = end;
  }
  return blocks;
}

/** The TypeScript blocks of the markdown file at `path`. */
export function tsBlocksOfFile(path: string): TsBlock[] {
  return tsBlocks(path, readFileSync(path, 'utf8'));
}

/**
 * The project files for `blocks`: a named block under its name (a relative `.ts` path that stays
 * in the project, used by one block only); every other block as `snippets/<markdown path>-L<fence line>.ts`,
 * made a module (`export {}` after its last line) so top-level `await` is allowed and snippets do
 * not share names.
 * @throws MarkdownBlockError naming the markdown file and line of a bad or repeated file name.
 */
export function projectFiles(blocks: readonly TsBlock[]): ProjectFile[] {
  const named = new Map<string, TsBlock>();
  return blocks.map((block) => {
    const where = `${block.source}:${block.firstLine - 1}`;
    if (block.name === undefined) {
      const stem = block.source
        .replace(/\.md$/i, '')
        .replace(/^[./]+/, '')
        .replace(/[^A-Za-z0-9_-]/g, '_');
      return { path: `snippets/${stem}-L${block.firstLine - 1}.ts`, content: `${block.code}\nexport {};\n`, block };
    }
    const path = normalize(block.name);
    if (isAbsolute(path) || path.startsWith('..') || path.startsWith('snippets') || !/\.(ts|mts|cts)$/.test(path)) {
      throw new MarkdownBlockError(
        `${where}: the block's file name ${JSON.stringify(block.name)} must be a relative .ts path inside the project (not under snippets/)`,
      );
    }
    const earlier = named.get(path);
    if (earlier !== undefined) {
      throw new MarkdownBlockError(
        `${where}: a second block named ${path} (the first is at ${earlier.source}:${earlier.firstLine - 1}); one block per file name`,
      );
    }
    named.set(path, block);
    return { path, content: `${block.code}\n`, block };
  });
}

/** The markdown position of line `line` (1-based) of a project file written from `block`. */
export function markdownPosition(block: TsBlock, line: number, column: number): string {
  return `${block.source}:${block.firstLine + line - 1}:${column}`;
}

/** A compiler diagnostic in tsc's `--pretty false` form: `file(line,col): error TS1234: text`. */
const DIAGNOSTIC = /^(.+?)\((\d+),(\d+)\): (error|warning) (TS\d+: .*)$/;

/**
 * tsc's `--pretty false` output with every position in a project file written from a block
 * replaced by the markdown file and line it came from (`README.md:214:7: error TS2304: ...`, then
 * `(in worker.ts)`). Lines about other files, and continuation lines, are kept as they are.
 */
export function mapDiagnostics(output: string, files: readonly ProjectFile[]): string[] {
  const byPath = new Map(files.map((file) => [normalize(file.path), file]));
  return output
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const match = DIAGNOSTIC.exec(line);
      const file = match === null ? undefined : byPath.get(normalize(match[1] ?? ''));
      if (match === null || file === undefined) return line;
      return `${markdownPosition(file.block, Number(match[2]), Number(match[3]))}: ${match[4]} ${match[5]} (in ${file.path})`;
    });
}

/** CommonJS globals an ES module does not have: tsc accepts them (@types/node declares them), Node throws ReferenceError. */
const COMMONJS_ONLY = /\b(require(?:\.resolve)?\s*\(|__dirname\b|__filename\b|module\.exports\b)/;

/**
 * Where the ES-module files among `files` (`.ts`, `.mts` in a `type: module` project) use a
 * CommonJS global, as `README.md:209: ... uses require.resolve(` lines; comments are not skipped.
 */
export function commonJsGlobals(files: readonly ProjectFile[]): string[] {
  return files
    .filter((file) => !file.path.endsWith('.cts'))
    .flatMap((file) =>
      file.block.code.split('\n').flatMap((line, at) => {
        const found = COMMONJS_ONLY.exec(line);
        return found === null
          ? []
          : [
              `${file.block.source}:${file.block.firstLine + at}: uses ${found[1]} (in ${file.path}), which an ES module does not have: use import.meta.url / import.meta.resolve`,
            ];
      }),
    );
}
