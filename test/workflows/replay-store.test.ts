// Determinism with the payload store on: an agentRun chain recorded with the store and the codec
// on must keep replaying against today's code. The histories hold claims, not payloads, so they
// replay only with the store objects recorded with them: both are checked in under
// test/histories/store-on/, apart from test/histories/ (whose histories replay.test.ts replays
// without a store).
//
// The run: the MIT tau-bench trajectory on the replay provider in a 3,000-token window
// (compactions), continue-as-new every 4 rounds (three runs), an addUserMessage update held into
// the second run's second round and the stop update into the third run's second round.
// `RECORD_HISTORIES=1 npx vitest run test/workflows/replay-store.test.ts` records it again,
// replacing every file of test/histories/store-on/ but its README; without the variable the run
// still goes (it checks the recorder's run has what the fixture claims) and writes nothing.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { temporal } from '@temporalio/proto';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatActivityInput } from '../../src/activities/index.js';
import { loadConfig } from '../../src/config.js';
import { agentRun } from '../../src/index.js';
import { agentRunUpdates, type AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import { payloadConverterFromConfig, type ConfiguredPayloads } from '../../src/payloads/index.js';
import { isUiPayload, payloadProtoSize } from '../../src/payloads/codec.js';
import { UI_PAYLOAD_MAX_BYTES, UI_PAYLOAD_METADATA_KEY } from '../../src/shared/ui-payload.js';
import { openingOf, replayActivities } from '../support/agent.js';
import { claimOf, decodeHistoryPayload, historyPayloads, isSdkMetadata } from '../support/history-payloads.js';
import { chainHistories, testConnection, uniqueId, withWorker } from '../support/temporal.js';
import { bundleTestWorkflows } from './harness.js';

type History = temporal.api.history.v1.IHistory;

const STORE_ON_DIR = fileURLToPath(new URL('../histories/store-on/', import.meta.url));
/** The store objects the recorded histories' claims name (a `file:` store's directory). */
const STORE_OBJECTS_DIR = join(STORE_ON_DIR, 'store');
const NAME = 'agent-run-store-on';
const RUN_FILE = new RegExp(`^${NAME}-run(\\d+)\\.json$`);

// A fixed test key (the fixture must decode in every later test run); never a real one.
const CODEC_KEY = createHash('sha256').update('temporal-compactor store-on history fixture').digest('base64');
const CODEC_KEY_ID = 'history-fixture';

const TAU = 'taubench_gpt4o_airline_task2_trial1';
const CONTEXT_WINDOW = 3000;
const CONTINUE_AS_NEW_AFTER_ROUNDS = 4;
/** Turn (from 0) whose chat waits for the addUserMessage update: round 6, the second round of the second run. */
const UPDATE_TURN = 5;
/** Turn whose chat waits for the stop update: round 10, the second round of the third run. */
const STOP_TURN = 9;
/** Over the 256-byte threshold, so the update's argument is a claim too. */
const ADDED_MESSAGE =
  `Before you book anything, please read back the whole itinerary to me, with every flight number, date, cabin and the total price, and wait for my yes. ${'I want to be sure nothing changed since we spoke. '.repeat(4)}`.trim();

const temporaryDirs: string[] = [];
afterAll(() => temporaryDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function temporaryDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temporaryDirs.push(dir);
  return dir;
}

/** Store and codec as a user configures them (`loadConfig` → `payloadConverterFromConfig`); no store when `storeDir` is undefined. */
function configured(storeDir: string | undefined): ConfiguredPayloads {
  const env: Record<string, string> = { COMPACTOR_CODEC_KEY: CODEC_KEY, COMPACTOR_CODEC_KEY_ID: CODEC_KEY_ID };
  if (storeDir !== undefined) env.COMPACTOR_PAYLOAD_STORE = `file:${storeDir}`;
  return payloadConverterFromConfig(loadConfig({ env }));
}

/** The checked-in runs, first run first. */
function recordedRuns(): Array<{ file: string; history: History }> {
  if (!existsSync(STORE_ON_DIR)) return [];
  return readdirSync(STORE_ON_DIR)
    .flatMap((file) => {
      const run = RUN_FILE.exec(file)?.[1];
      return run === undefined ? [] : [{ file, run: Number(run) }];
    })
    .sort((a, b) => a.run - b.run)
    .map(({ file }) => ({
      file,
      history: historyFromJSON(JSON.parse(readFileSync(join(STORE_ON_DIR, file), 'utf8'))),
    }));
}

/** Writes every run of the chain and the store's objects to test/histories/store-on/, replacing what was there. */
function recordChain(histories: History[], storeDir: string): void {
  mkdirSync(STORE_ON_DIR, { recursive: true });
  for (const file of readdirSync(STORE_ON_DIR))
    if (file !== 'README.md') rmSync(join(STORE_ON_DIR, file), { recursive: true, force: true });
  histories.forEach((history, index) =>
    writeFileSync(
      join(STORE_ON_DIR, `${NAME}-run${index + 1}.json`),
      `${historyToJSON(temporal.api.history.v1.History.create(history))}\n`,
    ),
  );
  cpSync(storeDir, STORE_OBJECTS_DIR, { recursive: true, filter: (source) => !/[/\\]\.tmp-[^/\\]*$/.test(source) });
}

/** What one run of the chain did, read from its history (claims resolved and payloads decoded with `payloads`). */
interface RunFacts {
  /** This run's id, the run it continued from, and the run it continued as (empty when none). */
  runId: string;
  continuedFrom: string;
  continuedAs: string;
  /** How it closed. */
  closed: 'completed' | 'continuedAsNew' | 'failed' | 'canceled' | 'terminated' | 'timedOut' | 'open';
  /** Activity types in the order they were scheduled. */
  activities: string[];
  /** Names of the updates it accepted, in order, and how many completed. */
  updates: string[];
  /** The decoded arguments of those updates. */
  updateArgs: unknown[][];
  updatesCompleted: number;
  /** The largest CompactionCount the run upserted (0 when none). */
  compactionCount: number;
  /** Where the history holds claims (event attributes and field, e.g. `workflowExecutionStartedEventAttributes.input`). */
  claims: string[];
  /**
   * The largest payload the history holds inline, search attributes and patch markers aside (the SDK
   * writes those itself), and payloads marked for the UI (the memo's compaction table).
   */
  largestInline: number;
  /** The payloads of the memo's writes: size, and whether each is a claim or marked for the UI. */
  memos: Array<{ size: number; claim: boolean; marked: boolean }>;
  /** What describeWorker answered: whether the worker had a store. */
  externalStorage: boolean | undefined;
  /** The run's input (carried state) and, when it completed, its result, decoded. */
  input: unknown;
  result: unknown;
}

const text = new TextDecoder();

function closingOf(event: temporal.api.history.v1.IHistoryEvent): RunFacts['closed'] {
  if (event.workflowExecutionCompletedEventAttributes) return 'completed';
  if (event.workflowExecutionContinuedAsNewEventAttributes) return 'continuedAsNew';
  if (event.workflowExecutionFailedEventAttributes) return 'failed';
  if (event.workflowExecutionCanceledEventAttributes) return 'canceled';
  if (event.workflowExecutionTerminatedEventAttributes) return 'terminated';
  if (event.workflowExecutionTimedOutEventAttributes) return 'timedOut';
  return 'open';
}

async function decodedJson(
  payload: temporal.api.common.v1.IPayload | undefined,
  payloads: ConfiguredPayloads,
): Promise<unknown> {
  if (payload === undefined) return undefined;
  const decoded = await decodeHistoryPayload(payload, { driver: payloads.driver, codec: payloads.codec });
  return JSON.parse(text.decode(decoded.data ?? new Uint8Array(0)));
}

async function factsOf(history: History, payloads: ConfiguredPayloads): Promise<RunFacts> {
  const events = history.events ?? [];
  const started = events[0]?.workflowExecutionStartedEventAttributes;
  if (started === undefined || started === null)
    throw new Error('the history does not begin with WorkflowExecutionStarted');
  const last = events.at(-1) ?? {};
  const scheduled = events.flatMap((event) => {
    const attributes = event.activityTaskScheduledEventAttributes;
    return attributes === undefined || attributes === null
      ? []
      : [{ eventId: String(event.eventId), name: attributes.activityType?.name ?? '' }];
  });
  const describeScheduled = scheduled.find((activity) => activity.name === 'describeWorker')?.eventId;
  const describeResult = events.find(
    (event) => String(event.activityTaskCompletedEventAttributes?.scheduledEventId ?? '') === describeScheduled,
  )?.activityTaskCompletedEventAttributes?.result?.payloads?.[0];
  const description = await decodedJson(describeResult ?? undefined, payloads);
  const externalStorage =
    typeof description === 'object' && description !== null ? Reflect.get(description, 'externalStorage') : undefined;
  const compactionCounts = events.flatMap((event) => {
    const data =
      event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.CompactionCount?.data;
    return data === undefined || data === null ? [] : [Number(JSON.parse(text.decode(data)))];
  });
  const completed = last.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0];
  const found = historyPayloads(events, payloadProtoSize);
  const accepted = events.flatMap(
    (event) => event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input ?? [],
  );
  return {
    runId: started.originalExecutionRunId ?? '',
    continuedFrom: started.continuedExecutionRunId ?? '',
    continuedAs: last.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? '',
    closed: closingOf(last),
    activities: scheduled.map((activity) => activity.name),
    updates: accepted.map((update) => update.name ?? ''),
    updateArgs: await Promise.all(
      accepted.map((update) =>
        Promise.all((update.args?.payloads ?? []).map((payload) => decodedJson(payload, payloads))),
      ),
    ),
    updatesCompleted: events.filter(
      (event) => event.workflowExecutionUpdateCompletedEventAttributes?.outcome?.success !== undefined,
    ).length,
    compactionCount: Math.max(0, ...compactionCounts),
    claims: found
      .filter((one) => claimOf(one.payload) !== undefined)
      .map((one) => one.path.replace(/^events\[\d+\]\./, '').replace(/\.payloads\[\d+\]$/, '')),
    largestInline: Math.max(
      0,
      ...found
        .filter((one) => claimOf(one.payload) === undefined && !isSdkMetadata(one) && !isUiPayload(one.payload))
        .map((one) => one.size),
    ),
    memos: found
      .filter((one) => one.path.includes('upsertedMemo'))
      .map((one) => ({
        size: one.size,
        claim: claimOf(one.payload) !== undefined,
        marked: one.payload.metadata?.[UI_PAYLOAD_METADATA_KEY] != null,
      })),
    externalStorage: typeof externalStorage === 'boolean' ? externalStorage : undefined,
    input: await decodedJson(started.input?.payloads?.[0] ?? undefined, payloads),
    result: await decodedJson(completed ?? undefined, payloads),
  };
}

/**
 * What the chain was recorded to hold, checked on the run that records it and on the checked-in
 * fixture alike: three runs linked by continue-as-new, compactions (summaries) in more than one
 * run, the addUserMessage update in the second and the stop update in the third, claims for the
 * input, the carried state, the update's argument and the activities' data, and a worker that
 * told the run it had a store.
 */
function expectRecordedShape(runs: RunFacts[]): void {
  expect(runs.map((run) => run.closed)).toEqual(['continuedAsNew', 'continuedAsNew', 'completed']);
  for (const [index, run] of runs.entries()) {
    expect(run.continuedFrom, `run ${index + 1} continued from the run before it`).toBe(runs[index - 1]?.runId ?? '');
    if (index < runs.length - 1)
      expect(run.continuedAs, `run ${index + 1} continued as the next run`).toBe(runs[index + 1]?.runId);
    expect(run.externalStorage, `run ${index + 1}'s worker had a store`).toBe(true);
    expect(run.largestInline, `run ${index + 1}'s largest inline payload`).toBeLessThan(256);
    // The memo's compaction table stays in history, marked for the UI, encrypted, bounded.
    for (const memo of run.memos)
      expect(memo, `run ${index + 1}'s memo`).toEqual({ size: memo.size, claim: false, marked: true });
    expect(Math.max(0, ...run.memos.map((memo) => memo.size))).toBeLessThanOrEqual(UI_PAYLOAD_MAX_BYTES);
    expect(run.claims, `run ${index + 1}'s input is a claim`).toContain(
      'workflowExecutionStartedEventAttributes.input',
    );
    expect(run.activities.filter((name) => name === 'chat').length, `run ${index + 1}'s chat rounds`).toBe(
      index < 2 ? CONTINUE_AS_NEW_AFTER_ROUNDS : STOP_TURN + 1 - 2 * CONTINUE_AS_NEW_AFTER_ROUNDS,
    );
  }
  expect(runs.flatMap((run) => run.memos).length, 'memo writes').toBeGreaterThan(0);
  // Runs after the first start from carried state, not from messages.
  for (const [index, run] of runs.entries())
    if (index > 0) expect(run.input).toMatchObject({ messages: [], carried: { continuedAsNew: index } });

  // Compactions (summaries) in the second and third runs, so the third starts from a compacted,
  // carried conversation; CompactionCount carries across runs and counts them all.
  const summaries = runs.map((run) => run.activities.filter((name) => name === 'summarize').length);
  expect(
    summaries.slice(1).every((count) => count > 0),
    `summarize activities per run: ${summaries.join(', ')}`,
  ).toBe(true);
  const total = summaries.reduce((sum, count) => sum + count, 0);
  // A compaction asks at most two summaries: the first and one retry (tighter, or for coverage: docs/design.md#coverage).
  expect(runs.at(-1)?.compactionCount).toBeGreaterThanOrEqual(Math.ceil(total / 2));
  expect(runs[1]?.compactionCount).toBeLessThan(runs.at(-1)?.compactionCount ?? 0);

  // The updates: addUserMessage in the second run (its argument a claim), stop in the third.
  expect(runs.map((run) => run.updates)).toEqual([[], ['addUserMessage'], ['stop']]);
  expect(runs.map((run) => run.updatesCompleted)).toEqual([0, 1, 1]);
  expect(runs[1]?.claims).toContain('workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest.input.args');
  for (const field of ['activityTaskScheduledEventAttributes.input', 'activityTaskCompletedEventAttributes.result']) {
    expect(
      runs.every((run) => run.claims.includes(field)),
      `every run has claims in ${field}`,
    ).toBe(true);
  }

  expect(runs[1]?.updateArgs).toEqual([[ADDED_MESSAGE]]);
  expect(runs.at(-1)?.result).toMatchObject({ stopReason: 'stopped', rounds: STOP_TURN + 1, continuedAsNew: 2 });
}

/** Replays each run; the error of each (undefined when it replayed). */
async function replay(
  bundle: WorkflowBundleWithSourceMap,
  payloads: ConfiguredPayloads | undefined,
  runs: Array<{ file: string; history: History }>,
): Promise<Map<string, Error | undefined>> {
  const outcomes = new Map<string, Error | undefined>();
  const histories = runs.map(({ file, history }) => ({ workflowId: file, history }));
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: bundle, ...(payloads === undefined ? {} : { dataConverter: payloads.dataConverter }) },
    histories,
  )) {
    outcomes.set(result.workflowId, result.error);
  }
  return outcomes;
}

/** A promise with its resolver. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  bundle = await bundleTestWorkflows();
});

describe('agentRun with the payload store on: a recorded chain replays', { timeout: 120_000 }, () => {
  it('records the chain: continue-as-new, compactions, addUserMessage and stop, every payload over 256 bytes in the store (written with RECORD_HISTORIES=1)', async () => {
    const storeDir = temporaryDir('compactor-store-on-record-');
    const payloads = configured(storeDir);
    const t = await testConnection({ dataConverter: payloads.dataConverter });
    const activities = replayActivities();
    // The chat of a chosen turn waits until the test has sent its update, so each update lands in the round chosen.
    const gates = new Map([UPDATE_TURN, STOP_TURN].map((turn) => [turn, { reached: deferred(), release: deferred() }]));
    const chat = async (input: ChatActivityInput): ReturnType<typeof activities.chat> => {
      const gate = gates.get(input.turn);
      if (gate !== undefined) {
        gate.reached.resolve();
        await gate.release.promise;
      }
      return activities.chat(input);
    };
    const input: AgentRunWorkflowInput = {
      messages: openingOf(TAU),
      model: { provider: 'replay', trajectory: TAU, contextWindow: CONTEXT_WINDOW, maxOutputTokens: 1000 },
      compaction: { keepRecent: 4 },
      continueAsNewAfterRounds: CONTINUE_AS_NEW_AFTER_ROUNDS,
    };
    const workflowId = uniqueId('agent-store-on');
    const result = await withWorker(t, { workflowBundle: bundle, activities: { ...activities, chat } }, async () => {
      const handle = await t.client.workflow.start(agentRun, { taskQueue: t.taskQueue, workflowId, args: [input] });
      const latest = t.client.workflow.getHandle(workflowId);
      const send = async (turn: number, update: () => Promise<unknown>): Promise<unknown> => {
        const gate = gates.get(turn);
        if (gate === undefined) throw new Error(`no gate at turn ${turn}`);
        await gate.reached.promise;
        const answer = await update();
        gate.release.resolve();
        return answer;
      };
      expect(
        await send(UPDATE_TURN, () => latest.executeUpdate(agentRunUpdates.addUserMessage, { args: [ADDED_MESSAGE] })),
      ).toEqual({ pending: 1 });
      expect(await send(STOP_TURN, () => latest.executeUpdate(agentRunUpdates.stop))).toEqual({
        stopping: true,
        rounds: STOP_TURN,
      });
      return handle.result();
    });
    expect(result).toMatchObject({ stopReason: 'stopped', rounds: STOP_TURN + 1, continuedAsNew: 2 });

    const histories = (await chainHistories(t.client, workflowId)).map((events) => ({ events }));
    const runs = await Promise.all(histories.map((history) => factsOf(history, payloads)));
    expectRecordedShape(runs);
    if (process.env.RECORD_HISTORIES === '1') recordChain(histories, storeDir);
  });

  describe('the checked-in chain (test/histories/store-on/)', () => {
    // Read when the suite starts, after a recording run above has written the chain.
    let runs: Array<{ file: string; history: History }> = [];
    beforeAll(() => {
      runs = recordedRuns();
      // Every test below reads the three runs: none may pass on an empty or partial fixture.
      if (runs.length !== 3)
        throw new Error(
          `test/histories/store-on/ holds ${runs.length} runs of ${NAME}, not 3: record them (see the top of this file)`,
        );
    });

    it('holds every run of the chain and the store objects they name, a few hundred KB at most', () => {
      expect(runs.map(({ file }) => file)).toEqual([1, 2, 3].map((run) => `${NAME}-run${run}.json`));
      const objects = readdirSync(STORE_OBJECTS_DIR, { recursive: true, withFileTypes: true }).filter((entry) =>
        entry.isFile(),
      );
      expect(objects.length).toBeGreaterThan(0);
      const bytes = objects.reduce(
        (total, entry) => total + readFileSync(join(entry.parentPath, entry.name)).length,
        0,
      );
      expect(bytes).toBeLessThan(400 * 1024);
    });

    it('has what it was recorded for: continue-as-new, compactions, the addUserMessage and stop updates, claims', async () => {
      const payloads = configured(STORE_OBJECTS_DIR);
      expectRecordedShape(await Promise.all(runs.map(({ history }) => factsOf(history, payloads))));
    });

    it('every run replays with the store pointed at the checked-in objects', async () => {
      // Replaying encodes the workflow's commands again, which writes to the store: a copy takes the writes.
      const copy = temporaryDir('compactor-store-on-replay-');
      cpSync(STORE_OBJECTS_DIR, copy, { recursive: true });
      const outcomes = await replay(bundle, configured(copy), runs);
      expect([...outcomes.keys()]).toEqual(runs.map(({ file }) => file));
      expect(
        [...outcomes].filter(([, error]) => error !== undefined).map(([file, error]) => `${file}: ${error?.message}`),
      ).toEqual([]);
    });

    it('(control) with the store, a run whose chat activity was another one fails to replay: the replay runs the workflow code', async () => {
      const copy = temporaryDir('compactor-store-on-tampered-');
      cpSync(STORE_OBJECTS_DIR, copy, { recursive: true });
      // Read afresh: the tampering must not reach the runs the other tests replay.
      const tampered = recordedRuns()[0]?.history;
      if (tampered === undefined) throw new Error('no recorded run');
      const chat = tampered.events?.find(
        (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'chat',
      )?.activityTaskScheduledEventAttributes?.activityType;
      if (chat === undefined || chat === null) throw new Error('the first run schedules no chat activity');
      chat.name = 'somethingElse';
      const outcomes = await replay(bundle, configured(copy), [{ file: 'tampered', history: tampered }]);
      expect(outcomes.get('tampered')?.name).toBe('DeterminismViolationError');
    });

    it('(control) no run replays without the store, even with the codec key: the history holds claims, not payloads', async () => {
      const outcomes = await replay(bundle, configured(undefined), runs);
      expect([...outcomes.keys()]).toEqual(runs.map(({ file }) => file));
      for (const [file, error] of outcomes) expect(error?.message, file).toMatch(/external storage is not configured/);
    });
  });
});
