// A local Temporal dev server (`temporal server start-dev`) for tests, CI and the demo.
//
// Node-only: spawns the CLI found (or installed) by dev/temporal-cli.ts, binds every port to
// 127.0.0.1, waits until the frontend answers, makes sure the project's custom search attributes
// exist, and hands back the address plus a stop() that kills the whole process group.
// Deliberately independent of src/core.

import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import { resolveTemporalCli } from './temporal-cli.js';
import { COMPACTOR_SEARCH_ATTRIBUTES } from '../src/shared/search-attributes.js';
import {
  addSearchAttributes,
  CLI_TYPE_NAMES,
  searchAttributeStatus,
  type HasOperatorService,
} from '../src/client/namespace-search-attributes.js';

export { SearchAttributeType };

/** Custom search attributes the compactor's workflows upsert; registered on every dev server. */
export { COMPACTOR_SEARCH_ATTRIBUTES } from '../src/shared/search-attributes.js';

export interface DevServerOptions {
  /** Namespace to create and to report (default "default", which always exists). */
  namespace?: string;
  /** Serve the Web UI (default true). When false the server runs `--headless`. */
  ui?: boolean;
  /** Append the server's stdout and stderr to this file (its directory is created). */
  logFile?: string;
  /** SQLite file to persist state across restarts; omitted (the default) means in-memory. */
  dbFilename?: string;
  /** Server log level (default "warn"). */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Search attributes to register (default {@link COMPACTOR_SEARCH_ATTRIBUTES}). */
  searchAttributes?: Record<string, SearchAttributeType>;
  /** Give up if the server is not ready within this many ms (default 60 000). */
  startTimeoutMs?: number;
  /** Use this CLI instead of resolving (and possibly installing) one. */
  cliPath?: string;
  /** Extra arguments appended to `temporal server start-dev`. */
  extraArgs?: string[];
}

export interface DevServerPorts {
  frontend: number;
  ui: number | undefined;
  http: number;
  metrics: number;
}

export interface DevServer {
  /** gRPC frontend, "127.0.0.1:PORT". */
  address: string;
  namespace: string;
  /** Web UI URL, undefined when started with ui: false. */
  uiUrl: string | undefined;
  ports: DevServerPorts;
  pid: number;
  cliPath: string;
  /** Kill the server's process group and wait for it to exit (idempotent). */
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
const OUTPUT_TAIL_CHARS = 16_000;

export { searchAttributeTypeName } from '../src/client/namespace-search-attributes.js';

/** A port that was free on 127.0.0.1 a moment ago (the OS picks it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not pick a free port'))));
    });
  });
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/**
 * Make sure `wanted` search attributes exist in `namespace` with the right types, adding the
 * missing ones through the operator service. Throws if one exists with another type.
 */
export async function ensureSearchAttributes(
  connection: HasOperatorService,
  namespace: string,
  wanted: Record<string, SearchAttributeType> = COMPACTOR_SEARCH_ATTRIBUTES,
): Promise<void> {
  const status = await searchAttributeStatus(connection, namespace, wanted);
  if (status.conflicting.length > 0) {
    throw new Error(
      `search attributes of namespace ${namespace} exist with another type: ${status.conflicting.join(', ')}`,
    );
  }
  await addSearchAttributes(connection, namespace, status.missing, wanted);
}

/** Keeps the last N characters of the server's output for error messages. */
class OutputTail {
  private text = '';
  append(chunk: string): void {
    this.text = (this.text + chunk).slice(-OUTPUT_TAIL_CHARS);
  }
  toString(): string {
    return this.text.trim() || '(no output)';
  }
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

/** Start a dev server; see {@link DevServerOptions}. */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const cliPath = options.cliPath ?? (await resolveTemporalCli());
  const maxAttempts = 3;
  let lastError: unknown;
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    try {
      return await startOnce(cliPath, options);
    } catch (err) {
      lastError = err;
      // A port picked as free may have been taken in between; only then is a retry worth it.
      if (!(err instanceof DevServerStartError && /address already in use/i.test(err.output))) throw err;
    }
  }
  throw lastError;
}

export class DevServerStartError extends Error {
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(`${message}\n--- temporal server start-dev output (tail) ---\n${output}`);
    this.name = 'DevServerStartError';
  }
}

async function startOnce(cliPath: string, options: DevServerOptions): Promise<DevServer> {
  const namespace = options.namespace ?? 'default';
  const ui = options.ui ?? true;
  const searchAttributes = options.searchAttributes ?? COMPACTOR_SEARCH_ATTRIBUTES;
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const [frontend, http, metrics, uiPort] = (await distinctFreePorts(ui ? 4 : 3)) as [number, number, number, number?];
  const address = `${HOST}:${frontend}`;

  const args = [
    'server',
    'start-dev',
    '--ip',
    HOST,
    '--port',
    String(frontend),
    '--http-port',
    String(http),
    '--metrics-port',
    String(metrics),
    '--log-level',
    options.logLevel ?? 'warn',
  ];
  if (ui && uiPort !== undefined) args.push('--ui-port', String(uiPort));
  else args.push('--headless');
  if (namespace !== 'default') args.push('--namespace', namespace);
  if (options.dbFilename) args.push('--db-filename', options.dbFilename);
  for (const [name, type] of Object.entries(searchAttributes)) {
    args.push('--search-attribute', `${name}=${CLI_TYPE_NAMES[type]}`);
  }
  args.push(...(options.extraArgs ?? []));

  let log: WriteStream | undefined;
  if (options.logFile) {
    await mkdir(dirname(options.logFile), { recursive: true });
    log = createWriteStream(options.logFile, { flags: 'a' });
    log.write(`\n# ${new Date().toISOString()} ${cliPath} ${args.join(' ')}\n`);
  }

  const child = spawn(cliPath, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const tail = new OutputTail();
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      tail.append(chunk);
      log?.write(chunk);
    });
  }

  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));
  const exited = waitForExit(child);
  // If our process dies without calling stop(), do not leave an orphan server behind.
  const killOnExit = () => child.pid !== undefined && killGroup(child.pid, 'SIGKILL');
  process.once('exit', killOnExit);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      process.removeListener('exit', killOnExit);
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
        killGroup(child.pid, 'SIGTERM');
        const timer = new AbortController();
        const timedOut = await Promise.race([
          exited.then(() => false),
          sleep(10_000, true, { signal: timer.signal }).catch(() => false),
        ]);
        timer.abort(); // do not keep the event loop alive for the rest of the 10 s
        if (timedOut) {
          killGroup(child.pid, 'SIGKILL');
          await exited;
        }
      }
      await new Promise<void>((resolve) => (log ? log.end(resolve) : resolve()));
    })();
    return stopping;
  };

  try {
    await waitUntilReady({
      address,
      namespace,
      searchAttributes,
      timeoutMs,
      child,
      exited,
      getSpawnError: () => spawnError,
      tail,
    });
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    address,
    namespace,
    uiUrl: ui && uiPort !== undefined ? `http://${HOST}:${uiPort}` : undefined,
    ports: { frontend, ui: ui ? uiPort : undefined, http, metrics },
    pid: child.pid as number,
    cliPath,
    stop,
  };
}

async function waitUntilReady(ctx: {
  address: string;
  namespace: string;
  searchAttributes: Record<string, SearchAttributeType>;
  timeoutMs: number;
  child: ChildProcess;
  exited: Promise<void>;
  getSpawnError: () => Error | undefined;
  tail: OutputTail;
}): Promise<void> {
  const deadline = Date.now() + ctx.timeoutMs;
  let lastError: unknown;
  let exitedEarly = false;
  void ctx.exited.then(() => (exitedEarly = true));

  while (Date.now() < deadline) {
    const spawnError = ctx.getSpawnError();
    if (spawnError)
      throw new DevServerStartError(`could not spawn the Temporal CLI: ${spawnError.message}`, ctx.tail.toString());
    if (exitedEarly) {
      throw new DevServerStartError(
        `temporal server start-dev exited early (code ${ctx.child.exitCode}, signal ${ctx.child.signalCode})`,
        ctx.tail.toString(),
      );
    }
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address: ctx.address, connectTimeout: 2_000 });
      const conn = connection;
      // Bound each probe: the client's retry interceptor would otherwise keep retrying UNAVAILABLE.
      const missing = await conn.withDeadline(Math.min(deadline, Date.now() + 5_000), async () => {
        await conn.workflowService.getSystemInfo({});
        await conn.workflowService.describeNamespace({ namespace: ctx.namespace });
        await ensureSearchAttributes(conn, ctx.namespace, ctx.searchAttributes);
        // Registration can take a moment to become visible; re-read until it is.
        const { customAttributes } = await conn.operatorService.listSearchAttributes({ namespace: ctx.namespace });
        return Object.keys(ctx.searchAttributes).filter((name) => !(name in (customAttributes ?? {})));
      });
      if (missing.length === 0) return;
      lastError = new Error(`search attributes not visible yet: ${missing.join(', ')}`);
    } catch (err) {
      lastError = err;
    } finally {
      await connection?.close().catch(() => undefined);
    }
    await sleep(200);
  }
  const reason = lastError instanceof Error ? lastError.message : String(lastError);
  throw new DevServerStartError(
    `Temporal dev server at ${ctx.address} was not ready within ${ctx.timeoutMs} ms (last error: ${reason})`,
    ctx.tail.toString(),
  );
}
