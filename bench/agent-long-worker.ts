// Node: one worker of `npm run bench:agent-long`, in its own process so the store-on and store-off
// workers each get their own event loop (in one process, the store-off run's megabyte payloads
// would hold up the other run's activities). The parent passes its settings as JSON in
// BENCH_AGENT_LONG_WORKER, stops it with SIGTERM, and reads one JSON line from stdout at the end:
// the store driver's counters and the process's peak memory. Progress goes to stderr every 50 rounds.
// The worker is set up as a user's would be: `compactorPlugin()` on `Worker.create`, with the
// prebuilt bundle production workers run (so it gets the plugin's short build id).
import { performance } from 'node:perf_hooks';
import type { Context } from '@temporalio/activity';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadConfig } from '../src/config.js';
import { compactorPlugin, createExtractiveSummarizer } from '../src/index.js';
import { payloadConverterFromConfig } from '../src/payloads/index.js';
import { storeEnvironment } from './agent-long-store.js';

/** What the parent tells a worker. */
export interface LongRunWorkerSettings {
  label: string;
  address: string;
  namespace: string;
  taskQueue: string;
  /** A workflow bundle written by the parent (bundled once for both workers). */
  bundlePath: string;
  trajectoryDir: string;
  /** The file store's directory; undefined: payloads inline (no store, no codec). */
  storeDirectory: string | undefined;
  /** `COMPACTOR_PAYLOAD_THRESHOLD` for the store; undefined: the default. */
  threshold: number | undefined;
}

const PROGRESS_EVERY = 50;

function settingsFromEnvironment(): LongRunWorkerSettings {
  const text = process.env.BENCH_AGENT_LONG_WORKER;
  if (text === undefined || text === '')
    throw new Error(
      'BENCH_AGENT_LONG_WORKER: expected the worker settings as JSON (bench/agent-long.ts starts this process)',
    );
  return JSON.parse(text) as LongRunWorkerSettings;
}

async function main(): Promise<void> {
  const settings = settingsFromEnvironment();
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const config = loadConfig({ env: storeEnvironment(settings.storeDirectory, settings.threshold) });
  // Built here rather than by the plugin, to read its driver's counters at the end.
  const payloads = settings.storeDirectory === undefined ? undefined : payloadConverterFromConfig(config);
  let rounds = 0;
  let since = performance.now();
  // Counts rounds for the progress line: one chat activity per round (a retried attempt counts again).
  const countRound = (): void => {
    rounds += 1;
    if (rounds % PROGRESS_EVERY !== 0) return;
    const now = performance.now();
    const rss = process.memoryUsage().rss / 1024 / 1024;
    process.stderr.write(
      `[bench:agent-long] ${settings.label}: ${rounds} rounds, the last ${PROGRESS_EVERY} in ${((now - since) / 1000).toFixed(1)} s, worker RSS ${rss.toFixed(0)} MB\n`,
    );
    since = now;
  };
  const roundCounter = (context: Context): { inbound: ActivityInboundCallsInterceptor } => ({
    inbound: {
      execute: async (input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) => {
        const answer: unknown = await next(input);
        if (context.info.activityType === 'chat') countRound();
        return answer;
      },
    },
  });
  const connection = await NativeConnection.connect({ address: settings.address });
  try {
    const plugin = compactorPlugin({
      config,
      summarizer: createExtractiveSummarizer(),
      activities: { trajectoryDir: settings.trajectoryDir },
      ...(payloads === undefined ? {} : { dataConverter: payloads.dataConverter }),
      tracing: 'off',
    });
    const worker = await Worker.create({
      connection,
      namespace: settings.namespace,
      taskQueue: settings.taskQueue,
      workflowBundle: { codePath: settings.bundlePath },
      interceptors: { activity: [roundCounter] },
      plugins: [plugin],
    });
    // Runs until the parent's SIGTERM (the Runtime's shutdown signals).
    await worker.run();
  } finally {
    await connection.close();
  }
  // maxRSS is in KiB: the worker's peak memory, workflow threads included.
  process.stdout.write(
    `${JSON.stringify({ stats: payloads?.driver?.stats ?? null, peakRssBytes: process.resourceUsage().maxRSS * 1024 })}\n`,
  );
}

await main();
