// Node (chaos suite support): the pieces `npm run test:chaos` assembles on a three-node cluster —
// the profile (how many runs, which scenarios), an OpenAI-compatible summarizer with realistic
// latency and injectable faults, the worker processes (`temporal-compactor worker`) with kill and
// replace, the agent runs over the bundled trajectories, and what their histories say.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, decodeTimeoutType } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { compactionRecordsFromSession, type CompactionRecord } from '../../src/core/agent/compaction-history.js';
import { replaySession, type SessionLine } from '../../src/core/agent/session.js';
import { openingMessages } from '../../src/core/agent/trajectory.js';
import type { ChatMessage } from '../../src/core/types.js';
import { historyEvents, readSessionLines } from '../../src/client/session-reader.js';
import type { AgentRunResult, AgentRunWorkflowInput } from '../../src/workflows/agent-run.js';
import {
  startFakeOpenAI,
  type FakeOpenAI,
  type RecordedRequest,
  type ScriptedResponse,
} from '../support/fake-openai.js';
import { spawnWorkerProcess, type WorkerProcess } from '../support/worker-process.js';

export const TRAJECTORY_DIR = fileURLToPath(new URL('../../examples/trajectories/', import.meta.url));
export const AGENT_QUEUE = 'chaos-agents';
export const SUMMARIZER_QUEUE = 'chaos-summarizer';
/** The summarizer's deadline per call: the 10-second hangs it meets must end at it. */
export const SUMMARIZER_TIMEOUT_MS = 8_000;

/** Prints a progress line (stderr: vitest shows it as it comes). */
export function log(line: string): void {
  process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

// ---------------------------------------------------------------------------------------------
// Profile
// ---------------------------------------------------------------------------------------------

export type Scenario = 'load' | 'worker-kills' | 'server-faults' | 'llm-faults' | 'hostile-model';
export const SCENARIOS: readonly Scenario[] = ['load', 'worker-kills', 'server-faults', 'llm-faults', 'hostile-model'];

export interface ChaosProfile {
  name: 'full' | 'ci';
  /** Concurrent agent runs per scenario (the hostile-model scenario runs at least one of each class). */
  runs: number;
  scenarios: readonly Scenario[];
  /** A worker is SIGKILLed every this many ms (uniform in the range) while runs are in flight. */
  killEveryMs: readonly [number, number];
  /** Share of summarize requests that meet a fault in the LLM-faults scenario. */
  llmFaultRate: number;
  /** Extra environment of the agent workers (`CHAOS_AGENT_WORKER_ENV='COMPACTOR_MAX_CONCURRENT_WORKFLOW_TASKS=4'`). @default none: the worker's defaults */
  agentWorkerEnv: Record<string, string>;
}

/** The scenarios a profile runs unless `CHAOS_SCENARIOS` says otherwise. */
export function profileScenarios(name: ChaosProfile['name']): readonly Scenario[] {
  // CI: no load scenario (the reference runs are the undisturbed baseline there).
  return name === 'ci' ? SCENARIOS.filter((scenario) => scenario !== 'load') : SCENARIOS;
}

/**
 * `CHAOS_PROFILE=full` (the default: 50 runs per scenario, every scenario) or `ci` (8 runs per
 * scenario, the three fault scenarios: .ci/run); `CHAOS_RUNS` and `CHAOS_SCENARIOS=load,worker-kills` override, and
 * `CHAOS_AGENT_WORKER_ENV` adds settings to the agent workers' environment.
 */
export function chaosProfile(env: Readonly<Record<string, string | undefined>> = process.env): ChaosProfile {
  const name = env.CHAOS_PROFILE === 'ci' ? 'ci' : 'full';
  // CI: fewer runs.
  const runs = Number(env.CHAOS_RUNS ?? (name === 'ci' ? 8 : 50));
  if (!Number.isInteger(runs) || runs < 1)
    throw new Error(`CHAOS_RUNS: expected a positive integer, got ${JSON.stringify(env.CHAOS_RUNS)}`);
  const scenarios = (env.CHAOS_SCENARIOS ?? profileScenarios(name).join(','))
    .split(',')
    .map((scenario) => scenario.trim())
    .filter((scenario) => scenario !== '');
  const unknown = scenarios.filter((scenario) => !SCENARIOS.some((known) => known === scenario));
  if (unknown.length > 0)
    throw new Error(`CHAOS_SCENARIOS: unknown ${unknown.join(', ')}; expected some of ${SCENARIOS.join(', ')}`);
  const agentWorkerEnv = Object.fromEntries(
    (env.CHAOS_AGENT_WORKER_ENV ?? '')
      .split(/\s+/)
      .filter((pair) => pair.includes('='))
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );
  return {
    name,
    runs,
    scenarios: SCENARIOS.filter((scenario) => scenarios.includes(scenario)),
    killEveryMs: [15_000, 30_000],
    llmFaultRate: 0.35,
    agentWorkerEnv,
  };
}

// ---------------------------------------------------------------------------------------------
// Randomness (seeded: a scenario's faults come in the same order on every run of the suite)
// ---------------------------------------------------------------------------------------------

/** mulberry32: a small seeded generator of floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

// ---------------------------------------------------------------------------------------------
// The summarizer: an OpenAI-compatible server with latency and faults
// ---------------------------------------------------------------------------------------------

export type LlmFault = 'http-500' | 'http-429' | 'malformed-json' | 'empty-content' | 'connection-reset' | 'hang-10s';
export const LLM_FAULTS: readonly LlmFault[] = [
  'http-500',
  'http-429',
  'malformed-json',
  'empty-content',
  'connection-reset',
  'hang-10s',
];

export interface ChaosSummarizer {
  baseURL: string;
  requests: RecordedRequest[];
  /** What each request met, by index: a fault, or `summary`. */
  outcomes: Array<LlmFault | 'summary'>;
  /** From now on a request meets a fault with this probability (0: none). */
  setFaultRate(rate: number): void;
  close(): Promise<void>;
}

/** The summary of a request: a function of the request alone, so every run of one input gets the same text. */
export function summaryFor(body: unknown): string {
  const messages: unknown = Reflect.get(Object(body), 'messages');
  const text = JSON.stringify(messages ?? null);
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 12);
  const last: unknown = Array.isArray(messages) ? Reflect.get(Object(messages.at(-1)), 'content') : undefined;
  const excerpt = (typeof last === 'string' ? last : JSON.stringify(last ?? '')).replace(/\s+/g, ' ').slice(0, 360);
  return `Summary ${digest} of the work so far: the agent read the code, ran the tools shown and kept notes. Where it stood: ${excerpt}`;
}

function faultResponse(fault: LlmFault): ScriptedResponse {
  switch (fault) {
    case 'http-500':
      return { kind: 'status', status: 500 };
    case 'http-429':
      return { kind: 'status', status: 429, headers: { 'retry-after': '1' } };
    case 'malformed-json':
      return { kind: 'malformed' };
    case 'empty-content':
      return { kind: 'empty' };
    case 'connection-reset':
      return { kind: 'reset' };
    case 'hang-10s':
      // Ten seconds without a byte, then the connection drops: the caller's deadline comes first.
      return { kind: 'slow', delayMs: 10_000, then: { kind: 'reset' } };
  }
}

/** Starts the summarizer: every answer takes 0.5-3 s; a share of requests (see setFaultRate) meets a fault instead. */
export async function startChaosSummarizer(seed = 11): Promise<ChaosSummarizer> {
  const server: FakeOpenAI = await startFakeOpenAI();
  const random = seededRandom(seed);
  const outcomes: Array<LlmFault | 'summary'> = [];
  let faultRate = 0;
  // Every kind comes up first, one request each, then faults at the rate, the kinds taking turns:
  // the ci profile's short runs send a dozen summarize requests, too few to meet every kind at random.
  let faults = 0;
  server.setDefault((request) => {
    const latencyMs = 500 + Math.floor(random() * 2_500);
    if (faultRate > 0 && (faults < LLM_FAULTS.length || random() < faultRate)) {
      const fault = LLM_FAULTS[faults % LLM_FAULTS.length] ?? 'http-500';
      faults += 1;
      outcomes[request.index] = fault;
      return fault === 'hang-10s'
        ? faultResponse(fault)
        : { kind: 'slow', delayMs: Math.floor(latencyMs / 4), then: faultResponse(fault) };
    }
    outcomes[request.index] = 'summary';
    return { kind: 'slow', delayMs: latencyMs, then: { kind: 'summary', text: summaryFor(request.body) } };
  });
  return {
    baseURL: server.baseURL,
    requests: server.requests,
    outcomes,
    setFaultRate: (rate) => {
      faultRate = rate;
    },
    close: () => server.close(),
  };
}

// ---------------------------------------------------------------------------------------------
// Worker processes
// ---------------------------------------------------------------------------------------------

export interface ChaosWorker {
  /** "agent-1", "summarizer", ... (a replacement keeps the name of the worker it replaces). */
  name: string;
  kind: 'agent' | 'summarizer';
  process: WorkerProcess;
  startedAt: number;
  readyAt: number;
}

export interface WorkerKill {
  at: number;
  victim: string;
  pid: number | undefined;
  /** When its replacement polled its task queue. */
  replacedAt: number;
}

/** The worker processes: three agent workers on {@link AGENT_QUEUE} and one summarizer worker on {@link SUMMARIZER_QUEUE}. */
export class WorkerPool {
  readonly workers: ChaosWorker[] = [];
  readonly kills: WorkerKill[] = [];
  /** Output of every worker that ran, for a look after a failure. */
  readonly retired: Array<{ name: string; output: string }> = [];

  constructor(
    private readonly options: {
      address: string;
      namespace: string;
      bundlePath: string;
      summarizerBaseURL: string;
      agentEnv?: Record<string, string>;
    },
  ) {}

  private env(kind: ChaosWorker['kind']): Record<string, string> {
    const common = {
      TEMPORAL_ADDRESS: this.options.address,
      TEMPORAL_NAMESPACE: this.options.namespace,
      COMPACTOR_TASK_QUEUE: AGENT_QUEUE,
      COMPACTOR_WORKFLOW_BUNDLE: this.options.bundlePath,
    };
    if (kind === 'agent')
      return {
        ...common,
        COMPACTOR_TRAJECTORY_DIR: TRAJECTORY_DIR,
        COMPACTOR_SUMMARIZER: 'extractive',
        ...this.options.agentEnv,
      };
    return {
      ...common,
      COMPACTOR_WORKER_MODE: 'activities',
      COMPACTOR_SUMMARIZER_TASK_QUEUE: SUMMARIZER_QUEUE,
      OPENAI_BASE_URL: this.options.summarizerBaseURL,
      OPENAI_API_KEY: 'chaos-summarizer-key',
      COMPACTOR_SUMMARIZER_MODEL: 'chaos-summarizer',
      COMPACTOR_SUMMARIZER_TIMEOUT: `${SUMMARIZER_TIMEOUT_MS}ms`,
    };
  }

  /** Starts a worker and waits until it polls its task queue. */
  async start(name: string, kind: ChaosWorker['kind']): Promise<ChaosWorker> {
    const startedAt = Date.now();
    const child = spawnWorkerProcess('src/cli/main.ts', this.env(kind), ['worker']);
    while (!child.output().includes('polling task queue')) {
      if (child.child.exitCode !== null || child.child.signalCode !== null)
        throw new Error(`worker ${name} exited at start:\n${child.output()}`);
      if (Date.now() - startedAt > 120_000)
        throw new Error(`worker ${name} not polling after 120 s:\n${child.output()}`);
      await sleep(100);
    }
    const worker: ChaosWorker = { name, kind, process: child, startedAt, readyAt: Date.now() };
    this.workers.push(worker);
    return worker;
  }

  async startAll(agents = 3): Promise<void> {
    await Promise.all([
      ...Array.from({ length: agents }, (_, index) => this.start(`agent-${index + 1}`, 'agent')),
      this.start('summarizer', 'summarizer'),
    ]);
  }

  /** SIGKILLs the worker called `name` and starts its replacement at once, as a supervisor would. */
  async killAndReplace(name: string): Promise<WorkerKill> {
    const index = this.workers.findIndex((worker) => worker.name === name);
    const victim = this.workers[index];
    if (victim === undefined) throw new Error(`no worker ${name}`);
    this.workers.splice(index, 1);
    const at = Date.now();
    victim.process.child.kill('SIGKILL');
    await victim.process.exited;
    this.retired.push({ name, output: victim.process.output() });
    const replacement = await this.start(name, victim.kind);
    const kill: WorkerKill = { at, victim: name, pid: victim.process.child.pid, replacedAt: replacement.readyAt };
    this.kills.push(kill);
    return kill;
  }

  /** Graceful stop (SIGTERM), then SIGKILL for any that did not exit within 15 s. */
  async stopAll(): Promise<void> {
    const stopping = this.workers.splice(0);
    for (const worker of stopping) worker.process.child.kill('SIGTERM');
    await Promise.all(
      stopping.map(async (worker) => {
        const exited = await Promise.race([worker.process.exited.then(() => true), sleep(15_000).then(() => false)]);
        if (!exited) {
          worker.process.child.kill('SIGKILL');
          await worker.process.exited;
        }
        this.retired.push({ name: worker.name, output: worker.process.output() });
      }),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

export interface ChaosInput {
  /** `<trajectory>@<window>`: runs with the same key have the same input and must end the same. */
  key: string;
  input: AgentRunWorkflowInput;
}

/**
 * The distinct inputs: both bundled trajectories (30 rounds each), each through three windows.
 * Measured with this suite's summaries: MONAI at 9,000 / 10,000 / 12,000 tokens compacts 8 / 8 / 3
 * times (4 / 4 / 0 summaries), tau-bench at 4,500 / 5,500 / 6,500 16 / 6 / 4 times (16 / 6 / 3
 * summaries); narrower windows end in RunFailed.ContextExhausted.
 */
export function chaosInputs(): ChaosInput[] {
  const plans: Array<[string, number]> = [
    ['openhands_gpt4o_Project-MONAI__MONAI-3715', 9_000],
    ['taubench_gpt4o_airline_task2_trial1', 4_500],
    ['openhands_gpt4o_Project-MONAI__MONAI-3715', 10_000],
    ['taubench_gpt4o_airline_task2_trial1', 5_500],
    ['openhands_gpt4o_Project-MONAI__MONAI-3715', 12_000],
    ['taubench_gpt4o_airline_task2_trial1', 6_500],
  ];
  return plans.map(([trajectory, contextWindow]) => {
    const recorded: unknown = JSON.parse(readFileSync(join(TRAJECTORY_DIR, `${trajectory}.json`), 'utf8'));
    if (!Array.isArray(recorded)) throw new Error(`${trajectory}: not a JSON array`);
    return {
      key: `${trajectory}@${contextWindow}`,
      input: {
        messages: openingMessages(recorded),
        model: { provider: 'replay', trajectory, contextWindow, maxOutputTokens: 1_000 },
        // Summaries on their own queue and worker; the summarize activity keeps its default timeouts.
        compaction: {
          ageObservations: true,
          ageMinChars: 1_000,
          ageReclaimMin: 4_000,
          taskQueue: SUMMARIZER_QUEUE,
          summarizerModel: 'chaos-summarizer',
        },
        maxRounds: 1_000,
      },
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Runs and what their histories say
// ---------------------------------------------------------------------------------------------

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

function eventMs(event: HistoryEvent | undefined): number {
  const time = event?.eventTime;
  if (!time) return Number.NaN;
  return Number(time.seconds ?? 0) * 1000 + Math.floor((time.nanos ?? 0) / 1e6);
}

/** An activity attempt that started after an earlier attempt of it failed or timed out. */
export interface RetriedAttempt {
  activity: string;
  attempt: number;
  startedAt: number;
  /** The last failure: its message and, for a timeout, its kind (`HEARTBEAT`, `START_TO_CLOSE`, ...). */
  lastFailure: string;
}

export interface HistoryFacts {
  /** When each round's `chat` activity was scheduled. */
  chatScheduled: number[];
  /** When each `chat` activity completed: the run's progress. */
  chatCompleted: number[];
  workflowTaskFailed: Array<{ at: number; cause: string; message: string }>;
  workflowTaskTimedOut: number[];
  retried: RetriedAttempt[];
  /** Every summarize activity: scheduled → closed, and how it closed. */
  summarizes: Array<{
    scheduledAt: number;
    closedAt: number;
    outcome: 'completed' | 'failed' | 'timedOut' | 'canceled' | 'open';
  }>;
  startedAt: number;
  closedAt: number;
  events: number;
  /** Every event's time and kind (`activityTaskScheduled`, ...), for explaining a stall. */
  timeline: Array<[number, string]>;
}

/** Reads the facts the report needs out of one run's history. */
export async function historyFacts(client: Client, workflowId: string, runId: string): Promise<HistoryFacts> {
  const facts: HistoryFacts = {
    chatScheduled: [],
    chatCompleted: [],
    workflowTaskFailed: [],
    workflowTaskTimedOut: [],
    retried: [],
    summarizes: [],
    startedAt: Number.NaN,
    closedAt: Number.NaN,
    events: 0,
    timeline: [],
  };
  const activityOf = new Map<string, string>();
  const summarizeAt = new Map<string, number>();
  let last: HistoryEvent | undefined;
  for await (const event of historyEvents(client, workflowId, runId)) {
    facts.events += 1;
    const at = eventMs(event);
    if (facts.events === 1) facts.startedAt = at;
    last = event;
    const kind = Object.keys(event).find(
      (name) => name.endsWith('EventAttributes') && Reflect.get(event, name) != null,
    );
    facts.timeline.push([at, kind === undefined ? '?' : kind.slice(0, -'EventAttributes'.length)]);
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const name = scheduled.activityType?.name ?? '?';
      activityOf.set(String(event.eventId), name);
      if (name === 'chat') facts.chatScheduled.push(at);
      if (name === 'summarize') summarizeAt.set(String(event.eventId), at);
    }
    const started = event.activityTaskStartedEventAttributes;
    if (started && (started.attempt ?? 1) > 1) {
      const timeoutType = decodeTimeoutType(started.lastFailure?.timeoutFailureInfo?.timeoutType);
      const timeout = timeoutType === undefined ? '' : ` [${timeoutType}]`;
      facts.retried.push({
        activity: activityOf.get(String(started.scheduledEventId)) ?? '?',
        attempt: started.attempt ?? 1,
        startedAt: at,
        lastFailure: `${started.lastFailure?.message ?? ''}${timeout}`,
      });
    }
    const closedActivity = (['completed', 'failed', 'timedOut', 'canceled'] as const)
      .map((outcome) => {
        const attributes =
          outcome === 'completed'
            ? event.activityTaskCompletedEventAttributes
            : outcome === 'failed'
              ? event.activityTaskFailedEventAttributes
              : outcome === 'timedOut'
                ? event.activityTaskTimedOutEventAttributes
                : event.activityTaskCanceledEventAttributes;
        return attributes ? { outcome, scheduledEventId: String(attributes.scheduledEventId) } : undefined;
      })
      .find((found) => found !== undefined);
    if (closedActivity) {
      const name = activityOf.get(closedActivity.scheduledEventId);
      if (name === 'chat' && closedActivity.outcome === 'completed') facts.chatCompleted.push(at);
      const scheduledAt = summarizeAt.get(closedActivity.scheduledEventId);
      if (scheduledAt !== undefined) {
        facts.summarizes.push({ scheduledAt, closedAt: at, outcome: closedActivity.outcome });
        summarizeAt.delete(closedActivity.scheduledEventId);
      }
    }
    const taskFailed = event.workflowTaskFailedEventAttributes;
    if (taskFailed)
      facts.workflowTaskFailed.push({
        at,
        cause: String(taskFailed.cause ?? ''),
        message: taskFailed.failure?.message ?? '',
      });
    if (event.workflowTaskTimedOutEventAttributes) facts.workflowTaskTimedOut.push(at);
  }
  for (const scheduledAt of summarizeAt.values())
    facts.summarizes.push({ scheduledAt, closedAt: Number.NaN, outcome: 'open' });
  facts.closedAt = eventMs(last);
  return facts;
}

export interface RunOutcome {
  key: string;
  workflowId: string;
  status: 'completed' | 'failed';
  failure?: string;
  result?: AgentRunResult;
  lines?: SessionLine[];
  facts: HistoryFacts;
}

/** The failure type and message at the bottom of a workflow failure. */
function failureText(error: unknown): string {
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof ApplicationFailure) return `${cause.type ?? 'ApplicationFailure'}: ${cause.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * Starts one run of `input` and waits for its end. The wait survives the cluster's faults: a
 * client call that fails while a node or PostgreSQL is down is retried until `deadline`.
 */
export async function runToEnd(
  client: Client,
  input: ChaosInput,
  workflowId: string,
  deadline: number,
): Promise<RunOutcome> {
  const handle = await retrying(`start ${workflowId}`, deadline, () =>
    client.workflow.start('agentRun', { taskQueue: AGENT_QUEUE, workflowId, args: [input.input] }),
  );
  const settled = await retrying(`result of ${workflowId}`, deadline, () =>
    handle.result().then(
      (result: AgentRunResult) => ({ status: 'completed' as const, result }),
      (error: unknown) => {
        if (error instanceof WorkflowFailedError) return { status: 'failed' as const, failure: failureText(error) };
        throw error;
      },
    ),
  );
  // The inputs never continue as new (a few dozen rounds): the first run's history is the whole run.
  const facts = await retrying(`history of ${workflowId}`, deadline, () =>
    historyFacts(client, workflowId, handle.firstExecutionRunId),
  );
  if (settled.status === 'failed')
    return { key: input.key, workflowId, status: 'failed', failure: settled.failure, facts };
  const lines = await retrying(`transcript of ${workflowId}`, deadline, () =>
    readSessionLines(client, settled.result.session),
  );
  return { key: input.key, workflowId, status: 'completed', result: settled.result, lines, facts };
}

/** Retries `work` (a client call) every 2 s until it succeeds or `deadline` passes; says so once when it starts failing. */
export async function retrying<T>(what: string, deadline: number, work: () => Promise<T>): Promise<T> {
  let failures = 0;
  for (;;) {
    try {
      const value = await work();
      if (failures > 0) log(`  ${what}: answered again after ${failures} failed call(s)`);
      return value;
    } catch (error) {
      failures += 1;
      if (Date.now() > deadline) throw error;
      if (failures === 1)
        log(`  ${what}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}; retrying`);
      await sleep(2_000);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Comparison with the undisturbed reference
// ---------------------------------------------------------------------------------------------

export interface Comparison {
  identical: boolean;
  /** `replaySession(transcript)` rebuilt the final messages byte for byte. */
  replays: boolean;
  /** Message lines of the reference's transcript missing from this run's. */
  lost: number;
  /** Message lines this run's transcript has more often than the reference's. */
  duplicated: number;
  compactions: CompactionRecord[];
  fallbacks: number;
  /**
   * A summarize activity of the run failed for good (a request past its deadline, or retries
   * exhausted): the engine then cut the middle again (docs/design.md#summarizer-overflow), kept the
   * first summary without its coverage retry, or fell back to the hard trim, so the summary, and
   * what follows it, may differ from the reference's by design.
   */
  summarizeFailed: boolean;
}

function messageLineCounts(lines: readonly SessionLine[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of lines) {
    if (line.type !== 'message') continue;
    const key = JSON.stringify([line.id, line.message]);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** Compares a completed run with the reference run of the same input. */
export function compareWithReference(run: RunOutcome, reference: RunOutcome): Comparison {
  const lines = run.lines ?? [];
  const messages: ChatMessage[] = run.result?.messages ?? [];
  const replayed = replaySession(lines);
  const mine = messageLineCounts(lines);
  const theirs = messageLineCounts(reference.lines ?? []);
  let lost = 0;
  let duplicated = 0;
  for (const [key, count] of theirs) lost += Math.max(0, count - (mine.get(key) ?? 0));
  for (const [key, count] of mine) duplicated += Math.max(0, count - (theirs.get(key) ?? 0));
  const compactions = compactionRecordsFromSession(lines);
  return {
    identical: JSON.stringify(messages) === JSON.stringify(reference.result?.messages),
    replays: JSON.stringify(replayed) === JSON.stringify(messages),
    lost,
    duplicated,
    compactions,
    fallbacks: compactions.filter((record) => record.fallback).length,
    summarizeFailed: run.facts.summarizes.some((activity) => activity.outcome !== 'completed'),
  };
}

// ---------------------------------------------------------------------------------------------
// Figures
// ---------------------------------------------------------------------------------------------

/** The p-th percentile (nearest rank) of `values`, or NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

/** Gaps between consecutive rounds of each run (chat scheduled → next chat scheduled), in ms. */
export function roundLatencies(runs: readonly RunOutcome[]): number[] {
  return runs.flatMap(({ facts }) =>
    facts.chatScheduled.slice(1).map((at, index) => at - (facts.chatScheduled[index] ?? at)),
  );
}

/**
 * How long after a worker's death a retried attempt can start at the earliest, by the timeout that
 * ended the dead attempt: its heartbeat timeout (10 s for the loop's activities and for
 * summarize; less a heartbeat interval) or its start-to-close timeout (5 min for chat and
 * summarize, 1 min for the rest). Undefined when the attempt failed for another reason.
 */
export function minimumResumeMs(activity: string, lastFailure: string): number | undefined {
  if (/heartbeat/i.test(lastFailure)) return 7_000;
  if (/start.?to.?close/i.test(lastFailure)) return activity === 'chat' || activity === 'summarize' ? 290_000 : 55_000;
  if (/timeout/i.test(lastFailure)) return 7_000;
  return undefined;
}

/** For a fault at `at`: how long each run that was in flight waited for its next completed round. */
export function stallsAfter(runs: readonly RunOutcome[], at: number): number[] {
  return runs
    .filter(({ facts }) => facts.startedAt < at && facts.closedAt > at)
    .map(({ facts }) => {
      const next = facts.chatCompleted.find((completed) => completed > at);
      return (next ?? facts.closedAt) - at;
    });
}

/**
 * The run in flight at `at` that waited longest for its next completed round, and what its
 * history shows from the fault to then (kinds of events with their delay from the fault).
 */
export function slowestAfter(runs: readonly RunOutcome[], at: number): string | undefined {
  let slowest: { run: RunOutcome; stall: number } | undefined;
  for (const run of runs) {
    if (!(run.facts.startedAt < at && run.facts.closedAt > at)) continue;
    const stall = (run.facts.chatCompleted.find((completed) => completed > at) ?? run.facts.closedAt) - at;
    if (slowest === undefined || stall > slowest.stall) slowest = { run, stall };
  }
  if (slowest === undefined) return undefined;
  const until = at + slowest.stall;
  const before = slowest.run.facts.timeline.filter(([time]) => time <= at).at(-1);
  const events = slowest.run.facts.timeline
    .filter(([time]) => time > at && time <= until)
    .map(([time, kind]) => `+${((time - at) / 1000).toFixed(1)}s ${kind}`);
  return `${slowest.run.workflowId} waited ${seconds(slowest.stall)}; last event before: ${before?.[1] ?? '-'}; then ${events.join(', ') || 'nothing'}`;
}

export function seconds(ms: number): string {
  return Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : '—';
}
