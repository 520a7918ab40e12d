// Writes the API reports of the package's entry points into api/: every name each entry exports,
// its kind (function, class, const …, interface, type) and the module that declares it, read
// with the TypeScript compiler from the sources (no build needed). `npm run api:report` after
// adding, removing or moving an export; test/package/api-report.test.ts fails while the committed reports
// differ from what this writes, so every change to the public surface is a reviewed diff.
//
//   npm run api:report              write api/*.api.md
//   npm run api:report -- --check   only say which reports are stale (exit code 1 if any)
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeGeneratedFiles } from './generated-files.js';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** Where the reports are committed. */
export const API_DIR = join(ROOT, 'api');

/** One entry point: its import path, its source, the most runtime names it may export, its report. */
export interface ApiEntry {
  importPath: string;
  source: string;
  maxRuntimeNames: number;
  report: string;
}

/** The package's entry points (package.json `exports`). */
export const API_ENTRIES: readonly ApiEntry[] = [
  {
    importPath: 'temporal-compactor',
    source: 'src/index.ts',
    maxRuntimeNames: 28,
    report: 'temporal-compactor.api.md',
  },
  {
    importPath: 'temporal-compactor/workflow',
    source: 'src/workflow.ts',
    maxRuntimeNames: 19,
    report: 'temporal-compactor-workflow.api.md',
  },
];

/** One exported name as the compiler sees it. */
export interface ApiExport {
  name: string;
  /** Whether importing the entry gives the name at run time (a value not exported as a type only). */
  runtime: boolean;
  /** e.g. `function`, `class`, `const object`, `const string`, `const QueryDefinition`, `interface`, `type`. */
  kind: string;
  /** The declaring module, relative to the repository. */
  from: string;
}

function declarationOf(symbol: ts.Symbol): ts.Declaration {
  const declaration = symbol.declarations?.[0];
  if (declaration === undefined) throw new Error(`api-report: ${symbol.name} has no declaration`);
  return declaration;
}

/** Whether any alias on the way from an entry's export to its declaration is `export type` / `export { type … }`. */
function exportedAsTypeOnly(checker: ts.TypeChecker, symbol: ts.Symbol): boolean {
  let current = symbol;
  while (current.flags & ts.SymbolFlags.Alias) {
    for (const declaration of current.declarations ?? []) {
      if (ts.isExportSpecifier(declaration) && (declaration.isTypeOnly || declaration.parent.parent.isTypeOnly))
        return true;
    }
    const next = checker.getImmediateAliasedSymbol(current);
    if (next === undefined) break;
    current = next;
  }
  return false;
}

/** Names that `export type * from '…'` brings into a module (directly or through its `export *`). */
function typeOnlyStarNames(
  program: ts.Program,
  checker: ts.TypeChecker,
  file: ts.SourceFile,
  seen = new Set<string>(),
): Set<string> {
  const names = new Set<string>();
  if (seen.has(file.fileName)) return names;
  seen.add(file.fileName);
  for (const statement of file.statements) {
    if (
      !ts.isExportDeclaration(statement) ||
      statement.exportClause !== undefined ||
      statement.moduleSpecifier === undefined
    )
      continue;
    const target = checker.getSymbolAtLocation(statement.moduleSpecifier);
    const targetFile = target?.valueDeclaration ?? target?.declarations?.[0];
    if (target === undefined || targetFile === undefined || !ts.isSourceFile(targetFile)) continue;
    if (statement.isTypeOnly) for (const exported of checker.getExportsOfModule(target)) names.add(exported.name);
    else for (const name of typeOnlyStarNames(program, checker, targetFile, seen)) names.add(name);
  }
  return names;
}

function constKind(checker: ts.TypeChecker, symbol: ts.Symbol, declaration: ts.Declaration): string {
  const type = checker.getTypeOfSymbolAtLocation(symbol, declaration);
  if (type.getCallSignatures().length > 0) return 'const function';
  if (type.getConstructSignatures().length > 0) return 'const class';
  if (type.flags & ts.TypeFlags.StringLike) return 'const string';
  if (type.flags & ts.TypeFlags.NumberLike) return 'const number';
  if (type.flags & ts.TypeFlags.BooleanLike) return 'const boolean';
  if (checker.isArrayType(type) || checker.isTupleType(type)) return 'const array';
  const named = type.aliasSymbol ?? type.getSymbol();
  if (named !== undefined && !(named.flags & (ts.SymbolFlags.TypeLiteral | ts.SymbolFlags.ObjectLiteral)))
    return `const ${named.name}`;
  return 'const object';
}

function kindOf(checker: ts.TypeChecker, target: ts.Symbol, declaration: ts.Declaration, runtime: boolean): string {
  if (ts.isFunctionDeclaration(declaration)) return 'function';
  if (ts.isClassDeclaration(declaration)) return runtime ? 'class' : 'class (type only)';
  if (ts.isInterfaceDeclaration(declaration)) return 'interface';
  if (ts.isTypeAliasDeclaration(declaration)) return 'type';
  if (ts.isEnumDeclaration(declaration)) return 'enum';
  if (ts.isVariableDeclaration(declaration)) {
    const list = declaration.parent;
    const keyword = ts.isVariableDeclarationList(list) && list.flags & ts.NodeFlags.Const ? 'const' : 'let';
    const kind = constKind(checker, target, declaration);
    return runtime ? kind.replace(/^const/, keyword) : `${kind.replace(/^const/, keyword)} (type only)`;
  }
  throw new Error(
    `api-report: ${target.name} is declared by a ${ts.SyntaxKind[declaration.kind]}, which this report does not know`,
  );
}

/** Every export of each entry, sorted by name. */
export function readApi(): Map<ApiEntry, ApiExport[]> {
  const configPath = join(ROOT, 'tsconfig.json');
  const config = ts.getParsedCommandLineOfConfigFile(
    configPath,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (config === undefined) throw new Error(`api-report: cannot read ${configPath}`);
  const sources = API_ENTRIES.map((entry) => join(ROOT, entry.source));
  const program = ts.createProgram(sources, config.options);
  const checker = program.getTypeChecker();
  const api = new Map<ApiEntry, ApiExport[]>();
  for (const [index, entry] of API_ENTRIES.entries()) {
    const file = program.getSourceFile(sources[index] ?? '');
    const module = file === undefined ? undefined : checker.getSymbolAtLocation(file);
    if (file === undefined || module === undefined) throw new Error(`api-report: ${entry.source} is not a module`);
    const typeOnlyStars = typeOnlyStarNames(program, checker, file);
    const exports = checker.getExportsOfModule(module).map((symbol): ApiExport => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const declaration = declarationOf(target);
      const runtime =
        (target.flags & ts.SymbolFlags.Value) !== 0 &&
        !exportedAsTypeOnly(checker, symbol) &&
        !typeOnlyStars.has(symbol.name);
      return {
        name: symbol.name,
        runtime,
        kind: kindOf(checker, target, declaration, runtime),
        from: relative(ROOT, declaration.getSourceFile().fileName),
      };
    });
    api.set(
      entry,
      exports.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    );
  }
  return api;
}

function table(rows: readonly ApiExport[]): string[] {
  return [
    '| name | kind | declared in |',
    '|---|---|---|',
    ...rows.map((row) => `| \`${row.name}\` | ${row.kind} | \`${row.from}\` |`),
  ];
}

/** The report of one entry (markdown). */
export function renderReport(entry: ApiEntry, exports: readonly ApiExport[]): string {
  const runtime = exports.filter((row) => row.runtime);
  const types = exports.filter((row) => !row.runtime);
  return [
    `# API report: \`${entry.importPath}\``,
    '',
    `<!-- Written by \`npm run api:report\` (scripts/api-report.ts) from ${entry.source}; do not edit. -->`,
    '',
    `Every name \`${entry.importPath}\` (\`${entry.source}\`) exports: ${runtime.length} at run time (at most ${entry.maxRuntimeNames}), ${types.length} types only.`,
    '',
    '## Runtime names',
    '',
    ...table(runtime),
    '',
    '## Types',
    '',
    ...table(types),
    '',
  ].join('\n');
}

/** Each report's path and the text it must hold. */
export function apiReportFiles(): Array<{ path: string; text: string }> {
  return [...readApi()].map(([entry, exports]) => ({
    path: join(API_DIR, entry.report),
    text: renderReport(entry, exports),
  }));
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeGeneratedFiles(apiReportFiles(), { check: process.argv.includes('--check'), command: 'npm run api:report' });
}
