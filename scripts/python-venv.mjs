// What scripts/s3-server.mjs and scripts/python-sdk.mjs share: each keeps a Python venv of its own
// under .temporal/ with pinned PyPI packages, installs it on first use, and prints the venv's
// python. This module holds the parts that do not depend on what is installed: running a child
// process with a timeout, finding python3 on PATH, building the venv under a temporary name and
// renaming it into place, and the command-line entry both scripts expose.
//
// Plain Node ESM without dependencies, like the two scripts: it runs from `pretest` and .ci/run
// before anything is built.

import { spawn } from 'node:child_process';
import { constants as fsConstants, realpathSync } from 'node:fs';
import { access, mkdir, rename, rm } from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Absolute path of the repository root (the parent of scripts/). */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** How long one `pip install` may take before it is killed. */
const PIP_TIMEOUT_MS = 10 * 60_000;

/**
 * A logger that writes `[name] message` lines to stderr (stdout carries only the resolved path).
 * @param {string} name
 * @returns {(message: string) => void}
 */
export const stderrLogger = (name) => (message) => process.stderr.write(`[${name}] ${message}\n`);

/**
 * Runs a command in the repository root. Unless `capture` is set, its output goes on to stderr as
 * it comes (pip's progress); either way the last 8000 characters are kept for an error message.
 * `env` adds variables to this process's environment for the command.
 * @param {string} command
 * @param {string[]} args
 * @param {{ timeoutMs: number, capture?: boolean, env?: Record<string, string> }} options
 * @returns {Promise<{ ok: boolean, output: string, error?: string }>}
 */
export function run(command, args, { timeoutMs, capture = false, env = {} }) {
  return new Promise((resolvePromise) => {
    let output = '';
    const child = spawn(command, args, {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PIP_NO_INPUT: '1', ...env },
    });
    /** @param {Buffer} data */
    const collect = (data) => {
      output = (output + data.toString('utf8')).slice(-8000);
      if (!capture) process.stderr.write(data);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolvePromise({ ok: false, output, error: error.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const error =
        code === 0
          ? undefined
          : timedOut
            ? `timed out after ${Math.round(timeoutMs / 1000)} s`
            : signal
              ? `killed by ${signal}`
              : `exit code ${code}`;
      resolvePromise({ ok: code === 0, output, error });
    });
  });
}

/** The last non-empty lines of some output, for an error message. @param {string} text */
export const tail = (text) =>
  text
    .trim()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(-3)
    .join(' | ');

/** @param {string} file */
export async function isExecutable(file) {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The absolute path of `name` on PATH when it is executable there. @param {string} name */
export async function which(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && (await isExecutable(join(dir, name)))) return join(dir, name);
  }
  return undefined;
}

/**
 * Creates the venv `.temporal/<name>` of `projectRoot` afresh with `requirements` pip-installed,
 * replacing whatever was there. It is built under a temporary name and renamed into place, so an
 * interrupted install leaves nothing half-made. The caller probes the result: the venv's scripts
 * keep the temporary path in their #! line, so everything must run through the venv's python,
 * which finds its packages wherever the venv now is.
 * @param {{ projectRoot: string, name: string, requirements: string[], log: (message: string) => void, noPython: string, pipHint?: string }} options
 *   `noPython`: the error when no python3 is on PATH; `pipHint`: a sentence added to the error when pip fails.
 * @returns {Promise<void>}
 */
export async function installVenv({ projectRoot, name, requirements, log, noPython, pipHint }) {
  const venv = join(projectRoot, '.temporal', name);
  const python = (await which('python3')) ?? (await which('python'));
  if (python === undefined) throw new Error(noPython);
  const temporary = join(projectRoot, '.temporal', `${name}.tmp-${process.pid}`);
  await mkdir(dirname(temporary), { recursive: true });
  await rm(temporary, { recursive: true, force: true });
  log(`installing ${requirements.join(' ')} into .temporal/${name} with ${python} ...`);
  try {
    const venvResult = await run(python, ['-m', 'venv', temporary], { timeoutMs: 120_000 });
    if (!venvResult.ok)
      throw new Error(`\`${python} -m venv ${temporary}\` failed (${venvResult.error}): ${tail(venvResult.output)}`);
    const pip = await run(
      join(temporary, 'bin', 'python'),
      ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', ...requirements],
      {
        timeoutMs: PIP_TIMEOUT_MS,
      },
    );
    if (!pip.ok) {
      const hint = pipHint === undefined ? '' : ` ${pipHint}`;
      throw new Error(
        `\`pip install ${requirements.join(' ')}\` into .temporal/${name} failed (${pip.error}): ${tail(pip.output)}.${hint}`,
      );
    }
    await rm(venv, { recursive: true, force: true });
    await rename(temporary, venv);
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
}

/**
 * The command-line entry of a resolver script, run only when that script is the one Node was
 * started with (not when a test imports it): `--help` prints `usage`; otherwise the resolved path
 * goes to stdout, or the error to stderr with exit code 1. `--no-install` resolves without installing.
 * @param {string} moduleUrl the script's `import.meta.url`
 * @param {{ usage: string, resolve: (options: { install: boolean }) => Promise<string>, log: (message: string) => void }} options
 * @returns {Promise<void>}
 */
export async function runAsCommand(moduleUrl, { usage, resolve: resolvePath, log }) {
  let invokedDirectly = false;
  try {
    invokedDirectly = process.argv[1] !== undefined && moduleUrl === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    // An argv[1] that does not resolve to a file is not this script.
  }
  if (!invokedDirectly) return;
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stderr.write(usage);
    return;
  }
  try {
    process.stdout.write(`${await resolvePath({ install: !args.includes('--no-install') })}\n`);
  } catch (error) {
    log(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
