#!/usr/bin/env node
// Find or install the Python Temporal SDK the cross-language test runs on, and print the absolute
// path of the Python that has it: PyPI `temporalio` (pinned below) with `cryptography` (AES-256-GCM
// for interop/python/compactor_payloads.py), in a venv of its own under .temporal/python/, the way
// dev/temporal-cli.ts installs the Temporal CLI.
//
//   node scripts/python-sdk.mjs               resolve, installing into .temporal/python if needed
//   node scripts/python-sdk.mjs --no-install  resolve only, never install
//
// Only the path goes to stdout; diagnostics go to stderr. Plain Node ESM without dependencies: it
// runs from `pretest` and .ci/run before anything is built.

import { join } from 'node:path';

import { PROJECT_ROOT, installVenv, isExecutable, run, runAsCommand, stderrLogger, tail } from './python-venv.mjs';

export { PROJECT_ROOT };

/** Exact version of PyPI `temporalio` (its External Storage speaks the same claims as SDK 1.24's). */
export const TEMPORALIO_VERSION = '1.35.0';
/** Exact version of PyPI `cryptography` (AES-256-GCM and HKDF for the codec and the chunk store). */
export const CRYPTOGRAPHY_VERSION = '50.0.2';
export const PYTHON_SDK_REQUIREMENTS = [`temporalio==${TEMPORALIO_VERSION}`, `cryptography==${CRYPTOGRAPHY_VERSION}`];

// What the probe prints: both versions, so a venv with other versions is installed anew.
const PROBE =
  "import importlib.metadata as m, temporalio.converter, cryptography.hazmat.primitives.ciphers.aead; print(m.version('temporalio'), m.version('cryptography'))";

const log = stderrLogger('python-sdk');

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
  if (!check.ok)
    return {
      ok: false,
      reason: `${python} cannot import temporalio and cryptography (${check.error}: ${tail(check.output)})`,
    };
  if (check.output.trim() !== want)
    return { ok: false, reason: `${venv} has temporalio and cryptography ${check.output.trim()}, not ${want}` };
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
  if (!install)
    throw new Error(`the Python Temporal SDK is not installed: ${found.reason} (run: node scripts/python-sdk.mjs)`);
  const started = Date.now();
  await installVenv({
    projectRoot,
    name: 'python',
    requirements: PYTHON_SDK_REQUIREMENTS,
    log,
    noPython: `installing ${PYTHON_SDK_REQUIREMENTS.join(' ')} needs python3 (3.10 or newer) on PATH; none found`,
    pipHint:
      'It needs PyPI (or a mirror set in PIP_INDEX_URL); the Python interop test (test/interop/) cannot run without it.',
  });
  const installed = await probe(venv);
  if (!installed.ok) throw new Error(`installed into ${venv}, but ${installed.reason}`);
  log(
    `installed temporalio ${TEMPORALIO_VERSION} and cryptography ${CRYPTOGRAPHY_VERSION} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return installed.python;
}

await runAsCommand(import.meta.url, {
  usage:
    'usage: node scripts/python-sdk.mjs [--no-install]\nPrints the python that has the pinned temporalio (the Python Temporal SDK).\n',
  resolve: resolvePythonSdk,
  log,
});
