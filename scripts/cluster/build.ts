// Node only: the cluster's binaries, built once from their Go modules and cached under .temporal/
// by version, so only the first `npm run cluster` (or CI run on a fresh machine) pays for the build.
//
//   .temporal/server-v1.30.4/temporal-server        go.temporal.io/server/cmd/server
//   .temporal/server-v1.30.4/temporal-sql-tool      go.temporal.io/server/cmd/tools/sql
//   .temporal/server-v1.30.4/schema/postgresql/v12  the schema files, copied from the module source
//   .temporal/ui-server-v2.55.0/temporal-ui-server  github.com/temporalio/ui-server/v2/cmd/server
//
// A build goes to a scratch directory that is renamed into place when complete, so an interrupted
// build never looks cached.
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runCommand } from './process.js';

/**
 * The Temporal server release built here. v1.30.4 is the newest release whose go.mod the
 * machine's Go (1.26.8) accepts: v1.30.9, every v1.31.x and v1.32.x declare `go 1.26.10`, which
 * would need `GOTOOLCHAIN=go1.27.3` for every build. docker-compose.yml pins the same release.
 */
export const TEMPORAL_SERVER_VERSION = 'v1.30.4';

/**
 * The Temporal UI server release. Its Go module ships the built web assets (ui/assets/local), so
 * `go install` gives a working UI. v2.55.0 is the newest whose go.mod the machine's Go accepts
 * (v2.56.0 and later declare go 1.26.9 or newer); v2.49.1 would work too but its module carries
 * ~550 MB of stale asset chunks.
 */
export const TEMPORAL_UI_SERVER_VERSION = 'v2.55.0';

export interface ServerBinaries {
  version: string;
  server: string;
  sqlTool: string;
  /** `.../schema/postgresql/v12`: `temporal/versioned` and `visibility/versioned` under it. */
  postgresSchemaDir: string;
}

export interface BuildOptions {
  /** Where the cache lives: the repository's .temporal/. */
  cacheRoot: string;
  /** @default TEMPORAL_SERVER_VERSION */
  serverVersion?: string;
  /** @default TEMPORAL_UI_SERVER_VERSION */
  uiVersion?: string;
  /** Progress lines. */
  log: (line: string) => void;
}

function binaryDir(cacheRoot: string, kind: 'server' | 'ui-server', version: string): string {
  return join(cacheRoot, `${kind}-${version}`);
}

function serverBinariesIn(dir: string, version: string): ServerBinaries {
  return {
    version,
    server: join(dir, 'temporal-server'),
    sqlTool: join(dir, 'temporal-sql-tool'),
    postgresSchemaDir: join(dir, 'schema', 'postgresql', 'v12'),
  };
}

/** The cached server binaries, or undefined when they have not been built. */
export function cachedServerBinaries(cacheRoot: string, version = TEMPORAL_SERVER_VERSION): ServerBinaries | undefined {
  const binaries = serverBinariesIn(binaryDir(cacheRoot, 'server', version), version);
  return [binaries.server, binaries.sqlTool, binaries.postgresSchemaDir].every((path) => existsSync(path))
    ? binaries
    : undefined;
}

/** The cached UI server binary, or undefined when it has not been built. */
export function cachedUiServer(cacheRoot: string, version = TEMPORAL_UI_SERVER_VERSION): string | undefined {
  const binary = join(binaryDir(cacheRoot, 'ui-server', version), 'temporal-ui-server');
  return existsSync(binary) ? binary : undefined;
}

async function goEnv(name: string, log: string): Promise<string> {
  const result = await runCommand({
    command: 'go',
    args: ['env', name],
    env: { ...stringEnv(process.env) },
    logFile: log,
  });
  if (result.code !== 0) {
    throw new Error(
      `Go is needed once to build the Temporal server from its module (\`go install\`), and \`go env ${name}\` failed: ${result.output.trim()}`,
    );
  }
  return result.output.trim().split('\n').at(-1) ?? '';
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** `go install` the packages into `gobin`, printing a line every 30 s while it runs. */
async function goInstall(
  packages: string[],
  gobin: string,
  logFile: string,
  log: (line: string) => void,
): Promise<void> {
  const started = Date.now();
  const ticker = setInterval(
    () => log(`  still building (${Math.round((Date.now() - started) / 1000)} s; output in ${logFile})`),
    30_000,
  );
  try {
    // CGO off, as Temporal's own release builds: static binaries, no C toolchain needed.
    const result = await runCommand({
      command: 'go',
      args: ['install', ...packages],
      env: { ...stringEnv(process.env), GOBIN: gobin, CGO_ENABLED: '0' },
      logFile,
    });
    if (result.code === null && /ENOENT/.test(result.output)) {
      throw new Error(
        "Go is not installed: it is needed once to build the Temporal server from its module (go install); the machine's Go 1.26 works",
      );
    }
    if (result.code !== 0) {
      const tail = result.output.trim().split('\n').slice(-15).join('\n');
      throw new Error(`go install ${packages.join(' ')} failed (exit ${result.code}); see ${logFile}:\n${tail}`);
    }
  } finally {
    clearInterval(ticker);
  }
}

/** The module cache is read-only; its copies must not be, or removing the cache fails. */
function makeWritable(path: string): void {
  const stats = statSync(path);
  chmodSync(path, stats.mode | 0o200);
  if (stats.isDirectory()) for (const entry of readdirSync(path)) makeWritable(join(path, entry));
}

/** Move a finished scratch directory into place; if another process won the race, keep theirs. */
function publish(scratch: string, target: string): void {
  if (existsSync(target)) {
    rmSync(scratch, { recursive: true, force: true });
    return;
  }
  renameSync(scratch, target);
}

/** The server binaries and schema files, built on first use. */
export async function ensureServerBinaries(options: BuildOptions): Promise<ServerBinaries & { built: boolean }> {
  const version = options.serverVersion ?? TEMPORAL_SERVER_VERSION;
  const cached = cachedServerBinaries(options.cacheRoot, version);
  if (cached) return { ...cached, built: false };

  const target = binaryDir(options.cacheRoot, 'server', version);
  const scratch = `${target}.partial-${process.pid}`;
  const logFile = join(options.cacheRoot, 'logs', `build-server-${version}.log`);
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  options.log(
    `  building go.temporal.io/server@${version} (cmd/server, cmd/tools/sql) with go install; this takes minutes once`,
  );
  try {
    await goInstall(
      [`go.temporal.io/server/cmd/server@${version}`, `go.temporal.io/server/cmd/tools/sql@${version}`],
      scratch,
      logFile,
      options.log,
    );
    renameSync(join(scratch, 'server'), join(scratch, 'temporal-server'));
    renameSync(join(scratch, 'sql'), join(scratch, 'temporal-sql-tool'));
    // The schema files are not in the binaries: copy them from the module source the build downloaded.
    const moduleDir = join(await goEnv('GOMODCACHE', logFile), 'go.temporal.io', `server@${version}`);
    const schemaSource = join(moduleDir, 'schema', 'postgresql', 'v12');
    if (!existsSync(schemaSource))
      throw new Error(`the schema files are not where the build left the module: ${schemaSource}`);
    cpSync(schemaSource, join(scratch, 'schema', 'postgresql', 'v12'), { recursive: true });
    makeWritable(join(scratch, 'schema'));
    publish(scratch, target);
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    throw error;
  }
  const built = cachedServerBinaries(options.cacheRoot, version);
  if (!built) throw new Error(`the build finished but ${target} is incomplete`);
  return { ...built, built: true };
}

/** The UI server binary, built on first use. */
export async function ensureUiServer(
  options: BuildOptions,
): Promise<{ path: string; version: string; built: boolean }> {
  const version = options.uiVersion ?? TEMPORAL_UI_SERVER_VERSION;
  const cached = cachedUiServer(options.cacheRoot, version);
  if (cached) return { path: cached, version, built: false };

  const target = binaryDir(options.cacheRoot, 'ui-server', version);
  const scratch = `${target}.partial-${process.pid}`;
  const logFile = join(options.cacheRoot, 'logs', `build-ui-server-${version}.log`);
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  options.log(`  building github.com/temporalio/ui-server/v2@${version} (cmd/server) with go install`);
  try {
    await goInstall([`github.com/temporalio/ui-server/v2/cmd/server@${version}`], scratch, logFile, options.log);
    renameSync(join(scratch, 'server'), join(scratch, 'temporal-ui-server'));
    publish(scratch, target);
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    throw error;
  }
  const built = cachedUiServer(options.cacheRoot, version);
  if (!built) throw new Error(`the build finished but ${target} is incomplete`);
  return { path: built, version, built: true };
}
