// Node only: `npm run cluster` — a three-node Temporal cluster on PostgreSQL on this machine,
// until Ctrl-C. The work is in scripts/cluster/index.ts (startCluster), which tests use too.
//
//   npm run cluster                     build once (cached in .temporal/), start, print the addresses
//   npm run cluster -- --keep-data      keep PostgreSQL's data at stop; the next start reuses it
//   npm run cluster -- --no-ui          without the Temporal UI server
//   npm run cluster -- --frontend-port 7233 --ui-port 8080
//   npm run cluster -- --data-dir DIR   data, configs and logs (default .temporal/cluster)
//   npm run cluster -- --build-only     build the binaries into the cache and exit (CI)
import { parseArgs } from 'node:util';
import { ensureServerBinaries, ensureUiServer } from './cluster/build.js';
import { ClusterStartError, startCluster, TEMPORAL_CACHE_DIR, type Cluster } from './cluster/index.js';

const USAGE = `usage: npm run cluster -- [--keep-data] [--no-ui] [--frontend-port N] [--ui-port N] [--data-dir DIR] [--build-only]`;

function port(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > 65_535)
    throw new Error(`${flag}: expected a port number (1-65535), got "${value}"`);
  return parsed;
}

function printAddresses(cluster: Cluster): void {
  const lines = [
    '',
    `Temporal cluster ready: ${cluster.nodes.length} nodes of temporal-server ${cluster.versions.server} on PostgreSQL ${cluster.versions.postgres}` +
      ` (all nodes ready ${(cluster.allNodesReadyMs / 1000).toFixed(1)} s after the first node started)`,
    `  frontend   ${cluster.address}   (balancer over the nodes' frontends: use this one)`,
    ...cluster.nodes.map(
      (node) =>
        `  ${node.name}     frontend ${node.frontendAddress}, history ${node.historyAddress}, matching 127.0.0.1:${node.ports.matching}, worker 127.0.0.1:${node.ports.worker}; pid ${node.pid()}`,
    ),
    `  postgres   ${cluster.postgres.address}   (user temporal; data ${cluster.postgres.dataDir})`,
    `  ui         ${cluster.uiUrl ?? '(not started: --no-ui)'}`,
    `  namespace  ${cluster.namespace}`,
    `  logs       ${cluster.logDir}`,
    '',
    `Try:  TEMPORAL_ADDRESS=${cluster.address} npm run demo`,
    'Press Ctrl-C to stop everything.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      'keep-data': { type: 'boolean', default: false },
      'no-ui': { type: 'boolean', default: false },
      'frontend-port': { type: 'string' },
      'ui-port': { type: 'string' },
      'data-dir': { type: 'string' },
      'build-only': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const log = (line: string): void => void process.stdout.write(`${line}\n`);

  if (values['build-only']) {
    const began = Date.now();
    const server = await ensureServerBinaries({ cacheRoot: TEMPORAL_CACHE_DIR, log });
    log(`temporal-server ${server.version}: ${server.built ? 'built' : 'cached'} (${server.server})`);
    if (!values['no-ui']) {
      const ui = await ensureUiServer({ cacheRoot: TEMPORAL_CACHE_DIR, log });
      log(`ui-server ${ui.version}: ${ui.built ? 'built' : 'cached'} (${ui.path})`);
    }
    log(`binaries ready in ${((Date.now() - began) / 1000).toFixed(1)} s`);
    return 0;
  }

  // Ctrl-C while starting: exit at once; the 'exit' hook of scripts/cluster/process.ts SIGKILLs
  // every process started so far (and the next start sweeps up anything recorded but left).
  // A terminal's Ctrl-C reaches us twice (directly, and relayed by tsx), so the handlers stay
  // installed and a repeat is ignored rather than killing us halfway through stopping.
  let phase: 'starting' | 'running' | 'stopping' = 'starting';
  let requestStop: () => void = () => undefined;
  const stopRequested = new Promise<void>((resolve) => (requestStop = resolve));
  const onSignal = (): void => {
    if (phase === 'starting') {
      process.stderr.write('\nInterrupted while starting: killing what was started.\n');
      process.exit(130);
    }
    if (phase === 'running') {
      phase = 'stopping';
      requestStop();
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const cluster = await startCluster({
    keepData: values['keep-data'],
    ui: !values['no-ui'],
    frontendPort: port(values['frontend-port'], '--frontend-port'),
    uiPort: port(values['ui-port'], '--ui-port'),
    dataDir: values['data-dir'],
    log,
  });
  phase = 'running';
  printAddresses(cluster);

  // Say so when a node dies while we wait (the cluster keeps serving with the other two).
  const reported = new Set<string>();
  const watcher = setInterval(() => {
    for (const node of cluster.nodes) {
      if (!node.running() && !reported.has(node.name)) {
        reported.add(node.name);
        log(`${node.name} is no longer running (see ${node.logFile})`);
      }
    }
  }, 1_000);

  await stopRequested;
  clearInterval(watcher);
  log('\nStopping the UI, the nodes, the balancer and PostgreSQL ...');
  const began = Date.now();
  await cluster.stop();
  log(
    `Stopped in ${((Date.now() - began) / 1000).toFixed(1)} s${values['keep-data'] ? `; data kept in ${cluster.dataDir}` : ''}.`,
  );
  return 0;
}

try {
  process.exitCode = await main();
} catch (error) {
  if (error instanceof ClusterStartError) process.stderr.write(`\n${error.message}\n`);
  else process.stderr.write(`\n${error instanceof Error ? error.message : String(error)}\n${USAGE}\n`);
  process.exitCode = 1;
}
