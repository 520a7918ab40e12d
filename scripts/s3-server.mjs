#!/usr/bin/env node
// Find or install the S3-compatible server the tests and benchmarks run against, and print the
// absolute path of the Python that runs it: moto's S3 server (PyPI `moto`, pinned below; start it
// as `PYTHON -m moto.server -H 127.0.0.1 -p PORT`), installed into .temporal/moto/ the way
// src/temporal-cli.ts installs the Temporal CLI.
//
//   node scripts/s3-server.mjs               resolve, installing into .temporal/moto if needed
//   node scripts/s3-server.mjs --no-install  resolve only, never install
//
// Why moto: it installs from PyPI with the same python3 the Temporal CLI's wheel needs (no new
// toolchain), in ~30 s; it implements the S3 REST API over HTTP (signature checks, HEAD, GET, PUT,
// copy onto itself, errors as XML) closely enough that `@aws-sdk/client-s3` cannot tell it from S3;
// and it is maintained. MinIO is AGPL and compiles for many minutes from the Go module proxy;
// gofakes3 builds from the Go proxy too but would add Go to the test machine's needs.
//
// Only the path goes to stdout; diagnostics go to stderr. Plain Node ESM without dependencies.

import { spawn } from 'node:child_process';
import { constants as fsConstants, realpathSync } from 'node:fs';
import { access, mkdir, rename, rm } from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Exact versions: moto's S3 server and the web framework its server mode needs (the `server` extra pulls far more). */
export const MOTO_VERSION = '5.2.5';
export const MOTO_REQUIREMENTS = [`moto[s3]==${MOTO_VERSION}`, 'flask==3.1.3', 'flask-cors==6.0.5'];

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const PIP_TIMEOUT_MS = 10 * 60_000;

/** @param {string} message */
const log = (message) => process.stderr.write(`[s3-server] ${message}\n`);

/**
 * @param {string} command
 * @param {string[]} args
 * @param {{ timeoutMs: number, capture?: boolean }} options
 * @returns {Promise<{ ok: boolean, output: string, error?: string }>}
 */
function run(command, args, { timeoutMs, capture = false }) {
  return new Promise((resolvePromise) => {
    let output = '';
    const child = spawn(command, args, { cwd: PROJECT_ROOT, stdio: capture ? ['ignore', 'pipe', 'pipe'] : ['ignore', process.stderr, process.stderr], env: { ...process.env, PIP_NO_INPUT: '1' } });
    if (capture) {
      child.stdout?.on('data', (data) => (output += data));
      child.stderr?.on('data', (data) => (output += data));
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolvePromise({ ok: false, output, error: error.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ ok: code === 0, output, error: code === 0 ? undefined : signal ? `killed by ${signal}` : `exit code ${code}` });
    });
  });
}

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
 * The venv's python when it has the pinned moto, or undefined.
 * @param {string} venv
 */
async function probe(venv) {
  const python = join(venv, 'bin', 'python');
  if (!(await isExecutable(python))) return undefined;
  const check = await run(python, ['-c', 'import moto.server, flask, flask_cors; print(moto.__version__)'], { timeoutMs: 60_000, capture: true });
  return check.ok && check.output.trim() === MOTO_VERSION ? python : undefined;
}

/**
 * Find (and by default install) moto's S3 server; resolves to the python that runs it (`-m moto.server`).
 * @param {{ install?: boolean, projectRoot?: string }} [options]
 * @returns {Promise<string>}
 */
export async function resolveS3Server({ install = true, projectRoot = PROJECT_ROOT } = {}) {
  const venv = join(projectRoot, '.temporal', 'moto');
  const found = await probe(venv);
  if (found !== undefined) return found;
  if (!install) throw new Error(`moto ${MOTO_VERSION} is not installed in ${venv} (run: node scripts/s3-server.mjs)`);
  const python = (await which('python3')) ?? (await which('python'));
  if (python === undefined) throw new Error('installing moto (the S3 test server) needs python3 on PATH');
  // Install under a temporary name and rename into place, so an interrupted install leaves nothing half-made.
  const temporary = join(projectRoot, '.temporal', `moto.tmp-${process.pid}`);
  await mkdir(dirname(temporary), { recursive: true });
  await rm(temporary, { recursive: true, force: true });
  log(`installing ${MOTO_REQUIREMENTS.join(' ')} into .temporal/moto with ${python} ...`);
  const started = Date.now();
  try {
    const venvResult = await run(python, ['-m', 'venv', temporary], { timeoutMs: 120_000 });
    if (!venvResult.ok) throw new Error(`\`${python} -m venv\` failed (${venvResult.error})`);
    const pip = await run(join(temporary, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', ...MOTO_REQUIREMENTS], { timeoutMs: PIP_TIMEOUT_MS });
    if (!pip.ok) throw new Error(`\`pip install ${MOTO_REQUIREMENTS.join(' ')}\` failed (${pip.error})`);
    await rm(venv, { recursive: true, force: true });
    await rename(temporary, venv);
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
  // The venv's scripts carry the temporary path in their #! line; everything runs through the
  // venv's python instead, which finds its packages wherever the venv now is.
  const installed = await probe(venv);
  if (installed === undefined) throw new Error(`moto installed into ${venv} but does not import`);
  log(`installed moto ${MOTO_VERSION} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return installed;
}

async function main() {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stderr.write('usage: node scripts/s3-server.mjs [--no-install]\nPrints the python that runs the S3 test server (python -m moto.server).\n');
    return;
  }
  try {
    process.stdout.write(`${await resolveS3Server({ install: !args.includes('--no-install') })}\n`);
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
