#!/usr/bin/env node
// Find or install the S3-compatible server the tests and benchmarks run against, and print the
// absolute path of the Python that runs it: moto's S3 server (PyPI `moto`, pinned below; start it
// as `PYTHON -m moto.server -H 127.0.0.1 -p PORT`), installed into .temporal/moto/ the way
// dev/temporal-cli.ts installs the Temporal CLI.
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

import { join } from 'node:path';

import { PROJECT_ROOT, installVenv, isExecutable, run, runAsCommand, stderrLogger } from './python-venv.mjs';

export { PROJECT_ROOT };

/** Exact versions: moto's S3 server and the web framework its server mode needs (the `server` extra pulls far more). */
export const MOTO_VERSION = '5.2.5';
export const MOTO_REQUIREMENTS = [`moto[s3]==${MOTO_VERSION}`, 'flask==3.1.3', 'flask-cors==6.0.5'];

const log = stderrLogger('s3-server');

/**
 * The venv's python when it has the pinned moto, or undefined.
 * @param {string} venv
 */
async function probe(venv) {
  const python = join(venv, 'bin', 'python');
  if (!(await isExecutable(python))) return undefined;
  const check = await run(python, ['-c', 'import moto.server, flask, flask_cors; print(moto.__version__)'], {
    timeoutMs: 60_000,
    capture: true,
  });
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
  const started = Date.now();
  await installVenv({
    projectRoot,
    name: 'moto',
    requirements: MOTO_REQUIREMENTS,
    log,
    noPython: 'installing moto (the S3 test server) needs python3 on PATH',
  });
  const installed = await probe(venv);
  if (installed === undefined) throw new Error(`moto installed into ${venv} but does not import`);
  log(`installed moto ${MOTO_VERSION} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return installed;
}

await runAsCommand(import.meta.url, {
  usage:
    'usage: node scripts/s3-server.mjs [--no-install]\nPrints the python that runs the S3 test server (python -m moto.server).\n',
  resolve: resolveS3Server,
  log,
});
