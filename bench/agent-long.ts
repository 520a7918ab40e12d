// Node: `npm run bench:agent-long` — one long agent run (1,000 rounds with a 40 KB tool
// result each, ~40 MB of transcript) through agentRun with the replay provider, with the payload
// store off and on, side by side: both runs at once on one dev server, each with its own worker
// process (bench/agent-long-worker.ts), so load on the shared machine hits them alike. Per run:
// history bytes per round (median, p99, total, across continue-as-new), round latency from the
// history's own timestamps, store bytes against the run's new content, the largest payload in
// history, failed workflow tasks. A run that stops making progress (a workflow task failing again
// and again) is terminated and reported where it stopped.
//
// Run: `npm run bench:agent-long` (uses TEMPORAL_ADDRESS, else starts a dev server);
// `-- --rounds N --result-chars N --window N` for other sizes, `-- --threshold N` for the store-on
// side's COMPACTOR_PAYLOAD_THRESHOLD; `-- --write` puts the side-by-side table into bench/README.md
// (section "Long agent runs") and the raw figures into bench/results/agent-long.json.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import proto, { type temporal } from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { generateLongRun, longRunName } from '../corpus/index.js';
import { loadConfig } from '../src/config.js';
import { groupDigits } from '../src/core/agent/compaction-history.js';
import { openingMessages } from '../src/core/agent/trajectory.js';
import { startDevServer, type DevServer } from '../dev/dev-server.js';
import { agentRun, type AgentRunResult, type ChatMessage } from '../src/index.js';
import { replaySession } from '../src/core/agent/session.js';
import type { AgentRunWorkflowInput } from '../src/shared/agent-run.js';
import { chainRunIds, HISTORY_CHANNEL_ARGS, historyEvents, readSessionLines } from '../src/client/session-reader.js';
import { payloadConverterFromConfig } from '../src/payloads/index.js';
import { payloadProtoSize } from '../src/payloads/codec.js';
import { type ChunkStoreStats } from '../src/payloads/chunk-store.js';
import { storeEnvironment } from './agent-long-store.js';
import type { LongRunWorkerSettings } from './agent-long-worker.js';
import { writeReadmeSection } from './readme-section.js';

const RESULTS = fileURLToPath(new URL('./results/agent-long.json', import.meta.url));
const WORKER = fileURLToPath(new URL('./agent-long-worker.ts', import.meta.url));
/** A run whose workflow task has failed this many times in a row is wedged: it is terminated. */
const WEDGED_ATTEMPTS = 5;
/** How often the parent checks on the runs (and prints where they are). */
const WATCH_MS = 30_000;

const { HistoryEvent } = proto.temporal.api.history.v1;

function progress(line: string): void {
  process.stderr.write(`[bench:agent-long] ${line}\n`);
}

const kb = (bytes: number): string => `${groupDigits(Math.round(bytes / 1024))} KB`;
const mb = (bytes: number): string => (bytes < 1024 * 1024 ? kb(bytes) : `${(bytes / 1024 / 1024).toFixed(1)} MB`);
const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
}

function directoryBytes(directory: string): { files: number; bytes: number } {
  const files = readdirSync(directory, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
  return {
    files: files.length,
    bytes: files.reduce((sum, entry) => sum + statSync(join(entry.parentPath, entry.name)).size, 0),
  };
}

interface Options {
  rounds: number;
  resultChars: number;
  window: number;
  maxOutputTokens: number;
  /** The store-on side's `COMPACTOR_PAYLOAD_THRESHOLD`; undefined: the default. */
  threshold: number | undefined;
  write: boolean;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '1000' },
      'result-chars': { type: 'string', default: '40000' },
      window: { type: 'string', default: '128000' },
      'max-output': { type: 'string', default: '4000' },
      threshold: { type: 'string' },
      write: { type: 'boolean', default: false },
    },
  });
  const integer = (name: string, text: string, min: number): number => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < min)
      throw new RangeError(`--${name}: expected an integer of at least ${min}, got "${text}"`);
    return value;
  };
  return {
    rounds: integer('rounds', values.rounds, 1),
    resultChars: integer('result-chars', values['result-chars'], 200),
    window: integer('window', values.window, 1000),
    maxOutputTokens: integer('max-output', values['max-output'], 1),
    threshold: values.threshold === undefined ? undefined : integer('threshold', values.threshold, 0),
    write: values.write,
  };
}

/** One side of the comparison. */
interface Side {
  label: 'store off' | 'store on';
  taskQueue: string;
  storeDirectory: string | undefined;
  client: Client;
  worker: ChildProcess;
  /** The worker's last stdout line (its driver's counters), once it exited. */
  workerReport: Promise<string>;
  workflowId: string;
}

interface Outcome {
  /** `completed`, or what stopped it: a typed failure, or `wedged: ...` for a run the bench terminated. */
  outcome: string;
  result: AgentRunResult | undefined;
  wallMs: number;
}

interface ChainFigures {
  runs: number;
  events: number;
  historyBytes: number;
  /** Bytes of history per round: from one chat activity's scheduling to the next one's (the last: to the end of the chain). */
  roundBytes: number[];
  /** Milliseconds per round, by the same boundaries, from the events' timestamps. */
  roundMs: number[];
  /** What came before the first round (the input), in bytes. */
  startBytes: number;
  largestPayload: number;
  workflowTasksFailed: number;
  /** The first failed workflow task's cause and message, if any. */
  firstTaskFailure: string | undefined;
  /** Events and their bytes by kind: the event type, with the activity's name for activity events. */
  byKind: Record<string, { events: number; bytes: number }>;
}

interface SideFigures {
  label: string;
  outcome: string;
  rounds: number;
  wallMs: number;
  chain: ChainFigures;
  transcriptLines: number;
  transcriptBytes: number;
  replays: boolean;
  store: { files: number; bytes: number } | undefined;
  /** Worker and client driver counters: plaintext before compression, and what was written. */
  storeWritten: { bytes: number; plaintextBytes: number; objects: number } | undefined;
  /** The worker process's peak resident memory (workflow threads included). */
  workerPeakRssBytes: number;
}

/** What a worker prints on its way out. */
interface WorkerReport {
  stats: ChunkStoreStats | null;
  peakRssBytes: number;
}

function startWorker(settings: LongRunWorkerSettings): { worker: ChildProcess; report: Promise<string> } {
  // process.execArgv carries tsx's loader when this runs under tsx, so the child runs TypeScript too.
  const worker = spawn(process.execPath, [...process.execArgv, WORKER], {
    env: { ...process.env, BENCH_AGENT_LONG_WORKER: JSON.stringify(settings) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  worker.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const report = new Promise<string>((resolve, reject) => {
    worker.on('error', reject);
    worker.on('exit', (code, signal) => {
      if (code === 0) resolve(output.trim().split('\n').at(-1) ?? '');
      else reject(new Error(`the ${settings.label} worker exited with ${code ?? signal}`));
    });
  });
  // Awaited once the runs are over; a worker that dies before is noticed by the watch in awaitRun.
  report.catch(() => undefined);
  return { worker, report };
}

function eventMs(event: temporal.api.history.v1.IHistoryEvent): number {
  const seconds = Number(event.eventTime?.seconds ?? 0);
  return seconds * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);
}

const EVENT_TYPE_NAMES = proto.temporal.api.enums.v1.EventType;

/** `ActivityTaskScheduled chat`, `WorkflowTaskCompleted`, ...: the event type, and for activity events the activity. */
function eventKind(event: temporal.api.history.v1.IHistoryEvent, activities: Map<string, string>): string {
  const type =
    typeof event.eventType === 'number'
      ? (EVENT_TYPE_NAMES[event.eventType] ?? String(event.eventType))
      : String(event.eventType);
  const name = type
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase()
    .replace(/(?:^|_)([a-z])/g, (_, letter: string) => letter.toUpperCase());
  const scheduled = event.activityTaskScheduledEventAttributes;
  if (scheduled !== undefined && scheduled !== null) {
    const activity = scheduled.activityType?.name ?? '?';
    activities.set(String(event.eventId), activity);
    return `${name} ${activity}`;
  }
  const scheduledId =
    event.activityTaskStartedEventAttributes?.scheduledEventId ??
    event.activityTaskCompletedEventAttributes?.scheduledEventId ??
    event.activityTaskFailedEventAttributes?.scheduledEventId ??
    event.activityTaskTimedOutEventAttributes?.scheduledEventId;
  return scheduledId === undefined || scheduledId === null
    ? name
    : `${name} ${activities.get(String(scheduledId)) ?? '?'}`;
}

/** Reads the chain's histories once, event by event (the store-off chain holds hundreds of MB), and sums them up by round. */
async function chainFigures(client: Client, workflowId: string): Promise<ChainFigures> {
  const runs = await chainRunIds(client, workflowId, (await client.workflow.getHandle(workflowId).describe()).runId);
  const figures: ChainFigures = {
    runs: runs.length,
    events: 0,
    historyBytes: 0,
    roundBytes: [],
    roundMs: [],
    startBytes: 0,
    largestPayload: 0,
    workflowTasksFailed: 0,
    firstTaskFailure: undefined,
    byKind: {},
  };
  let roundStarted: number | undefined;
  let lastEvent = 0;
  for (const [index, runId] of runs.entries()) {
    if (index % 10 === 0) progress(`reading history: run ${index + 1} of ${runs.length}`);
    const activities = new Map<string, string>();
    for await (const event of historyEvents(client, workflowId, runId)) {
      const bytes = HistoryEvent.encode(event).finish().length;
      figures.events += 1;
      figures.historyBytes += bytes;
      const kind = eventKind(event, activities);
      const tally = (figures.byKind[kind] ??= { events: 0, bytes: 0 });
      tally.events += 1;
      tally.bytes += bytes;
      lastEvent = eventMs(event);
      if (event.activityTaskScheduledEventAttributes?.activityType?.name === 'chat') {
        if (roundStarted !== undefined) figures.roundMs.push(lastEvent - roundStarted);
        roundStarted = lastEvent;
        figures.roundBytes.push(0);
      }
      const last = figures.roundBytes.length - 1;
      if (last < 0) figures.startBytes += bytes;
      else figures.roundBytes[last] = (figures.roundBytes[last] ?? 0) + bytes;
      const failed = event.workflowTaskFailedEventAttributes;
      if (failed !== undefined && failed !== null) {
        figures.workflowTasksFailed += 1;
        figures.firstTaskFailure ??= `${String(failed.cause)}: ${failed.failure?.message ?? ''}`;
      }
      const payloads = [
        ...(event.workflowExecutionStartedEventAttributes?.input?.payloads ?? []),
        ...(event.activityTaskScheduledEventAttributes?.input?.payloads ?? []),
        ...(event.activityTaskCompletedEventAttributes?.result?.payloads ?? []),
        ...(event.workflowExecutionCompletedEventAttributes?.result?.payloads ?? []),
        ...(event.workflowExecutionContinuedAsNewEventAttributes?.input?.payloads ?? []),
      ];
      for (const payload of payloads)
        figures.largestPayload = Math.max(figures.largestPayload, payloadProtoSize(payload));
    }
  }
  if (roundStarted !== undefined) figures.roundMs.push(lastEvent - roundStarted);
  return figures;
}

/**
 * Waits for the run's result; every WATCH_MS checks on it, and terminates it when its workflow task
 * has failed {@link WEDGED_ATTEMPTS} times in a row (it would retry forever).
 */
async function awaitRun(side: Side, started: number): Promise<Outcome> {
  const handle = side.client.workflow.getHandle<typeof agentRun>(side.workflowId);
  let wedged: string | undefined;
  let done = false;
  const watch = (async () => {
    while (!done) {
      await new Promise((resolve) => setTimeout(resolve, WATCH_MS));
      if (done) return;
      try {
        if (!running(side.worker)) {
          wedged = `stopped: its worker exited (${side.worker.exitCode ?? side.worker.signalCode})`;
          progress(`${side.label}: ${wedged}; terminating the run`);
          await handle.terminate(`bench:agent-long: ${wedged}`);
          return;
        }
        const description = await handle.describe();
        const attempt = description.raw.pendingWorkflowTask?.attempt ?? 0;
        progress(
          `${side.label}: ${((performance.now() - started) / 1000).toFixed(0)} s, current run ${description.runId.slice(0, 8)}: ${groupDigits(description.historyLength)} events, ${mb(Number(description.historySize ?? 0))} of history${attempt > 1 ? `, workflow task attempt ${attempt}` : ''}`,
        );
        if (attempt >= WEDGED_ATTEMPTS) {
          let cause = 'unknown cause';
          for await (const event of historyEvents(side.client, side.workflowId, description.runId)) {
            const failed = event.workflowTaskFailedEventAttributes;
            if (failed !== undefined && failed !== null)
              cause = `${String(failed.cause)}: ${failed.failure?.message ?? ''}`;
          }
          wedged = `wedged: workflow task attempt ${attempt}, ${cause}`;
          progress(`${side.label}: ${wedged}; terminating it`);
          await handle.terminate(`bench:agent-long: ${wedged}`);
          return;
        }
      } catch (error) {
        progress(
          `${side.label}: could not check on the run: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  })();
  try {
    const result = await handle.result();
    return { outcome: 'completed', result, wallMs: performance.now() - started };
  } catch (error) {
    if (!(error instanceof WorkflowFailedError)) throw error;
    const outcome =
      wedged ??
      (error.cause instanceof ApplicationFailure
        ? `failed: ${error.cause.type ?? 'ApplicationFailure'}: ${error.cause.message}`
        : `failed: ${error.cause?.message ?? error.message}`);
    return { outcome, result: undefined, wallMs: performance.now() - started };
  } finally {
    done = true;
    await watch;
  }
}

async function figuresOf(
  side: Side,
  outcome: Outcome,
  stats: ChunkStoreStats[],
  workerPeakRssBytes: number,
): Promise<SideFigures> {
  progress(`${side.label}: reading its history`);
  const chain = await chainFigures(side.client, side.workflowId);
  progress(`${side.label}: reading its transcript`);
  const lines = await readSessionLines(side.client, outcome.result?.session ?? side.workflowId, { pending: false });
  const replays =
    outcome.result === undefined
      ? false
      : JSON.stringify(replaySession(lines)) === JSON.stringify(outcome.result.messages);
  const written = stats.length === 0 ? undefined : { bytes: 0, plaintextBytes: 0, objects: 0 };
  for (const stat of stats) {
    for (const kind of Object.values(stat.written)) {
      if (written === undefined) break;
      written.bytes += kind.bytes;
      written.plaintextBytes += kind.plaintextBytes;
      written.objects += kind.objects;
    }
  }
  return {
    label: side.label,
    outcome: outcome.outcome,
    rounds:
      outcome.result?.rounds ??
      lines.filter((line) => line.type === 'message' && line.message.role === 'assistant').length,
    wallMs: outcome.wallMs,
    chain,
    transcriptLines: lines.length,
    transcriptBytes: lines.reduce((sum, line) => sum + jsonBytes(line), 0),
    replays,
    store: side.storeDirectory === undefined ? undefined : directoryBytes(side.storeDirectory),
    storeWritten: written,
    workerPeakRssBytes,
  };
}

/** The two runs side by side, a row each. */
function sideTable(figures: SideFigures[]): string {
  const row = (f: SideFigures): string => {
    const c = f.chain;
    const perRound = (q: number) => groupDigits(Math.round(quantile(c.roundBytes, q)));
    const tenth = Math.max(1, Math.floor(c.roundMs.length / 10));
    const ms = (values: readonly number[], q: number) => groupDigits(Math.round(quantile(values, q)));
    return `| ${f.label} | ${f.outcome} | ${groupDigits(f.rounds)} | ${c.runs} | ${groupDigits(c.events)} | ${mb(c.historyBytes)} | ${perRound(0.5)} | ${perRound(0.99)} | ${groupDigits(Math.max(0, ...c.roundBytes))} | ${groupDigits(c.largestPayload)} | ${c.workflowTasksFailed} | ${ms(c.roundMs, 0.5)} | ${ms(c.roundMs, 0.99)} | ${ms(c.roundMs.slice(0, tenth), 0.5)} / ${ms(c.roundMs.slice(-tenth), 0.5)} | ${(f.wallMs / 1000).toFixed(0)} | ${groupDigits(Math.round(f.workerPeakRssBytes / 1024 / 1024))} MB |`;
  };
  return [
    '| store | outcome | rounds | runs | events | history | bytes per round, median | p99 | max | largest payload | workflow tasks failed | ms per round, median | p99 | median, first / last tenth | wall s | worker peak RSS |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...figures.map(row),
  ].join('\n');
}

function section(
  figures: SideFigures[],
  opts: Options,
  trajectoryBytes: number,
  newPerRound: number,
  machine: string,
  date: string,
  command: string,
): string {
  const storeRow = (f: SideFigures): string | undefined => {
    if (f.store === undefined) return undefined;
    const ratio = (bytes: number) => (bytes / f.transcriptBytes).toFixed(2);
    return `| ${f.label} | ${mb(f.transcriptBytes)} (${groupDigits(f.transcriptLines)} lines) | ${mb(f.store.bytes)} in ${groupDigits(f.store.files)} files | **${ratio(f.store.bytes)}×** | ${f.storeWritten === undefined ? '–' : `${mb(f.storeWritten.plaintextBytes)} (${ratio(f.storeWritten.plaintextBytes)}×)`} |`;
  };
  return [
    '## Long agent runs: the payload store on and off',
    '',
    `One generated long run (\`${longRunName({ rounds: opts.rounds, resultChars: opts.resultChars })}\`: ${groupDigits(opts.rounds)} rounds of one tool call each,`,
    `every result ~${groupDigits(opts.resultChars)} characters, ${mb(trajectoryBytes)} of JSON, ${kb(newPerRound)} of new content per round at the median)`,
    `through \`agentRun\` with the replay provider at a ${groupDigits(opts.window)}-token window (${groupDigits(opts.maxOutputTokens)} reserved for the answer),`,
    'compaction defaults, the extractive summarizer; once with the payload store off (payloads inline) and once',
    'with the file store on (`COMPACTOR_PAYLOAD_STORE=file:DIR`, default threshold, no key), **both at once** on one',
    'dev server, each with its own worker process. A round is every event from the scheduling of its `chat`',
    "activity to the next one's (across continue-as-new; the last round ends with the chain), in protobuf",
    "bytes; its latency is the time between those two events by the server's timestamps (chat, tool, compaction,",
    'workflow tasks, continue-as-new).',
    '',
    `Command: \`${command}\`. Date: ${date}. Machine: ${machine}.`,
    '',
    sideTable(figures),
    '',
    "Store against the run's new content (its transcript as read back: every message and compaction record once, JSON):",
    '',
    '| store | new content | store on disk | stored / new | plaintext written (/ new) |',
    '|---|--:|--:|--:|--:|',
    ...figures.map(storeRow).filter((line): line is string => line !== undefined),
    '',
    'Where the history goes, by event (the activity named for activity events), per round: events, and their bytes on average:',
    '',
    kindTable(figures),
    '',
  ].join('\n');
}

function kindTable(figures: readonly SideFigures[]): string {
  const kinds = [...new Set(figures.flatMap((f) => Object.keys(f.chain.byKind)))];
  const total = (kind: string) => figures.reduce((sum, f) => sum + (f.chain.byKind[kind]?.bytes ?? 0), 0);
  kinds.sort((a, b) => total(b) - total(a));
  const lines = [
    `| event | ${figures.map((f) => `${f.label}: per round | bytes each | share of history`).join(' | ')} |`,
    `|---|${figures.map(() => '--:|--:|--:').join('|')}|`,
  ];
  for (const kind of kinds) {
    const cells = figures.map((f) => {
      const tally = f.chain.byKind[kind];
      if (tally === undefined) return '– | – | –';
      return `${(tally.events / Math.max(1, f.rounds)).toFixed(2)} | ${groupDigits(Math.round(tally.bytes / tally.events))} | ${((100 * tally.bytes) / f.chain.historyBytes).toFixed(1)}%`;
    });
    lines.push(`| ${kind} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** The README's section: the side-by-side table, the store against the new content, how to read them. */
function readmeSection(figures: SideFigures[], opts: Options, machine: string, date: string, command: string): string {
  const storeLines = figures.flatMap((f) => {
    if (f.store === undefined) return [];
    const ratio = (bytes: number) => (bytes / f.transcriptBytes).toFixed(2);
    const written =
      f.storeWritten === undefined
        ? ''
        : `; ${mb(f.storeWritten.plaintextBytes)} of plaintext written (${ratio(f.storeWritten.plaintextBytes)}×)`;
    return [
      `${f.label}: ${mb(f.store.bytes)} in ${groupDigits(f.store.files)} files for ${mb(f.transcriptBytes)} of new content (its transcript as`,
      `read back, every line once): **${ratio(f.store.bytes)}×**${written}.`,
    ];
  });
  return [
    '## Long agent runs: the payload store on and off',
    '',
    `One generated run (${groupDigits(opts.rounds)} rounds, each tool result ~${groupDigits(opts.resultChars)} characters) through \`agentRun\` at a`,
    `${groupDigits(opts.window)}-token window, the payload store off and the file store on, at once on one dev server. A`,
    "round is every event from its `chat` activity's scheduling to the next one's (protobuf bytes).",
    '',
    `Command: \`${command}\`. Date: ${date}. Machine: ${machine}.`,
    '',
    sideTable(figures),
    '',
    ...storeLines,
    '',
    '**How to read it.** Both transcripts replay to the final conversation. Store off, history follows',
    'the context; store on, payloads are claims and a round adds about the same bytes whatever the',
    'window holds, the rounds over 2 KB being compactions, transcript batches and continues-as-new.',
    "The tables of every event kind, and every round's figures, are on stdout and in",
    '`bench/results/agent-long.json`.',
  ].join('\n');
}

async function main(): Promise<void> {
  const opts = options();
  // Ctrl-C: the workers and the dev server (its own process group) must not outlive the bench.
  const interrupted = new Promise<never>((_, reject) => {
    const stop = (signal: string) => reject(new Error(`interrupted (${signal})`));
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  interrupted.catch(() => undefined);
  const command = `npm run bench:agent-long${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  const work = mkdtempSync(join(tmpdir(), 'bench-agent-long-'));
  const workers: ChildProcess[] = [];
  let server: DevServer | undefined;
  try {
    const name = longRunName({ rounds: opts.rounds, resultChars: opts.resultChars });
    const trajectory: ChatMessage[] = generateLongRun({ rounds: opts.rounds, resultChars: opts.resultChars });
    const trajectoryDir = join(work, 'trajectories');
    mkdirSync(trajectoryDir);
    writeFileSync(join(trajectoryDir, `${name}.json`), JSON.stringify(trajectory));
    const opening = openingMessages(trajectory);
    const perRound: number[] = [];
    for (const message of trajectory.slice(opening.length)) {
      if (message.role === 'assistant') perRound.push(0);
      perRound[perRound.length - 1] = (perRound.at(-1) ?? 0) + jsonBytes(message);
    }
    const trajectoryBytes = jsonBytes(trajectory);
    progress(`${name}: ${mb(trajectoryBytes)} of trajectory, ${groupDigits(opts.rounds)} rounds`);

    let address = process.env.TEMPORAL_ADDRESS;
    const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
    if (address === undefined || address === '') {
      server = await startDevServer({ ui: false });
      address = server.address;
      progress(`dev server at ${address}`);
    }
    const bundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('../src/workflows/index.ts', import.meta.url)),
      logger: new DefaultLogger('ERROR'),
    });
    const bundlePath = join(work, 'workflow-bundle.js');
    writeFileSync(bundlePath, bundle.code);
    // Without a store a history page holds megabytes of payloads: over gRPC's 4 MB default.
    const connection = await Connection.connect({ address, channelArgs: HISTORY_CHANNEL_ARGS });
    const stamp = Date.now().toString(36);
    const sides: Side[] = [];
    const clientStats: Array<ChunkStoreStats | undefined> = [];
    for (const label of ['store off', 'store on'] as const) {
      const storeDirectory = label === 'store on' ? join(work, 'store') : undefined;
      const payloads =
        storeDirectory === undefined
          ? undefined
          : payloadConverterFromConfig(loadConfig({ env: storeEnvironment(storeDirectory, opts.threshold) }));
      clientStats.push(payloads?.driver?.stats);
      // Every round's history names the task queue four times (two activities, two workflow tasks):
      // on its own dev server the bench uses names as short as the default `compactor`; on a shared
      // server (TEMPORAL_ADDRESS) a stamp keeps it away from earlier runs' tasks.
      const taskQueue =
        server === undefined
          ? `bench-agent-long-${label.replace(' ', '-')}-${stamp}`
          : `compactor-${label.replace('store ', '')}`;
      const { worker, report } = startWorker({
        label,
        address,
        namespace,
        taskQueue,
        bundlePath,
        trajectoryDir,
        storeDirectory,
        threshold: opts.threshold,
      });
      workers.push(worker);
      const client = new Client({
        connection,
        namespace,
        ...(payloads === undefined ? {} : { dataConverter: payloads.dataConverter }),
      });
      sides.push({
        label,
        taskQueue,
        storeDirectory,
        client,
        worker,
        workerReport: report,
        workflowId: `bench-agent-long-${label.replace(' ', '-')}-${stamp}`,
      });
    }
    const input: AgentRunWorkflowInput = {
      messages: opening,
      model: {
        provider: 'replay',
        trajectory: name,
        contextWindow: opts.window,
        maxOutputTokens: opts.maxOutputTokens,
      },
      compaction: {},
      maxRounds: opts.rounds + 10,
    };
    const started = performance.now();
    for (const side of sides)
      await side.client.workflow.start(agentRun, {
        taskQueue: side.taskQueue,
        workflowId: side.workflowId,
        args: [input],
      });
    progress('both runs started');
    const outcomes = await Promise.race([Promise.all(sides.map((side) => awaitRun(side, started))), interrupted]);
    for (const [index, side] of sides.entries())
      progress(
        `${side.label}: ${outcomes[index]?.outcome} after ${((outcomes[index]?.wallMs ?? 0) / 1000).toFixed(0)} s`,
      );
    // The workers stop (SIGTERM) and report their drivers' counters.
    for (const side of sides) side.worker.kill('SIGTERM');
    const reports = await Promise.all(sides.map((side) => side.workerReport));
    const figures: SideFigures[] = [];
    for (const [index, side] of sides.entries()) {
      const outcome = outcomes[index];
      if (outcome === undefined) continue;
      const report = JSON.parse(reports[index] ?? '{}') as Partial<WorkerReport>;
      const stats = [report.stats ?? undefined, clientStats[index]].filter(
        (stat): stat is ChunkStoreStats => stat !== undefined,
      );
      figures.push(await figuresOf(side, outcome, stats, report.peakRssBytes ?? 0));
    }
    await connection.close();

    const machine = `${availableParallelism()} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}, ${process.platform}/${process.arch}, load average ${loadavg()[0]?.toFixed(1)} at the end`;
    const date = new Date().toISOString().slice(0, 10);
    const newPerRound = quantile(perRound, 0.5);
    const text = section(figures, opts, trajectoryBytes, newPerRound, machine, date, command);
    // A trial run (other sizes, no --write) leaves the recorded figures alone.
    if (opts.write) {
      mkdirSync(fileURLToPath(new URL('./results/', import.meta.url)), { recursive: true });
      writeFileSync(
        RESULTS,
        `${JSON.stringify({ command, date, machine, options: opts, trajectoryBytes, newContentPerRoundMedian: newPerRound, figures }, null, 2)}\n`,
      );
      writeReadmeSection('agent-long', readmeSection(figures, opts, machine, date, command));
    }
    process.stdout.write(`${text}\n`);
    for (const f of figures) progress(`${f.label}: transcript replays to the result: ${f.replays}`);
  } finally {
    await stopWorkers(workers);
    await server?.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

const running = (worker: ChildProcess): boolean => worker.exitCode === null && worker.signalCode === null;

/** SIGTERM, then SIGKILL for a worker still there after 20 s (a worker whose server is gone does not finish its shutdown). */
async function stopWorkers(workers: readonly ChildProcess[]): Promise<void> {
  const exits = workers.filter(running).map(
    (worker) =>
      new Promise<void>((resolve) => {
        worker.once('exit', () => resolve());
        worker.kill('SIGTERM');
      }),
  );
  const timer = setTimeout(() => {
    for (const worker of workers) if (running(worker)) worker.kill('SIGKILL');
  }, 20_000);
  await Promise.all(exits);
  clearTimeout(timer);
}

await main();
