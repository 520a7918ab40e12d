// Node only: a three-node Temporal cluster on PostgreSQL, started by the project (`npm run cluster`,
// and `startCluster()` for tests). Built from packages that install here, no containers:
//
//   1. binaries     temporal-server and temporal-sql-tool from go.temporal.io/server, the UI server
//                   from github.com/temporalio/ui-server/v2 (built once, cached in .temporal/)
//   2. postgres     Debian's PostgreSQL on a private data directory and a free 127.0.0.1 port
//   3. schema       temporal-sql-tool: create, setup-schema -v 0.0, update-schema for the default
//                   store (`temporal`) and visibility (`temporal_visibility`) — the steps of the
//                   temporal-schema job in docker-compose.yml
//   4. nodes        three `temporal-server start` processes, each running all four services
//                   (frontend, history, matching, worker) on its own ports, joined through
//                   ringpop membership (seeded from the cluster_membership table)
//   5. membership   every node's frontend sees three members in each of the four rings
//   6. namespace    `default` and our search attributes, visible on every node
//   7. ui           the Temporal UI server, pointed at the cluster's frontend
//
// A TCP balancer on one more port is the cluster's frontend address (see proxy.ts). Every step
// prints its duration; a failing step stops everything started so far and says which step failed.
import { randomInt } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { status as grpcStatus } from '@grpc/grpc-js';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import Long from 'long';
import { stringify } from 'yaml';
import { COMPACTOR_SEARCH_ATTRIBUTES, ensureSearchAttributes, type SearchAttributeType } from '../../dev/dev-server.js';
import { describeCluster, describeMutableState, type ClusterDescription } from './admin.js';
import { ensureServerBinaries, ensureUiServer, type ServerBinaries } from './build.js';
import { ManagedProcess, ProcessRegistry, runCommand } from './process.js';
import { findPostgres, POSTGRES_PASSWORD, POSTGRES_USER, startPostgres, type PostgresServer } from './postgres.js';
import { startFrontendProxy, type FrontendProxy } from './proxy.js';

export { TEMPORAL_SERVER_VERSION, TEMPORAL_UI_SERVER_VERSION } from './build.js';
export { POSTGRES_MAJOR } from './postgres.js';
export { describeCluster, describeMutableState, type ClusterDescription, type MembershipRing } from './admin.js';

/** The repository root (scripts/cluster/ is two levels down). */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Binaries, data and logs live under here unless told otherwise. */
export const TEMPORAL_CACHE_DIR = join(PROJECT_ROOT, '.temporal');
/** The dynamic config the nodes read: the same file docker-compose.yml mounts into its server. */
export const DYNAMIC_CONFIG_FILE = join(PROJECT_ROOT, 'deploy', 'temporal', 'dynamicconfig', 'compactor.yaml');

/** Server nodes in the cluster. */
export const CLUSTER_NODE_COUNT = 3;
/** History shards: the server's own default for its embedded and docker configs, as in docker-compose.yml. */
export const HISTORY_SHARDS = 4;
/** The four services every node runs, i.e. the membership rings. */
export const SERVER_SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
/** Retention of the namespace the cluster registers (docker-compose.yml's setup job uses the same). */
export const NAMESPACE_RETENTION_HOURS = 72;

export interface ClusterOptions {
  /** Data, configs and logs. @default `.temporal/cluster` in the repository */
  dataDir?: string;
  /** Keep PostgreSQL's data when stopping, so the next start reuses it. @default false */
  keepData?: boolean;
  /** Build and start the Temporal UI server. @default true */
  ui?: boolean;
  /** Port of the cluster's frontend address (the balancer). @default a free port */
  frontendPort?: number;
  /** Port of the UI. @default a free port */
  uiPort?: number;
  /** Namespace to register. @default "default" */
  namespace?: string;
  /** Search attributes to register in it. @default COMPACTOR_SEARCH_ATTRIBUTES */
  searchAttributes?: Record<string, SearchAttributeType>;
  /** The server's log level (logs go to files under `<dataDir>/logs`). @default "info" */
  serverLogLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Where progress lines go. @default stdout */
  log?: (line: string) => void;
  /** Give up on a step that is not done in this time (the binaries build has no limit). @default 120 000 */
  stepTimeoutMs?: number;
}

export interface NodePorts {
  frontend: number;
  frontendHttp: number;
  frontendMembership: number;
  history: number;
  historyMembership: number;
  matching: number;
  matchingMembership: number;
  worker: number;
  workerMembership: number;
}

export interface ClusterNode {
  /** "node-1", "node-2", "node-3" */
  name: string;
  index: number;
  /** This node's own frontend, "127.0.0.1:PORT" (clients normally use {@link Cluster.address}). */
  frontendAddress: string;
  /** This node's history service: what DescribeMutableState names as a shard's owner. */
  historyAddress: string;
  ports: NodePorts;
  configFile: string;
  logFile: string;
  /** Process id while running. */
  pid(): number | undefined;
  running(): boolean;
  /** Crash it: `signal` (default SIGKILL) to its process group, then wait until it is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Graceful stop (SIGTERM, then SIGKILL after 15 s). */
  stop(): Promise<void>;
  /** Start it again (same ports and config) and wait until its frontend answers. */
  start(): Promise<void>;
}

export interface StepTiming {
  step: string;
  ms: number;
  detail: string;
}

export interface Cluster {
  /** The cluster's frontend address for clients and workers: "127.0.0.1:PORT". */
  address: string;
  namespace: string;
  /** The UI, or undefined when started without it. */
  uiUrl: string | undefined;
  nodes: ClusterNode[];
  postgres: PostgresServer;
  dataDir: string;
  logDir: string;
  versions: { server: string; ui: string | undefined; postgres: number };
  /** Each start-up step with its duration. */
  timings: StepTiming[];
  /** Milliseconds from the first node's start to every node seeing the full membership. */
  allNodesReadyMs: number;
  proxy: FrontendProxy;
  /**
   * Wait until every running node's frontend sees `expected` members in each ring; returns what
   * each saw. @default expected: the number of running nodes
   */
  waitForMembership(options?: { expected?: number; timeoutMs?: number }): Promise<ClusterDescription[]>;
  /** The node whose history service owns the shard of `workflowId` (asked through a running node). */
  shardOwner(
    workflowId: string,
    runId?: string,
  ): Promise<{ node: ClusterNode | undefined; shardId: string; historyAddress: string }>;
  /** Stop everything (UI, nodes, balancer, PostgreSQL); removes the data unless keepData. Idempotent. */
  stop(): Promise<void>;
}

/** A start-up step failed; everything started before it has been stopped. */
export class ClusterStartError extends Error {
  constructor(
    readonly step: string,
    readonly completed: readonly string[],
    override readonly cause: unknown,
    logDir: string,
  ) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      `cluster start failed at step "${step}" (completed: ${completed.length === 0 ? 'none' : completed.join(', ')}): ${reason}\n` +
        `Everything it had started was stopped. Logs: ${logDir}`,
    );
    this.name = 'ClusterStartError';
  }
}

const HOST = '127.0.0.1';

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** Runs the steps in order, printing each with its duration, and remembers what finished. */
class Steps {
  readonly timings: StepTiming[] = [];
  private readonly started = Date.now();

  constructor(
    private readonly log: (line: string) => void,
    private readonly logDir: string,
  ) {}

  private stamp(): string {
    return `[${seconds(Date.now() - this.started).padStart(7)}]`;
  }

  async run<T>(step: string, work: () => Promise<{ value: T; detail: string }>): Promise<T> {
    this.log(`${this.stamp()} ${step} ...`);
    const began = Date.now();
    try {
      const { value, detail } = await work();
      const ms = Date.now() - began;
      this.timings.push({ step, ms, detail });
      this.log(`${this.stamp()} ${step}: ${detail} (${seconds(ms)})`);
      return value;
    } catch (error) {
      throw new ClusterStartError(
        step,
        this.timings.map((timing) => timing.step),
        error,
        this.logDir,
      );
    }
  }
}

/**
 * Ports are picked from 10000-32767: the server's PostgreSQL schema stores a member's port in
 * cluster_membership.rpc_port, a SMALLINT, so a node on a port above 32767 cannot register (and
 * the kernel's ephemeral range, 32768-60999 by default, is exactly what the OS hands out for
 * port 0). Each candidate is checked by binding it on 127.0.0.1.
 */
const PORT_RANGE = { min: 10_000, max: 32_767 } as const;

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

async function distinctFreePorts(count: number, taken: ReadonlySet<number>): Promise<number[]> {
  const ports = new Set<number>();
  for (let tries = 0; ports.size < count; tries++) {
    if (tries > count * 50)
      throw new Error(`could not find ${count} free ports in ${PORT_RANGE.min}-${PORT_RANGE.max} on ${HOST}`);
    const port = PORT_RANGE.min + randomInt(PORT_RANGE.max - PORT_RANGE.min + 1);
    if (!taken.has(port) && !ports.has(port) && (await portIsFree(port))) ports.add(port);
  }
  return [...ports];
}

/**
 * The server logs JSON lines with long stack traces: for an error message, its last fatal entry
 * (else its last error) as "msg: error", or the last lines of plain output.
 */
function serverLogSummary(tail: string): string {
  const entries = tail
    .split('\n')
    .map((line) => {
      try {
        const parsed: unknown = JSON.parse(line);
        return typeof parsed === 'object' && parsed !== null ? new Map(Object.entries(parsed)) : undefined;
      } catch {
        return undefined;
      }
    })
    .filter((entry) => entry !== undefined)
    .reverse();
  const worst =
    entries.find((entry) => entry.get('level') === 'fatal') ?? entries.find((entry) => entry.get('level') === 'error');
  if (worst) return `${String(worst.get('msg'))}${worst.has('error') ? `: ${String(worst.get('error'))}` : ''}`;
  return tail.trim().split('\n').slice(-5).join('\n');
}

/** Thrown inside {@link until}'s attempt when waiting longer cannot help (a process exited). */
class Hopeless extends Error {}

/** Retry `attempt` every 500 ms until it returns a value, throws {@link Hopeless}, or time runs out. */
async function until<T>(what: string, timeoutMs: number, attempt: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (error) {
      if (error instanceof Hopeless) throw error;
      lastError = error;
    }
    if (Date.now() > deadline) {
      const reason =
        lastError instanceof Error ? lastError.message : lastError === undefined ? 'not yet' : String(lastError);
      throw new Error(`${what}: not done within ${seconds(timeoutMs)} (last: ${reason})`);
    }
    await sleep(500);
  }
}

function nodeConfig(options: {
  ports: NodePorts;
  postgresPort: number;
  clusterAddress: string;
  logLevel: string;
}): Record<string, unknown> {
  const { ports } = options;
  const datastore = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${HOST}:${options.postgresPort}`,
      connectProtocol: 'tcp',
      user: POSTGRES_USER,
      password: POSTGRES_PASSWORD,
      // Smaller pools than the server's samples (20 and 10): 3 nodes x 4 services share one PostgreSQL.
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number, httpPort?: number) => ({
    rpc: { grpcPort, membershipPort, bindOnIP: HOST, ...(httpPort === undefined ? {} : { httpPort }) },
  });
  // The shape follows the server's config/development-postgres12.yaml and its embedded docker
  // template (common/config/config_template_embedded.yaml), with every address on 127.0.0.1.
  return {
    log: { stdout: true, level: options.logLevel },
    persistence: {
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: HISTORY_SHARDS,
      datastores: { default: datastore('temporal', 10), visibility: datastore('temporal_visibility', 5) },
    },
    global: {
      // Peers find each other through the cluster_membership table, then gossip (ringpop).
      membership: { maxJoinDuration: '30s', broadcastAddress: HOST },
      pprof: { port: 0 },
    },
    services: {
      frontend: service(ports.frontend, ports.frontendMembership, ports.frontendHttp),
      history: service(ports.history, ports.historyMembership),
      matching: service(ports.matching, ports.matchingMembership),
      worker: service(ports.worker, ports.workerMembership),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        // The cluster's public address is the balancer: the same on every node, so none of them
        // rewrites the persisted cluster record, and still right when any one node is down.
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: options.clusterAddress },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
    dynamicConfigClient: { filepath: DYNAMIC_CONFIG_FILE, pollInterval: '10s' },
  };
}

/** Run one temporal-sql-tool command against a database; throws with its output on failure. */
async function sqlTool(
  binaries: ServerBinaries,
  postgresPort: number,
  database: string,
  args: string[],
  logFile: string,
  tolerate?: RegExp,
): Promise<void> {
  const result = await runCommand({
    command: binaries.sqlTool,
    args: ['--db', database, ...args],
    // The schema job in docker-compose.yml passes the same settings the same way.
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      SQL_PLUGIN: 'postgres12',
      SQL_HOST: HOST,
      SQL_PORT: String(postgresPort),
      SQL_USER: POSTGRES_USER,
      SQL_PASSWORD: POSTGRES_PASSWORD,
    },
    logFile,
    timeoutMs: 120_000,
  });
  if (result.code === 0 || tolerate?.test(result.output)) return;
  throw new Error(
    `temporal-sql-tool --db ${database} ${args.join(' ')} failed (exit ${result.code}):\n${result.output.trim().split('\n').slice(-10).join('\n')}`,
  );
}

/**
 * Start the cluster; see the file comment for the steps. Resolves when every node sees the full
 * membership, the namespace and search attributes are visible on every node and the UI answers.
 *
 * @example
 * const cluster = await startCluster({ ui: false });
 * try {
 *   const connection = await Connection.connect({ address: cluster.address });
 *   // ...
 * } finally {
 *   await cluster.stop();
 * }
 */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const dataDir = options.dataDir ?? join(TEMPORAL_CACHE_DIR, 'cluster');
  const logDir = join(dataDir, 'logs');
  const configDir = join(dataDir, 'config');
  const namespace = options.namespace ?? 'default';
  const searchAttributes = options.searchAttributes ?? COMPACTOR_SEARCH_ATTRIBUTES;
  const withUi = options.ui ?? true;
  const stepTimeoutMs = options.stepTimeoutMs ?? 120_000;
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  mkdirSync(configDir, { recursive: true });

  const steps = new Steps(log, logDir);
  const registry = new ProcessRegistry(join(dataDir, 'processes.json'));
  const leftovers = await registry.killLeftovers();
  if (leftovers.length > 0) log(`killed processes an earlier run left behind: ${leftovers.join(', ')}`);
  // What has been started, to stop in reverse order on failure or stop().
  const cleanups: Array<() => Promise<void>> = [];
  const stopStarted = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await cleanup().catch((error: unknown) =>
        log(`  while stopping: ${error instanceof Error ? error.message : String(error)}`),
      );
    }
  };

  try {
    const binaries = await steps.run('binaries', async () => {
      const server = await ensureServerBinaries({ cacheRoot: TEMPORAL_CACHE_DIR, log });
      const ui = withUi ? await ensureUiServer({ cacheRoot: TEMPORAL_CACHE_DIR, log }) : undefined;
      const describe = (name: string, version: string, built: boolean) =>
        `${name} ${version} ${built ? 'built' : 'cached'}`;
      return {
        value: { server, ui },
        detail: [
          describe('server', server.version, server.built),
          ...(ui ? [describe('ui-server', ui.version, ui.built)] : []),
        ].join(', '),
      };
    });

    // Every port at once, so none of them is handed out twice.
    const picked = await distinctFreePorts(
      3 + CLUSTER_NODE_COUNT * 9,
      new Set([options.frontendPort, options.uiPort].filter((port): port is number => port !== undefined)),
    );
    const nextPort = (): number => {
      const port = picked.shift();
      if (port === undefined) throw new Error('ran out of picked ports');
      return port;
    };
    const postgresPort = nextPort();
    const proxyPort = options.frontendPort ?? nextPort();
    const uiPort = options.uiPort ?? nextPort();
    const allNodePorts: NodePorts[] = Array.from({ length: CLUSTER_NODE_COUNT }, () => ({
      frontend: nextPort(),
      frontendHttp: nextPort(),
      frontendMembership: nextPort(),
      history: nextPort(),
      historyMembership: nextPort(),
      matching: nextPort(),
      matchingMembership: nextPort(),
      worker: nextPort(),
      workerMembership: nextPort(),
    }));

    const postgres = await steps.run('postgres', async () => {
      const install = findPostgres();
      const server = await startPostgres({ install, home: dataDir, port: postgresPort, logDir, log, registry });
      cleanups.push(async () => {
        await server.stop();
        if (!options.keepData) server.removeData();
      });
      return {
        value: { server, major: install.major },
        detail: `PostgreSQL ${install.major} on ${server.address}, ${server.reused ? 'reusing' : 'new'} data in ${server.dataDir}`,
      };
    });

    await steps.run('schema', async () => {
      const schemaLog = join(logDir, 'schema.log');
      const versions: string[] = [];
      for (const [database, dir] of [
        ['temporal', 'temporal'],
        ['temporal_visibility', 'visibility'],
      ] as const) {
        // Each step is a no-op on a database that has it already (a kept data directory).
        await sqlTool(binaries.server, postgres.server.port, database, ['create'], schemaLog, /already exists/);
        await sqlTool(
          binaries.server,
          postgres.server.port,
          database,
          ['setup-schema', '-v', '0.0'],
          schemaLog,
          /already exists/,
        );
        await sqlTool(
          binaries.server,
          postgres.server.port,
          database,
          ['update-schema', '-d', join(binaries.server.postgresSchemaDir, dir, 'versioned')],
          schemaLog,
        );
        versions.push(
          `${database} at schema ${await postgres.server.query(database, 'SELECT curr_version FROM schema_version')}`,
        );
      }
      if (postgres.server.reused) {
        // Members of an earlier run, on other ports and all down now: left in the table, new
        // nodes would try them as seeds and wait for them to expire before settling.
        await postgres.server.query('temporal', 'DELETE FROM cluster_membership');
      }
      return { value: undefined, detail: `${versions.join(', ')} (create, setup-schema -v 0.0, update-schema)` };
    });

    // The balancer comes up before the nodes: it is their clusterMetadata rpcAddress.
    const nodeStates = allNodePorts.map((): { process: ManagedProcess | undefined } => ({ process: undefined }));
    const proxy = await steps.run('frontend balancer', async () => {
      const started = await startFrontendProxy(
        proxyPort,
        allNodePorts.map((ports, index) => ({
          host: HOST,
          port: ports.frontend,
          up: () => nodeStates[index]?.process?.alive ?? false,
        })),
      );
      cleanups.push(() => started.close());
      return {
        value: started,
        detail: `${started.address} -> ${allNodePorts.map((ports) => ports.frontend).join(', ')}`,
      };
    });

    const nodes: ClusterNode[] = allNodePorts.map((ports, index) => {
      const name = `node-${index + 1}`;
      const configFile = join(configDir, `${name}.yaml`);
      const logFile = join(logDir, `${name}.log`);
      const state = nodeStates[index] ?? { process: undefined };
      writeFileSync(
        configFile,
        `# ${name} of the cluster started by scripts/cluster (temporal-server ${binaries.server.version}); written at every start.\n` +
          stringify(
            nodeConfig({
              ports,
              postgresPort: postgres.server.port,
              clusterAddress: proxy.address,
              logLevel: options.serverLogLevel ?? 'info',
            }),
          ),
      );
      const frontendAddress = `${HOST}:${ports.frontend}`;
      const start = async (): Promise<void> => {
        if (state.process?.alive) return;
        const started = new ManagedProcess(name, {
          command: binaries.server.server,
          // No authorizer (hence --allow-no-auth): a development cluster that listens on 127.0.0.1 only.
          args: ['--config-file', configFile, '--allow-no-auth', 'start'],
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dataDir },
          cwd: dataDir,
          logFile,
          registry,
        });
        state.process = started;
        await until(`${name}: frontend ${frontendAddress} answering`, stepTimeoutMs, async () => {
          if (!started.alive)
            throw new Hopeless(
              `${name} ${started.describeExit()}: ${serverLogSummary(started.tail.toString())} (log: ${logFile})`,
            );
          return describeCluster(frontendAddress, 2_000);
        });
      };
      return {
        name,
        index,
        frontendAddress,
        historyAddress: `${HOST}:${ports.history}`,
        ports,
        configFile,
        logFile,
        pid: () => (state.process?.alive ? state.process.pid : undefined),
        running: () => state.process?.alive ?? false,
        kill: async (signal: NodeJS.Signals = 'SIGKILL') => {
          const current = state.process;
          if (!current?.alive) return;
          current.killNow(signal);
          await current.exited;
          await current.stop(); // closes its log
        },
        stop: async () => {
          await state.process?.stop('SIGTERM', 15_000);
        },
        start,
      };
    });
    cleanups.push(async () => {
      await Promise.all(nodes.map((node) => node.stop()));
    });

    const waitForMembership = async (
      waitOptions: { expected?: number; timeoutMs?: number } = {},
    ): Promise<ClusterDescription[]> => {
      const live = nodes.filter((node) => node.running());
      const expected = waitOptions.expected ?? live.length;
      return until(
        `every node's frontend seeing ${expected} members in each ring`,
        waitOptions.timeoutMs ?? stepTimeoutMs,
        async () => {
          const views = await Promise.all(live.map((node) => describeCluster(node.frontendAddress, 3_000)));
          const complete = views.every((view) =>
            SERVER_SERVICES.every(
              (service) => view.rings.find((ring) => ring.role === service)?.memberCount === expected,
            ),
          );
          if (!complete) {
            const seen = views.map(
              (view, index) =>
                `${live[index]?.name}: ${view.rings.map((ring) => `${ring.role}=${ring.memberCount}`).join(' ')}`,
            );
            throw new Error(`membership so far: ${seen.join('; ')}`);
          }
          return views;
        },
      );
    };

    const nodesStarted = Date.now();
    await steps.run('server nodes', async () => {
      const [first, ...rest] = nodes;
      // The first node alone: it writes the cluster's metadata record on a new database, which
      // the others then read instead of racing to create it.
      await first?.start();
      await Promise.all(rest.map((node) => node.start()));
      return {
        value: undefined,
        detail: nodes.map((node) => `${node.name} pid ${node.pid()} frontend ${node.frontendAddress}`).join(', '),
      };
    });

    await steps.run('membership', async () => {
      const views = await waitForMembership({ expected: CLUSTER_NODE_COUNT });
      const view = views[0];
      return {
        value: undefined,
        detail: `${SERVER_SERVICES.map((service) => `${service} ${view?.rings.find((ring) => ring.role === service)?.memberCount ?? 0}/${CLUSTER_NODE_COUNT}`).join(', ')} on every node; ${view?.historyShardCount ?? '?'} history shards; server ${view?.serverVersion ?? '?'}`,
      };
    });
    const allNodesReadyMs = Date.now() - nodesStarted;

    await steps.run('namespace', async () => {
      const connection = await Connection.connect({ address: proxy.address, connectTimeout: 10_000 });
      try {
        const registered = await until(`registering namespace ${namespace}`, stepTimeoutMs, async () => {
          try {
            await connection.workflowService.registerNamespace({
              namespace,
              workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(NAMESPACE_RETENTION_HOURS * 3600) },
            });
            return 'registered';
          } catch (error) {
            if (isGrpcServiceError(error) && error.code === grpcStatus.ALREADY_EXISTS) return 'exists';
            throw error;
          }
        });
        // Every node answers for it, with the search attributes registered and visible (each
        // node's frontend caches namespaces; the cache refreshes every few seconds).
        for (const node of nodes) {
          const nodeConnection = await Connection.connect({ address: node.frontendAddress, connectTimeout: 10_000 });
          try {
            await until(`${node.name}: namespace ${namespace} with its search attributes`, stepTimeoutMs, async () =>
              nodeConnection.withDeadline(Date.now() + 5_000, async () => {
                await nodeConnection.workflowService.describeNamespace({ namespace });
                await ensureSearchAttributes(nodeConnection, namespace, searchAttributes);
                const { customAttributes } = await nodeConnection.operatorService.listSearchAttributes({ namespace });
                const missing = Object.keys(searchAttributes).filter((name) => !(name in (customAttributes ?? {})));
                if (missing.length > 0) throw new Error(`search attributes not visible yet: ${missing.join(', ')}`);
                return true;
              }),
            );
          } finally {
            await nodeConnection.close();
          }
        }
        return {
          value: undefined,
          detail: `${namespace} ${registered} (retention ${NAMESPACE_RETENTION_HOURS} h); ${Object.entries(
            searchAttributes,
          )
            .map(([name, type]) => `${name} ${type}`)
            .join(', ')} visible on every node`,
        };
      } finally {
        await connection.close();
      }
    });

    let uiUrl: string | undefined;
    if (binaries.ui) {
      const uiBinary = binaries.ui.path;
      uiUrl = await steps.run('ui', async () => {
        const uiRoot = join(dataDir, 'ui');
        mkdirSync(join(uiRoot, 'config'), { recursive: true });
        const url = `http://${HOST}:${uiPort}`;
        // Keys from the UI server's config/base.yaml and config/docker.yaml; plain HTTP on loopback,
        // so the CSRF cookie may not be Secure.
        writeFileSync(
          join(uiRoot, 'config', 'cluster.yaml'),
          stringify({
            temporalGrpcAddress: proxy.address,
            host: HOST,
            port: uiPort,
            enableUi: true,
            defaultNamespace: namespace,
            cors: { cookieInsecure: true, allowOrigins: [url] },
            refreshInterval: '1m',
            notifyOnNewVersion: false,
            disableNewsFetch: true,
          }),
        );
        const ui = new ManagedProcess('ui', {
          command: uiBinary,
          args: ['--root', uiRoot, '--config', 'config', '--env', 'cluster', 'start'],
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dataDir },
          cwd: uiRoot,
          logFile: join(logDir, 'ui.log'),
          registry,
        });
        cleanups.push(() => ui.stop('SIGTERM', 10_000));
        // Ready when it serves the app and reaches the cluster through its API.
        await until(`UI at ${url}`, stepTimeoutMs, async () => {
          if (!ui.alive) throw new Hopeless(`the UI server ${ui.describeExit()}:\n${ui.tail.toString()}`);
          const [page, api] = await Promise.all([
            fetch(`${url}/`),
            fetch(`${url}/api/v1/namespaces/${encodeURIComponent(namespace)}`),
          ]);
          if (!page.ok) throw new Error(`GET / answered ${page.status}`);
          if (!api.ok) throw new Error(`GET /api/v1/namespaces/${namespace} answered ${api.status}`);
          return true;
        });
        return { value: url, detail: `${url} (ui-server ${binaries.ui?.version}), reading ${proxy.address}` };
      });
    }

    let stopping: Promise<void> | undefined;
    return {
      address: proxy.address,
      namespace,
      uiUrl,
      nodes,
      postgres: postgres.server,
      dataDir,
      logDir,
      versions: { server: binaries.server.version, ui: binaries.ui?.version, postgres: postgres.major },
      timings: steps.timings,
      allNodesReadyMs,
      proxy,
      waitForMembership,
      shardOwner: async (workflowId: string, runId?: string) => {
        const via = nodes.find((node) => node.running());
        if (!via) throw new Error('no node is running');
        const location = await describeMutableState(via.frontendAddress, {
          namespace,
          workflowId,
          ...(runId ? { runId } : {}),
        });
        return { ...location, node: nodes.find((node) => node.historyAddress === location.historyAddress) };
      },
      stop: () => {
        stopping ??= stopStarted().then(() => {
          // Logs stay for a look after the run; the next start replaces them.
          if (!options.keepData)
            for (const dir of [configDir, join(dataDir, 'ui')]) rmSync(dir, { recursive: true, force: true });
        });
        return stopping;
      },
    };
  } catch (error) {
    await stopStarted();
    if (error instanceof ClusterStartError)
      log(`cluster start failed at step "${error.step}"; stopped what it had started (logs in ${logDir})`);
    throw error;
  }
}
