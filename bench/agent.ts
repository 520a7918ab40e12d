// Node: every trajectory of the corpus through agentRun with the replay provider on a Temporal dev server,
// with and without ageObservations. Per run: rounds, compactions, elisions, fallbacks, peak context
// tokens, history events and bytes (total and per round, across continue-as-new), wall time.
// The question: how does workflow history grow with an agent run — each `chat` input carries the
// whole conversation again, which is the known scaling limit of agents on Temporal.
// Run: `npm run bench:agent` (uses TEMPORAL_ADDRESS, else starts a dev server with dev/dev-server.ts)
// on the repository's trajectories; `-- --corpus DIR` (or COMPACTOR_EXTENDED_CORPUS) adds the extended corpus.
// The table with ageObservations off and both halves' totals are written to bench/README.md, section "Agent
// runs"; both tables to stdout; the raw rows to bench/results/agent.json.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { startDevServer, type DevServer } from '../dev/dev-server.js';
import { agentRun, createExtractiveSummarizer, type CompactionRecord, type SessionReference } from '../src/index.js';
import { compactionRecordsFromSession, groupDigits } from '../src/core/agent/compaction-history.js';
import { createActivities } from '../src/activities/index.js';
import type { AgentRunWorkflowInput } from '../src/shared/agent-run.js';
import { readSessionLines } from '../src/client/session-reader.js';
import { openingMessages } from '../src/core/agent/trajectory.js';
import { benchmarkCorpus, createTrajectoryDir, type Trajectory } from '../corpus/index.js';

const README = fileURLToPath(new URL('./README.md', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/agent.json', import.meta.url));
const START_MARKER = '<!-- bench:agent:start -->';
const END_MARKER = '<!-- bench:agent:end -->';
/** A realistic small window: most recordings need several compactions, the largest results do not fit at all. */
const CONTEXT_WINDOW = 32_000;
const MAX_OUTPUT_TOKENS = 4_000;
const CONCURRENCY = 3;

interface Row {
  name: string;
  ageObservations: boolean;
  outcome: string;
  rounds: number;
  compactions: number;
  summaries: number;
  elisions: number;
  compactionFallbacks: number;
  backendFallbacks: number;
  peakContextTokens: number;
  runs: number;
  events: number;
  historyBytes: number;
  wallMs: number;
}

function progress(line: string): void {
  process.stderr.write(`${line}\n`);
}

async function historyOf(
  client: Client,
  namespace: string,
  workflowId: string,
): Promise<{ runs: number; events: number; bytes: number }> {
  const { executions } = await client.workflowService.listWorkflowExecutions({
    namespace,
    query: `WorkflowId = '${workflowId}'`,
  });
  let events = 0;
  let bytes = 0;
  for (const execution of executions) {
    const description = await client.workflow.getHandle(workflowId, execution.execution?.runId ?? undefined).describe();
    events += description.historyLength;
    bytes += description.historySize ?? 0;
  }
  return { runs: executions.length, events, bytes };
}

async function runOne(
  client: Client,
  namespace: string,
  taskQueue: string,
  trajectory: Trajectory,
  ageObservations: boolean,
): Promise<Row> {
  const name = trajectory.name;
  const workflowId = `bench-agent-${name}-${ageObservations ? 'age' : 'plain'}-${Date.now().toString(36)}`;
  const input: AgentRunWorkflowInput = {
    messages: openingMessages(trajectory.messages),
    model: { provider: 'replay', trajectory: name, contextWindow: CONTEXT_WINDOW, maxOutputTokens: MAX_OUTPUT_TOKENS },
    compaction: { ageObservations },
    maxRounds: 1000,
  };
  const started = performance.now();
  const handle = await client.workflow.start(agentRun, { taskQueue, workflowId, args: [input] });
  let outcome = 'completed';
  let rounds = 0;
  let compactions: CompactionRecord[] = [];
  let sessionFrom: string | SessionReference = workflowId;
  let backendFallbacks = 0;
  let peakContextTokens = 0;
  try {
    const result = await handle.result();
    ({ rounds, backendFallbacks, peakContextTokens } = result);
    sessionFrom = result.session;
  } catch (error) {
    if (!(error instanceof WorkflowFailedError)) throw error;
    outcome = error.cause instanceof ApplicationFailure ? `failed: ${error.cause.type}` : 'failed';
    rounds = -1;
  }
  // Every compaction, from the transcript the run recorded (its result keeps only the recent ones).
  const session = await readSessionLines(client, sessionFrom);
  compactions = compactionRecordsFromSession(session);
  if (rounds < 0)
    rounds = session.filter((line) => line.type === 'message' && line.message.role === 'assistant').length;
  const wallMs = performance.now() - started;
  const history = await historyOf(client, namespace, workflowId);
  return {
    name,
    ageObservations,
    outcome,
    rounds,
    compactions: compactions.length,
    summaries: compactions.filter((record) => record.kind === 'summary').length,
    elisions: compactions.reduce((sum, record) => sum + record.elided, 0),
    compactionFallbacks: compactions.filter((record) => record.fallback).length,
    backendFallbacks,
    peakContextTokens,
    runs: history.runs,
    events: history.events,
    historyBytes: history.bytes,
    wallMs,
  };
}

function kb(bytes: number): string {
  return `${groupDigits(Math.round(bytes / 1024))} KB`;
}

function table(rows: readonly Row[]): string {
  const lines = [
    '| trajectory | ageObservations | outcome | rounds | compactions (summaries) | elisions | fallbacks (trim / backend) | peak context tokens | runs | history events (per round) | history bytes (per round) | wall s |',
    '|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const row of rows) {
    const perRound = (value: number): number => (row.rounds === 0 ? 0 : value / row.rounds);
    lines.push(
      `| ${row.name} | ${row.ageObservations ? 'on' : 'off'} | ${row.outcome.replace('failed: RunFailed.', '')} | ${row.rounds} | ${row.compactions} (${row.summaries}) | ${row.elisions} | ${row.compactionFallbacks} / ${row.backendFallbacks} | ${row.outcome === 'completed' ? groupDigits(row.peakContextTokens) : '–'} | ${row.runs} | ${groupDigits(row.events)} (${perRound(row.events).toFixed(1)}) | ${kb(row.historyBytes)} (${kb(perRound(row.historyBytes))}) | ${(row.wallMs / 1000).toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}

function totals(rows: readonly Row[]): string {
  const sum = (pick: (row: Row) => number) => rows.reduce((total, row) => total + pick(row), 0);
  const rounds = sum((row) => row.rounds);
  const bytes = sum((row) => row.historyBytes);
  return `${rows.length} runs, ${groupDigits(rounds)} rounds, ${sum((row) => row.compactions)} compactions, ${groupDigits(sum((row) => row.events))} history events, ${kb(bytes)} of history (${kb(bytes / Math.max(1, rounds))} per round), ${(sum((row) => row.wallMs) / 1000).toFixed(0)} s of run time`;
}

/** The README's section: the table with `ageObservations` off, the totals of both halves. */
function section(rows: Row[], machine: string, command: string): string {
  const plain = rows.filter((row) => !row.ageObservations);
  const aged = rows.filter((row) => row.ageObservations);
  return [
    START_MARKER,
    '## Agent runs',
    '',
    `Every corpus trajectory through \`agentRun\` with the replay provider on a dev server: a ${groupDigits(CONTEXT_WINDOW)}-token`,
    `window (${groupDigits(MAX_OUTPUT_TOKENS)} reserved for the answer), compaction defaults, ${CONCURRENCY} runs at a time on one worker.`,
    'History figures add up every run of a continue-as-new chain.',
    '',
    `Command: \`${command}\` (raw rows in \`bench/results/agent.json\`). Date: ${new Date().toISOString().slice(0, 10)}.`,
    `Machine: ${machine}.`,
    '',
    table(plain),
    '',
    `Total: ${totals(plain)}.`,
    `With \`ageObservations\` on: Total: ${totals(aged)}.`,
    '',
    '**How to read it.** A round is about 13 events, but its bytes follow the context, which compaction',
    'bounds. An outcome other than `completed` names the failure that ended the run. With the payload',
    'store on a round costs what it adds: [Long agent runs](#long-agent-runs-the-payload-store-on-and-off).',
    END_MARKER,
  ].join('\n');
}

function writeReadme(text: string): void {
  let readme = '';
  try {
    readme = readFileSync(README, 'utf8');
  } catch {
    readme = '# Benchmarks\n';
  }
  const start = readme.indexOf(START_MARKER);
  const end = readme.indexOf(END_MARKER);
  const next =
    start >= 0 && end > start
      ? readme.slice(0, start) + text + readme.slice(end + END_MARKER.length)
      : `${readme.trimEnd()}\n\n${text}\n`;
  writeFileSync(README, next);
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
  // The trajectories first (a bad --corpus stops here), written where the replay provider loads them by name.
  const corpus = benchmarkCorpus();
  progress(`trajectories: ${corpus.label}`);
  const trajectoryDir = createTrajectoryDir(corpus.trajectories);
  let server: DevServer | undefined;
  let address = process.env.TEMPORAL_ADDRESS;
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  try {
    if (address === undefined || address === '') {
      server = await startDevServer({ ui: false });
      address = server.address;
      progress(`dev server at ${address}`);
    }
    const connection = await Connection.connect({ address });
    const client = new Client({ connection, namespace });
    const nativeConnection = await NativeConnection.connect({ address });
    const taskQueue = `bench-agent-${Date.now().toString(36)}`;
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('../src/workflows/index.ts', import.meta.url)),
      logger: new DefaultLogger('ERROR'),
    });
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace,
      taskQueue,
      workflowBundle,
      activities: createActivities({ summarizer: createExtractiveSummarizer(), trajectoryDir: trajectoryDir.dir }),
    });
    const rows: Row[] = [];
    await worker.runUntil(async () => {
      const jobs = corpus.trajectories.flatMap((trajectory) =>
        [false, true].map((ageObservations) => ({ trajectory, ageObservations })),
      );
      let next = 0;
      const lane = async (): Promise<void> => {
        for (let job = jobs[next++]; job !== undefined; job = jobs[next++]) {
          const row = await runOne(client, namespace, taskQueue, job.trajectory, job.ageObservations);
          rows.push(row);
          progress(
            `${row.name} age=${row.ageObservations}: ${row.outcome}, ${row.rounds} rounds, ${row.compactions} compactions, ${row.events} events, ${kb(row.historyBytes)}, ${(row.wallMs / 1000).toFixed(1)} s`,
          );
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, lane));
    });
    await nativeConnection.close();
    await connection.close();
    rows.sort((left, right) =>
      left.name < right.name
        ? -1
        : left.name > right.name
          ? 1
          : Number(left.ageObservations) - Number(right.ageObservations),
    );
    const machine = `${availableParallelism()} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}, ${process.platform}/${process.arch}, load average ${loadavg()[0]?.toFixed(1)} at the end`;
    mkdirSync(fileURLToPath(new URL('./results/', import.meta.url)), { recursive: true });
    writeFileSync(
      RESULTS,
      `${JSON.stringify({ contextWindow: CONTEXT_WINDOW, maxOutputTokens: MAX_OUTPUT_TOKENS, machine, corpus: corpus.label, rows }, null, 2)}\n`,
    );
    const command = `npm run bench:agent${corpus.extendedDir === undefined ? '' : ` -- --corpus ${corpus.extendedDir}`}`;
    const text = section(rows, machine, command);
    writeReadme(text);
    const aged = rows.filter((row) => row.ageObservations);
    process.stdout.write(`${text}\n\nageObservations on:\n\n${table(aged)}\n`);
  } finally {
    await server?.stop();
    trajectoryDir.remove();
  }
}

await main();
