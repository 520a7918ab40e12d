// The `temporal-compactor` command as a user runs it: a real `node --import tsx src/cli/main.ts`
// process in the repository root, for the tests that check what it prints and how it exits.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { CliIo } from '../../src/cli/main.js';
import type { TestConnection } from './temporal.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** What a finished CLI process left: its exit code (null when a signal ended it) and all it printed. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The published command's entry, and the dev-only demo's (`npm run demo`). */
export const CLI_ENTRY = 'src/cli/main.ts';
export const DEMO_ENTRY = 'dev/demo-command.ts';

/** Starts `temporal-compactor <args>` (or another entry) with this process's environment plus `env`; its stdio are pipes. */
export function spawnCli(
  args: string[],
  env: Record<string, string>,
  entry = CLI_ENTRY,
): ChildProcessByStdio<Writable, Readable, Readable> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  // A command that exits without reading its input must not fail the test with our EPIPE.
  child.stdin.on('error', () => undefined);
  return child;
}

/** Runs `temporal-compactor <args>` to its end, with `input` on its standard input (none: closed at once). */
export function runCli(args: string[], env: Record<string, string>, input = '', entry = CLI_ENTRY): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, env, entry);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

/** The in-process CLI's (`main`) input and output for a test, connected to the test's server; `out()` and `err()` are what it wrote. */
export function capturedCliIo(t: TestConnection): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (text) => (out += text),
    stderr: (text) => (err += text),
    env: { TEMPORAL_ADDRESS: t.address, TEMPORAL_NAMESPACE: t.namespace },
    out: () => out,
    err: () => err,
  };
}
