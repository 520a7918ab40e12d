// Node (chaos suite support): the `hostile-model` scenario's pieces — the hostile model endpoint and
// tool root the agent workers are started with (test/support/hostile-model.ts has the classes), the
// probes that measure whether the workers stay responsive while hostile runs are in flight, and
// what the histories say about both: which worker ran each catastrophic grep and for how long, and
// which worker ran each probe's tasks meanwhile.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { historyEvents } from '../../src/client/session-reader.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { hostileClasses, hostileResponder, writeHostileToolRoot, type HostileClass } from '../support/hostile-model.js';
import { toolRounds } from '../support/messages.js';
import { AGENT_QUEUE, percentile, retrying } from './harness.js';

/** The grep deadline of `temporal-compactor worker` (createBuiltInTools' default): the note the model reads names it. */
export const WORKER_GREP_SECONDS = 10;

export interface HostileEndpoint {
  classes: HostileClass[];
  model: FakeOpenAI;
  toolRoot: string;
  /** What the agent workers need beside their usual settings: where the model and the tools are. */
  agentEnv: Record<string, string>;
  close(): Promise<void>;
}

/** Starts the hostile model endpoint and writes the tool root its classes ask about. */
export async function startHostileEndpoint(): Promise<HostileEndpoint> {
  const toolRoot = mkdtempSync(join(tmpdir(), 'compactor-chaos-tools-'));
  writeHostileToolRoot(toolRoot);
  const classes = hostileClasses(WORKER_GREP_SECONDS);
  const model = await startFakeOpenAI();
  model.setDefault(hostileResponder(classes));
  return {
    classes,
    model,
    toolRoot,
    agentEnv: { COMPACTOR_TOOLS_ROOT: toolRoot, OPENAI_BASE_URL: model.baseURL, OPENAI_API_KEY: 'chaos-hostile-key' },
    close: async () => {
      await model.close();
      rmSync(toolRoot, { recursive: true, force: true });
    },
  };
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

function eventMs(event: HistoryEvent): number {
  const time = event.eventTime;
  if (!time) return Number.NaN;
  return Number(time.seconds ?? 0) * 1000 + Math.floor((time.nanos ?? 0) / 1e6);
}

/** Work a worker did for a run: a workflow task or an activity attempt, from its start to its end. */
export interface WorkSpan {
  /** `workflow task`, `workflow task timed out`, or the activity's type (`grep`, `summarize`, ...). */
  kind: string;
  /** The worker's identity (`pid@host`): which process did it. */
  identity: string;
  startedAt: number;
  endedAt: number;
  attempt: number;
}

/** Every workflow task and activity attempt of one run, with the worker that did it. */
export async function workSpans(client: Client, workflowId: string, runId: string): Promise<WorkSpan[]> {
  const spans: WorkSpan[] = [];
  const activityOf = new Map<string, string>();
  const open = new Map<string, { identity: string; startedAt: number; attempt: number }>();
  let task: { identity: string; startedAt: number } | undefined;
  for await (const event of historyEvents(client, workflowId, runId)) {
    const at = eventMs(event);
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) activityOf.set(String(event.eventId), scheduled.activityType?.name ?? '?');
    const started = event.activityTaskStartedEventAttributes;
    if (started)
      open.set(String(started.scheduledEventId), {
        identity: started.identity ?? '?',
        startedAt: at,
        attempt: started.attempt ?? 1,
      });
    const closed =
      event.activityTaskCompletedEventAttributes ??
      event.activityTaskFailedEventAttributes ??
      event.activityTaskTimedOutEventAttributes ??
      event.activityTaskCanceledEventAttributes;
    if (closed) {
      const id = String(closed.scheduledEventId);
      const start = open.get(id);
      if (start !== undefined) spans.push({ kind: activityOf.get(id) ?? '?', ...start, endedAt: at });
      open.delete(id);
    }
    if (event.workflowTaskTimedOutEventAttributes && task !== undefined) {
      spans.push({ kind: 'workflow task timed out', ...task, endedAt: at, attempt: 1 });
      task = undefined;
    }
    const taskStarted = event.workflowTaskStartedEventAttributes;
    if (taskStarted) task = { identity: taskStarted.identity ?? '?', startedAt: at };
    if (event.workflowTaskCompletedEventAttributes && task !== undefined) {
      spans.push({ kind: 'workflow task', ...task, endedAt: at, attempt: 1 });
      task = undefined;
    }
  }
  return spans;
}

/** One probe: a whole compaction (`compactConversation`, its summarize activity included) on the agent workers' queue. */
export interface Probe {
  workflowId: string;
  startedAt: number;
  endedAt: number;
  completed: boolean;
  failure?: string;
  spans: WorkSpan[];
}

/**
 * Probes the agent workers until `done()`: `lanes` loops, each starting a probe 250 ms after its
 * last one ended (so probes never pile up on a loaded cluster: at most `lanes` in flight). Each
 * probe compacts a 20-round conversation to a 2,000-token budget: a workflow task, an activity and
 * another workflow task, from whichever agent workers take them.
 */
export async function runProbes(
  client: Client,
  options: { lanes: number; deadline: number; done: () => boolean; label: string },
): Promise<Probe[]> {
  const messages = toolRounds(20, 400);
  const probes: Probe[] = [];
  let sequence = 0;
  const lane = async (): Promise<void> => {
    while (!options.done() && Date.now() < options.deadline) {
      sequence += 1;
      const workflowId = `chaos-probe-${options.label}-${sequence}-${Date.now().toString(36)}`;
      const startedAt = Date.now();
      const handle = await retrying(`start ${workflowId}`, options.deadline, () =>
        client.workflow.start('compactConversation', {
          taskQueue: AGENT_QUEUE,
          workflowId,
          args: [{ messages, options: { contextBudget: 2_000 } }],
        }),
      );
      let completed = true;
      let failure: string | undefined;
      try {
        await handle.result();
      } catch (error) {
        completed = false;
        failure = error instanceof Error ? error.message : String(error);
      }
      probes.push({ workflowId, startedAt, endedAt: Date.now(), completed, failure, spans: [] });
      await sleep(250);
    }
  };
  await Promise.all(Array.from({ length: options.lanes }, lane));
  // Read afterwards: the histories say which worker did each task and activity.
  for (const probe of probes) {
    const run = await client.workflow.getHandle(probe.workflowId).describe();
    probe.spans = await workSpans(client, probe.workflowId, run.runId);
  }
  return probes;
}

/** A catastrophic grep, and the probes' work the same worker did while the grep held its search thread. */
export interface GrepWhileProbed {
  workflowId: string;
  identity: string;
  ranMs: number;
  /** Probe workflow tasks and activities the grep's worker started and finished while the grep ran. */
  probeWorkOnItsWorker: number;
  /** The same, on the other workers. */
  probeWorkElsewhere: number;
  /** Workflow tasks (of any run or probe) the grep's worker took and let time out while the grep ran. */
  timeoutsOnItsWorker: number;
}

/** For each grep span: how much probe work its own worker did meanwhile (the measure of a free event loop). */
export function grepsWhileProbed(
  greps: ReadonlyArray<{ workflowId: string; span: WorkSpan }>,
  probes: readonly Probe[],
  everySpan: readonly WorkSpan[],
): GrepWhileProbed[] {
  const work = probes.flatMap((probe) => probe.spans.filter((span) => span.kind !== 'workflow task timed out'));
  const timedOut = everySpan.filter((span) => span.kind === 'workflow task timed out');
  return greps.map(({ workflowId, span }) => {
    const during = work.filter((item) => item.startedAt >= span.startedAt && item.endedAt <= span.endedAt);
    const mine = during.filter((item) => item.identity === span.identity).length;
    return {
      workflowId,
      identity: span.identity,
      ranMs: span.endedAt - span.startedAt,
      probeWorkOnItsWorker: mine,
      probeWorkElsewhere: during.length - mine,
      timeoutsOnItsWorker: timedOut.filter(
        (item) => item.identity === span.identity && item.startedAt < span.endedAt && item.endedAt > span.startedAt,
      ).length,
    };
  });
}

/** The probes' latencies, start to result (ms). */
export function probeLatencies(probes: readonly Probe[]): { p50: number; p99: number; max: number } {
  const latencies = probes.filter((probe) => probe.completed).map((probe) => probe.endedAt - probe.startedAt);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: percentile(latencies, 100) };
}

/** Workflow task timeouts by when they happened: `[from s, count]` per `bucketSeconds` since `startedAt`. */
export function timeoutsOverTime(
  spans: readonly WorkSpan[],
  startedAt: number,
  bucketSeconds = 10,
): Array<[number, number]> {
  const buckets = new Map<number, number>();
  for (const span of spans) {
    if (span.kind !== 'workflow task timed out') continue;
    const bucket = Math.max(0, Math.floor((span.endedAt - startedAt) / 1000 / bucketSeconds)) * bucketSeconds;
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + 1);
  }
  return [...buckets.entries()].sort(([a], [b]) => a - b);
}
