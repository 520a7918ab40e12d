// Dev-only and pure: the text an agent's tools print while it works on a (made-up) code base —
// source files read with line numbers, grep matches, directory listings, test runs, diffs, a
// whole-disk `find` — built from a seeded PRNG so that the generated trajectories carry real-looking
// file paths, identifiers and code lines for summarizers and retention metrics to find.
import { createRandom, type Random } from './random.js';

export type Language = 'python' | 'typescript' | 'java';

const VERBS = [
  'parse',
  'load',
  'build',
  'apply',
  'normalize',
  'resolve',
  'validate',
  'flush',
  'render',
  'fetch',
  'merge',
  'split',
  'encode',
  'decode',
  'compute',
  'register',
  'dispatch',
  'schedule',
  'retry',
  'serialize',
  'collect',
  'format',
  'convert',
  'update',
  'create',
  'remove',
  'read',
  'write',
  'check',
  'find',
] as const;
const NOUNS = [
  'invoice',
  'ledger',
  'entry',
  'currency',
  'rate',
  'batch',
  'record',
  'row',
  'column',
  'header',
  'token',
  'session',
  'payload',
  'schema',
  'config',
  'cache',
  'event',
  'report',
  'account',
  'period',
  'amount',
  'timestamp',
  'queue',
  'worker',
  'policy',
  'window',
  'chunk',
  'index',
  'field',
  'offset',
] as const;
const PACKAGES = [
  'billing',
  'ledger',
  'ingest',
  'reports',
  'auth',
  'scheduler',
  'storage',
  'api',
  'cli',
  'core',
] as const;
const PROJECT_NAMES = [
  'ledgerly',
  'tallyhub',
  'fluxbook',
  'quillpay',
  'orbitcsv',
  'rivetdb',
  'kestrel',
  'harbor',
] as const;
const ERRORS: Record<Language, readonly string[]> = {
  python: ['KeyError', 'ValueError', 'TypeError', 'AttributeError', 'IndexError'],
  typescript: ['TypeError', 'RangeError', 'ValidationError', 'NotFoundError'],
  java: ['IllegalArgumentException', 'NullPointerException', 'IllegalStateException', 'JsonMappingException'],
};

const capitalized = (word: string): string => word.charAt(0).toUpperCase() + word.slice(1);
const plural = (noun: string): string =>
  noun.endsWith('y') ? `${noun.slice(0, -1)}ies` : noun.endsWith('x') ? `${noun}es` : `${noun}s`;

/** One source file of the made-up project. */
export interface SourceFile {
  path: string;
  test: string;
  pkg: string;
  className: string;
  methods: string[];
}

/** The made-up code base a generated agent works on. */
export interface Project {
  language: Language;
  name: string;
  /** Absolute root, e.g. `/workspace/ledgerly`. */
  root: string;
  files: SourceFile[];
  errors: readonly string[];
  /** Each call gives another source file path (for listings bigger than the project). */
  morePaths: () => string;
}

/** `verb` + `noun` as a method name in the project's language. */
export function methodName(language: Language, verb: string, noun: string): string {
  return language === 'python' ? `${verb}_${noun}` : `${verb}${capitalized(noun)}`;
}

function fileFor(
  language: Language,
  name: string,
  pkg: string,
  first: string,
  second: string,
): { path: string; test: string; className: string } {
  const className = `${capitalized(first)}${capitalized(second)}`;
  if (language === 'python')
    return {
      path: `src/${name}/${pkg}/${first}_${second}.py`,
      test: `tests/${pkg}/test_${first}_${second}.py`,
      className,
    };
  if (language === 'typescript')
    return { path: `src/${pkg}/${first}-${second}.ts`, test: `test/${pkg}/${first}-${second}.test.ts`, className };
  return {
    path: `src/main/java/com/acme/${name}/${pkg}/${className}.java`,
    test: `src/test/java/com/acme/${name}/${pkg}/${className}Test.java`,
    className,
  };
}

/** A project of 12–20 source files, each with 3–6 methods, and a test file per source file. */
export function createProject(random: Random, language: Language): Project {
  const name = random.pick(PROJECT_NAMES);
  const seen = new Set<string>();
  const files: SourceFile[] = [];
  const count = random.int(12, 20);
  while (files.length < count) {
    const pkg = random.pick(PACKAGES);
    const first = random.pick(NOUNS);
    const second = random.pick(NOUNS);
    if (first === second || seen.has(`${first}/${second}`)) continue;
    seen.add(`${first}/${second}`);
    const methods = new Set<string>();
    const wanted = random.int(3, 6);
    while (methods.size < wanted) methods.add(methodName(language, random.pick(VERBS), random.pick(NOUNS)));
    files.push({ ...fileFor(language, name, pkg, first, second), pkg, methods: [...methods] });
  }
  let extra = 0;
  const morePaths = (): string => {
    extra += 1;
    const pkg = PACKAGES[extra % PACKAGES.length] ?? 'core';
    const first = NOUNS[Math.floor(extra / PACKAGES.length) % NOUNS.length] ?? 'entry';
    const second = NOUNS[Math.floor(extra / (PACKAGES.length * NOUNS.length)) % NOUNS.length] ?? 'row';
    return fileFor(language, name, pkg, first, second).path;
  };
  return { language, name, root: `/workspace/${name}`, files, errors: ERRORS[language], morePaths };
}

/**
 * Lines joined with newlines: `head`, then `line(0)`, `line(1)`, ... as long as the text stays
 * within `size` characters (with `tail` at the end). Never longer than `size` unless head and
 * tail alone are; within one line of it otherwise.
 */
export function fillLines(
  size: number,
  head: readonly string[],
  line: (index: number) => string,
  tail: readonly string[] = [],
): string {
  const lines = [...head];
  let length = head.reduce((sum, text) => sum + text.length + 1, 0);
  const tailLength = tail.reduce((sum, text) => sum + text.length + 1, 0);
  for (let index = 0; ; index += 1) {
    const next = line(index);
    if (length + next.length + 1 + tailLength > size + 1) break;
    lines.push(next);
    length += next.length + 1;
  }
  return [...lines, ...tail].join('\n');
}

/** Parts from `part()` run together until there are `length` characters, cut at exactly `length`. */
export function fillText(length: number, part: () => string): string {
  const parts: string[] = [];
  let size = 0;
  while (size < length) {
    const next = part();
    parts.push(next);
    size += next.length;
  }
  return parts.join('').slice(0, length);
}

// ---------------------------------------------------------------------------------------------
// Source code
// ---------------------------------------------------------------------------------------------

function identifiers(random: Random, language: Language) {
  const noun = random.pick(NOUNS);
  const other = random.pick(NOUNS);
  const variable = language === 'python' ? `${noun}_${plural(other)}` : `${noun}${capitalized(plural(other))}`;
  const helper = methodName(language, random.pick(VERBS), random.pick(NOUNS));
  return {
    noun,
    other,
    variable,
    helper,
    field: plural(random.pick(NOUNS)),
    type: `${capitalized(noun)}${capitalized(other)}`,
  };
}

function pythonMethod(random: Random, file: SourceFile, method: string, errors: readonly string[]): string[] {
  const { noun, other, variable, helper, field, type } = identifiers(random, 'python');
  const lines = [
    `    def ${method}(self, ${noun}: ${type}, *, strict: bool = False) -> list[${capitalized(other)}]:`,
    `        """${capitalized(method.replace('_', ' '))} for one ${noun}; see ${file.className}.${random.pick(file.methods)}."""`,
  ];
  if (random.chance(0.7))
    lines.push(
      `        if ${noun} is None:`,
      `            raise ${random.pick(errors)}(f"${noun} is required (got {${noun}!r})")`,
    );
  lines.push(
    `        ${variable} = self._${field}.get(${noun}.${other}_id, [])`,
    `        result: list[${capitalized(other)}] = []`,
  );
  lines.push(`        for item in ${variable}:`);
  if (random.chance(0.5))
    lines.push(`            if strict and not item.${random.pick(NOUNS)}:`, '                continue');
  lines.push(`            result.append(${helper}(item, ${noun}))`);
  if (random.chance(0.5))
    lines.push(`        logger.debug("${method}: %d ${plural(other)} for %s", len(result), ${noun}.${other}_id)`);
  lines.push('        return result', '');
  return lines;
}

function typescriptMethod(random: Random, file: SourceFile, method: string, errors: readonly string[]): string[] {
  const { noun, other, variable, helper, field, type } = identifiers(random, 'typescript');
  const lines = [
    `  /** ${capitalized(noun)} → ${plural(other)}; used by ${file.className}.${random.pick(file.methods)}. */`,
    `  ${method}(${noun}: ${type}, options: { strict?: boolean } = {}): ${capitalized(other)}[] {`,
  ];
  if (random.chance(0.7))
    lines.push(`    if (${noun} === undefined) throw new ${random.pick(errors)}(\`${method}: ${noun} is required\`);`);
  lines.push(
    `    const ${variable} = this.${field}.get(${noun}.${other}Id) ?? [];`,
    `    const result: ${capitalized(other)}[] = [];`,
    `    for (const item of ${variable}) {`,
  );
  if (random.chance(0.5)) lines.push(`      if (options.strict && !item.${random.pick(NOUNS)}) continue;`);
  lines.push(`      result.push(${helper}(item, ${noun}));`, '    }', '    return result;', '  }', '');
  return lines;
}

function javaMethod(random: Random, file: SourceFile, method: string, errors: readonly string[]): string[] {
  const { noun, other, variable, helper, field, type } = identifiers(random, 'java');
  const lines = [
    `    /** Called by {@link ${file.className}#${random.pick(file.methods)}}. */`,
    `    public List<${capitalized(other)}> ${method}(${type} ${noun}, boolean strict) {`,
  ];
  if (random.chance(0.7))
    lines.push(
      `        if (${noun} == null) {`,
      `            throw new ${random.pick(errors)}("${noun} must not be null");`,
      '        }',
    );
  lines.push(
    `        List<${capitalized(other)}> ${variable} = this.${field}.getOrDefault(${noun}.get${capitalized(other)}Id(), List.of());`,
    `        List<${capitalized(other)}> result = new ArrayList<>();`,
    `        for (${capitalized(other)} item : ${variable}) {`,
  );
  if (random.chance(0.5))
    lines.push(
      `            if (strict && item.get${capitalized(random.pick(NOUNS))}() == null) {`,
      '                continue;',
      '            }',
    );
  lines.push(`            result.add(${helper}(item, ${noun}));`, '        }', '        return result;', '    }', '');
  return lines;
}

function header(project: Project, file: SourceFile, random: Random): string[] {
  const imported = random.pick(project.files);
  if (project.language === 'python') {
    return [
      `"""${capitalized(file.className)} for ${project.name}.${file.pkg}."""`,
      'from __future__ import annotations',
      '',
      'import logging',
      `from ${project.name}.${imported.pkg} import ${imported.className}`,
      '',
      'logger = logging.getLogger(__name__)',
      '',
      '',
      `class ${file.className}:`,
      `    def __init__(self, config: ${imported.className}) -> None:`,
      '        self._config = config',
      '',
    ];
  }
  if (project.language === 'typescript') {
    return [
      `import { ${imported.className} } from '../${imported.pkg}/${imported.path.split('/').at(-1)?.replace(/\.ts$/, '.js') ?? 'index.js'}';`,
      '',
      `export class ${file.className} {`,
      `  constructor(private readonly config: ${imported.className}) {}`,
      '',
    ];
  }
  return [
    `package com.acme.${project.name}.${file.pkg};`,
    '',
    'import java.util.ArrayList;',
    'import java.util.List;',
    `import com.acme.${project.name}.${imported.pkg}.${imported.className};`,
    '',
    `public class ${file.className} {`,
    `    private final ${imported.className} config;`,
    '',
  ];
}

/** The lines of a source file, endless: a header, then methods (its own, then made-up ones). */
export function sourceLines(project: Project, file: SourceFile, seed: string): () => string {
  const random = createRandom(seed);
  const method =
    project.language === 'python' ? pythonMethod : project.language === 'typescript' ? typescriptMethod : javaMethod;
  const queue = header(project, file, random);
  let next = 0;
  let methods = 0;
  return () => {
    if (next >= queue.length) {
      queue.length = 0;
      next = 0;
      const name = file.methods[methods] ?? methodName(project.language, random.pick(VERBS), random.pick(NOUNS));
      methods += 1;
      queue.push(...method(random, file, name, project.errors));
    }
    const line = queue[next] ?? '';
    next += 1;
    return line;
  };
}

// ---------------------------------------------------------------------------------------------
// Tool output
// ---------------------------------------------------------------------------------------------

/** `cat -n`-style numbered source, about `size` characters; the same (file, seed, size) gives the same text. */
export function readOutput(project: Project, file: SourceFile, size: number, seed: string, from = 1): string {
  const line = sourceLines(project, file, seed);
  for (let skipped = 1; skipped < from; skipped += 1) line();
  return fillLines(size, [], (index) => `${String(from + index).padStart(6)}\t${line()}`);
}

/** A line that uses `identifier`, as grep would find it in a source or test file. */
function usageLine(project: Project, random: Random, identifier: string): string {
  const noun = random.pick(NOUNS);
  if (project.language === 'python') {
    return random.pick([
      `    def ${identifier}(self, ${noun}: ${capitalized(noun)}, *, strict: bool = False) -> list[${capitalized(noun)}]:`,
      `        ${noun}s = self.${identifier}(${noun}, strict=True)`,
      `    assert parser.${identifier}(make_${noun}()) == []`,
      `from ${project.name}.${random.pick(PACKAGES)} import ${identifier}`,
      `            result.append(${identifier}(item, ${noun}))`,
    ]);
  }
  if (project.language === 'typescript') {
    return random.pick([
      `  ${identifier}(${noun}: ${capitalized(noun)}, options: { strict?: boolean } = {}): ${capitalized(noun)}[] {`,
      `    const ${plural(noun)} = this.${identifier}(${noun}, { strict: true });`,
      `    expect(parser.${identifier}(make${capitalized(noun)}())).toEqual([]);`,
      `import { ${identifier} } from '../${random.pick(PACKAGES)}/index.js';`,
      `      result.push(${identifier}(item, ${noun}));`,
    ]);
  }
  return random.pick([
    `    public List<${capitalized(noun)}> ${identifier}(${capitalized(noun)} ${noun}, boolean strict) {`,
    `        List<${capitalized(noun)}> ${plural(noun)} = ${identifier}(${noun}, true);`,
    `        assertEquals(List.of(), parser.${identifier}(new${capitalized(noun)}()));`,
    `            result.add(${identifier}(item, ${noun}));`,
  ]);
}

/** `grep -rn identifier` output: `path:line:text` per match. */
export function grepOutput(project: Project, random: Random, identifier: string, size: number): string {
  return fillLines(size, [], () => {
    const file = random.pick(project.files);
    const path = random.chance(0.3) ? file.test : file.path;
    return `${path}:${random.int(3, 420)}:${usageLine(project, random, identifier)}`;
  });
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;

/** `ls -la` of a directory of the project: its files, then more made-up neighbours up to `size`. */
export function listingOutput(project: Project, random: Random, directory: string, size: number): string {
  const date = `${random.pick(MONTHS)} ${String(random.int(1, 28)).padStart(2)} ${String(random.int(0, 23)).padStart(2, '0')}:${String(random.int(0, 59)).padStart(2, '0')}`;
  const entry = (name: string, isDirectory: boolean): string =>
    `${isDirectory ? 'drwxr-xr-x' : '-rw-r--r--'} 1 agent agent ${String(isDirectory ? 4096 : random.int(180, 24_000)).padStart(6)} ${date} ${name}`;
  const inside = project.files
    .filter((file) => file.path.startsWith(`${directory}/`))
    .map((file) => file.path.slice(directory.length + 1));
  const extension = project.files[0]?.path.split('.').at(-1) ?? 'txt';
  const separator = project.language === 'python' ? '_' : '-';
  return fillLines(size, [`total ${random.int(24, 400)}`, entry('.', true), entry('..', true)], (index) => {
    const more = index - inside.length;
    const name =
      inside[index] ??
      `${NOUNS[more % NOUNS.length] ?? 'row'}${separator}${NOUNS[Math.floor(more / NOUNS.length) % NOUNS.length] ?? 'entry'}${more >= NOUNS.length * NOUNS.length ? String(Math.floor(more / (NOUNS.length * NOUNS.length))) : ''}.${extension}`;
    return entry(name, false);
  });
}

/** `find <dir> -name "*.ext"` inside the project. */
export function findOutput(project: Project, size: number): string {
  const paths = project.files.flatMap((file) => [`./${file.path}`, `./${file.test}`]);
  return fillLines(size, [], (index) => paths[index] ?? `./${project.morePaths()}`);
}

const SYSTEM_ROOTS = [
  '/usr/lib/jvm/java-17-openjdk-amd64/lib',
  '/usr/share/maven/lib',
  '/root/.m2/repository/org/apache/maven',
  '/root/.m2/repository/com/fasterxml/jackson/core',
  '/usr/lib/python3/dist-packages',
  '/usr/local/lib/node_modules/npm/node_modules',
  '/proc/sys/kernel',
  '/var/lib/dpkg/info',
  '/opt/conda/pkgs',
  '/snap/core20/2015/usr/lib',
] as const;

/** `find / -name "*runtime*"`: a whole-disk listing, the kind of output that is megabytes long. */
export function diskFindOutput(random: Random, size: number): string {
  return fillLines(size, [], (index) => {
    if (index % 97 === 13)
      return `find: '/proc/${random.int(2, 40_000)}/task/${random.int(2, 40_000)}/net': Invalid argument`;
    const depth = random.int(1, 4);
    const parts = Array.from(
      { length: depth },
      () => `${random.pick(NOUNS)}${random.chance(0.3) ? `-${random.int(1, 9)}.${random.int(0, 20)}` : ''}`,
    );
    const leaf = random.pick([
      'runtime',
      'runtime.jar',
      'runtime-common',
      'RuntimeException.class',
      'runtime.py',
      'runtime_info.json',
      'runtime.d.ts',
    ]);
    return `${random.pick(SYSTEM_ROOTS)}/${parts.join('/')}/${leaf}`;
  });
}

/** A test run: passing, or failing with a traceback that names `failing`. */
export function testOutput(
  project: Project,
  random: Random,
  options: {
    file: SourceFile;
    failing?: { test: string; method: string; error: string; message: string };
    size: number;
  },
): string {
  const { file, failing, size } = options;
  const total = random.int(24, 180);
  const seconds = (random.int(40, 900) / 100).toFixed(2);
  const testName = (): string =>
    project.language === 'python'
      ? `test_${random.pick(VERBS)}_${random.pick(NOUNS)}`
      : `${random.pick(VERBS)}s the ${random.pick(NOUNS)}`;
  if (project.language === 'python') {
    const head = [
      '============================= test session starts ==============================',
      'platform linux -- Python 3.11.6, pytest-7.4.3, pluggy-1.3.0',
      `rootdir: ${project.root}`,
      `collected ${total} items`,
      '',
    ];
    const tail =
      failing === undefined
        ? [`============================== ${total} passed in ${seconds}s ==============================`]
        : [
            '=================================== FAILURES ===================================',
            `______________________________ ${failing.test} ______________________________`,
            '',
            `    def ${failing.test}():`,
            `>       result = ${file.className}(make_config()).${failing.method}(make_row())`,
            '',
            `${file.test}:${random.int(12, 200)}: `,
            `${file.path}:${random.int(20, 300)}: in ${failing.method}`,
            `E   ${failing.error}: ${failing.message}`,
            '=========================== short test summary info ============================',
            `FAILED ${file.test}::${failing.test} - ${failing.error}: ${failing.message}`,
            `========================= 1 failed, ${total - 1} passed in ${seconds}s =========================`,
          ];
    return fillLines(
      size,
      head,
      (index) => `${file.test}::${testName()} PASSED${' '.repeat(4)}[${String(Math.min(99, index)).padStart(3)}%]`,
      tail,
    );
  }
  if (project.language === 'typescript') {
    const tail =
      failing === undefined
        ? [
            '',
            ` Test Files  ${random.int(4, 30)} passed`,
            `      Tests  ${total} passed (${total})`,
            `   Duration  ${seconds}s`,
          ]
        : [
            '',
            ` FAIL  ${file.test} > ${file.className} > ${failing.test}`,
            `${failing.error}: ${failing.message}`,
            ` ❯ ${file.className}.${failing.method} ${file.path}:${random.int(20, 300)}:${random.int(5, 40)}`,
            ` ❯ ${file.test}:${random.int(12, 200)}:${random.int(5, 40)}`,
            '',
            ` Test Files  1 failed | ${random.int(4, 30)} passed`,
            `      Tests  1 failed | ${total - 1} passed (${total})`,
          ];
    return fillLines(
      size,
      [` RUN  v1.6.0 ${project.root}`, ''],
      () => ` ✓ ${file.test} > ${file.className} > ${testName()} ${random.int(1, 40)}ms`,
      tail,
    );
  }
  const tail =
    failing === undefined
      ? ['[INFO] ', `[INFO] Tests run: ${total}, Failures: 0, Errors: 0, Skipped: 0`, '[INFO] BUILD SUCCESS']
      : [
          `[ERROR] ${failing.test}(${file.className}Test)  Time elapsed: 0.${random.int(10, 99)} s  <<< ERROR!`,
          `${failing.error}: ${failing.message}`,
          `\tat com.acme.${project.name}.${file.pkg}.${file.className}.${failing.method}(${file.className}.java:${random.int(20, 300)})`,
          `\tat com.acme.${project.name}.${file.pkg}.${file.className}Test.${failing.test}(${file.className}Test.java:${random.int(12, 200)})`,
          `[ERROR] Tests run: ${total}, Failures: 0, Errors: 1, Skipped: 0`,
          '[INFO] BUILD FAILURE',
        ];
  return fillLines(
    size,
    [
      '[INFO] -------------------------------------------------------',
      '[INFO]  T E S T S',
      '[INFO] -------------------------------------------------------',
    ],
    () =>
      `[INFO] Tests run: ${random.int(1, 40)}, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: ${(random.int(5, 400) / 100).toFixed(2)} s - in com.acme.${project.name}.${random.pick(PACKAGES)}.${capitalized(random.pick(NOUNS))}${capitalized(random.pick(NOUNS))}Test`,
    tail,
  );
}

/** `git diff` of an edit to `file`. */
export function diffOutput(project: Project, random: Random, file: SourceFile, size: number, seed: string): string {
  const line = sourceLines(project, file, seed);
  const head = [
    `diff --git a/${file.path} b/${file.path}`,
    `index ${random.int(0x1000000, 0xfffffff).toString(16)}..${random.int(0x1000000, 0xfffffff).toString(16)} 100644`,
    `--- a/${file.path}`,
    `+++ b/${file.path}`,
  ];
  return fillLines(size, head, (index) => {
    if (index % 24 === 0) {
      const start = random.int(10, 400);
      return `@@ -${start},7 +${start},${random.int(7, 12)} @@ class ${file.className}`;
    }
    const text = line();
    const mark = random.next();
    return `${mark < 0.08 ? '-' : mark < 0.2 ? '+' : ' '}${text}`;
  });
}

/** What an editor tool prints after a replacement: a numbered snippet around the change. */
export function editOutput(project: Project, file: SourceFile, seed: string, at: number, size: number): string {
  const head = `The file ${project.root}/${file.path} has been edited. Here's the result of running \`cat -n\` on a snippet of ${project.root}/${file.path}:`;
  const tail = 'Review the changes and make sure they are as expected. Edit the file again if necessary.';
  return [head, readOutput(project, file, Math.max(0, size - head.length - tail.length - 2), seed, at), tail].join(
    '\n',
  );
}

export { NOUNS };
