// The chaos suite (issue 11 §2, `npm run test:chaos`; not part of `npm test`): agent runs on the
// three-node cluster on PostgreSQL (scripts/cluster), driven by our worker processes
// (`temporal-compactor worker`: three agent workers, and the summarizer on its own task queue and
// worker) with the replay provider over the bundled trajectories and an OpenAI-compatible
// summarizer that takes 0.5-3 s per answer. Every run is compared with an undisturbed reference run
// of the same input: the final messages byte-identical, the transcript read back from history
// replays to them, no message lost or duplicated. Scenarios:
//
//   load            N concurrent runs, no faults (the baseline)
//   worker-kills    N runs; a worker (an agent worker or the summarizer's) SIGKILLed every 15-30 s
//                   and replaced at once
//   server-faults   N runs; the server node owning a run's history shard SIGKILLed and restarted,
//                   then PostgreSQL restarted (fast shutdown, then start)
//   llm-faults      N runs; the summarizer answers 500, 429 + Retry-After, malformed JSON, empty
//                   content, resets the connection or hangs 10 s, per request
//   hostile-model   N runs (at least one per class) whose model asks the built-in tools for the worst
//                   (test/support/hostile-model.ts: a catastrophic grep, 1,000 calls in a turn, ...),
//                   while three lanes of compaction probes run on the same workers; each run must end
//                   as its class must, and the worker running a catastrophic grep must do probe work
//                   while the grep holds its search thread
//
// CHAOS_PROFILE=full (default: 50 runs per scenario, every scenario) or ci (8 runs, every scenario but
// load: .ci/run), CHAOS_RUNS, CHAOS_SCENARIOS, CHAOS_AGENT_WORKER_ENV.
// The figures go to bench/results/chaos-<profile>.md (and .json) and are printed at the end.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, TEMPORAL_SERVER_VERSION, type Cluster, type ClusterNode } from '../../scripts/cluster/index.js';
import { installQuietTelemetryRuntime } from '../../src/telemetry/metrics.js';
import { HISTORY_CHANNEL_ARGS } from '../../src/client/session-reader.js';
import { replaySession } from '../../src/core/agent/session.js';
import { hostileCallCount, hostileInput, hostileProblems, type HostileClass } from '../support/hostile-model.js';
import { writeProductionBundle } from '../support/worker-process.js';
import {
  chaosInputs,
  chaosProfile,
  compareWithReference,
  log,
  minimumResumeMs,
  percentile,
  retrying,
  roundLatencies,
  runToEnd,
  seededRandom,
  seconds,
  slowestAfter,
  stallsAfter,
  startChaosSummarizer,
  SUMMARIZER_TIMEOUT_MS,
  WorkerPool,
  type ChaosInput,
  type ChaosSummarizer,
  type LlmFault,
  type RunOutcome,
  type Scenario,
} from './harness.js';
import {
  grepsWhileProbed,
  probeLatencies,
  runProbes,
  startHostileEndpoint,
  timeoutsOverTime,
  workSpans,
  type HostileEndpoint,
  type WorkSpan,
} from './hostile.js';
import {
  machineLine,
  renderReport,
  scenarioTotals,
  writeReport,
  type ChaosReport,
  type FaultReport,
  type HostileRunReport,
  type ScenarioReport,
} from './report.js';

const profile = chaosProfile();
/** A scenario that has not finished in this long has wedged. */
const SCENARIO_DEADLINE_MS = 30 * 60_000;

/** A data directory the `postgres` user can reach when the suite runs as root. */
function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

/** What a fault injector can see of the scenario it runs in. */
interface ScenarioView {
  startedAt: number;
  /** Runs started and not yet ended, by workflow id. */
  inFlight(): string[];
  finished(): boolean;
  /** Resolves when every run has ended (or after `ms`, whichever is first). */
  waitOrFinish(ms: number): Promise<void>;
}

describe(`chaos on a three-node cluster (profile ${profile.name}: ${profile.runs} runs per scenario; ${profile.scenarios.join(', ')})`, () => {
  let cluster: Cluster;
  let dataDir: string;
  let connection: Connection;
  let client: Client;
  let summarizer: ChaosSummarizer;
  let hostile: HostileEndpoint;
  let pool: WorkerPool;
  let bundle: Awaited<ReturnType<typeof writeProductionBundle>>;
  const inputs: ChaosInput[] = chaosInputs();
  const references = new Map<string, RunOutcome>();
  const report: ChaosReport = {
    profile,
    machine: '',
    cluster: '',
    references: { runs: 0, inputs: inputs.length, ms: 0, rounds: 0, compactions: 0, summaries: 0 },
    scenarios: [],
  };
  /** How long an undisturbed batch of runs takes: when to kill a server node. */
  let typicalScenarioMs = 60_000;
  let sequence = 0;

  beforeAll(async () => {
    installQuietTelemetryRuntime(undefined);
    dataDir = scratchDir('compactor-chaos-');
    cluster = await startCluster({ dataDir, ui: false, log: (line) => log(`cluster ${line}`) });
    report.cluster = `3 nodes of temporal-server ${TEMPORAL_SERVER_VERSION} on PostgreSQL ${cluster.versions.postgres}, frontend ${cluster.address}`;
    connection = await Connection.connect({ address: cluster.address, channelArgs: HISTORY_CHANNEL_ARGS });
    client = new Client({ connection, namespace: cluster.namespace });
    summarizer = await startChaosSummarizer();
    // The agent workers' own model endpoint and tool root: only the hostile-model runs use them
    // (every other run replays a recording), so every worker is started alike.
    hostile = await startHostileEndpoint();
    bundle = await writeProductionBundle('compactor-chaos-bundle-');
    pool = new WorkerPool({
      address: cluster.address,
      namespace: cluster.namespace,
      bundlePath: bundle.bundlePath,
      summarizerBaseURL: summarizer.baseURL,
      agentEnv: { ...hostile.agentEnv, ...profile.agentWorkerEnv },
    });
    await pool.startAll();
    log(
      `workers polling: ${pool.workers.map((worker) => `${worker.name} (pid ${worker.process.child.pid}, ready in ${seconds(worker.readyAt - worker.startedAt)})`).join(', ')}`,
    );

    // One undisturbed run of every input: what every other run must end with.
    const started = Date.now();
    log(`reference runs: ${inputs.length} inputs, undisturbed`);
    const outcomes = await Promise.all(
      inputs.map((input) =>
        runToEnd(
          client,
          input,
          `chaos-reference-${input.key}-${Date.now().toString(36)}`,
          started + SCENARIO_DEADLINE_MS,
        ),
      ),
    );
    for (const outcome of outcomes) {
      if (outcome.status !== 'completed') throw new Error(`reference run ${outcome.key} failed: ${outcome.failure}`);
      references.set(outcome.key, outcome);
    }
    report.references = {
      runs: outcomes.length,
      inputs: inputs.length,
      ms: Date.now() - started,
      rounds: outcomes.reduce((sum, outcome) => sum + (outcome.result?.rounds ?? 0), 0),
      compactions: outcomes.reduce((sum, outcome) => sum + (outcome.result?.compactions.totals.compactions ?? 0), 0),
      summaries: outcomes.reduce((sum, outcome) => sum + (outcome.result?.compactions.totals.summaries ?? 0), 0),
    };
    typicalScenarioMs = report.references.ms;
    // The references are the first row of the figures: runs with nothing disturbing them.
    report.scenarios.push({
      scenario: 'reference',
      runs: outcomes,
      comparisons: outcomes.map((outcome) => compareWithReference(outcome, outcome)),
      startedAt: started,
      endedAt: Date.now(),
      faults: [],
    });
    log(
      `reference runs done in ${seconds(report.references.ms)}: ${report.references.rounds} rounds, ${report.references.compactions} compactions, ${report.references.summaries} summaries`,
    );
  }, 45 * 60_000);

  afterAll(async () => {
    report.machine = machineLine();
    if (report.scenarios.length > 1 || report.hostile !== undefined) {
      const path = writeReport(report);
      process.stderr.write(`\n${renderReport(report)}\n\n(written to ${path})\n`);
    }
    await pool?.stopAll();
    await summarizer?.close();
    await hostile?.close();
    await connection?.close();
    await cluster?.stop();
    bundle?.remove();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 5 * 60_000);

  /** Runs `profile.runs` agent runs (the inputs in turn) while `inject` does its worst, and gathers the figures. */
  async function runScenario(
    scenario: Scenario,
    inject?: (view: ScenarioView) => Promise<FaultReport[]>,
  ): Promise<ScenarioReport> {
    const startedAt = Date.now();
    const deadline = startedAt + SCENARIO_DEADLINE_MS;
    const inFlight = new Set<string>();
    const ended = new Set<string>();
    let failed = 0;
    let everyRunEnded: () => void = () => undefined;
    const allEnded = new Promise<void>((resolve) => {
      everyRunEnded = resolve;
    });
    log(`${scenario}: starting ${profile.runs} runs`);
    const runs = Array.from({ length: profile.runs }, (_, index) => {
      const input = inputs[index % inputs.length];
      if (input === undefined) throw new Error('no inputs');
      sequence += 1;
      const workflowId = `chaos-${scenario}-${index + 1}-${Date.now().toString(36)}-${sequence}`;
      inFlight.add(workflowId);
      return runToEnd(client, input, workflowId, deadline).finally(() => {
        inFlight.delete(workflowId);
        ended.add(workflowId);
        if (inFlight.size === 0) everyRunEnded();
      });
    });
    const view: ScenarioView = {
      startedAt,
      inFlight: () => [...inFlight],
      finished: () => inFlight.size === 0,
      waitOrFinish: (ms) => Promise.race([sleep(ms), allEnded]),
    };
    const ticker = setInterval(() => {
      log(
        `${scenario}: ${ended.size}/${profile.runs} runs ended (${failed} failed), ${inFlight.size} in flight, ${seconds(Date.now() - startedAt)} in`,
      );
    }, 15_000);
    try {
      const injecting = inject?.(view) ?? Promise.resolve([]);
      const outcomes = await Promise.all(
        runs.map((run) =>
          run.then((outcome) => {
            if (outcome.status === 'failed') failed += 1;
            return outcome;
          }),
        ),
      );
      const faults = await injecting;
      const endedAt = Date.now();
      const comparisons = outcomes
        .filter((outcome) => outcome.status === 'completed')
        .map((outcome) => {
          const reference = references.get(outcome.key);
          if (reference === undefined) throw new Error(`no reference for ${outcome.key}`);
          return compareWithReference(outcome, reference);
        });
      // Recovery, from the runs' own histories.
      for (const fault of faults) {
        const at = startedAt + fault.atMs;
        fault.stalls = stallsAfter(outcomes, at);
        const slowest = slowestAfter(outcomes, at);
        if (slowest !== undefined) log(`${scenario}: after the ${fault.kind} of ${fault.target}: ${slowest}`);
      }
      const scenarioReport: ScenarioReport = { scenario, runs: outcomes, comparisons, startedAt, endedAt, faults };
      report.scenarios.push(scenarioReport);
      const totals = scenarioTotals(scenarioReport);
      log(
        `${scenario}: done in ${seconds(totals.ms)}: ${totals.completed}/${totals.started} completed, ${totals.identical} identical, ${totals.lost} lost, ${totals.duplicated} duplicated, ${totals.workflowTaskFailed} workflow tasks failed, ${totals.rounds} rounds (${totals.roundsPerMinute.toFixed(0)}/min), round p50 ${seconds(totals.p50)} p99 ${seconds(totals.p99)}`,
      );
      return scenarioReport;
    } finally {
      clearInterval(ticker);
    }
  }

  /**
   * The activity attempts and workflow tasks a killed worker held, as the runs' histories show them
   * resuming. A retried attempt belongs to the latest kill of a worker that runs its activity
   * (summarize: the summarizer worker; the rest: agent workers) at least as long before it as the
   * timeout that ended the dead attempt (a heartbeat timeout cannot fire sooner; a start-to-close
   * timeout not before the activity's deadline).
   */
  function attributeKills(scenarioReport: ScenarioReport): void {
    const kills = scenarioReport.faults
      .filter((fault) => fault.kind === 'worker SIGKILL')
      .sort((a, b) => a.atMs - b.atMs);
    for (const run of scenarioReport.runs) {
      for (const retried of run.facts.retried) {
        const timeout = minimumResumeMs(retried.activity, retried.lastFailure);
        if (timeout === undefined) continue;
        const since = retried.startedAt - scenarioReport.startedAt;
        const kind = retried.activity === 'summarize' ? 'summarizer' : 'agent';
        const kill = kills
          .filter(
            (fault) => fault.atMs <= since - timeout && (fault.target === 'summarizer') === (kind === 'summarizer'),
          )
          .at(-1);
        if (kill === undefined) continue;
        kill.resumedMs.push(since - kill.atMs);
        (kill.resumedByActivity[retried.activity] ??= []).push(since - kill.atMs);
      }
      for (const timedOut of run.facts.workflowTaskTimedOut) {
        const since = timedOut - scenarioReport.startedAt;
        const kill = kills.filter((fault) => fault.atMs <= since && fault.target !== 'summarizer').at(-1);
        if (kill !== undefined) kill.workflowTaskTimeouts += 1;
      }
    }
  }

  /**
   * What every scenario must show: every run completed like its reference, nothing lost or duplicated.
   * With `summarizerFaults`, a run may differ where the summarizer's faults changed a summary by
   * design: a hard-trim fallback, or a summarize activity that failed for good (a middle cut again
   * after a request passed its deadline, a coverage retry given up).
   */
  function expectNothingLost(scenarioReport: ScenarioReport, options: { summarizerFaults?: boolean } = {}): void {
    const totals = scenarioTotals(scenarioReport);
    const failures = scenarioReport.runs
      .filter((run) => run.status !== 'completed')
      .map((run) => `${run.workflowId}: ${run.failure}`);
    expect(failures).toEqual([]);
    expect([totals.lost, totals.duplicated]).toEqual([0, 0]);
    expect(totals.replays).toBe(totals.started);
    const differing = scenarioReport.runs.filter((_, index) => {
      const comparison = scenarioReport.comparisons[index];
      return (
        comparison !== undefined &&
        !comparison.identical &&
        !(options.summarizerFaults === true && (comparison.fallbacks > 0 || comparison.summarizeFailed))
      );
    });
    // What a differing run met, to tell a real divergence from a fault's legitimate one.
    expect(
      differing.map(
        (run) =>
          `${run.workflowId}: summarize activities ${run.facts.summarizes.map((activity) => activity.outcome).join(',')}; ` +
          `compactions ${(scenarioReport.comparisons[scenarioReport.runs.indexOf(run)]?.compactions ?? [])
            .map((record) => `${record.kind}${record.summaryPieces === undefined ? '' : `/${record.summaryPieces}`}`)
            .join(',')}`,
      ),
    ).toEqual([]);
    const taskFailures = scenarioReport.runs.flatMap((run) =>
      run.facts.workflowTaskFailed.map((failure) => `${run.workflowId}: ${failure.cause} ${failure.message}`),
    );
    expect(taskFailures).toEqual([]);
  }

  it.runIf(profile.scenarios.includes('load'))(
    'load: concurrent runs on three agent workers and a summarizer worker end like their references',
    async () => {
      const scenarioReport = await runScenario('load');
      typicalScenarioMs = scenarioReport.endedAt - scenarioReport.startedAt;
      expectNothingLost(scenarioReport);
    },
    SCENARIO_DEADLINE_MS + 60_000,
  );

  it.runIf(profile.scenarios.includes('worker-kills'))(
    'worker kills: a worker SIGKILLed every 15-30 s and replaced; every run ends like its reference',
    async () => {
      const random = seededRandom(7);
      // Agent workers and the summarizer's in turn: each kind of work is lost mid-flight.
      const victims = ['agent-1', 'summarizer', 'agent-2', 'agent-3'];
      const scenarioReport = await runScenario('worker-kills', async (view) => {
        const faults: FaultReport[] = [];
        for (let next = 0; ; next += 1) {
          const [min, max] = profile.killEveryMs;
          await view.waitOrFinish(min + Math.floor(random() * (max - min)));
          if (view.finished()) break;
          const victim = victims[next % victims.length] ?? 'agent-1';
          const kill = await pool.killAndReplace(victim);
          log(
            `worker-kills: SIGKILL ${victim} (pid ${kill.pid}) with ${view.inFlight().length} runs in flight; replacement polling ${seconds(kill.replacedAt - kill.at)} later`,
          );
          faults.push({
            kind: 'worker SIGKILL',
            target: victim,
            atMs: kill.at - view.startedAt,
            downMs: kill.replacedAt - kill.at,
            stalls: [],
            resumedMs: [],
            resumedByActivity: {},
            workflowTaskTimeouts: 0,
          });
        }
        return faults;
      });
      attributeKills(scenarioReport);
      expect(scenarioReport.faults.length).toBeGreaterThan(0);
      expectNothingLost(scenarioReport);
    },
    SCENARIO_DEADLINE_MS + 60_000,
  );

  it.runIf(profile.scenarios.includes('server-faults'))(
    'server faults: a node SIGKILLed and restarted, then PostgreSQL restarted; every run ends like its reference',
    async () => {
      const scenarioReport = await runScenario('server-faults', async (view) => {
        const faults: FaultReport[] = [];
        // Once the runs are well under way (a quarter of an undisturbed batch, 10-30 s): the node
        // owning the history shard of a run in flight.
        await view.waitOrFinish(Math.min(30_000, Math.max(10_000, typicalScenarioMs * 0.25)));
        const running = view.inFlight();
        const target = running[Math.floor(running.length / 2)];
        if (view.finished() || target === undefined) return faults;
        const owner = await cluster.shardOwner(target);
        const node: ClusterNode =
          owner.node ??
          cluster.nodes[0] ??
          (() => {
            throw new Error('no node');
          })();
        const killedAt = Date.now();
        await node.kill('SIGKILL');
        log(
          `server-faults: SIGKILL ${node.name} (owner of history shard ${owner.shardId}) with ${running.length} runs in flight`,
        );
        await sleep(5_000);
        await node.start();
        await cluster.waitForMembership({ expected: cluster.nodes.length });
        const rejoinedAt = Date.now();
        log(
          `server-faults: ${node.name} restarted and back in every ring ${seconds(rejoinedAt - killedAt)} after the kill`,
        );
        faults.push({
          kind: 'server node SIGKILL',
          target: node.name,
          atMs: killedAt - view.startedAt,
          downMs: rejoinedAt - killedAt,
          stalls: [],
          resumedMs: [],
          resumedByActivity: {},
          workflowTaskTimeouts: 0,
        });

        // 3 s after the cluster is whole again (runs of the ci profile may end 15 s later):
        // PostgreSQL, fast shutdown then start.
        await view.waitOrFinish(3_000);
        if (view.finished()) return faults;
        const inFlight = view.inFlight().length;
        const stoppedAt = Date.now();
        await cluster.postgres.stop();
        await cluster.postgres.start();
        const backAt = Date.now();
        log(
          `server-faults: PostgreSQL restarted (fast shutdown, start) with ${inFlight} runs in flight; accepting again ${seconds(backAt - stoppedAt)} after the stop`,
        );
        faults.push({
          kind: 'PostgreSQL restart',
          target: 'postgres',
          atMs: stoppedAt - view.startedAt,
          downMs: backAt - stoppedAt,
          stalls: [],
          resumedMs: [],
          resumedByActivity: {},
          workflowTaskTimeouts: 0,
        });
        const dead = cluster.nodes.filter((clusterNode) => !clusterNode.running());
        if (dead.length > 0) {
          log(
            `server-faults: ${dead.map((clusterNode) => clusterNode.name).join(', ')} exited while PostgreSQL was down; restarting`,
          );
          for (const clusterNode of dead) await clusterNode.start();
        }
        return faults;
      });
      expect(scenarioReport.faults.map((fault) => fault.kind)).toEqual(['server node SIGKILL', 'PostgreSQL restart']);
      expectNothingLost(scenarioReport);
    },
    SCENARIO_DEADLINE_MS + 60_000,
  );

  it.runIf(profile.scenarios.includes('llm-faults'))(
    'LLM faults: every compaction ends with a summary or the hard trim, none past its deadlines; runs whose every summarize activity completed end like their references',
    async () => {
      const firstRequest = summarizer.requests.length;
      summarizer.setFaultRate(profile.llmFaultRate);
      let scenarioReport: ScenarioReport;
      try {
        scenarioReport = await runScenario('llm-faults');
      } finally {
        summarizer.setFaultRate(0);
      }
      const requests = summarizer.requests.slice(firstRequest);
      const outcomes: Partial<Record<LlmFault | 'summary', number>> = {};
      for (const request of requests) {
        const outcome = summarizer.outcomes[request.index] ?? 'summary';
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      }
      const requestMs = requests.map((request) => (request.settledAt ?? Number.POSITIVE_INFINITY) - request.receivedAt);
      const summarizes = scenarioReport.runs.flatMap((run) => run.facts.summarizes);
      scenarioReport.llm = {
        outcomes,
        requests: requests.length,
        longestRequestMs: percentile(requestMs, 100),
        longestSummarizeActivityMs: percentile(
          summarizes.map((activity) => activity.closedAt - activity.scheduledAt).filter(Number.isFinite),
          100,
        ),
        openSummarizeActivities: summarizes.filter((activity) => activity.outcome === 'open').length,
      };
      expect(Object.keys(outcomes).length, 'every kind of fault was injected').toBe(7);
      // No request outlived the summarizer's deadline (2 s of slack for a loaded machine), none was left open.
      expect(requestMs.filter((duration) => duration > SUMMARIZER_TIMEOUT_MS + 2_000)).toEqual([]);
      expect(scenarioReport.llm.openSummarizeActivities).toBe(0);
      // Every compaction ended with a summary, an elision, or the hard trim marked as a fallback.
      const records = scenarioReport.comparisons.flatMap((comparison) => comparison.compactions);
      expect(records.filter((record) => record.kind === 'trim' && !record.fallback)).toEqual([]);
      expect(records.filter((record) => record.exhausted)).toEqual([]);
      expectNothingLost(scenarioReport, { summarizerFaults: true });
    },
    SCENARIO_DEADLINE_MS + 60_000,
  );

  /** Hostile runs of `classes` (in turn, `runs` of them) at once, with three lanes of probes until they end. */
  async function hostileBatch(label: string, classes: readonly HostileClass[], runs: number, deadline: number) {
    const startedAt = Date.now();
    log(`hostile-model: ${label}: starting ${runs} runs of ${classes.length} classes, and three lanes of probes`);
    let ended = 0;
    const started = Array.from({ length: runs }, (_, index) => {
      const hostileClass = classes[index % classes.length];
      if (hostileClass === undefined) throw new Error('no hostile classes');
      sequence += 1;
      const workflowId = `chaos-hostile-${hostileClass.name}-${index + 1}-${Date.now().toString(36)}-${sequence}`;
      const input: ChaosInput = { key: hostileClass.name, input: hostileInput(hostileClass) };
      return runToEnd(client, input, workflowId, deadline)
        .then((outcome) => ({ hostileClass, outcome }))
        .finally(() => {
          ended += 1;
        });
    });
    const probing = runProbes(client, { lanes: 3, deadline, done: () => ended === runs, label });
    const ticker = setInterval(
      () => log(`hostile-model: ${label}: ${ended}/${runs} runs ended, ${seconds(Date.now() - startedAt)} in`),
      15_000,
    );
    let outcomes: Array<Awaited<(typeof started)[number]>>;
    try {
      outcomes = await Promise.all(started);
    } finally {
      clearInterval(ticker);
    }
    const probes = await probing;
    const endedAt = Date.now();
    const everySpan: WorkSpan[] = probes.flatMap((probe) => probe.spans);
    const greps: Array<{ workflowId: string; span: WorkSpan }> = [];
    const batchRuns: Array<{ hostileClass: HostileClass; outcome: RunOutcome; spans: WorkSpan[] }> = [];
    for (const { hostileClass, outcome } of outcomes) {
      const handle = client.workflow.getHandle(outcome.workflowId);
      const spans = await retrying(`work of ${outcome.workflowId}`, deadline, async () =>
        workSpans(client, outcome.workflowId, (await handle.describe()).runId),
      );
      everySpan.push(...spans);
      for (const span of spans.filter((item) => item.kind === 'grep' && hostileClass.name === 'catastrophic-grep'))
        greps.push({ workflowId: outcome.workflowId, span });
      batchRuns.push({ hostileClass, outcome, spans });
    }
    const latencies = probeLatencies(probes);
    log(
      `hostile-model: ${label}: done in ${seconds(endedAt - startedAt)}; ${probes.length} probes, p50 ${seconds(latencies.p50)}, max ${seconds(latencies.max)}`,
    );
    return {
      startedAt,
      endedAt,
      runs: batchRuns,
      probes,
      probeFigures: {
        started: probes.length,
        completed: probes.filter((probe) => probe.completed).length,
        ...latencies,
        workflowTasksTimedOut: probes.reduce(
          (total, probe) => total + probe.spans.filter((span) => span.kind === 'workflow task timed out').length,
          0,
        ),
      },
      greps: grepsWhileProbed(greps, probes, everySpan),
      timeoutsOverTime: timeoutsOverTime(everySpan, startedAt),
    };
  }

  /** One hostile run's row: how it ended against its class, and whether its transcript and history replay. */
  async function hostileRunReport(hostileClass: HostileClass, outcome: RunOutcome): Promise<HostileRunReport> {
    const handle = client.workflow.getHandle(outcome.workflowId);
    const messages = outcome.result?.messages ?? [];
    const calls = messages.flatMap((message) => (message.role === 'assistant' ? (message.tool_calls ?? []) : []));
    const answers = messages.filter((message) => message.role === 'tool').map((message) => message.tool_call_id);
    let historyReplays = false;
    try {
      await Worker.runReplayHistory(
        { workflowBundle: { codePath: bundle.bundlePath } },
        await handle.fetchHistory(),
        outcome.workflowId,
      );
      historyReplays = true;
    } catch (error) {
      log(
        `hostile-model: ${outcome.workflowId} does not replay: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    return {
      workflowId: outcome.workflowId,
      hostileClass: hostileClass.name,
      ended:
        outcome.status === 'completed'
          ? outcome.result?.stopReason === 'completed'
            ? 'completed'
            : `completed (${outcome.result?.stopReason ?? '?'})`
          : `failed ${(outcome.failure ?? '').split(':')[0] ?? ''}`,
      ms: outcome.facts.closedAt - outcome.facts.startedAt,
      calls: outcome.status === 'completed' ? calls.length : hostileCallCount(hostileClass, 1),
      answered: calls.filter((asked) => answers.filter((id) => id === asked.id).length === 1).length,
      problems: hostileProblems(hostileClass, {
        status: outcome.status,
        failure: outcome.failure,
        stopReason: outcome.result?.stopReason,
        messages: outcome.result?.messages,
      }),
      transcriptReplays:
        outcome.status === 'failed' ||
        JSON.stringify(replaySession(outcome.lines ?? [])) === JSON.stringify(outcome.result?.messages),
      historyReplays,
      workflowTasksFailed: outcome.facts.workflowTaskFailed.length,
      workflowTasksTimedOut: outcome.facts.workflowTaskTimedOut.length,
      toolRetries: outcome.facts.retried.filter((retried) => retried.activity !== 'chat').length,
    };
  }

  it.runIf(profile.scenarios.includes('hostile-model'))(
    'hostile model: every class ends as it must, and the worker running a catastrophic grep keeps doing other work meanwhile',
    async () => {
      const deadline = Date.now() + SCENARIO_DEADLINE_MS;
      // 1. Every class, `profile.runs` runs at once (at least one of each): how each run ends.
      const all = await hostileBatch(
        'all classes',
        hostile.classes,
        Math.max(profile.runs, hostile.classes.length),
        deadline,
      );
      const runReports: HostileRunReport[] = [];
      for (const { hostileClass, outcome } of all.runs) runReports.push(await hostileRunReport(hostileClass, outcome));
      // 2. Catastrophic greps alone, one per agent worker's worth, on a cluster with nothing else to
      // do: whether the worker holding one still does other work (a burst of fifty new runs on a
      // small machine delays workflow tasks whatever they ask, which would hide the measure).
      const grepClass = hostile.classes.filter((candidate) => candidate.name === 'catastrophic-grep');
      const quiet = await hostileBatch('greps alone', grepClass, 3, deadline);
      for (const { hostileClass, outcome } of quiet.runs)
        runReports.push(await hostileRunReport(hostileClass, outcome));
      report.hostile = {
        runs: runReports,
        startedAt: all.startedAt,
        endedAt: all.endedAt,
        probes: all.probeFigures,
        timeoutsOverTime: all.timeoutsOverTime,
        greps: quiet.greps,
        grepProbes: quiet.probeFigures,
      };

      // Each run ended as its class must: every call answered once, the notes the model must read.
      expect(runReports.flatMap((run) => run.problems.map((problem) => `${run.workflowId}: ${problem}`))).toEqual([]);
      expect(
        runReports.filter((run) => !run.transcriptReplays || !run.historyReplays).map((run) => run.workflowId),
      ).toEqual([]);
      // Nothing failed a workflow task, no tool attempt timed out and ran again. (Workflow tasks that
      // timed out are reported: on a saturated machine a burst of new runs can keep a worker from
      // finishing some within 10 s; the server retries them.)
      expect(
        runReports.filter((run) => run.workflowTasksFailed + run.toolRetries > 0).map((run) => run.workflowId),
      ).toEqual([]);
      // The workers stayed responsive: every probe completed ...
      expect(
        [...all.probes, ...quiet.probes]
          .filter((probe) => !probe.completed)
          .map((probe) => `${probe.workflowId}: ${probe.failure}`),
      ).toEqual([]);
      // ... and the worker holding each catastrophic grep did probe work while the grep ran, and let
      // none of the workflow tasks it held time out meanwhile.
      expect(quiet.greps).toHaveLength(3);
      expect(quiet.greps.filter((grep) => grep.probeWorkOnItsWorker === 0 || grep.timeoutsOnItsWorker > 0)).toEqual([]);
    },
    SCENARIO_DEADLINE_MS + 60_000,
  );

  it('round latency: the figures exist for every scenario that ran', () => {
    for (const scenarioReport of report.scenarios)
      expect(roundLatencies(scenarioReport.runs).length, scenarioReport.scenario).toBeGreaterThan(0);
  });
});
