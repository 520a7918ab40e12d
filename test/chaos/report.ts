// Node (chaos suite support): the figures of one `npm run test:chaos`, as Markdown (printed, and
// written to bench/results/chaos-<profile>.md with the raw numbers beside it as JSON).
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  percentile,
  profileScenarios,
  roundLatencies,
  seconds,
  SUMMARIZER_TIMEOUT_MS,
  type ChaosProfile,
  type Comparison,
  type LlmFault,
  type RunOutcome,
  type Scenario,
} from './harness.js';
import { WORKER_GREP_SECONDS, type GrepWhileProbed } from './hostile.js';

export const RESULTS_DIR = fileURLToPath(new URL('../../bench/results/', import.meta.url));

/** One injected fault and how the runs in flight came through it. */
export interface FaultReport {
  kind: 'worker SIGKILL' | 'server node SIGKILL' | 'PostgreSQL restart';
  /** What was hit: a worker or node name. */
  target: string;
  /** Milliseconds since the scenario started. */
  atMs: number;
  /** How long the component was away (killed → replacement polling, node killed → rejoined, PostgreSQL stopped → accepting). */
  downMs: number;
  /** Runs in flight at the fault, and how long each waited for its next completed round. */
  stalls: number[];
  /** Activity attempts that timed out with the dead worker and started again elsewhere: delay from the fault. */
  resumedMs: number[];
  /** The same delays by activity type (`chat`, `replayTool`, `recordSession`, `summarize`, ...). */
  resumedByActivity: Record<string, number[]>;
  /** Workflow tasks that timed out on the dead worker (sticky queue) after the fault. */
  workflowTaskTimeouts: number;
}

export interface ScenarioReport {
  /** `reference`: the undisturbed runs, one per input, every other run is compared with. */
  scenario: Scenario | 'reference';
  runs: RunOutcome[];
  comparisons: Comparison[];
  startedAt: number;
  endedAt: number;
  faults: FaultReport[];
  /** LLM faults only: what the summarize requests of the scenario met, and how long they took. */
  llm?: {
    outcomes: Partial<Record<LlmFault | 'summary', number>>;
    requests: number;
    longestRequestMs: number;
    longestSummarizeActivityMs: number;
    openSummarizeActivities: number;
  };
}

/** One run of the hostile-model scenario. */
export interface HostileRunReport {
  workflowId: string;
  hostileClass: string;
  /** `completed (maxRounds)`, `failed RunFailed.BackendsFailed`, ... */
  ended: string;
  /** Start to close, from its history. */
  ms: number;
  /** Tool calls the model asked for, and how many of them got exactly one result. */
  calls: number;
  answered: number;
  /** What `hostileProblems` found: empty when the run ended as its class must. */
  problems: string[];
  transcriptReplays: boolean;
  historyReplays: boolean;
  workflowTasksFailed: number;
  workflowTasksTimedOut: number;
  /** Tool activity attempts after the first (a heartbeat timeout would show here). */
  toolRetries: number;
}

/** The hostile-model scenario: runs against a hostile model, and probes of the workers meanwhile. */
export interface HostileReport {
  runs: HostileRunReport[];
  startedAt: number;
  endedAt: number;
  probes: {
    started: number;
    completed: number;
    p50: number;
    p99: number;
    max: number;
    workflowTasksTimedOut: number;
  };
  /** Catastrophic greps run alone (three at once), and the probes while they ran. */
  greps: GrepWhileProbed[];
  grepProbes: HostileReport['probes'];
  /** Workflow task timeouts of the runs and probes: `[from s, count]` per 10 s since the scenario started. */
  timeoutsOverTime: Array<[number, number]>;
}

export interface ChaosReport {
  profile: ChaosProfile;
  machine: string;
  cluster: string;
  references: { runs: number; inputs: number; ms: number; rounds: number; compactions: number; summaries: number };
  scenarios: ScenarioReport[];
  hostile?: HostileReport;
}

function count<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  return items.filter(predicate).length;
}

/** Totals of one scenario, as its table row and its assertions see them. */
export function scenarioTotals(report: ScenarioReport) {
  const completed = count(report.runs, (run) => run.status === 'completed');
  const rounds = report.runs.reduce((sum, run) => sum + run.facts.chatScheduled.length, 0);
  const latencies = roundLatencies(report.runs);
  const minutes = (report.endedAt - report.startedAt) / 60_000;
  return {
    started: report.runs.length,
    completed,
    identical: count(report.comparisons, (comparison) => comparison.identical),
    replays: count(report.comparisons, (comparison) => comparison.replays),
    lost: report.comparisons.reduce((sum, comparison) => sum + comparison.lost, 0),
    duplicated: report.comparisons.reduce((sum, comparison) => sum + comparison.duplicated, 0),
    withFallback: count(report.comparisons, (comparison) => comparison.fallbacks > 0),
    summarizeFailed: count(
      report.comparisons,
      (comparison) => !comparison.identical && comparison.fallbacks === 0 && comparison.summarizeFailed,
    ),
    fallbacks: report.comparisons.reduce((sum, comparison) => sum + comparison.fallbacks, 0),
    compactions: report.comparisons.reduce((sum, comparison) => sum + comparison.compactions.length, 0),
    workflowTaskFailed: report.runs.reduce((sum, run) => sum + run.facts.workflowTaskFailed.length, 0),
    workflowTaskTimedOut: report.runs.reduce((sum, run) => sum + run.facts.workflowTaskTimedOut.length, 0),
    rounds,
    roundsPerMinute: minutes > 0 ? rounds / minutes : Number.NaN,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: percentile(latencies, 100),
    ms: report.endedAt - report.startedAt,
  };
}

function ms(value: number): string {
  return Number.isFinite(value) ? `${Math.round(value).toLocaleString('en-US')} ms` : '—';
}

export function renderReport(report: ChaosReport): string {
  const lines: string[] = [];
  lines.push(`### Chaos suite, profile \`${report.profile.name}\` (${report.profile.runs} runs per scenario)`);
  lines.push('');
  lines.push(`Machine: ${report.machine}. Cluster: ${report.cluster}.`);
  const extra = Object.entries(report.profile.agentWorkerEnv).map(([name, value]) => `${name}=${value}`);
  lines.push(
    `Workers: 3 agent workers${extra.length > 0 ? ` with ${extra.join(' ')}` : ' with their defaults'}, 1 summarizer worker (its own task queue, summarizer deadline ${SUMMARIZER_TIMEOUT_MS / 1000} s).`,
  );
  lines.push(
    `Reference runs (undisturbed, one per input): ${report.references.runs} runs of ${report.references.inputs} inputs in ${seconds(report.references.ms)}, ${report.references.rounds} rounds, ${report.references.compactions} compactions (${report.references.summaries} summaries).`,
  );
  lines.push('');
  lines.push(
    '| scenario | runs started | completed | identical to reference | transcript replays | lost msgs | duplicated msgs | workflow tasks failed | workflow tasks timed out | rounds | rounds/min | round p50 | round p99 | round max | duration |',
  );
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const scenario of report.scenarios) {
    const totals = scenarioTotals(scenario);
    const identical =
      scenario.scenario === 'llm-faults' && totals.withFallback + totals.summarizeFailed > 0
        ? `${totals.identical} (+${totals.withFallback} with a hard-trim fallback, +${totals.summarizeFailed} otherwise after a failed summarize activity)`
        : String(totals.identical);
    const name = scenario.scenario === 'reference' ? 'reference (undisturbed)' : scenario.scenario;
    lines.push(
      `| ${name} | ${totals.started} | ${totals.completed} | ${identical} | ${totals.replays} | ${totals.lost} | ${totals.duplicated} | ${totals.workflowTaskFailed} | ${totals.workflowTaskTimedOut} | ${totals.rounds} | ${totals.roundsPerMinute.toFixed(0)} | ${ms(totals.p50)} | ${ms(totals.p99)} | ${ms(totals.max)} | ${seconds(totals.ms)} |`,
    );
  }
  const faults = report.scenarios.flatMap((scenario) =>
    scenario.faults.map((fault) => ({ scenario: scenario.scenario, fault })),
  );
  if (faults.length > 0) {
    lines.push('');
    lines.push(
      "Faults, and how the runs in flight came through them (stall: from the fault to a run's next completed round; resumed: from the fault to the retry of an activity attempt the dead worker held):",
    );
    lines.push('');
    lines.push(
      '| scenario | fault | target | at | away for | runs in flight | stall p50 | stall max | attempts resumed | resumed p50 | resumed max | workflow tasks timed out |',
    );
    lines.push('|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
    for (const { scenario, fault } of faults) {
      lines.push(
        `| ${scenario} | ${fault.kind} | ${fault.target} | ${seconds(fault.atMs)} | ${seconds(fault.downMs)} | ${fault.stalls.length} | ${seconds(percentile(fault.stalls, 50))} | ${seconds(percentile(fault.stalls, 100))} | ${fault.resumedMs.length} | ${seconds(percentile(fault.resumedMs, 50))} | ${seconds(percentile(fault.resumedMs, 100))} | ${fault.workflowTaskTimeouts} |`,
      );
    }
    const resumed = faults.flatMap(({ fault }) => fault.resumedMs);
    if (resumed.length > 0) {
      const byActivity = new Map<string, number[]>();
      for (const { fault } of faults)
        for (const [activity, delays] of Object.entries(fault.resumedByActivity))
          byActivity.set(activity, [...(byActivity.get(activity) ?? []), ...delays]);
      const perActivity = [...byActivity.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(
          ([activity, delays]) =>
            `\`${activity}\` ${delays.length} (p50 ${seconds(percentile(delays, 50))}, max ${seconds(percentile(delays, 100))})`,
        )
        .join(', ');
      lines.push('');
      lines.push(
        `Activity attempts a killed worker held, started again on another worker: ${resumed.length} attempts, p50 ${seconds(percentile(resumed, 50))}, p99 ${seconds(percentile(resumed, 99))}, max ${seconds(percentile(resumed, 100))} after the kill; by activity: ${perActivity}.`,
      );
    }
  }
  for (const scenario of report.scenarios) {
    if (scenario.llm === undefined) continue;
    const totals = scenarioTotals(scenario);
    const outcomes = Object.entries(scenario.llm.outcomes)
      .map(([outcome, times]) => `${outcome} ${times}`)
      .join(', ');
    lines.push('');
    lines.push(
      `LLM faults: ${scenario.llm.requests} summarize requests (${outcomes}); the longest request lasted ${ms(scenario.llm.longestRequestMs)} (deadline ${ms(SUMMARIZER_TIMEOUT_MS)}), the longest summarize activity ${ms(scenario.llm.longestSummarizeActivityMs)} from scheduled to closed, ${scenario.llm.openSummarizeActivities} left open; ${totals.compactions} compactions, ${totals.fallbacks} of them the hard trim (\`fallback: true\`) in ${totals.withFallback} runs, the rest a summary or elision.`,
    );
  }
  if (report.hostile !== undefined) lines.push('', ...renderHostile(report.hostile));
  return lines.join('\n');
}

function renderHostile(hostile: HostileReport): string[] {
  const lines: string[] = [];
  const byClass = new Map<string, HostileRunReport[]>();
  for (const run of hostile.runs) byClass.set(run.hostileClass, [...(byClass.get(run.hostileClass) ?? []), run]);
  lines.push(
    `Hostile model: ${hostile.runs.length - hostile.greps.length} runs of ${byClass.size} classes at once, in ${seconds(hostile.endedAt - hostile.startedAt)}, then ${hostile.greps.length} catastrophic greps alone (counted in their row below):`,
  );
  lines.push('');
  lines.push(
    '| class | runs | ended | as its class must | calls | answered once | transcript replays | history replays | workflow tasks failed | timed out | tool retries | longest run |',
  );
  lines.push('|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const [name, runs] of byClass) {
    const ended = [...new Set(runs.map((run) => run.ended))].join(', ');
    const sum = (pick: (run: HostileRunReport) => number): number => runs.reduce((total, run) => total + pick(run), 0);
    lines.push(
      `| ${name} | ${runs.length} | ${ended} | ${count(runs, (run) => run.problems.length === 0)} | ${sum((run) => run.calls)} | ${sum((run) => run.answered)} | ${count(runs, (run) => run.transcriptReplays)} | ${count(runs, (run) => run.historyReplays)} | ${sum((run) => run.workflowTasksFailed)} | ${sum((run) => run.workflowTasksTimedOut)} | ${sum((run) => run.toolRetries)} | ${seconds(Math.max(...runs.map((run) => run.ms)))} |`,
    );
  }
  const { probes, greps } = hostile;
  lines.push('');
  lines.push(
    `Probes (\`compactConversation\` on the agent workers' queue in three lanes, each starting one 250 ms after its last ended, while the hostile runs were in flight): ${probes.completed} of ${probes.started} completed, latency p50 ${ms(probes.p50)}, p99 ${ms(probes.p99)}, max ${ms(probes.max)}; ${probes.workflowTasksTimedOut} of their workflow tasks timed out.`,
  );
  const timeouts = hostile.timeoutsOverTime.map(([from, times]) => `${from}–${from + 10} s: ${times}`).join(', ');
  if (timeouts !== '') lines.push(`Workflow tasks timed out (runs and probes), by when: ${timeouts}.`);
  if (greps.length > 0) {
    const mine = greps.map((grep) => grep.probeWorkOnItsWorker);
    const quiet = hostile.grepProbes;
    lines.push(
      `Then catastrophic greps alone (${greps.length} runs at once, probes in three lanes: ${quiet.completed} of ${quiet.started} completed, p50 ${ms(quiet.p50)}, max ${ms(quiet.max)}): each holding its search thread ${seconds(
        percentile(
          greps.map((grep) => grep.ranMs),
          50,
        ),
      )} at p50 (deadline ${WORKER_GREP_SECONDS} s); meanwhile the worker running each did probe work too — workflow tasks and activities started and finished during the grep: min ${Math.min(...mine)}, p50 ${percentile(mine, 50)} per grep (${greps.reduce((total, grep) => total + grep.probeWorkElsewhere, 0)} more on the other workers); workflow tasks the grep's worker let time out while the grep ran: ${greps.reduce((total, grep) => total + grep.timeoutsOnItsWorker, 0)}.`,
    );
  }
  return lines;
}

/** Writes the report as Markdown and JSON under bench/results/; returns the Markdown path. */
export function writeReport(report: ChaosReport): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  // A run of some scenarios (CHAOS_SCENARIOS) has its own files: it must not replace the profile's whole run.
  const whole = profileScenarios(report.profile.name).join(',') === report.profile.scenarios.join(',');
  const name = `chaos-${report.profile.name}${whole ? '' : `-${report.profile.scenarios.join('+')}`}`;
  const markdownPath = join(RESULTS_DIR, `${name}.md`);
  writeFileSync(markdownPath, `${renderReport(report)}\n`);
  const raw = {
    profile: report.profile,
    machine: report.machine,
    cluster: report.cluster,
    references: report.references,
    scenarios: report.scenarios.map((scenario) => ({
      scenario: scenario.scenario,
      totals: scenarioTotals(scenario),
      faults: scenario.faults,
      llm: scenario.llm,
    })),
    hostile: report.hostile,
  };
  writeFileSync(join(RESULTS_DIR, `${name}.json`), `${JSON.stringify(raw, null, 2)}\n`);
  return markdownPath;
}

export function machineLine(): string {
  const [one, five] = loadavg();
  return `${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'}), Node ${process.version}, load average ${one?.toFixed(1)} (1 min) / ${five?.toFixed(1)} (5 min) at the end`;
}
