// Node: every trajectory of the corpus through agentRun with the replay provider on a Temporal dev server,
// with and without ageObservations. Per run: rounds, compactions, elisions, fallbacks, peak context
// tokens, history events and bytes (total and per round, across continue-as-new), wall time.
// The question: how does workflow history grow with an agent run — each `chat` input carries the
// whole conversation again, which is the known scaling limit of agents on Temporal.
// Run: `npm run bench:agent` (uses TEMPORAL_ADDRESS, else starts a dev server with dev/dev-server.ts)
// on the repository's trajectories; `-- --corpus DIR` (or COMPACTOR_EXTENDED_CORPUS) adds the extended corpus.
// Figures are written to bench/README.md, section "Agent runs"; the raw rows to bench/results/agent.json.
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

function section(rows: Row[], machine: string, corpusLabel: string): string {
  const plain = rows.filter((row) => !row.ageObservations);
  const aged = rows.filter((row) => row.ageObservations);
  return [
    START_MARKER,
    '## Agent runs',
    '',
    `Every trajectory of ${corpusLabel} through \`agentRun\` with the replay provider on a`,
    `Temporal dev server: one replay backend with a ${groupDigits(CONTEXT_WINDOW)}-token window and ${groupDigits(MAX_OUTPUT_TOKENS)} tokens reserved`,
    'for the answer (room 28,000 tokens of o200k BPE), compaction defaults otherwise (keepRecent 8, trigger 0.8 of the room),',
    'the built-in extractive summarizer, no tool declarations. Each chat round is one `chat` activity',
    'and one `replayTool` activity per tool call. History figures add up every run of a',
    'continue-as-new chain (`describe().historyLength` / `historySize`). Runs: three at a time on one worker.',
    '',
    'Reproduce: `npm run bench:agent` (the repository set), `npm run bench:agent -- --corpus DIR` (with the extended corpus, ~3 minutes); progress on stderr; raw rows in `bench/results/agent.json`.',
    '',
    `Machine: ${machine}.`,
    '',
    '### ageObservations off',
    '',
    table(plain),
    '',
    `Total: ${totals(plain)}.`,
    '',
    '### ageObservations on',
    '',
    table(aged),
    '',
    `Total: ${totals(aged)}.`,
    '',
    '**Reading it.** A round costs about 13 history events whatever the trajectory (workflow tasks, the',
    '`chat` activity, one activity per tool call, a search-attribute upsert), but its bytes follow the',
    'context: every `chat` input carries the whole conversation again, so bytes per round track the',
    "context size (tens of KB at a 28k-token room), and a run's history is the sum of its context sizes.",
    'Compaction bounds each term, so history grows linearly with the rounds instead of with their',
    "square; Temporal's `continueAsNewSuggested` then cuts the longest runs into 2-3 runs of about 4 MB.",
    'ageObservations elides more and summarizes less, which keeps more turns verbatim and so sends',
    'slightly more per round. `ContextExhausted` runs hit a recorded tool result bigger than the whole',
    "room (moto-pr_6055's 100,266-char read at round 2, the `find` of 650,000 characters in generated_huge-result, and jackson-databind-4304's 666,865 with the extended corpus);",
    "their figures stop there, and that single result also exceeds Temporal's 512 KB payload warning",
    '(the hard limit is 2 MB). These runs have the payload store off; with it on',
    '(`COMPACTOR_PAYLOAD_STORE`) every chat request is a claim and a round costs what it adds, not what',
    'the context holds: see [Long agent runs](#long-agent-runs-the-payload-store-on-and-off).',
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
    const text = section(rows, machine, corpus.label);
    writeReadme(text);
    process.stdout.write(`${text}\n`);
  } finally {
    await server?.stop();
    trajectoryDir.remove();
  }
}

await main();
