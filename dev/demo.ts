// Node only, dev only: `npm run demo` — the quick start. Starts a local Temporal
// dev server (unless TEMPORAL_ADDRESS is set), a worker in this process, and an agentRun that
// replays a bundled real trajectory through a window small enough to force several compactions.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client, WorkflowFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { loadConfig, type CompactorConfig } from '../src/config.js';
import { summarizerFromConfig } from '../src/worker/summarizer-from-config.js';
import {
  describeRunUsage,
  groupDigits,
  renderCompactionTable,
  type CompactionHistory,
} from '../src/core/agent/compaction-history.js';
import { openingMessages } from '../src/core/agent/trajectory.js';
import { agentRunStaticMetadata } from './static-metadata.js';
import { startCodecServer, type CodecServer } from '../src/payloads/codec-server.js';
import { startDevServer, type DevServer } from './dev-server.js';
import { payloadConverterFromConfig } from '../src/payloads/index.js';
import { describePayloadStore, type PayloadStoreLocation } from '../src/payloads/store-location.js';
import { connectTemporal } from '../src/worker/temporal-connection.js';
import { compactorPlugin } from '../src/worker/plugin.js';
import { installQuietTelemetryRuntime } from '../src/telemetry/metrics.js';
import { workflowCode } from '../src/worker/create-worker.js';
import {
  agentRunQueries,
  agentRun,
  type AgentRunResult,
  type AgentRunWorkflowInput,
} from '../src/workflows/agent-run.js';

/** The bundled MIT trajectory the demo replays (see examples/trajectories/ATTRIBUTION.md). */
export const DEMO_TRAJECTORY = 'openhands_gpt4o_Project-MONAI__MONAI-3715';
/** The replayed model's window: small enough that the 61-message run compacts several times. */
export const DEMO_CONTEXT_WINDOW = 9_000;
export const DEMO_MAX_OUTPUT_TOKENS = 1_000;
/**
 * The demo's payload store unless COMPACTOR_PAYLOAD_STORE says otherwise: `.payload-store/` in the
 * project (gitignored). Not a temporary directory, because a run on a server that outlives the
 * demo (TEMPORAL_ADDRESS, `--keep-server`) needs its payloads afterwards, and the store dedups: a
 * second demo run of the same trajectory adds little more than its manifests.
 */
export const DEMO_PAYLOAD_STORE = fileURLToPath(new URL('../.payload-store', import.meta.url));

export interface DemoOptions {
  /** Keep the dev server (and its UI), the codec server and the worker running after the run until Ctrl-C. @default false */
  keepServer?: boolean;
  /** Trajectory name under `trajectoryDir`. @default DEMO_TRAJECTORY */
  trajectory?: string;
  /** @default the repository's examples/trajectories */
  trajectoryDir?: string;
  /** @default DEMO_CONTEXT_WINDOW */
  contextWindow?: number;
  /** Serve the dev server's UI. @default true */
  ui?: boolean;
  env?: Readonly<Record<string, string | undefined>>;
  flags?: Readonly<Record<string, unknown>>;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  /** Resolves when a kept server and worker should stop (tests: given the run); @default SIGINT/SIGTERM */
  untilStopped?: (run: { client: Client; workflowId: string }) => Promise<void>;
}

export interface DemoOutcome {
  workflowId: string;
  status: 'completed' | 'failed';
  rounds: number;
  compactions: CompactionHistory;
  uiUrl: string | undefined;
  /** The codec server the dev server's UI decodes payloads through (stopped by now), when the demo started one. */
  codecServerUrl: string | undefined;
}

const defaultTrajectoryDir = (): string => fileURLToPath(new URL('../examples/trajectories', import.meta.url));

function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

/**
 * Follows the run's event history on the server (long polls; no worker involved) and calls
 * `onRound` for every `chat` activity scheduled (one per round) and `onSummarize` for every
 * `summarize` activity; follows continue-as-new; returns when the run closes.
 */
async function followHistory(
  client: Client,
  namespace: string,
  workflowId: string,
  onRound: (round: number) => void,
  onSummarize: (round: number) => void,
): Promise<void> {
  let runId: string | undefined;
  let nextPageToken: Uint8Array | undefined;
  let rounds = 0;
  for (;;) {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace,
      execution: { workflowId, ...(runId === undefined ? {} : { runId }) },
      waitNewEvent: true,
      ...(nextPageToken === undefined ? {} : { nextPageToken }),
    });
    for (const event of page.history?.events ?? []) {
      const activity = event.activityTaskScheduledEventAttributes?.activityType?.name;
      if (activity === 'chat') onRound(++rounds);
      if (activity === 'summarize') onSummarize(rounds + 1);
      const continued = event.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
      if (continued) {
        runId = continued;
        nextPageToken = undefined;
        continue;
      }
      const closed =
        event.workflowExecutionCompletedEventAttributes ??
        event.workflowExecutionFailedEventAttributes ??
        event.workflowExecutionCanceledEventAttributes ??
        event.workflowExecutionTerminatedEventAttributes ??
        event.workflowExecutionTimedOutEventAttributes;
      if (closed) return;
    }
    if (page.nextPageToken !== undefined && page.nextPageToken !== null && page.nextPageToken.length > 0)
      nextPageToken = page.nextPageToken;
  }
}

/**
 * Runs the demo and returns its outcome. Prints progress per round, then the compaction table and
 * the UI link. Never leaves a server or a worker behind unless `keepServer` is set.
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoOutcome> {
  const stdout = options.stdout ?? ((text: string) => process.stdout.write(text));
  const stderr = options.stderr ?? ((text: string) => process.stderr.write(text));
  const env = options.env ?? process.env;
  const config: CompactorConfig = loadConfig({ env, flags: options.flags ?? {} });
  const trajectoryDir = options.trajectoryDir ?? defaultTrajectoryDir();
  const trajectory = options.trajectory ?? DEMO_TRAJECTORY;
  const contextWindow = options.contextWindow ?? config.contextBudget ?? DEMO_CONTEXT_WINDOW;
  const { summarizer, describe } = summarizerFromConfig(config);
  const payloads = payloadConverterFromConfig(config, {
    defaultStore: { kind: 'file', directory: DEMO_PAYLOAD_STORE },
  });

  let server: DevServer | undefined;
  let codecServer: CodecServer | undefined;
  // The demo's own dev server, when it starts one, wins over the configured address and namespace.
  let devServerTarget: { address: string; namespace: string } | undefined;
  try {
    if (config.temporalAddress === undefined) {
      const ui = options.ui ?? true;
      // The UI shows claims and ciphertext as they are unless it has a codec server to ask; the
      // dev server learns its address at start, so the codec server comes first (on a free port)
      // and learns the UI's origin once the dev server has picked its port.
      if (ui && payloads.codec !== undefined) {
        codecServer = await startCodecServer({
          dataConverter: payloads.dataConverter,
          port: 0,
          allowedOrigins: config.codecServerOrigins,
          inlineLimit: config.codecServerInlineLimit,
          log: (line) => stderr(`codec server: ${line}\n`),
        });
      }
      stderr('Starting a local Temporal dev server (first run installs the temporal CLI into .temporal/)...\n');
      server = await startDevServer({
        ui,
        extraArgs: codecServer === undefined ? [] : ['--ui-codec-endpoint', codecServer.url],
      });
      devServerTarget = { address: server.address, namespace: server.namespace };
      stderr(
        `Temporal dev server at ${server.address}${server.uiUrl === undefined ? '' : `, UI at ${server.uiUrl}`}\n`,
      );
      if (codecServer !== undefined && server.uiUrl !== undefined) {
        codecServer.allowOrigin(server.uiUrl);
        stderr(
          `Codec server at ${codecServer.url} (the UI decodes payloads through it: claims resolved, decompressed${config.codecKeyring === undefined ? '' : ', decrypted'})\n`,
        );
      }
    }
    const { connection, namespace } = await connectTemporal(config, { kind: 'client', env, ...devServerTarget });
    const { connection: nativeConnection } = await connectTemporal(config, {
      kind: 'worker',
      env,
      ...devServerTarget,
    }).catch(async (error: unknown) => {
      await connection.close();
      throw error;
    });
    try {
      // Worker and client set up as a user's would be: through the plugin (codec and store, tracing when on).
      const plugin = compactorPlugin({
        config,
        summarizer,
        dataConverter: payloads.dataConverter,
        activities: { trajectoryDir },
        warn: (message) => stderr(`${message}\n`),
      });
      const client = new Client({ connection, namespace, plugins: [plugin] });
      const taskQueue = `${config.taskQueue}-demo`;
      stderr(`Summarizer: ${describe}\n`);
      stderr(`Payloads: ${payloads.describe}\n`);
      if (plugin.tracing !== undefined) stderr(`Tracing: ${plugin.tracing.describe}\n`);
      if (config.prometheusAddress !== undefined)
        stderr(`Metrics: curl http://${config.prometheusAddress}/metrics (while the demo runs)\n`);
      const worker = await Worker.create({
        connection: nativeConnection,
        namespace,
        taskQueue,
        ...workflowCode({ workflowBundlePath: config.workflowBundle }),
        plugins: [plugin],
      });
      const opening = openingMessages(JSON.parse(readFileSync(`${trajectoryDir}/${trajectory}.json`, 'utf8')));
      const workflowId = `demo-${trajectory}-${Date.now().toString(36)}`;
      stdout(
        `Replaying ${trajectory} through agentRun (window ${groupDigits(contextWindow)} tokens), workflow ${workflowId}\n`,
      );
      const uiUrl =
        server?.uiUrl === undefined ? undefined : `${server.uiUrl}/namespaces/${namespace}/workflows/${workflowId}`;
      const report = ({
        status,
        rounds,
        compactions,
      }: Omit<DemoOutcome, 'workflowId' | 'uiUrl' | 'codecServerUrl'>): void => {
        const { totals, recent, usage } = compactions;
        stdout(
          `\nDone: ${status} after ${rounds} rounds with ${totals.compactions} compactions.\n\n${renderCompactionTable(recent, totals.compactions - recent.length + 1)}\n\n`,
        );
        stdout(`Cost: ${describeRunUsage(usage)}.\n\n`);
        stdout(
          uiUrl === undefined
            ? `Inspect it: temporal-compactor history ${workflowId}\n`
            : `Inspect it in the Temporal UI: ${uiUrl}\n`,
        );
        stdout(
          inspectCommands({
            workflowId,
            address: devServerTarget?.address ?? config.temporalAddress,
            namespace,
            store: payloads.store,
            s3Endpoint: config.s3Endpoint,
            keyed: config.codecKeyring !== undefined,
            serverStops: server !== undefined && options.keepServer !== true,
          }),
        );
      };
      const outcome = await worker.runUntil(async () => {
        const input: AgentRunWorkflowInput = {
          messages: opening,
          model: { provider: 'replay', trajectory, contextWindow, maxOutputTokens: DEMO_MAX_OUTPUT_TOKENS },
          compaction: {
            ageObservations: true,
            ageMinChars: 1000,
            ageReclaimMin: 4000,
            summarizerModel: describe,
            ...(config.summarizerContextWindow === undefined
              ? {}
              : { summarizerContextWindow: config.summarizerContextWindow }),
          },
          maxRounds: 1000,
        };
        // What the UI shows above the run: what it replays, through which window, with which compaction.
        const handle = await client.workflow.start(agentRun, {
          taskQueue,
          workflowId,
          args: [input],
          ...agentRunStaticMetadata(input, `demo · ${trajectory} · window ${groupDigits(contextWindow)} tokens`),
        });
        let printed = 0;
        // Progress from the server's event history: one line per round, as the `chat` activity is scheduled.
        const following = followHistory(
          client,
          namespace,
          workflowId,
          (round) => {
            printed = round;
            stdout(`  round ${String(round).padStart(3)} · chat\n`);
          },
          (round) => stdout(`  round ${String(round).padStart(3)} · summarize (compacting before the chat)\n`),
        ).catch((error: unknown) =>
          stderr(`(progress unavailable: ${error instanceof Error ? error.message : String(error)})\n`),
        );
        const ran = await handle.result().then(
          (result: AgentRunResult) => ({
            status: 'completed' as const,
            rounds: result.rounds,
            compactions: result.compactions,
          }),
          async (error: unknown) => {
            if (!(error instanceof WorkflowFailedError)) throw error;
            stderr(`The run failed: ${error.cause?.message ?? error.message}\n`);
            return {
              status: 'failed' as const,
              rounds: printed,
              compactions: await handle.query(agentRunQueries.compactions),
            };
          },
        );
        await following;
        report(ran);
        // The worker keeps polling with the servers (inside runUntil), so the run's queries and its
        // Current Details in the UI keep working until Ctrl-C.
        if (options.keepServer === true) {
          const kept = [
            ...(server === undefined ? [] : ['dev server']),
            ...(codecServer === undefined ? [] : ['codec server']),
            'worker',
          ];
          stdout(
            `The ${kept.length === 1 ? 'worker keeps' : `${kept.slice(0, -1).join(', ')} and worker keep`} running (--keep-server): the run's queries and Current Details work; press Ctrl-C to stop.\n`,
          );
          await (options.untilStopped ?? waitForSignal)({ client, workflowId });
        }
        return ran;
      });
      return { workflowId, ...outcome, uiUrl, codecServerUrl: codecServer?.url };
    } finally {
      await nativeConnection.close();
      await connection.close();
    }
  } finally {
    await server?.stop();
    await codecServer?.close();
  }
}

/** A value as a POSIX shell reads it back: as it is when it is plain, else in single quotes. */
function shellWord(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The `history` and `session` commands of the demo's run, ready to paste: with the settings that
 * reach its server and its payload store (the run's payloads are claims there: without the store
 * the commands could not read them), the codec key by reference, never by value.
 */
export function inspectCommands(run: {
  workflowId: string;
  address: string | undefined;
  namespace: string;
  store: PayloadStoreLocation;
  s3Endpoint: string | undefined;
  keyed: boolean;
  serverStops: boolean;
}): string {
  const settings = [
    run.address === undefined ? undefined : `TEMPORAL_ADDRESS=${shellWord(run.address)}`,
    `TEMPORAL_NAMESPACE=${shellWord(run.namespace)}`,
    `COMPACTOR_PAYLOAD_STORE=${shellWord(run.store.kind === 'off' ? 'off' : describePayloadStore(run.store))}`,
    run.store.kind === 's3' && run.s3Endpoint !== undefined
      ? `COMPACTOR_S3_ENDPOINT=${shellWord(run.s3Endpoint)}`
      : undefined,
    run.keyed ? 'COMPACTOR_CODEC_KEY="$COMPACTOR_CODEC_KEY"' : undefined,
  ].filter((setting) => setting !== undefined);
  const prefix = settings.join(' ');
  const when = run.serverStops ? ' (while its server runs: npm run demo -- --keep-server)' : '';
  return `Read the run from a shell${when}:\n  ${prefix} npx temporal-compactor history ${shellWord(run.workflowId)}\n  ${prefix} npx temporal-compactor session ${shellWord(run.workflowId)}\n`;
}

/**
 * Quiet the SDK's own logs for the demo: progress lines, not a wall of logs. With a
 * `prometheusAddress` (COMPACTOR_PROMETHEUS_ADDRESS) the Runtime also serves the metrics there.
 */
export function installQuietRuntime(prometheusAddress?: string): void {
  installQuietTelemetryRuntime(prometheusAddress);
}
