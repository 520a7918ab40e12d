// Node: `npm run test:package [-- <markdown files>]` — proves the package installable and usable
// from outside the repository, as a user gets it:
//   1. `npm pack` (prepack builds dist/) into a temporary directory, and checks what the tarball holds;
//   2. a fresh project under os.tmpdir() (`type: module`), the tarball, @temporalio/client, worker and
//      workflow, typescript, tsx and @types/node installed from the registry (--prefer-offline);
//   3. every TypeScript block of the markdown files written there (```ts worker.ts → worker.ts, one
//      block per name; unnamed blocks → snippets/*.ts) and type-checked with tsc (strict, nodenext);
//      errors name the markdown file and line;
//   4. ESM and CommonJS (Node's require(esm), 20.19+) load both entry points, and
//      compactorWorkflowsPath() names the installed dist/workflows/index.js;
//   5. a Temporal dev server (127.0.0.1, free ports) and a fake OpenAI-compatible endpoint in this
//      process; `npx tsx worker.ts` in the background, then `npx tsx client.ts`, with TEMPORAL_ADDRESS,
//      OPENAI_BASE_URL, OPENAI_API_KEY, COMPACTOR_SUMMARIZER_MODEL and COMPACTOR_PAYLOAD_STORE=file:<dir>;
//   6. the installed bin: `npx temporal-compactor --help`, and `compact` on a small conversation.
// Progress goes to stderr as `[test:package]` lines; everything it started is stopped and the
// temporary directory removed at the end (TEST_PACKAGE_KEEP=1 keeps the directory and says where).
//
// What the runtime step expects of the blocks (the fake endpoint answers by model name):
//   - worker.ts runs a worker on the task queue client.ts uses, with `compactorPlugin()`;
//   - client.ts runs the user's workflow that calls compact(), and prints the summary it got: stdout
//     holds SUMMARY_TEXT (the summarizer model's answer, below), e.g. `summary: <the summary>`;
//   - client.ts starts agentRun with `model: { provider: 'openai', ... }` and prints its result's final
//     message: stdout holds AGENT_REPLY (any other model's answer), e.g. `agentRun: completed ...: "<reply>"`;
//   - client.ts exits (0) by itself; worker.ts runs until it is sent SIGINT.
// The check also wants at least one request for each model at the fake endpoint and at least one
// object in the payload store's directory.
//
// Options: --tarball FILE installs a tarball packed before instead of packing; --no-overrides leaves `"overrides": { "protobufjs": "^8.8.1" }` out of the project's
// package.json (to see what a plain install resolves); --skip-run stops after the type-check and
// the module checks.
import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startDevServer, type DevServer } from '../dev/dev-server.js';
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest } from '../test/support/fake-openai.js';
import {
  commonJsGlobals,
  mapDiagnostics,
  projectFiles,
  tsBlocksOfFile,
  MarkdownBlockError,
  type ProjectFile,
} from '../test/package/markdown-blocks.js';

/** The summarizer model the worker is configured with; the fake endpoint answers it with SUMMARY_TEXT. */
const SUMMARIZER_MODEL = 'package-test-summarizer';
const SUMMARY_TEXT = 'Package-test summary: the customer asked where twelve orders were; all left the warehouse.';
const AGENT_REPLY = 'Package-test agent reply: order 1042 ships tomorrow.';
/**
 * The markdown files checked when none are named on the command line (relative to the repository;
 * `dir/*.md` stands for every markdown file in dir): the README, whose quick start has the named
 * blocks (```ts workflows.ts, worker.ts, client.ts), and every reference page.
 */
const DEFAULT_MARKDOWN = ['README.md', 'docs/*.md'];
const CLIENT_TIMEOUT_MS = 300_000;
const COMMAND_TIMEOUT_MS = 600_000;

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const started = Date.now();

/** What to stop, newest last: run in reverse by `cleanUp`, also when the script is interrupted. */
const cleanup: Array<() => Promise<void>> = [];
let temp: string | undefined;

class PackageTestError extends Error {
  override readonly name = 'PackageTestError';
}

function progress(message: string): void {
  process.stderr.write(`[test:package ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${message}\n`);
}

/** The last `max` characters of a command's output, for an error message. */
function tail(text: string, max = 4_000): string {
  const trimmed = text.trim();
  return trimmed.length <= max ? trimmed : `…${trimmed.slice(-max)}`;
}

interface RunOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  input?: string;
  /** Pass the command's stderr through to ours as it comes (long installs and builds). */
  showStderr?: boolean;
}

/** Runs a command to its end; throws with its output when it fails. */
function run(command: string, args: readonly string[], options: RunOptions): SpawnSyncReturns<string> {
  const result = spawnSync(command, [...args], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    encoding: 'utf8',
    input: options.input,
    timeout: COMMAND_TIMEOUT_MS,
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['pipe', 'pipe', options.showStderr === true ? 'inherit' : 'pipe'],
  });
  if (result.error !== undefined)
    throw new PackageTestError(
      `\`${command} ${args.join(' ')}\` in ${options.cwd} could not run: ${result.error.message}`,
    );
  if (result.status !== 0) {
    throw new PackageTestError(
      `\`${command} ${args.join(' ')}\` in ${options.cwd} exited with ${result.status ?? result.signal}\n--- stdout ---\n${tail(result.stdout ?? '')}\n--- stderr ---\n${tail(result.stderr ?? '')}`,
    );
  }
  return result;
}

/** The environment of the project's commands: ours without any Temporal, OpenAI or compactor setting of the caller's. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(TEMPORAL_|COMPACTOR_|OPENAI_|OTEL_|npm_)/.test(key) || key === 'NODE_OPTIONS') continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

/** Files under `dir`, recursively (paths relative to it). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((path) => statSync(join(dir, path)).isFile());
}

interface Options {
  markdown: string[];
  overrides: boolean;
  skipRun: boolean;
  /** A tarball packed before, instead of packing now. */
  tarball: string | undefined;
}

function parseArgs(argv: readonly string[]): Options {
  const markdown: string[] = [];
  let overrides = true;
  let skipRun = false;
  let tarball: string | undefined;
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] ?? '';
    if (arg === '--no-overrides') overrides = false;
    else if (arg === '--skip-run') skipRun = true;
    else if (arg === '--tarball') {
      const path = argv[++index];
      if (path === undefined || !existsSync(path))
        throw new PackageTestError(`--tarball takes the path of an existing .tgz, got ${JSON.stringify(path)}`);
      tarball = resolve(path);
    } else if (arg.startsWith('-'))
      throw new PackageTestError(
        `unknown option ${arg} (known: --no-overrides, --skip-run, --tarball FILE, then markdown files)`,
      );
    else markdown.push(arg);
  }
  return { markdown: markdown.length > 0 ? markdown : DEFAULT_MARKDOWN, overrides, skipRun, tarball };
}

/** Step 1: the tarball, built by prepack; checks it holds what an installed package needs and nothing of the repository's own. */
function pack(into: string): string {
  progress('npm pack (prepack: clean, tsc, workflow bundles) ...');
  run('npm', ['pack', '--pack-destination', into, '--silent'], { cwd: root, showStderr: true });
  const tarballs = readdirSync(into).filter((name) => name.endsWith('.tgz'));
  if (tarballs.length !== 1)
    throw new PackageTestError(`npm pack left ${tarballs.length} tarballs in ${into}: ${tarballs.join(', ')}`);
  return join(into, tarballs[0] ?? '');
}

/** Where package.json's `bin` points (the one command the package installs). */
function binPath(): string {
  const manifest: unknown = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const bin: unknown = typeof manifest === 'object' && manifest !== null ? Reflect.get(manifest, 'bin') : undefined;
  const path: unknown = typeof bin === 'object' && bin !== null ? Reflect.get(bin, 'temporal-compactor') : undefined;
  if (typeof path !== 'string') throw new PackageTestError('package.json: bin["temporal-compactor"] is not a path');
  return path;
}

function checkTarball(tarball: string): void {
  const listed = run('tar', ['-tzf', tarball], { cwd: dirname(tarball) })
    .stdout.split('\n')
    .filter((line) => line !== '');
  const required = [
    'package/package.json',
    'package/README.md',
    'package/LICENSE',
    'package/dist/index.js',
    'package/dist/index.d.ts',
    'package/dist/workflow.js',
    'package/dist/workflow.d.ts',
    `package/${binPath().replace(/^\.\//, '')}`,
    'package/dist/workflows/index.js',
    'package/dist/activities/grep-thread.js',
    'package/dist/workflow-bundle.js',
  ];
  const missing = required.filter((path) => !listed.includes(path));
  if (missing.length > 0) throw new PackageTestError(`the tarball lacks ${missing.join(', ')}`);
  const unwanted = listed.filter((path) =>
    /^package\/(src|dev|test|scripts|bench|corpus|examples|\.ci|node_modules)\//.test(path),
  );
  if (unwanted.length > 0)
    throw new PackageTestError(
      `the tarball holds files a user does not need: ${unwanted.slice(0, 5).join(', ')}${unwanted.length > 5 ? ', …' : ''}`,
    );
  progress(`tarball ${tarball}: ${listed.length} files, ${(statSync(tarball).size / 1024 / 1024).toFixed(1)} MiB`);
}

/** Step 2: a fresh project outside the repository with the tarball and what a user installs beside it. */
function createProject(dir: string, tarball: string, overrides: boolean): void {
  const repo = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    devDependencies?: Record<string, string>;
  };
  const dev = (name: string): string => {
    const version = repo.devDependencies?.[name];
    if (version === undefined)
      throw new PackageTestError(`package.json has no devDependency ${name} to pin the project's copy to`);
    return `${name}@${version}`;
  };
  const project = {
    name: 'temporal-compactor-package-test',
    private: true,
    type: 'module',
    ...(overrides ? { overrides: { protobufjs: '^8.8.1' } } : {}),
  };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(project, null, 2)}\n`);
  const packages = [
    tarball,
    '@temporalio/client@1.24.0',
    '@temporalio/worker@1.24.0',
    '@temporalio/workflow@1.24.0',
    dev('typescript'),
    dev('tsx'),
    dev('@types/node'),
  ];
  progress(
    `npm install in ${dir}${overrides ? '' : ' (no protobufjs override)'}: ${packages.map((name) => (name === tarball ? 'the tarball' : name)).join(', ')} ...`,
  );
  run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...packages], {
    cwd: dir,
    env: cleanEnv({}),
    showStderr: true,
  });
  const copies = protobufCopies(dir);
  progress(`protobufjs in the project: ${copies.map(({ version, path }) => `${version} at ${path}`).join('; ')}`);
}

/** Every installed copy of protobufjs in the project: its version and where. */
function protobufCopies(dir: string): Array<{ version: string; path: string }> {
  const found: Array<{ version: string; path: string }> = [];
  const visit = (modules: string, depth: number): void => {
    if (!existsSync(modules) || depth > 6) return;
    for (const name of readdirSync(modules)) {
      if (name.startsWith('.')) continue;
      const scoped = name.startsWith('@') ? readdirSync(join(modules, name)).map((inner) => join(name, inner)) : [name];
      for (const pkg of scoped) {
        const at = join(modules, pkg);
        if (pkg === 'protobufjs') {
          const { version } = JSON.parse(readFileSync(join(at, 'package.json'), 'utf8')) as { version: string };
          found.push({ version, path: relative(dir, at) });
        }
        visit(join(at, 'node_modules'), depth + 1);
      }
    }
  };
  visit(join(dir, 'node_modules'), 0);
  return found;
}

/** Step 3: the markdown files' blocks in the project, type-checked. Returns the files written. */
function typeCheckBlocks(dir: string, markdown: readonly string[]): ProjectFile[] {
  const expanded = markdown.flatMap((path) => {
    if (!path.endsWith('/*.md')) return [path];
    const folder = path.slice(0, -'/*.md'.length);
    if (!existsSync(resolve(root, folder))) throw new PackageTestError(`${path}: there is no folder ${folder}`);
    return readdirSync(resolve(root, folder))
      .filter((name) => name.endsWith('.md'))
      .sort()
      .map((name) => join(folder, name));
  });
  const blocks = expanded.flatMap((path) => {
    const absolute = resolve(root, path);
    if (!existsSync(absolute)) throw new PackageTestError(`markdown file ${path} does not exist`);
    // Named relative to the repository in messages and snippet names, unless it lies outside.
    const shown = relative(root, absolute);
    return tsBlocksOfFile(shown.startsWith('..') ? absolute : shown);
  });
  if (blocks.length === 0) throw new PackageTestError(`no \`\`\`ts blocks in ${expanded.join(', ')}`);
  const files = projectFiles(blocks);
  for (const file of files) {
    mkdirSync(dirname(join(dir, file.path)), { recursive: true });
    writeFileSync(join(dir, file.path), file.content);
  }
  // A CommonJS user's file: `import` of the ESM package from a .cts file is require(esm) under nodenext.
  writeFileSync(
    join(dir, 'check-cjs-types.cts'),
    "import { compactorPlugin, compactorWorkflowsPath } from 'temporal-compactor';\nimport { compact } from 'temporal-compactor/workflow';\nexport const checked: [string, unknown, unknown] = [compactorWorkflowsPath(), compactorPlugin, compact];\n",
  );
  const tsconfig = {
    compilerOptions: {
      target: 'ES2022',
      lib: ['ES2022'],
      module: 'nodenext',
      moduleResolution: 'nodenext',
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: ['node'],
    },
    include: ['*.ts', '*.cts', 'snippets/**/*.ts'],
  };
  writeFileSync(join(dir, 'tsconfig.json'), `${JSON.stringify(tsconfig, null, 2)}\n`);
  const named = files.filter((file) => file.block.name !== undefined).map((file) => file.path);
  progress(`tsc on ${files.length} block(s) from ${expanded.join(', ')} (named: ${named.join(', ') || 'none'}) ...`);
  const result = spawnSync('npx', ['--no-install', 'tsc', '-p', 'tsconfig.json', '--pretty', 'false'], {
    cwd: dir,
    env: cleanEnv({}),
    encoding: 'utf8',
    timeout: COMMAND_TIMEOUT_MS,
  });
  const problems: string[] = [];
  if (result.status !== 0) {
    const diagnostics = mapDiagnostics(`${result.stdout ?? ''}${result.stderr ?? ''}`, files);
    problems.push(
      `the markdown's TypeScript blocks do not type-check against the installed package:\n  ${diagnostics.join('\n  ')}`,
    );
  }
  // tsc accepts these (@types/node declares them); Node throws ReferenceError in an ES module.
  const commonJs = commonJsGlobals(files);
  if (commonJs.length > 0)
    problems.push(`the blocks are ES modules here (type: module), yet:\n  ${commonJs.join('\n  ')}`);
  if (problems.length > 0) throw new PackageTestError(problems.join('\n'));
  progress('the blocks type-check');
  return files;
}

/** Step 4: both entry points from ESM and from CommonJS, and the workflows path a worker bundles. */
function checkModules(dir: string): void {
  const expected = realpathSync(join(dir, 'node_modules', 'temporal-compactor', 'dist', 'workflows', 'index.js'));
  const check = (workflowsPath: string, how: string): void => {
    if (realpathSync(workflowsPath) !== expected)
      throw new PackageTestError(`${how}: compactorWorkflowsPath() is ${workflowsPath}, expected ${expected}`);
  };
  writeFileSync(
    join(dir, 'check-esm.mjs'),
    [
      "import { compactorPlugin, compactorWorkflowsPath } from 'temporal-compactor';",
      "import { compact, needsCompaction } from 'temporal-compactor/workflow';",
      "import manifest from 'temporal-compactor/package.json' with { type: 'json' };",
      "if (typeof compactorPlugin !== 'function' || typeof compact !== 'function' || typeof needsCompaction !== 'function') throw new Error('an entry point lacks its functions');",
      'console.log(JSON.stringify({ workflowsPath: compactorWorkflowsPath(), version: manifest.version }));',
      '',
    ].join('\n'),
  );
  const esm = JSON.parse(run('node', ['check-esm.mjs'], { cwd: dir, env: cleanEnv({}) }).stdout) as {
    workflowsPath: string;
    version: string;
  };
  check(esm.workflowsPath, 'ESM');
  progress(
    `ESM: temporal-compactor ${esm.version} and temporal-compactor/workflow import; compactorWorkflowsPath() = ${relative(dir, esm.workflowsPath)}`,
  );
  writeFileSync(
    join(dir, 'check-cjs.cjs'),
    [
      "const { compactorPlugin, compactorWorkflowsPath } = require('temporal-compactor');",
      "const { compact } = require('temporal-compactor/workflow');",
      "if (typeof compactorPlugin !== 'function' || typeof compact !== 'function') throw new Error('require() gave an entry point without its functions');",
      "import('temporal-compactor').then((imported) => {",
      "  if (imported.compactorWorkflowsPath() !== compactorWorkflowsPath()) throw new Error('import() and require() disagree');",
      '  console.log(JSON.stringify({ workflowsPath: compactorWorkflowsPath() }));',
      '});',
      '',
    ].join('\n'),
  );
  let cjs: SpawnSyncReturns<string>;
  try {
    cjs = run('node', ['--experimental-print-required-tla', 'check-cjs.cjs'], { cwd: dir, env: cleanEnv({}) });
  } catch (error) {
    const hint =
      error instanceof Error && error.message.includes('ERR_REQUIRE_ASYNC_MODULE')
        ? ' (a module the entry point imports has a top-level await, named above: require() of ESM refuses it)'
        : '';
    throw new PackageTestError(
      `CommonJS: require('temporal-compactor') failed${hint}\n${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const cjsOut = JSON.parse(cjs.stdout) as { workflowsPath: string };
  check(cjsOut.workflowsPath, 'CommonJS');
  const warning = cjs.stderr.trim() === '' ? '' : ` (stderr: ${cjs.stderr.trim().split('\n')[0]})`;
  progress(`CommonJS (Node ${process.version}): require() and import() of both entry points work${warning}`);
}

/**
 * The built-in grep searches in a worker thread loaded from the installed dist (grep-thread.js):
 * a catastrophic pattern ends at the deadline with the matches found before it, and the thread's
 * file is found from the installed package, not from our sources.
 */
function checkGrepThread(dir: string): void {
  const searched = join(dir, 'grep-root');
  mkdirSync(searched);
  writeFileSync(join(searched, 'a.txt'), 'x\n');
  writeFileSync(join(searched, 'b.txt'), `${'a'.repeat(42)}!\n`);
  const grepModule = pathToFileURL(
    join(dir, 'node_modules', 'temporal-compactor', 'dist', 'activities', 'grep.js'),
  ).href;
  writeFileSync(
    join(dir, 'check-grep.mjs'),
    [
      `const { grepInThread } = await import(${JSON.stringify(grepModule)});`,
      `const base = ${JSON.stringify(realpathSync(searched))};`,
      "const input = { pattern: '^(x|(a+)+$)', flags: '', start: base, base, maxResults: 10, maxFileBytes: 1e6, maxFiles: 10, skippedDirectories: [] };",
      'let ticks = 0; const ticker = setInterval(() => (ticks += 1), 50);',
      'const outcome = await grepInThread(input, { timeoutMs: 1500, memoryMb: 64 });',
      'clearInterval(ticker);',
      'console.log(JSON.stringify({ ...outcome, ticks }));',
      '',
    ].join('\n'),
  );
  const outcome = JSON.parse(run('node', ['check-grep.mjs'], { cwd: dir, env: cleanEnv({}) }).stdout) as {
    matches: string[];
    stoppedAt: string;
    ticks: number;
  };
  if (outcome.stoppedAt !== 'deadline' || outcome.matches.join() !== 'a.txt:1: x' || outcome.ticks < 5)
    throw new PackageTestError(`grep's search thread from the installed package: ${JSON.stringify(outcome)}`);
  progress(
    `grep: a catastrophic pattern stopped at its deadline in the installed search thread (${outcome.ticks} timer ticks meanwhile)`,
  );
}

interface Background {
  child: ChildProcess;
  output(): string;
  exited(): boolean;
  stop(): Promise<void>;
}

/** Starts a command in its own process group, its output kept (and echoed to stderr with `prefix`). */
function background(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  prefix: string,
): Background {
  const child = spawn(command, [...args], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  let exited = false;
  const exit = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  void exit.then(() => (exited = true));
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      text += chunk;
      for (const line of chunk.split('\n')) if (line.trim() !== '') process.stderr.write(`  ${prefix} ${line}\n`);
    });
  }
  const signal = (name: NodeJS.Signals): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, name);
    } catch {
      // The group is gone already.
    }
  };
  return {
    child,
    output: () => text,
    exited: () => exited,
    async stop() {
      if (exited) return;
      signal('SIGINT');
      const timer = setTimeout(() => signal('SIGKILL'), 15_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** Waits for a background command to exit; its exit code, or throws after `timeoutMs`. */
async function waitForExit(task: Background, timeoutMs: number, what: string): Promise<number> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const code = await Promise.race([
    new Promise<number>((resolveExit) => {
      if (task.exited()) resolveExit(task.child.exitCode ?? 1);
      task.child.once('exit', (exitCode, signal) => resolveExit(exitCode ?? (signal === null ? 1 : 128)));
    }),
    new Promise<undefined>((resolveTimeout) => {
      timer = setTimeout(() => resolveTimeout(undefined), timeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (code === undefined)
    throw new PackageTestError(
      `${what} did not finish within ${timeoutMs / 1000} s\n--- its output ---\n${tail(task.output())}`,
    );
  return code;
}

function modelOf(request: RecordedRequest): string | undefined {
  const body = request.body;
  if (typeof body !== 'object' || body === null) return undefined;
  const model: unknown = Reflect.get(body, 'model');
  return typeof model === 'string' ? model : undefined;
}

/** Step 5: the user's worker and client from the blocks, against a dev server and the fake endpoint. */
async function runQuickStart(dir: string, files: readonly ProjectFile[]): Promise<void> {
  for (const name of ['worker.ts', 'client.ts']) {
    if (!files.some((file) => file.path === name))
      throw new PackageTestError(
        `no block is named ${name} (\`\`\`ts ${name}): the run needs a worker and a client from the markdown`,
      );
  }
  progress('starting a Temporal dev server (headless, 127.0.0.1) and the fake OpenAI endpoint ...');
  const server: DevServer = await startDevServer({ ui: false });
  cleanup.push(() => server.stop());
  const fake: FakeOpenAI = await startFakeOpenAI();
  cleanup.push(() => fake.close());
  fake.setDefault((request) => ({
    kind: 'summary',
    text: modelOf(request) === SUMMARIZER_MODEL ? SUMMARY_TEXT : AGENT_REPLY,
  }));
  const store = join(dir, 'payload-store');
  mkdirSync(store);
  const env = cleanEnv({
    TEMPORAL_ADDRESS: server.address,
    OPENAI_BASE_URL: fake.baseURL,
    OPENAI_API_KEY: 'package-test-key',
    COMPACTOR_SUMMARIZER_MODEL: SUMMARIZER_MODEL,
    COMPACTOR_PAYLOAD_STORE: `file:${store}`,
  });
  progress(`dev server at ${server.address}; fake endpoint at ${fake.baseURL}; payload store ${relative(dir, store)}/`);

  progress('npx tsx worker.ts (in the background) ...');
  const worker = background('npx', ['--no-install', 'tsx', 'worker.ts'], dir, env, 'worker |');
  cleanup.push(() => worker.stop());
  progress('npx tsx client.ts ...');
  const client = background('npx', ['--no-install', 'tsx', 'client.ts'], dir, env, 'client |');
  cleanup.push(() => client.stop());
  const code = await waitForExit(client, CLIENT_TIMEOUT_MS, 'client.ts');
  const stdout = client.output();
  if (code !== 0)
    throw new PackageTestError(
      `client.ts exited with ${code}\n--- client output ---\n${tail(stdout)}\n--- worker output ---\n${tail(worker.output())}`,
    );
  if (worker.exited())
    throw new PackageTestError(
      `worker.ts exited before it was stopped\n--- worker output ---\n${tail(worker.output())}`,
    );

  const models = fake.requests.map(modelOf);
  const failures: string[] = [];
  if (!models.includes(SUMMARIZER_MODEL))
    failures.push(`the summarize activity never called the endpoint (models asked: ${JSON.stringify(models)})`);
  if (!models.some((model) => model !== SUMMARIZER_MODEL))
    failures.push(`agentRun's chat never called the endpoint (models asked: ${JSON.stringify(models)})`);
  if (!stdout.includes(SUMMARY_TEXT))
    failures.push(
      `client.ts did not print the summary its workflow's compact() got (expected ${JSON.stringify(SUMMARY_TEXT)} in its output)`,
    );
  if (!stdout.includes(AGENT_REPLY))
    failures.push(
      `client.ts did not print agentRun's result with the model's reply (expected ${JSON.stringify(AGENT_REPLY)} in its output)`,
    );
  const stored = filesUnder(store);
  if (stored.length === 0)
    failures.push(`the payload store ${store} holds no object (COMPACTOR_PAYLOAD_STORE was set for worker and client)`);
  if (failures.length > 0)
    throw new PackageTestError(
      `the quick start ran but:\n  - ${failures.join('\n  - ')}\n--- client output ---\n${tail(stdout)}`,
    );
  progress(
    `client.ts printed the summary and agentRun's reply; endpoint asked ${fake.requests.length} time(s); payload store holds ${stored.length} file(s)`,
  );
  await worker.stop();
}

/** Step 6: the bin, as installed. */
function checkBin(dir: string): void {
  const link = join(dir, 'node_modules', '.bin', 'temporal-compactor');
  if (!existsSync(link)) throw new PackageTestError(`npm install made no node_modules/.bin/temporal-compactor`);
  const target = realpathSync(link);
  if (!readFileSync(target, 'utf8').startsWith('#!/usr/bin/env node\n'))
    throw new PackageTestError(`${target} does not start with #!/usr/bin/env node`);
  if ((statSync(target).mode & 0o111) === 0) throw new PackageTestError(`${target} is not executable after install`);
  const env = cleanEnv({});
  const help = run('npx', ['--no-install', 'temporal-compactor', '--help'], { cwd: dir, env });
  if (!/\bcompact\b/.test(help.stdout))
    throw new PackageTestError(`\`temporal-compactor --help\` printed no usage naming compact:\n${tail(help.stdout)}`);
  const conversation = [{ role: 'system', content: 'You help with orders.' }];
  for (let turn = 1; turn <= 10; turn++) {
    conversation.push({
      role: 'user',
      content: `Turn ${turn}: where is order ${1000 + turn}? ${'Please check the tracking. '.repeat(12)}`,
    });
    conversation.push({
      role: 'assistant',
      content: `Order ${1000 + turn} left the warehouse. ${'It is on its way. '.repeat(12)}`,
    });
  }
  writeFileSync(join(dir, 'conversation.json'), JSON.stringify(conversation));
  const compacted = run(
    'npx',
    ['--no-install', 'temporal-compactor', 'compact', 'conversation.json', '--budget', '500'],
    { cwd: dir, env },
  );
  let messages: unknown;
  try {
    messages = JSON.parse(compacted.stdout);
  } catch {
    throw new PackageTestError(
      `\`temporal-compactor compact\` printed no JSON conversation:\n${tail(compacted.stdout)}`,
    );
  }
  if (!Array.isArray(messages) || messages.length === 0 || messages.length >= conversation.length) {
    throw new PackageTestError(
      `\`temporal-compactor compact conversation.json --budget 500\` did not shorten the ${conversation.length}-message conversation:\n${tail(compacted.stdout)}`,
    );
  }
  progress(`bin: --help prints the usage; compact took ${conversation.length} messages to ${messages.length}`);
}

async function cleanUp(): Promise<void> {
  for (const step of cleanup.splice(0).reverse())
    await step().catch((error: unknown) =>
      progress(`cleanup: ${error instanceof Error ? error.message : String(error)}`),
    );
  if (temp === undefined) return;
  if (process.env.TEST_PACKAGE_KEEP === '1') progress(`kept ${temp}`);
  else rmSync(temp, { recursive: true, force: true });
  temp = undefined;
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const dir = mkdtempSync(join(realpathSync(tmpdir()), 'temporal-compactor-package-'));
  temp = dir;
  if (`${dir}${sep}`.startsWith(`${root}${sep}`))
    throw new PackageTestError(`the temporary directory ${dir} is inside the repository`);
  const packDir = join(dir, 'pack');
  const project = join(dir, 'project');
  mkdirSync(packDir);
  mkdirSync(project);
  const tarball = options.tarball ?? pack(packDir);
  checkTarball(tarball);
  createProject(project, tarball, options.overrides);
  const files = typeCheckBlocks(project, options.markdown);
  checkModules(project);
  checkGrepThread(project);
  checkBin(project);
  if (options.skipRun) progress('--skip-run: not running the quick start');
  else await runQuickStart(project, files);
  progress('PASSED');
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping what was started and removing the temporary directory`);
    void cleanUp().finally(() => process.exit(130));
  });
}

try {
  await main();
} catch (error) {
  const message =
    error instanceof PackageTestError || error instanceof MarkdownBlockError
      ? error.message
      : error instanceof Error
        ? (error.stack ?? error.message)
        : String(error);
  process.stderr.write(`[test:package] FAILED: ${message}\n`);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
