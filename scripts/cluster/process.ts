// Node only: the cluster's long-running processes (PostgreSQL, server nodes, the UI server) and
// its one-shot commands (initdb, the schema tool, go install). Every long-running process gets its
// own process group, its output appended to a log file, and the last lines kept for error
// messages; if this Node process exits without stopping them, they are SIGKILLed so nothing is
// left behind.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  type WriteStream,
} from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const TAIL_CHARS = 6_000;

/** Keeps the last characters of a process's output for error messages. */
export class OutputTail {
  private text = '';
  append(chunk: string): void {
    this.text = (this.text + chunk).slice(-TAIL_CHARS);
  }
  toString(): string {
    return this.text.trim() || '(no output)';
  }
}

/**
 * The long-running processes of a cluster, written to a file as they start and stop. If our own
 * process dies without stopping them (SIGKILL, a crash), their process groups outlive it; the
 * next start reads the file and kills what is left, so it does not meet a PostgreSQL still
 * holding the data directory or nodes still answering on old ports.
 */
export class ProcessRegistry {
  constructor(private readonly file: string) {}

  private read(): Array<{ name: string; pid: number; command: string }> {
    if (!existsSync(this.file)) return [];
    try {
      const parsed: unknown = JSON.parse(readFileSync(this.file, 'utf8'));
      return Array.isArray(parsed) ? parsed : [];
    } catch {
      return [];
    }
  }

  add(name: string, pid: number, command: string): void {
    mkdirSync(dirname(this.file), { recursive: true });
    writeFileSync(
      this.file,
      JSON.stringify([...this.read().filter((entry) => entry.pid !== pid), { name, pid, command }]),
    );
  }

  remove(pid: number): void {
    if (existsSync(this.file))
      writeFileSync(this.file, JSON.stringify(this.read().filter((entry) => entry.pid !== pid)));
  }

  /**
   * SIGKILL every recorded process that still runs the recorded command (a reused pid runs
   * something else and is left alone), wait until they are gone, and forget them. Returns their
   * names. Linux only (reads /proc); elsewhere it only forgets.
   */
  async killLeftovers(): Promise<string[]> {
    const killed: string[] = [];
    for (const entry of this.read()) {
      let commandLine = '';
      try {
        commandLine = readFileSync(`/proc/${entry.pid}/cmdline`, 'utf8');
      } catch {
        continue; // gone already
      }
      if (!commandLine.startsWith(entry.command)) continue;
      killGroup(entry.pid, 'SIGKILL');
      for (let waited = 0; waited < 10_000 && existsSync(`/proc/${entry.pid}`); waited += 100) await sleep(100);
      killed.push(`${entry.name} (pid ${entry.pid})`);
    }
    rmSync(this.file, { force: true });
    return killed;
  }
}

export interface SpawnSpec {
  command: string;
  args: readonly string[];
  env: Record<string, string>;
  cwd?: string;
  /** Run as this user (when we are root and the program refuses root, e.g. PostgreSQL). */
  user?: { uid: number; gid: number };
  /** Append stdout and stderr here (the directory is created). */
  logFile: string;
  /** Record the process here while it runs (long-running processes only). */
  registry?: ProcessRegistry;
}

const running = new Set<ManagedProcess>();
let exitHookInstalled = false;

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is already gone
  }
}

/** A long-running child process in its own process group. */
export class ManagedProcess {
  readonly tail = new OutputTail();
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;
  private readonly log: WriteStream;
  private spawnError: Error | undefined;

  constructor(
    readonly name: string,
    spec: SpawnSpec,
  ) {
    mkdirSync(dirname(spec.logFile), { recursive: true });
    this.log = createWriteStream(spec.logFile, { flags: 'a' });
    this.log.write(`\n# ${new Date().toISOString()} ${spec.command} ${spec.args.join(' ')}\n`);
    this.child = spawn(spec.command, [...spec.args], {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(spec.user ? { uid: spec.user.uid, gid: spec.user.gid } : {}),
    });
    for (const stream of [this.child.stdout, this.child.stderr]) {
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        this.tail.append(chunk);
        this.log.write(chunk);
      });
    }
    this.child.once('error', (error) => (this.spawnError = error));
    this.exited = new Promise((resolve) => {
      this.child.once('close', (code, signal) => resolve({ code, signal }));
      // 'close' never comes when the spawn itself failed
      this.child.once('error', () => resolve({ code: null, signal: null }));
    });
    running.add(this);
    const { pid } = this.child;
    if (pid !== undefined) spec.registry?.add(name, pid, spec.command);
    void this.exited.then(() => {
      running.delete(this);
      if (pid !== undefined) spec.registry?.remove(pid);
    });
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.once('exit', () => {
        for (const processToKill of running) processToKill.killNow();
      });
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** True until the process has exited (or failed to spawn). */
  get alive(): boolean {
    return this.spawnError === undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Why it is not running, for error messages: exit code or signal, and the spawn error if any. */
  describeExit(): string {
    if (this.spawnError) return `could not be started: ${this.spawnError.message}`;
    if (this.child.signalCode) return `was killed by ${this.child.signalCode}`;
    if (this.child.exitCode !== null) return `exited with code ${this.child.exitCode}`;
    return 'is running';
  }

  /** SIGKILL the whole group at once (used on exit and to simulate a crash). */
  killNow(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.child.pid !== undefined) killGroup(this.child.pid, signal);
  }

  /**
   * Send `signal` to the process (not its group: PostgreSQL's postmaster stops its children
   * itself) and wait up to `graceMs`, then SIGKILL the group. Closes the log.
   */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<void> {
    if (this.alive && this.child.pid !== undefined) {
      try {
        process.kill(this.child.pid, signal);
      } catch {
        // already gone
      }
      const timer = new AbortController();
      const timedOut = await Promise.race([
        this.exited.then(() => false),
        sleep(graceMs, true, { signal: timer.signal }).catch(() => false),
      ]);
      timer.abort();
      if (timedOut) {
        this.killNow();
        await this.exited;
      }
    }
    // Children that outlived their parent (none expected) go with the group.
    if (this.child.pid !== undefined) killGroup(this.child.pid, 'SIGKILL');
    await new Promise<void>((resolve) => this.log.end(resolve));
  }
}

export interface CommandResult {
  code: number | null;
  output: string;
}

/**
 * Run a one-shot command to completion, appending its output to `logFile`; resolves with its
 * exit code and output (it does not throw on a non-zero exit; callers decide).
 */
export function runCommand(spec: SpawnSpec & { timeoutMs?: number }): Promise<CommandResult> {
  mkdirSync(dirname(spec.logFile), { recursive: true });
  const log = createWriteStream(spec.logFile, { flags: 'a' });
  log.write(`\n# ${new Date().toISOString()} ${spec.command} ${spec.args.join(' ')}\n`);
  return new Promise<CommandResult>((resolve) => {
    let output = '';
    const child = spawn(spec.command, [...spec.args], {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: spec.timeoutMs,
      killSignal: 'SIGKILL',
      ...(spec.user ? { uid: spec.user.uid, gid: spec.user.gid } : {}),
    });
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        output += chunk;
        log.write(chunk);
      });
    }
    let finished = false;
    const finish = (code: number | null, extra = ''): void => {
      if (finished) return; // a spawn error may be followed by 'close'
      finished = true;
      log.end(() => resolve({ code, output: output + extra }));
    };
    child.once('error', (error) => finish(null, `\n${spec.command}: ${error.message}`));
    child.once('close', (code, signal) => finish(code, signal ? `\n(killed by ${signal})` : ''));
  });
}
