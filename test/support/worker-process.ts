// Worker *processes* for crash tests: a production workflow bundle written once per file, and
// workers spawned as `node --import tsx <script>` so a SIGKILL reaches the worker itself (the tsx
// CLI runs the script in a child process that a SIGKILL of the CLI would leave running).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { bundleWorkflows } from './temporal.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns `script` (a path under the repository) with `args`, a minimal environment plus `env`. */
export function spawnWorkerProcess(
  script: string,
  env: Record<string, string>,
  args: readonly string[] = [],
): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, script), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => output, exited };
}

/** SIGKILLs every worker still running and empties the list. */
export function killWorkerProcesses(workers: WorkerProcess[]): void {
  for (const worker of workers.splice(0))
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
}

/** A prebuilt bundle of the production workflows in a temporary file. */
export interface ProductionBundle {
  bundlePath: string;
  code: string;
  remove: () => void;
}

/** The production workflows bundled once (as `temporal-compactor bundle` does) into a temporary file. */
export async function writeProductionBundle(prefix: string): Promise<ProductionBundle> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const bundlePath = join(dir, 'workflow-bundle.js');
  const { code } = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
  writeFileSync(bundlePath, code);
  return { bundlePath, code, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * For the calling `describe` block: the production bundle, written before its tests, and the
 * worker processes they spawn (push them to `spawned`), SIGKILLed after them, the bundle removed.
 */
export function workerProcessesFor(prefix: string): { readonly bundle: ProductionBundle; spawned: WorkerProcess[] } {
  let bundle: ProductionBundle | undefined;
  const spawned: WorkerProcess[] = [];
  beforeAll(async () => {
    bundle = await writeProductionBundle(prefix);
  });
  afterAll(() => {
    killWorkerProcesses(spawned);
    bundle?.remove();
  });
  return {
    get bundle(): ProductionBundle {
      if (bundle === undefined) throw new Error(`${prefix}: the bundle is written before the tests (beforeAll)`);
      return bundle;
    },
    spawned,
  };
}
