// The Python side of the interop tests (test/interop/python/*.py): a script run with the venv's
// python from scripts/python-sdk.mjs, our interop/python/ module importable, a JSON job on stdin and
// a JSON report on stdout.
import { spawn } from 'node:child_process';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const PYTHON_PATH = fileURLToPath(new URL('../../interop/python/', import.meta.url));

/**
 * Runs `script` with `python`, writes `job` as JSON to its stdin and resolves to the JSON it prints;
 * rejects with the end of its stderr when it fails or prints no JSON. Its environment is this
 * process's without any COMPACTOR_* setting (a COMPACTOR_TEST_PAYLOADS run's must not leak in), plus `env`.
 */
export function runPythonScript<Report>(
  python: string,
  script: string,
  job: object,
  env: Record<string, string> = {},
): Promise<Report> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('COMPACTOR_')));
  const child = spawn(python, [script], {
    env: { ...base, ...env, PYTHONPATH: PYTHON_PATH, PYTHONDONTWRITEBYTECODE: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const name = basename(script);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-6000)));
  child.stdin.end(JSON.stringify(job));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code !== 0) {
        reject(new Error(`${name} ended with ${signal ?? `exit code ${code}`}; its stderr:\n${stderr}`));
        return;
      }
      try {
        resolve(JSON.parse(stdout) as Report);
      } catch (error) {
        reject(new Error(`${name} printed no report (${String(error)}); its stderr:\n${stderr}`));
      }
    });
  });
}
