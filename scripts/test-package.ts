// Node: `npm run test:package [-- <markdown files>]` — proves the package installable and usable
// from outside the repository, as a user gets it:
//   1. `npm pack` (prepack builds dist/) into a temporary directory, and checks what the tarball holds
//      (no prebuilt workflow bundle; at most 3 MB);
//   2. a fresh project under os.tmpdir() (`type: module`): the tarball and the required peers, every
//      @temporalio package we import at one Temporal SDK version (--sdk: the lowest or the highest of
//      our peer range, or a version), as the README's install line has them, then typescript, tsx and
//      @types/node, from the registry (--prefer-offline), with no `overrides`; one copy of each
//      @temporalio package, no optional peer installed; the payload store's claims encode with that
//      install, or (SDK 1.23 and newer) fail with ProtobufCopiesError until protobufjs 8 is a
//      dependency of the project, as the README says;
//   3. every TypeScript block of the markdown files written there (```ts worker.ts → worker.ts, one
//      block per name; unnamed blocks → snippets/*.ts) and type-checked with tsc (strict, nodenext);
//      errors name the markdown file and line;
//   4. ESM and CommonJS (Node's require(esm), 20.19+) load both entry points, and the plugin bundles
//      the installed dist/workflows/index.js for a worker of ours alone; a setting that needs a
//      missing optional peer (COMPACTOR_TRACING, an s3:// store) fails naming it;
//   5. the installed bin: `npx temporal-compactor --help`, `compact` on a small conversation, and
//      `bundle --workflows workflows.ts` (the prebuilt bundle of step 6);
//   6. a Temporal dev server (127.0.0.1, free ports); `npx tsx worker.ts` in the background, then
//      `npx tsx client.ts`, with no model configured (no OPENAI_*), checked against what the README
//      says happens then (read from it by test/package/readme-claims.ts: the client's `// Prints`
//      lines before agentRun, the offline summarizer, agentRun's failure naming both settings); then
//      a fake OpenAI-compatible endpoint in this process and the two again, with TEMPORAL_ADDRESS,
//      OPENAI_BASE_URL, OPENAI_API_KEY, COMPACTOR_SUMMARIZER_MODEL and COMPACTOR_PAYLOAD_STORE=file:<dir>;
//      then a worker of the prebuilt bundle (`node`, workflowBundle, compactorPlugin()) started 3 times,
//      the time from its process start to polling and its CPU time reported for each (and the median),
//      and `client.ts` again against the last;
//   7. the optional peers installed too (tracing on, the claims still encode), and the sizes of
//      node_modules with and without them.
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
// Options: --tarball FILE installs a tarball packed before instead of packing; --sdk lowest|highest|X.Y.Z
// the Temporal SDK version installed (default highest: the newest published in our peer range);
// --skip-run stops after the type-check and the module checks.
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
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
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
import { folderBytes, installedCopies, resolvedCopy } from '../test/package/installed-tree.js';
import { noModelClaims, ReadmeClaimError } from '../test/package/readme-claims.js';

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
/** The most a tarball may weigh: a lean install (no prebuilt workflow bundles in it). */
const MAX_TARBALL_BYTES = 3_000_000;
/** The prebuilt workflow bundle step 5 writes in the project and step 6 runs. */
const PREBUILT_BUNDLE = 'workflow-bundle.js';
/** How many times step 6 starts a worker of the prebuilt bundle, timing each start. */
const PREBUILT_STARTS = 3;
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

/** Bytes as megabytes, one decimal. */
function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
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
  /** The Temporal SDK version to install: `lowest` or `highest` of our peer range, or a version. */
  sdk: string;
  skipRun: boolean;
  /** A tarball packed before, instead of packing now. */
  tarball: string | undefined;
}

function parseArgs(argv: readonly string[]): Options {
  const markdown: string[] = [];
  let sdk = 'highest';
  let skipRun = false;
  let tarball: string | undefined;
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] ?? '';
    if (arg === '--skip-run') skipRun = true;
    else if (arg === '--sdk') {
      const value = argv[++index];
      if (value === undefined || !/^(lowest|highest|\d+\.\d+\.\d+)$/.test(value))
        throw new PackageTestError(
          `--sdk takes lowest, highest or a version such as 1.24.0, got ${JSON.stringify(value)}`,
        );
      sdk = value;
    } else if (arg === '--tarball') {
      const path = argv[++index];
      if (path === undefined || !existsSync(path))
        throw new PackageTestError(`--tarball takes the path of an existing .tgz, got ${JSON.stringify(path)}`);
      tarball = resolve(path);
    } else if (arg.startsWith('-'))
      throw new PackageTestError(
        `unknown option ${arg} (known: --sdk lowest|highest|X.Y.Z, --skip-run, --tarball FILE, then markdown files)`,
      );
    else markdown.push(arg);
  }
  return { markdown: markdown.length > 0 ? markdown : DEFAULT_MARKDOWN, sdk, skipRun, tarball };
}

/** Our package.json. */
function manifest(): {
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
} {
  return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as ReturnType<typeof manifest>;
}

/** The @temporalio packages the package imports (its required peers), and its optional peers. */
function peers(): { sdk: string[]; optional: string[]; range: string } {
  const { peerDependencies = {}, peerDependenciesMeta = {} } = manifest();
  const optional = Object.keys(peerDependencies).filter((name) => peerDependenciesMeta[name]?.optional === true);
  const sdk = Object.keys(peerDependencies).filter((name) => !optional.includes(name));
  const ranges = new Set(sdk.map((name) => peerDependencies[name]));
  const [range] = ranges;
  if (ranges.size !== 1 || range === undefined || !sdk.every((name) => name.startsWith('@temporalio/')))
    throw new PackageTestError(
      `the required peers should be @temporalio packages over one range: ${JSON.stringify(Object.fromEntries(sdk.map((name) => [name, peerDependencies[name]])))}`,
    );
  return { sdk, optional, range };
}

/** [major, minor, patch] of a version. */
function versionParts(version: string): [number, number, number] {
  const [major = 0, minor = 0, patch = 0] = version.split('.').map((part) => Number.parseInt(part, 10));
  return [major, minor, patch];
}

function compareVersions(left: string, right: string): number {
  const a = versionParts(left);
  const b = versionParts(right);
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/**
 * The Temporal SDK version `--sdk` names: `lowest` is the floor of our peer range (`^1.22.0` →
 * 1.22.0), `highest` the newest published version of @temporalio/worker in it.
 */
function sdkVersion(wanted: string, range: string): string {
  if (wanted === 'lowest') {
    const floor = /^\^(\d+\.\d+\.\d+)$/.exec(range)?.[1];
    if (floor === undefined)
      throw new PackageTestError(`the peer range ${range} is not ^X.Y.Z: no lowest version to install`);
    return floor;
  }
  if (wanted !== 'highest') return wanted;
  const listed: unknown = JSON.parse(
    run('npm', ['view', `@temporalio/worker@${range}`, 'version', '--json'], { cwd: root, env: cleanEnv({}) }).stdout,
  );
  const versions = (Array.isArray(listed) ? listed : [listed]).filter(
    (version): version is string => typeof version === 'string',
  );
  const highest = versions.sort(compareVersions).at(-1);
  if (highest === undefined) throw new PackageTestError(`npm view found no @temporalio/worker in ${range}`);
  return highest;
}

/** Step 1: the tarball, built by prepack; checks it holds what an installed package needs and nothing of the repository's own. */
function pack(into: string): string {
  progress('npm pack (prepack: clean, tsc) ...');
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
    'package/CHANGELOG.md',
    'package/SECURITY.md',
    'package/dist/index.js',
    'package/dist/index.d.ts',
    'package/dist/workflow.js',
    'package/dist/workflow.d.ts',
    `package/${binPath().replace(/^\.\//, '')}`,
    'package/dist/workflows/index.js',
    'package/dist/activities/grep-thread.js',
    'package/dist/workflows/with-worker-workflows.js',
    'package/dist/cli/commands/bundle.js',
  ];
  const missing = required.filter((path) => !listed.includes(path));
  if (missing.length > 0) throw new PackageTestError(`the tarball lacks ${missing.join(', ')}`);
  const unwanted = listed.filter(
    (path) =>
      /^package\/(src|dev|test|scripts|bench|corpus|examples|\.ci|node_modules)\//.test(path) ||
      /workflow-bundle[^/]*\.js$/.test(path),
  );
  if (unwanted.length > 0)
    throw new PackageTestError(
      `the tarball holds files a user does not need: ${unwanted.slice(0, 5).join(', ')}${unwanted.length > 5 ? ', …' : ''}`,
    );
  const bytes = statSync(tarball).size;
  if (bytes > MAX_TARBALL_BYTES)
    throw new PackageTestError(`the tarball is ${bytes} bytes, over the ${MAX_TARBALL_BYTES} a lean install allows`);
  progress(`tarball ${tarball}: ${listed.length} files, ${megabytes(bytes)}`);
}

/** A devDependency of ours as `name@version`: the project's tools are the versions the repository uses. */
function devPackage(name: string): string {
  const version = manifest().devDependencies?.[name];
  if (version === undefined) throw new PackageTestError(`package.json has no devDependency ${name} to pin the copy to`);
  return `${name}@${version}`;
}

/** `npm install` in a project, named in the progress lines (the tarball as "the tarball"). */
function npmInstall(dir: string, packages: readonly string[], tarball: string): void {
  progress(`npm install in ${dir}: ${packages.map((name) => (name === tarball ? 'the tarball' : name)).join(' ')} ...`);
  run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...packages], {
    cwd: dir,
    env: cleanEnv({}),
    showStderr: true,
  });
}

/** The README's install line at SDK `version`: the tarball and every @temporalio package we import. */
function requiredPackages(tarball: string, version: string): string[] {
  return [tarball, ...peers().sdk.map((name) => `${name}@${version}`)];
}

/** An empty ES module project. */
function newProject(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const project = { name: `temporal-compactor-package-test-${basename(dir)}`, private: true, type: 'module' };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(project, null, 2)}\n`);
}

/** Protobufjs 8 as a dependency of the project: what the README asks for with Temporal SDK 1.23 and newer. */
const PROTOBUFJS = 'protobufjs@^8.8.1';
/** The first Temporal SDK release whose packages need the project's own protobufjs 8 (they moved to protobufjs 8). */
const SDK_NEEDING_PROTOBUFJS = '1.23.0';

/**
 * Step 2: a fresh project outside the repository with the tarball and the required peers at SDK
 * `version` (and no overrides): one copy of each @temporalio package, at that version, and none of
 * the optional peers or the testing package. Then the claims check, and protobufjs 8 added where the
 * README says so. The tools (typescript, tsx, @types/node) come last.
 */
function createProject(dir: string, tarball: string, version: string): void {
  newProject(dir);
  npmInstall(dir, requiredPackages(tarball, version), tarball);
  const { sdk, optional } = peers();
  const copies = installedCopies(dir, [...sdk, ...optional, '@temporalio/testing', 'protobufjs']);
  const problems: string[] = [];
  for (const name of sdk) {
    const found = copies.get(name) ?? [];
    if (found.length !== 1 || found[0]?.version !== version)
      problems.push(
        `${name}: ${found.map((copy) => `${copy.version} at ${copy.path}`).join(', ') || 'not installed'}, expected one copy at ${version}`,
      );
  }
  for (const name of [...optional, '@temporalio/testing']) {
    const found = copies.get(name) ?? [];
    if (found.length > 0)
      problems.push(
        `${name} is installed (${found.map((copy) => copy.path).join(', ')}): it should come only when a user asks for it`,
      );
  }
  if (problems.length > 0) throw new PackageTestError(`the installed tree:\n  ${problems.join('\n  ')}`);
  progress(`one copy of each of ${sdk.join(', ')} at ${version}; no optional peer, no @temporalio/testing`);
  checkClaims(dir, tarball, version);
  npmInstall(dir, [devPackage('typescript'), devPackage('tsx'), devPackage('@types/node')], tarball);
}

/** What a plugin with a file payload store does with this install: built, or refused and why. */
function pluginWithStore(
  dir: string,
  env: Record<string, string>,
): { ok: boolean; name?: string; message?: string; packages?: string[] } {
  writeFileSync(
    join(dir, 'check-plugin.mjs'),
    [
      "import { compactorPlugin, loadConfig } from 'temporal-compactor';",
      'try {',
      "  compactorPlugin({ config: loadConfig({ env: JSON.parse(process.argv[2]) }), searchAttributes: 'skip' });",
      '  console.log(JSON.stringify({ ok: true }));',
      '} catch (error) {',
      '  console.log(JSON.stringify({ ok: false, name: error.name, message: error.message, packages: error.packages }));',
      '}',
      '',
    ].join('\n'),
  );
  return JSON.parse(
    run('node', ['check-plugin.mjs', JSON.stringify(env)], { cwd: dir, env: cleanEnv({}) }).stdout,
  ) as ReturnType<typeof pluginWithStore>;
}

/**
 * The payload store's claims with this install: the SDK encodes them when its packages share one
 * protobufjs. From SDK 1.23 they do only with protobufjs 8 as a dependency of the project (the
 * README's install line): without it the plugin refuses to start (ProtobufCopiesError), with it it starts.
 */
function checkClaims(dir: string, tarball: string, version: string): void {
  const store = join(dir, 'claims-check-store');
  const env = { COMPACTOR_PAYLOAD_STORE: `file:${store}` };
  const shared = (): string => {
    const folders = ['@temporalio/common', '@temporalio/proto', '@temporalio/worker'].map(
      (name) => `${name} → ${resolvedCopy(dir, join('node_modules', name), 'protobufjs') ?? 'none'}`,
    );
    return folders.join(', ');
  };
  const plain = pluginWithStore(dir, env);
  if (compareVersions(version, SDK_NEEDING_PROTOBUFJS) < 0) {
    if (!plain.ok)
      throw new PackageTestError(
        `SDK ${version}: a plugin with a payload store failed: ${plain.name}: ${plain.message}`,
      );
    progress(`SDK ${version}: a payload store works with the plain install (protobufjs: ${shared()})`);
    return;
  }
  if (plain.ok || plain.name !== 'ProtobufCopiesError')
    throw new PackageTestError(
      `SDK ${version} without the project's own protobufjs: expected ProtobufCopiesError from a plugin with a payload store (the README's reason for ${PROTOBUFJS}), got ${JSON.stringify(plain)} (protobufjs: ${shared()})`,
    );
  progress(
    `SDK ${version} without ${PROTOBUFJS}: the plugin refuses the payload store (${plain.name}; protobufjs: ${shared()})`,
  );
  npmInstall(dir, [PROTOBUFJS], tarball);
  const fixed = pluginWithStore(dir, env);
  if (!fixed.ok)
    throw new PackageTestError(
      `SDK ${version} with ${PROTOBUFJS}: the plugin still fails: ${fixed.name}: ${fixed.message}`,
    );
  progress(`SDK ${version} with ${PROTOBUFJS}: a payload store works (protobufjs: ${shared()})`);
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
    "import { compactorPlugin, type CompactorPlugin } from 'temporal-compactor';\nimport { compact } from 'temporal-compactor/workflow';\nexport const checked: [CompactorPlugin, typeof compact] = [compactorPlugin({ register: 'workflows' }), compact];\n",
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

/** The plugin of a worker of our workflows alone (no configuration read), as a module's source line. */
const WORKFLOWS_PLUGIN = "compactorPlugin({ register: 'workflows', dataConverter: {}, tracing: 'off' })";

/**
 * Step 4: both entry points from ESM and from CommonJS, and the workflows path the plugin bundles
 * for a worker without workflows of its own (`bundleWorkflowCode({ plugins: [compactorPlugin()] })`).
 */
function checkModules(dir: string): void {
  const expected = realpathSync(join(dir, 'node_modules', 'temporal-compactor', 'dist', 'workflows', 'index.js'));
  const check = (workflowsPath: string, how: string): void => {
    if (realpathSync(workflowsPath) !== expected)
      throw new PackageTestError(`${how}: the plugin bundles ${workflowsPath}, expected ${expected}`);
  };
  writeFileSync(
    join(dir, 'check-esm.mjs'),
    [
      "import { compactorPlugin } from 'temporal-compactor';",
      "import { compact, needsCompaction } from 'temporal-compactor/workflow';",
      "import manifest from 'temporal-compactor/package.json' with { type: 'json' };",
      "if (typeof compactorPlugin !== 'function' || typeof compact !== 'function' || typeof needsCompaction !== 'function') throw new Error('an entry point lacks its functions');",
      `const { workflowsPath } = ${WORKFLOWS_PLUGIN}.configureBundler({});`,
      'console.log(JSON.stringify({ workflowsPath, version: manifest.version }));',
      '',
    ].join('\n'),
  );
  const esm = JSON.parse(run('node', ['check-esm.mjs'], { cwd: dir, env: cleanEnv({}) }).stdout) as {
    workflowsPath: string;
    version: string;
  };
  check(esm.workflowsPath, 'ESM');
  progress(
    `ESM: temporal-compactor ${esm.version} and temporal-compactor/workflow import; the plugin bundles ${relative(dir, esm.workflowsPath)}`,
  );
  writeFileSync(
    join(dir, 'check-cjs.cjs'),
    [
      "const { compactorPlugin } = require('temporal-compactor');",
      "const { compact } = require('temporal-compactor/workflow');",
      "if (typeof compactorPlugin !== 'function' || typeof compact !== 'function') throw new Error('require() gave an entry point without its functions');",
      `const { workflowsPath } = ${WORKFLOWS_PLUGIN}.configureBundler({});`,
      "import('temporal-compactor').then((imported) => {",
      `  if (imported.${WORKFLOWS_PLUGIN}.configureBundler({}).workflowsPath !== workflowsPath) throw new Error('import() and require() disagree');`,
      '  console.log(JSON.stringify({ workflowsPath }));',
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
      "const input = { pattern: '^(x|(a+)+$)', flags: '', start: base, base, maxResults: 10, maxFileBytes: 1e6, maxFiles: 10, maxLineChars: 500, skippedDirectories: [] };",
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
  await runWithoutModel(dir, files, server.address);
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
  await runPrebuiltWorker(dir, env, fake);
}

/**
 * Step 6, first: the README's worker.ts and client.ts with no model configured (no OPENAI_API_KEY, no
 * OPENAI_BASE_URL, no endpoint at all), checked against what the README says then happens, read
 * from the README (test/package/readme-claims.ts), not from a copy: the client prints what its
 * `// Prints` comments before agentRun say; the worker runs the summarizer the README names for no
 * model (its start line); agentRun fails with an error that names every setting the README's sentence
 * about it names, and nothing the client prints after agentRun shows.
 */
async function runWithoutModel(dir: string, files: readonly ProjectFile[], address: string): Promise<void> {
  const client = files.find((file) => file.path === 'client.ts')?.block;
  if (client === undefined) throw new PackageTestError('no block is named client.ts');
  const claims = noModelClaims(client.source, readFileSync(resolve(root, client.source), 'utf8'), client);
  const env = cleanEnv({ TEMPORAL_ADDRESS: address });
  progress(
    `no model configured: ${client.source} says the summarizer is the built-in ${claims.summarizer} one and ${JSON.stringify(claims.sentence)}`,
  );
  progress('npx tsx worker.ts (in the background, no OPENAI_* set) ...');
  const worker = background('npx', ['--no-install', 'tsx', 'worker.ts'], dir, env, 'worker (no model) |');
  cleanup.push(() => worker.stop());
  progress('npx tsx client.ts (no OPENAI_* set) ...');
  const run = background('npx', ['--no-install', 'tsx', 'client.ts'], dir, env, 'client (no model) |');
  cleanup.push(() => run.stop());
  const code = await waitForExit(run, CLIENT_TIMEOUT_MS, 'client.ts with no model configured');
  const output = run.output();
  const failures: string[] = [];
  for (const line of claims.printed) {
    const found = line.pattern.test(output);
    if (!line.afterAgentRun && !found)
      failures.push(
        `${client.source}:${line.line} says the client prints "${line.text}": no line of its output matches ${line.pattern}`,
      );
    if (line.afterAgentRun && found)
      failures.push(`${client.source}:${line.line}: the client printed "${line.text}" although agentRun had no model`);
  }
  const failure = output.split('\n').find((text) => claims.agentRunSettings.every((setting) => text.includes(setting)));
  if (code === 0 || failure === undefined)
    failures.push(
      `${client.source} says agentRun ${claims.sentence.replace(/^.*?: /, '')}: the client exited ${code} and no line of its output names all of ${claims.agentRunSettings.join(', ')}`,
    );
  if (!worker.output().includes(`${claims.summarizer} summarizer`))
    failures.push(
      `${client.source} says the summarizer without a model is the built-in ${claims.summarizer} one: the worker's output does not name a "${claims.summarizer} summarizer"`,
    );
  if (failures.length > 0)
    throw new PackageTestError(
      `the README's snippets with no model configured:\n  - ${failures.join('\n  - ')}\n--- client output ---\n${tail(output)}\n--- worker output ---\n${tail(worker.output())}`,
    );
  progress(
    `no model configured: client.ts printed ${claims.printed
      .filter((line) => !line.afterAgentRun)
      .map((line) => `"${line.text}"`)
      .join(', ')}, then exited ${code} with agentRun's failure: ${failure?.trim()}`,
  );
  await worker.stop();
}

/**
 * Step 6 (continued): a worker of the prebuilt bundle, as production runs one (`node`, compiled
 * JavaScript, `workflowBundle`, compactorPlugin()): how long from its process start until it polls,
 * and client.ts again against it (the bundle holds the user's workflow and ours).
 */
async function runPrebuiltWorker(dir: string, env: NodeJS.ProcessEnv, fake: FakeOpenAI): Promise<void> {
  writeFileSync(
    join(dir, 'worker-prebuilt.mjs'),
    [
      "import { NativeConnection, Worker } from '@temporalio/worker';",
      "import { compactorPlugin } from 'temporal-compactor';",
      'const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS });',
      'const worker = await Worker.create({',
      "  connection, taskQueue: 'agents',",
      `  workflowBundle: { codePath: ${JSON.stringify(join(dir, PREBUILT_BUNDLE))} },`,
      '  plugins: [compactorPlugin()],',
      '});',
      'const polling = setInterval(() => {',
      "  if (worker.getState() !== 'RUNNING') return;",
      '  clearInterval(polling);',
      '  const { user, system } = process.cpuUsage();',
      '  console.log(`prebuilt worker polling ${Math.round(performance.now())} ms after its process started, ${Math.round((user + system) / 1000)} ms of CPU`);',
      '}, 1);',
      'await worker.run();',
      'await connection.close();',
      '',
    ].join('\n'),
  );
  const requestsBefore = fake.requests.length;
  // Started PREBUILT_STARTS times (one start on a shared machine says little); the last one stays up for client.ts.
  const starts: Array<{ wall: number; cpu: number; load: number }> = [];
  let worker: Background | undefined;
  for (let start = 1; start <= PREBUILT_STARTS; start++) {
    await worker?.stop();
    progress(
      `node worker-prebuilt.mjs (the prebuilt bundle, in the background), start ${start} of ${PREBUILT_STARTS} ...`,
    );
    const load = loadavg()[0] ?? 0;
    const spawned = Date.now();
    const started = background('node', ['worker-prebuilt.mjs'], dir, env, 'prebuilt worker |');
    worker = started;
    cleanup.push(() => started.stop());
    const deadline = Date.now() + CLIENT_TIMEOUT_MS;
    let reported: RegExpExecArray | null = null;
    while (reported === null) {
      reported = /prebuilt worker polling (\d+) ms after its process started, (\d+) ms of CPU/.exec(started.output());
      if (reported !== null) break;
      if (started.exited() || Date.now() > deadline)
        throw new PackageTestError(`the prebuilt worker never polled\n--- its output ---\n${tail(started.output())}`);
      await new Promise((resolveWait) => setTimeout(resolveWait, 5));
    }
    starts.push({ wall: Number(reported[1]), cpu: Number(reported[2]), load });
    progress(
      `prebuilt worker: polling ${reported[1]} ms after its process started, ${reported[2]} ms of CPU (${Date.now() - spawned} ms after this script spawned it; load average ${load.toFixed(1)} at its start, on ${availableParallelism()} cores)`,
    );
  }
  if (worker === undefined) throw new PackageTestError('no prebuilt worker was started');
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
  progress(
    `prebuilt worker, ${starts.length} starts: process start to polling ${starts.map((start) => start.wall).join(', ')} ms (median ${median(starts.map((start) => start.wall))}), CPU ${starts.map((start) => start.cpu).join(', ')} ms (median ${median(starts.map((start) => start.cpu))}), load average ${starts.map((start) => start.load.toFixed(1)).join(', ')} on ${availableParallelism()} cores`,
  );
  const client = background('npx', ['--no-install', 'tsx', 'client.ts'], dir, env, 'client |');
  cleanup.push(() => client.stop());
  const code = await waitForExit(client, CLIENT_TIMEOUT_MS, 'client.ts against the prebuilt worker');
  if (code !== 0 || !client.output().includes(SUMMARY_TEXT) || !client.output().includes(AGENT_REPLY))
    throw new PackageTestError(
      `client.ts against the prebuilt worker exited ${code} without the summary and the reply\n--- client output ---\n${tail(client.output())}\n--- worker output ---\n${tail(worker.output())}`,
    );
  progress(
    `client.ts against the prebuilt worker: the summary and agentRun's reply again (${fake.requests.length - requestsBefore} more request(s) at the endpoint)`,
  );
  await worker.stop();
}

/**
 * Step 7: the install's size — node_modules of a project with the tarball and the required peers
 * (and protobufjs where the README adds it), then with the optional peers as well — and, with them
 * installed, tracing and an S3 store configure and the claims still encode.
 */
function measureInstall(dir: string, tarball: string, version: string): void {
  newProject(dir);
  const required = [
    ...requiredPackages(tarball, version),
    ...(compareVersions(version, SDK_NEEDING_PROTOBUFJS) < 0 ? [] : [PROTOBUFJS]),
  ];
  npmInstall(dir, required, tarball);
  const lean = folderBytes(join(dir, 'node_modules'));
  const { optional } = peers();
  npmInstall(
    dir,
    optional.map((name) => (name.startsWith('@temporalio/') ? `${name}@${version}` : devPackage(name))),
    tarball,
  );
  const full = folderBytes(join(dir, 'node_modules'));
  const store = join(dir, 'store');
  const configured: Array<Record<string, string>> = [
    { COMPACTOR_TRACING: 'otlp', COMPACTOR_PAYLOAD_STORE: `file:${store}` },
    { COMPACTOR_PAYLOAD_STORE: 's3://bucket/prefix' },
  ];
  for (const env of configured) {
    const outcome = pluginWithStore(dir, env);
    if (!outcome.ok)
      throw new PackageTestError(
        `with the optional peers installed, ${JSON.stringify(env)}: ${outcome.name}: ${outcome.message}`,
      );
  }
  progress(
    `install size: node_modules ${megabytes(lean)} with the required peers (${required.length - 1} packages named), ${megabytes(full)} with the optional peers too; with them, tracing (otlp) and an S3 store configure and the claims encode`,
  );
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
  // The prebuilt bundle of the user's workflows (workflows.ts, from the README) and ours, for step 6.
  const bundled = run(
    'npx',
    ['--no-install', 'temporal-compactor', 'bundle', '--workflows', 'workflows.ts', '--out', PREBUILT_BUNDLE],
    { cwd: dir, env },
  );
  if (!existsSync(join(dir, PREBUILT_BUNDLE)))
    throw new PackageTestError(`\`temporal-compactor bundle\` wrote no ${PREBUILT_BUNDLE}:\n${tail(bundled.stderr)}`);
  for (const line of bundled.stderr.trim().split('\n')) progress(`bin: bundle: ${line.trim()}`);
}

/**
 * Step 4 (continued): a setting that needs an optional peer that is not installed fails when the
 * plugin is made, naming the packages and the setting; the command line says so as a configuration error.
 */
function checkMissingPeers(dir: string): void {
  const { optional } = peers();
  const cases: Array<[Record<string, string>, string, string[]]> = [
    [{ COMPACTOR_TRACING: 'otlp' }, 'COMPACTOR_TRACING=otlp', optional.filter((name) => name !== '@aws-sdk/client-s3')],
    [
      { COMPACTOR_PAYLOAD_STORE: 's3://bucket/prefix' },
      'COMPACTOR_PAYLOAD_STORE=s3://bucket/prefix',
      ['@aws-sdk/client-s3'],
    ],
  ];
  for (const [env, setting, packages] of cases) {
    const outcome = pluginWithStore(dir, env);
    if (
      outcome.ok ||
      outcome.name !== 'MissingPeerError' ||
      JSON.stringify([...(outcome.packages ?? [])].sort()) !== JSON.stringify([...packages].sort()) ||
      !(outcome.message ?? '').includes(setting) ||
      !(outcome.message ?? '').includes('npm install')
    )
      throw new PackageTestError(
        `${setting} without ${packages.join(', ')}: expected a MissingPeerError naming them, got ${JSON.stringify(outcome)}`,
      );
    progress(`${setting} without its optional peers: ${outcome.message ?? ''}`);
  }
  const cli = spawnSync('npx', ['--no-install', 'temporal-compactor', 'worker', '--tracing', 'console'], {
    cwd: dir,
    env: cleanEnv({}),
    encoding: 'utf8',
    timeout: COMMAND_TIMEOUT_MS,
  });
  if (cli.status !== 2 || !cli.stderr.includes('configuration error: COMPACTOR_TRACING=console'))
    throw new PackageTestError(
      `\`temporal-compactor worker --tracing console\` without OpenTelemetry: expected exit 2 and a configuration error, got ${cli.status}:\n${tail(cli.stderr)}`,
    );
  progress('bin: `worker --tracing console` without OpenTelemetry exits 2 naming the packages');
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
  const { range } = peers();
  const version = sdkVersion(options.sdk, range);
  progress(`Temporal SDK ${version} (--sdk ${options.sdk}; our peer range ${range})`);
  createProject(project, tarball, version);
  const files = typeCheckBlocks(project, options.markdown);
  checkModules(project);
  checkMissingPeers(project);
  checkGrepThread(project);
  checkBin(project);
  if (options.skipRun) progress('--skip-run: not running the quick start');
  else await runQuickStart(project, files);
  measureInstall(join(dir, 'sizes'), tarball, version);
  progress(`PASSED (Temporal SDK ${version})`);
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
    error instanceof PackageTestError || error instanceof MarkdownBlockError || error instanceof ReadmeClaimError
      ? error.message
      : error instanceof Error
        ? (error.stack ?? error.message)
        : String(error);
  process.stderr.write(`[test:package] FAILED: ${message}\n`);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
