#!/usr/bin/env node
// Find or install the Python Temporal SDK the cross-language test runs on, and print the absolute
// path of the Python that has it: PyPI `temporalio` (pinned below) with `cryptography` (AES-256-GCM
// for interop/python/compactor_payloads.py), in a venv of its own under .temporal/python/, the way
// src/temporal-cli.ts installs the Temporal CLI.
//
//   node scripts/python-sdk.mjs               resolve, installing into .temporal/python if needed
//   node scripts/python-sdk.mjs --no-install  resolve only, never install
//
// Only the path goes to stdout; diagnostics go to stderr. Plain Node ESM without dependencies: it
// runs from `pretest` and .ci/run before anything is built.

import { spawn } from 'node:child_process';
import { constants as fsConstants, realpathSync } from 'node:fs';
import { access, mkdir, rename, rm } from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Exact version of PyPI `temporalio` (its External Storage speaks the same claims as SDK 1.24's). */
export const TEMPORALIO_VERSION = '1.35.0';
/** Exact version of PyPI `cryptography` (AES-256-GCM and HKDF for the codec and the chunk store). */
export const CRYPTOGRAPHY_VERSION = '50.0.2';
export const PYTHON_SDK_REQUIREMENTS = [`temporalio==${TEMPORALIO_VERSION}`, `cryptography==${CRYPTOGRAPHY_VERSION}`];

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const PIP_TIMEOUT_MS = 10 * 60_000;
// What the probe prints: both versions, so a venv with other versions is installed anew.
const PROBE = "import importlib.metadata as m, temporalio.converter, cryptography.hazmat.primitives.ciphers.aead; print(m.version('temporalio'), m.version('cryptography'))";

/** @param {string} message */
const log = (message) => process.stderr.write(`[python-sdk] ${message}\n`);

/**
 * Runs a command; pip's own output goes to stderr as it comes, and its last lines are kept for the error.
 * @param {string} command
 * @param {string[]} args
 * @param {{ timeoutMs: number, capture?: boolean }} options
 * @returns {Promise<{ ok: boolean, output: string, error?: string }>}
 */
function run(command, args, { timeoutMs, capture = false }) {
  return new Promise((resolvePromise) => {
    let output = '';
    const child = spawn(command, args, { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PIP_NO_INPUT: '1' } });
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
      const error = code === 0 ? undefined : timedOut ? `timed out after ${Math.round(timeoutMs / 1000)} s` : signal ? `killed by ${signal}` : `exit code ${code}`;
      resolvePromise({ ok: code === 0, output, error });
    });
  });
}

/** The last non-empty lines of some output, for an error message. @param {string} text */
const tail = (text) => text.trim().split('\n').filter((line) => line.trim() !== '').slice(-3).join(' | ');

/** @param {string} file */
async function isExecutable(file) {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** @param {string} name */
async function which(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && (await isExecutable(join(dir, name)))) return join(dir, name);
  }
  return undefined;
}

/**
 * The venv's python when it has the pinned versions; otherwise why not.
 * @param {string} venv
 * @returns {Promise<{ ok: true, python: string } | { ok: false, reason: string }>}
 */
async function probe(venv) {
  const python = join(venv, 'bin', 'python');
  if (!(await isExecutable(python))) return { ok: false, reason: `${python} does not exist` };
  const check = await run(python, ['-c', PROBE], { timeoutMs: 60_000, capture: true });
  const want = `${TEMPORALIO_VERSION} ${CRYPTOGRAPHY_VERSION}`;
  if (!check.ok) return { ok: false, reason: `${python} cannot import temporalio and cryptography (${check.error}: ${tail(check.output)})` };
  if (check.output.trim() !== want) return { ok: false, reason: `${venv} has temporalio and cryptography ${check.output.trim()}, not ${want}` };
  return { ok: true, python };
}

/**
 * Find (and by default install) the Python SDK; resolves to the python that has it.
 * @param {{ install?: boolean, projectRoot?: string }} [options]
 * @returns {Promise<string>}
 */
export async function resolvePythonSdk({ install = true, projectRoot = PROJECT_ROOT } = {}) {
  const venv = join(projectRoot, '.temporal', 'python');
  const found = await probe(venv);
  if (found.ok) return found.python;
  if (!install) throw new Error(`the Python Temporal SDK is not installed: ${found.reason} (run: node scripts/python-sdk.mjs)`);
  const python = (await which('python3')) ?? (await which('python'));
  if (python === undefined) throw new Error(`installing ${PYTHON_SDK_REQUIREMENTS.join(' ')} needs python3 (3.10 or newer) on PATH; none found`);
  // Install under a temporary name and rename into place: an interrupted install leaves nothing half-made.
  const temporary = join(projectRoot, '.temporal', `python.tmp-${process.pid}`);
  await mkdir(dirname(temporary), { recursive: true });
  await rm(temporary, { recursive: true, force: true });
  log(`installing ${PYTHON_SDK_REQUIREMENTS.join(' ')} into .temporal/python with ${python} ...`);
  const started = Date.now();
  try {
    const venvResult = await run(python, ['-m', 'venv', temporary], { timeoutMs: 120_000 });
    if (!venvResult.ok) throw new Error(`\`${python} -m venv ${temporary}\` failed (${venvResult.error}): ${tail(venvResult.output)}`);
    const pip = await run(join(temporary, 'bin', 'python'), ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', ...PYTHON_SDK_REQUIREMENTS], {
      timeoutMs: PIP_TIMEOUT_MS,
    });
    if (!pip.ok) {
      throw new Error(
        `\`pip install ${PYTHON_SDK_REQUIREMENTS.join(' ')}\` into .temporal/python failed (${pip.error}): ${tail(pip.output)}. ` +
          'It needs PyPI (or a mirror set in PIP_INDEX_URL); the Python interop test (test/interop/) cannot run without it.',
      );
    }
    await rm(venv, { recursive: true, force: true });
    await rename(temporary, venv);
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
  // The venv's scripts keep the temporary path in their #! line; everything runs through the
  // venv's python, which finds its packages wherever the venv now is.
  const installed = await probe(venv);
  if (!installed.ok) throw new Error(`installed into ${venv}, but ${installed.reason}`);
  log(`installed temporalio ${TEMPORALIO_VERSION} and cryptography ${CRYPTOGRAPHY_VERSION} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return installed.python;
}

async function main() {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stderr.write('usage: node scripts/python-sdk.mjs [--no-install]\nPrints the python that has the pinned temporalio (the Python Temporal SDK).\n');
    return;
  }
  try {
    process.stdout.write(`${await resolvePythonSdk({ install: !args.includes('--no-install') })}\n`);
  } catch (error) {
    log(error instanceof Error ? error.message : String(error));
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
