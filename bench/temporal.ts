// Node: what durability costs — the same compactions in-process (`Compactor`) and through the
// `compactConversation` workflow on a Temporal dev server, with the same instant deterministic
// fake summarizer, so the difference is Temporal's: scheduling, persistence, payload conversion.
// Reports the median latency of each, their ratio, and the history events and bytes per compaction.
// Run: `npm run bench:temporal` (uses TEMPORAL_ADDRESS, else starts a dev server with dev/dev-server.ts)
// on the repository's trajectories; `-- --corpus DIR` (or COMPACTOR_EXTENDED_CORPUS) adds
// conversations of the extended corpus. Figures are written to bench/README.md, section "Temporal".
import { availableParallelism, cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { startDevServer, type DevServer } from '../dev/dev-server.js';
import { Compactor, type ChatMessage, type CompactionResult } from '../src/index.js';
import { createActivities } from '../src/activities/index.js';
import { defaultCounter } from '../src/core/counting/tokens.js';
import type { CompactConversationOptions } from '../src/workflows/compact-conversation.js';
import type { compactConversation } from '../src/workflows/index.js';
import { createFakeSummarizer } from '../corpus/fake-summarizer.js';
import { benchmarkCorpus, type Trajectory } from '../corpus/index.js';
import { writeReadmeSection } from './readme-section.js';

/** Timed runs per conversation and driver, after one warm-up run each. */
const RUNS = 7;
/** A spread of shapes and sizes: small JSON tool results, coding sessions, a result of 650,000 characters. */
const FILES = [
  'taubench_gpt4o_airline_task2_trial1',
  'openhands_gpt4o_Project-MONAI__MONAI-3715',
  'generated_parallel-calls',
  'generated_long-run-100x1500',
  'swesmith_claude37_getmoto__moto-pr_6055',
  'generated_huge-result',
];
/** The same shapes from the extended corpus, when it is given (jackson-databind-4304 holds a 666,865-char result). */
const EXTENDED_FILES = [
  'sweagent_doubao_fasterxml__jackson-databind-4365',
  'claudecode_django__django-11797',
  'sweagent_doubao_fasterxml__jackson-databind-4304',
];

interface Row {
  name: string;
  messages: number;
  chars: number;
  inProcessMs: number;
  temporalMs: number;
  events: number;
  historyBytes: number;
  activities: number;
}

function progress(line: string): void {
  process.stderr.write(`${line}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

function characters(messages: readonly ChatMessage[]): number {
  return JSON.stringify(messages).length;
}

function optionsFor(messages: readonly ChatMessage[]): CompactConversationOptions {
  // Half the conversation's size: every run summarizes (no no-op, no elision-only epoch).
  return { contextBudget: Math.ceil(defaultCounter.count(messages) / 2) };
}

async function timeInProcess(messages: ChatMessage[]): Promise<{ ms: number; result: CompactionResult }> {
  const compactor = new Compactor({ ...optionsFor(messages), summarizer: createFakeSummarizer('ok') });
  let result = await compactor.compact(messages);
  const times: number[] = [];
  for (let run = 0; run < RUNS; run += 1) {
    const started = performance.now();
    result = await compactor.compact(messages);
    times.push(performance.now() - started);
  }
  return { ms: median(times), result };
}

async function timeWorkflow(
  client: Client,
  taskQueue: string,
  trajectory: Trajectory,
): Promise<{ ms: number; events: number; bytes: number; activities: number; result: CompactionResult }> {
  const execute = async (run: number) => {
    const workflowId = `bench-${trajectory.name}-${process.pid}-${Date.now().toString(36)}-${run}`;
    const started = performance.now();
    const result = await client.workflow.execute<typeof compactConversation>('compactConversation', {
      taskQueue,
      workflowId,
      args: [{ messages: trajectory.messages, options: optionsFor(trajectory.messages) }],
    });
    return { ms: performance.now() - started, result, workflowId };
  };
  await execute(-1);
  const times: number[] = [];
  let last: Awaited<ReturnType<typeof execute>> | undefined;
  for (let run = 0; run < RUNS; run += 1) {
    last = await execute(run);
    times.push(last.ms);
  }
  if (last === undefined) throw new Error('no timed run');
  const history = await client.workflow.getHandle(last.workflowId).fetchHistory();
  const events = history.events ?? [];
  return {
    ms: median(times),
    events: events.length,
    bytes: proto.temporal.api.history.v1.History.encode(history).finish().length,
    activities: events.filter(
      (event) =>
        event.activityTaskScheduledEventAttributes !== undefined && event.activityTaskScheduledEventAttributes !== null,
    ).length,
    result: last.result,
  };
}

function fmt(value: number, digits = 1): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function markdown(rows: Row[], machine: string, server: string, command: string): string {
  const lines = [
    '## Temporal',
    '',
    'What durability costs: the same compactions (with an instant fake summarizer, `contextBudget` half',
    'the conversation) in-process and through the `compactConversation` workflow on a dev server;',
    `median latency of ${RUNS} runs; history bytes: the protobuf history of one compaction.`,
    '',
    `Command: \`${command}\` (TEMPORAL_ADDRESS uses a running server). Date: ${new Date().toISOString().slice(0, 10)}.`,
    `Machine: ${machine}. Server: ${server}.`,
    '',
    '| conversation | messages | JSON chars | in-process ms | workflow ms | ratio | history events | history bytes | activities |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (row) =>
        `| ${row.name} | ${row.messages} | ${row.chars.toLocaleString('en-US')} | ${fmt(row.inProcessMs, 2)} | ${fmt(row.temporalMs)} | ${fmt(row.temporalMs / row.inProcessMs, 0)}× | ${row.events} | ${row.historyBytes.toLocaleString('en-US')} | ${row.activities} |`,
    ),
    '',
    '**How to read it.** A real summarizer call takes seconds; the workflow column is what Temporal adds',
    'to it. The events follow the summarize activities (a second when the coverage check retries); the',
    'bytes grow with the conversation, which the history holds as input, result and summarizer request.',
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // Read the conversations first: a bad --corpus stops here, before a dev server is started.
  const { trajectories, label, extendedDir } = benchmarkCorpus();
  const corpus = new Map(trajectories.map((trajectory) => [trajectory.name, trajectory]));
  const files = extendedDir === undefined ? FILES : [...FILES, ...EXTENDED_FILES];
  progress(`conversations: ${label}`);
  let devServer: DevServer | undefined;
  let address = process.env.TEMPORAL_ADDRESS;
  if (address === undefined || address === '') {
    progress('starting a Temporal dev server (TEMPORAL_ADDRESS is not set)...');
    devServer = await startDevServer({ ui: false });
    address = devServer.address;
  }
  const serverLabel =
    devServer === undefined
      ? `TEMPORAL_ADDRESS=${address}`
      : `\`temporal server start-dev\` (in-memory SQLite) started by the bench`;
  const connection = await Connection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  try {
    progress('bundling the workflows...');
    const bundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('../src/workflows/index.ts', import.meta.url)),
      logger: new DefaultLogger('WARN'),
    });
    const taskQueue = `bench-temporal-${process.pid}-${Date.now().toString(36)}`;
    const worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities: createActivities({ summarizer: createFakeSummarizer('ok') }),
    });
    const client = new Client({ connection, namespace: 'default' });
    const rows = await worker.runUntil(async () => {
      const collected: Row[] = [];
      for (const name of files) {
        const trajectory = corpus.get(name);
        if (trajectory === undefined) throw new Error(`no trajectory ${name} in ${label}`);
        const inProcess = await timeInProcess(trajectory.messages);
        const viaTemporal = await timeWorkflow(client, taskQueue, trajectory);
        // The two drivers must agree, or the comparison means nothing.
        if (JSON.stringify(inProcess.result) !== JSON.stringify(viaTemporal.result))
          throw new Error(`${name}: the workflow result differs from the in-process one`);
        const row: Row = {
          name,
          messages: trajectory.messages.length,
          chars: characters(trajectory.messages),
          inProcessMs: inProcess.ms,
          temporalMs: viaTemporal.ms,
          events: viaTemporal.events,
          historyBytes: viaTemporal.bytes,
          activities: viaTemporal.activities,
        };
        progress(
          `${name}: in-process ${fmt(row.inProcessMs, 2)} ms, workflow ${fmt(row.temporalMs)} ms, ${row.events} events, ${row.historyBytes} bytes`,
        );
        collected.push(row);
      }
      return collected;
    });
    const cpu = cpus()[0]?.model ?? 'unknown CPU';
    // The 1-minute load average at the end: on a shared machine the workflow column is what moves.
    const machine = `${cpu}, ${availableParallelism()} cores, Node ${process.version}, ${process.platform}/${process.arch}, load average ${fmt(loadavg()[0] ?? 0)} at the end of the run`;
    const command = `npm run bench:temporal${extendedDir === undefined ? '' : ` -- --corpus ${extendedDir}`}`;
    const section = markdown(rows, machine, serverLabel, command);
    writeReadmeSection('temporal', section);
    process.stdout.write(`${section}\n`);
  } finally {
    await connection.close();
    await nativeConnection.close();
    await devServer?.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench:temporal failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
