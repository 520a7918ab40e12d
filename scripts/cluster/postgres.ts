// Node only: a private PostgreSQL server for the cluster, from Debian's packages
// (/usr/lib/postgresql/<major>/bin), on its own data directory and a free 127.0.0.1 port, TCP only
// (no Unix socket). PostgreSQL refuses to run as root, so when we are root its commands run as the
// `postgres` user the Debian package creates.
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManagedProcess, runCommand, type ProcessRegistry } from './process.js';

/** The PostgreSQL major version the cluster is proven on (Debian 12's `postgresql-15`). */
export const POSTGRES_MAJOR = 15;
/** The superuser initdb creates, which Temporal and the schema tool log in as (as in docker-compose.yml). */
export const POSTGRES_USER = 'temporal';
export const POSTGRES_PASSWORD = 'temporal';

export interface PostgresInstall {
  binDir: string;
  major: number;
}

/** The installed PostgreSQL to use: POSTGRES_MAJOR if present, else the newest installed major >= 12. */
export function findPostgres(root = '/usr/lib/postgresql'): PostgresInstall {
  const majors = existsSync(root)
    ? readdirSync(root)
        .map(Number)
        .filter(
          (major) => Number.isInteger(major) && major >= 12 && existsSync(join(root, String(major), 'bin', 'postgres')),
        )
        .sort((a, b) => b - a)
    : [];
  const major = majors.includes(POSTGRES_MAJOR) ? POSTGRES_MAJOR : majors[0];
  if (major === undefined) {
    throw new Error(
      `PostgreSQL is not installed (looked for ${root}/<major>/bin/postgres). On Debian: apt-get install postgresql-${POSTGRES_MAJOR} (.ci/run does this).`,
    );
  }
  return { binDir: join(root, String(major), 'bin'), major };
}

/** Who runs PostgreSQL: ourselves, or the `postgres` user when we are root. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    throw new Error(
      'running as root, and PostgreSQL refuses root: a `postgres` user is needed (the Debian package creates it).',
    );
  }
}

/** Can `user` create files in `dir`? (A checkout under a private home directory is not reachable.) */
function writableBy(dir: string, user: { uid: number; gid: number }): boolean {
  return (
    spawnSync('/bin/sh', ['-c', 'test -w "$0" && test -x "$0"', dir], { uid: user.uid, gid: user.gid }).status === 0
  );
}

export interface PostgresOptions {
  install: PostgresInstall;
  /** Preferred home of the data directory; see {@link preparePostgresHome}. */
  home: string;
  port: number;
  logDir: string;
  log: (line: string) => void;
  registry?: ProcessRegistry;
}

export interface PostgresServer {
  port: number;
  address: string;
  dataDir: string;
  /** True when an existing data directory was reused (kept from an earlier run). */
  reused: boolean;
  running(): boolean;
  /** Fast shutdown (SIGINT: roll back open transactions, write a checkpoint), then wait. */
  stop(): Promise<void>;
  /** Start again on the same port and data directory (after stop()). */
  start(): Promise<void>;
  /** Remove the data directory (after stop()). */
  removeData(): void;
  /** Run SQL in `database` with psql; resolves with its unaligned, tuples-only output. */
  query(database: string, sql: string): Promise<string>;
}

/**
 * Where PostgreSQL keeps its data: `<home>/postgres` when its user can write there, else (root
 * with a checkout the `postgres` user cannot reach) a directory under the system temp dir named
 * after `home`, so a kept data directory is found again by the next run.
 */
function preparePostgresHome(
  home: string,
  user: { uid: number; gid: number } | undefined,
  log: (line: string) => void,
): string {
  const preferred = join(home, 'postgres');
  mkdirSync(preferred, { recursive: true, mode: 0o700 });
  if (!user) return preferred;
  chownSync(preferred, user.uid, user.gid);
  if (writableBy(preferred, user)) return preferred;
  rmSync(preferred, { recursive: true, force: true });
  const fallback = join(
    tmpdir(),
    `temporal-compactor-postgres-${createHash('sha256').update(home).digest('hex').slice(0, 12)}`,
  );
  mkdirSync(fallback, { recursive: true, mode: 0o700 });
  chownSync(fallback, user.uid, user.gid);
  log(`  the postgres user cannot reach ${home}; PostgreSQL data goes to ${fallback}`);
  return fallback;
}

/** initdb (unless a data directory is already there), then start and wait until it accepts connections. */
export async function startPostgres(options: PostgresOptions): Promise<PostgresServer> {
  const user = postgresUser();
  const pgHome = preparePostgresHome(options.home, user, options.log);
  const dataDir = join(pgHome, 'data');
  const bin = (name: string): string => join(options.install.binDir, name);
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C', LC_ALL: 'C' };
  const reused = existsSync(join(dataDir, 'PG_VERSION'));

  if (!reused) {
    rmSync(dataDir, { recursive: true, force: true });
    const passwordFile = join(pgHome, 'initdb-password');
    writeFileSync(passwordFile, `${POSTGRES_PASSWORD}\n`, { mode: 0o600 });
    if (user) chownSync(passwordFile, user.uid, user.gid);
    const initdb = await runCommand({
      command: bin('initdb'),
      args: [
        '-D',
        dataDir,
        '-U',
        POSTGRES_USER,
        `--pwfile=${passwordFile}`,
        '--auth=scram-sha-256',
        '-E',
        'UTF8',
        '--no-locale',
      ],
      env,
      user,
      logFile: join(options.logDir, 'postgres-initdb.log'),
      timeoutMs: 120_000,
    });
    rmSync(passwordFile, { force: true });
    if (initdb.code !== 0)
      throw new Error(
        `initdb failed (exit ${initdb.code}):\n${initdb.output.trim().split('\n').slice(-15).join('\n')}`,
      );
  }

  let server: ManagedProcess | undefined;
  const start = async (): Promise<void> => {
    server = new ManagedProcess('postgres', {
      command: bin('postgres'),
      args: [
        '-D',
        dataDir,
        '-p',
        String(options.port),
        '-c',
        'listen_addresses=127.0.0.1',
        // TCP only: a socket path under a deep checkout can exceed the 107-byte limit.
        '-c',
        'unix_socket_directories=',
        // 3 nodes x 4 services x (default + visibility pools), with room for the schema tool.
        '-c',
        'max_connections=300',
      ],
      env,
      user,
      logFile: join(options.logDir, 'postgres.log'),
      registry: options.registry,
    });
    const started = server;
    const deadline = Date.now() + 60_000;
    try {
      for (;;) {
        if (!started.alive) throw new Error(`postgres ${started.describeExit()}:\n${started.tail.toString()}`);
        const ready = await runCommand({
          command: bin('pg_isready'),
          args: ['-h', '127.0.0.1', '-p', String(options.port), '-U', POSTGRES_USER, '-d', 'postgres', '-t', '2'],
          env,
          logFile: join(options.logDir, 'postgres-ready.log'),
          timeoutMs: 5_000,
        });
        if (ready.code === 0) return;
        if (Date.now() > deadline)
          throw new Error(`postgres did not accept connections within 60 s:\n${started.tail.toString()}`);
        await sleep(250);
      }
    } catch (error) {
      await started.stop('SIGINT', 10_000); // not left running behind a failed start
      throw error;
    }
  };
  await start();

  return {
    port: options.port,
    address: `127.0.0.1:${options.port}`,
    dataDir,
    reused,
    running: () => server?.alive ?? false,
    stop: async () => {
      await server?.stop('SIGINT', 30_000);
    },
    start,
    removeData: () => rmSync(pgHome, { recursive: true, force: true }),
    query: async (database: string, sql: string) => {
      const result = await runCommand({
        command: bin('psql'),
        args: [
          '-h',
          '127.0.0.1',
          '-p',
          String(options.port),
          '-U',
          POSTGRES_USER,
          '-d',
          database,
          '-At',
          '-v',
          'ON_ERROR_STOP=1',
          '-c',
          sql,
        ],
        env: { ...env, PGPASSWORD: POSTGRES_PASSWORD },
        logFile: join(options.logDir, 'postgres-queries.log'),
        timeoutMs: 30_000,
      });
      if (result.code !== 0) throw new Error(`psql ${database}: ${sql}: ${result.output.trim()}`);
      return result.output.trim();
    },
  };
}
