// `npm run bench:payloads`: what the payload store and codec cost and save.
//   1. Store growth over the new content of a synthetic agent run (chat inputs growing ~10 KB a
//      round, a compaction every 15 rounds), with and without encryption, file and S3 backends,
//      against a driver that would store whole payloads.
//   2. Throughput of the codec and of the chunk store, in-process.
//   3. A 1 MB value through a workflow (input → activity → result) on a dev server with the store
//      off and on, side by side in one run.
//   4. agentRun over a recorded trajectory: history bytes per round by threshold (the default's case).
//   5. What the store costs a round of agentRun on two recorded trajectories (the repository's and
//      the extended corpus's claudecode django-11797) and a generated one, file and S3: bytes stored
//      against the trajectory's, objects written, reads and checks per round, history per round.
// Section 5's table and a line of each other's figures are written to bench/README.md, section "Payloads";
// every table to stdout. `-- --only store-cost` runs section 5
// alone and prints it without writing the README (figures there come from one whole run). S3 is moto's server on 127.0.0.1
// (installed into .temporal/moto on first use): its latency is a local Python server's, not S3's.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { deflateRawSync } from 'node:zlib';
import { Client, Connection } from '@temporalio/client';
import {
  defaultPayloadConverter,
  ExternalStorage,
  StorageDriverClaim,
  type DataConverter,
  type Payload,
} from '@temporalio/common';
import { decodeReferencePayload } from '@temporalio/common/lib/internal-non-workflow/extstore-helpers.js';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import proto from '@temporalio/proto';
import { DEFAULT_PAYLOAD_THRESHOLD, loadConfig } from '../src/config.js';
import { startDevServer, type DevServer } from '../dev/dev-server.js';
import { groupDigits } from '../src/core/agent/compaction-history.js';
import { openingMessages } from '../src/core/agent/trajectory.js';
import { agentRun, compactorPlugin, createExtractiveSummarizer } from '../src/index.js';
import { ChunkStoreDriver } from '../src/payloads/chunk-store.js';
import { codecKey, type CodecKey, type Keyring } from '../src/payloads/keyring.js';
import { CompactorCodec, payloadProtoSize } from '../src/payloads/codec.js';
import { FileBackend } from '../src/payloads/file-backend.js';
import { payloadConverterFromConfig } from '../src/payloads/index.js';
import { parseObjectKey } from '../src/payloads/object-format.js';
import { S3Backend } from '../src/payloads/s3-backend.js';
import { type ObjectBackend } from '../src/payloads/object-backend.js';
import { chatInputSequence } from '../corpus/chat-inputs.js';
import { fillText } from '../corpus/content.js';
import { startS3Server, type S3TestServer } from '../scripts/s3-test-server.js';
import type { EchoValue } from '../corpus/store-workflows.js';
import { writeReadmeSection } from './readme-section.js';
import { extendedCorpusLocation, extendedCorpusMissing, generateLongRun, longRunName } from '../corpus/index.js';

// With the store off a history page holds megabytes of payloads: over gRPC's 4 MB default.
const LARGE_MESSAGES = { 'grpc.max_receive_message_length': 256 * 1024 * 1024 };

const progress = (message: string): void => {
  process.stderr.write(`[bench:payloads] ${message}\n`);
};
const fmt = (value: number, digits = 1): string =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
/** A keyring of one key (the package builds its keyrings from settings). */
const keyringOf = (key: CodecKey): Keyring => ({ current: key, byId: new Map([[key.id, key]]) });
const kb = (bytes: number): string => `${groupDigits(Math.round(bytes / 1024))} KB`;
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
};

function temporaryDirectory(): { directory: string; remove: () => void } {
  const directory = mkdtempSync(join(tmpdir(), 'bench-payloads-'));
  return { directory, remove: () => rmSync(directory, { recursive: true, force: true }) };
}

/** Prose as agents produce it: compressible, but not trivially (fresh words every call). */
function prose(length: number, seed: number): string {
  const words = [
    'build',
    'failed',
    'module',
    'import',
    'error',
    'line',
    'config',
    'patch',
    'test',
    'trace',
    'value',
    'field',
    'request',
    'result',
  ];
  let state = seed >>> 0 || 1;
  return fillText(length, () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state % 9 === 0 ? `${(state >>> 8).toString(36)} ` : `${words[(state >>> 16) % words.length] ?? 'x'} `;
  });
}

// ---------------------------------------------------------------------------------------------
// 1. Store growth

interface GrowthRow {
  label: string;
  rounds: number;
  sentBytes: number;
  newContent: number;
  stored: number;
  plaintext: number;
  chunks: number;
  nodes: number;
  manifests: number;
  wholePayloads: number;
  wholeCompressed: number;
  msPerRound: number;
}

async function growth(
  label: string,
  backend: ObjectBackend,
  keyring: Keyring | undefined,
  options: Parameters<typeof chatInputSequence>[0],
): Promise<GrowthRow> {
  const steps = chatInputSequence(options);
  const driver = new ChunkStoreDriver({ backend, keyring });
  let newContent = 0;
  let sentBytes = 0;
  let wholeCompressed = 0;
  const started = performance.now();
  for (const step of steps) {
    const payload: Payload = { metadata: { encoding: new TextEncoder().encode('json/plain') }, data: step.data };
    const [claim] = await driver.store({}, [payload]);
    if (claim === undefined) throw new Error('no claim');
    newContent += step.newContentBytes;
    sentBytes += step.data.length;
  }
  const ms = performance.now() - started;
  for (const step of steps) wholeCompressed += deflateRawSync(step.data).length;
  // Every payload must read back, through a driver with a cold cache.
  const reader = new ChunkStoreDriver({ backend, keyring });
  const last = steps.at(-1);
  if (last !== undefined) {
    const [claim] = await driver.store({}, [{ metadata: {}, data: last.data }]);
    const [back] = await reader.retrieve({}, claim === undefined ? [] : [claim]);
    if (!Buffer.from(back?.data ?? []).equals(Buffer.from(last.data)))
      throw new Error(`${label}: the last payload did not read back`);
  }
  const { chunk, node, manifest } = driver.stats.written;
  return {
    label,
    rounds: steps.length,
    sentBytes,
    newContent,
    stored: chunk.bytes + node.bytes + manifest.bytes,
    plaintext: chunk.plaintextBytes + node.plaintextBytes + manifest.plaintextBytes,
    chunks: chunk.objects,
    nodes: node.objects,
    manifests: manifest.objects,
    wholePayloads: sentBytes,
    wholeCompressed,
    msPerRound: ms / steps.length,
  };
}

// ---------------------------------------------------------------------------------------------
// 2. Throughput

interface ThroughputRow {
  what: string;
  value: string;
}

async function timeIt(runs: number, operation: (run: number) => Promise<void> | void): Promise<number> {
  await operation(-1);
  const times: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now();
    await operation(run);
    times.push(performance.now() - started);
  }
  return median(times);
}

async function codecThroughput(): Promise<ThroughputRow[]> {
  const rows: ThroughputRow[] = [];
  const keyring = keyringOf(codecKey(randomBytes(32)));
  const small = defaultPayloadConverter.toPayload({ role: 'assistant', content: prose(800, 7) });
  const big = defaultPayloadConverter.toPayload({ messages: [{ role: 'tool', content: prose(1_000_000, 9) }] });
  for (const [name, codec] of [
    ['deflate', new CompactorCodec()],
    ['deflate + AES-256-GCM', new CompactorCodec({ keyring })],
  ] as const) {
    const encodedSmall = codec.encodeOne(small);
    const smallEncodeMs = await timeIt(2000, () => void codec.encodeOne(small));
    const smallDecodeMs = await timeIt(2000, () => void codec.decodeOne(encodedSmall));
    const encodedBig = codec.encodeOne(big);
    const bigEncodeMs = await timeIt(9, () => void codec.encodeOne(big));
    const bigDecodeMs = await timeIt(9, () => void codec.decodeOne(encodedBig));
    const mb = payloadProtoSize(big) / 1e6;
    rows.push({
      what: `codec, ${name}: ${payloadProtoSize(small)} B payload (stays inline) → ${payloadProtoSize(encodedSmall)} B`,
      value: `encode ${fmt(smallEncodeMs * 1000, 0)} µs, decode ${fmt(smallDecodeMs * 1000, 0)} µs`,
    });
    rows.push({
      what: `codec, ${name}: 1 MB payload → ${kb(payloadProtoSize(encodedBig))}`,
      value: `encode ${fmt(mb / (bigEncodeMs / 1000))} MB/s, decode ${fmt(mb / (bigDecodeMs / 1000))} MB/s`,
    });
  }
  return rows;
}

interface StoreSetup {
  label: string;
  backend: ObjectBackend;
  keyring: Keyring | undefined;
}

/**
 * The driver on 1 MB payloads, the setups interleaved run by run (A, B, A, B...), so a burst of
 * load on the shared machine hits them alike and they compare side by side.
 */
async function storeThroughput(setups: StoreSetup[], runs: number): Promise<ThroughputRow[]> {
  const size = 1_000_000;
  const payloadOf = (seed: number): Payload =>
    defaultPayloadConverter.toPayload({
      messages: Array.from({ length: 100 }, (_, index) => ({
        role: 'tool',
        content: prose(size / 100 - 40, seed * 1000 + index),
      })),
    });
  const mb = (payloadOf(1).data?.length ?? 0) / 1e6;
  const times = setups.map(() => ({
    fresh: [] as number[],
    again: [] as number[],
    cold: [] as number[],
    warm: [] as number[],
  }));
  const known = payloadOf(1);
  const claims = [];
  for (const setup of setups) {
    const [claim] = await new ChunkStoreDriver({ backend: setup.backend, keyring: setup.keyring }).store({}, [known]);
    if (claim === undefined) throw new Error('no claim');
    claims.push(claim);
  }
  const warmDrivers = setups.map((setup) => new ChunkStoreDriver({ backend: setup.backend, keyring: setup.keyring }));
  const measure = async (target: number[], operation: () => Promise<unknown>, record: boolean): Promise<void> => {
    const started = performance.now();
    await operation();
    if (record) target.push(performance.now() - started);
  };
  // Run -1 warms every path up and is not recorded.
  for (let run = -1; run < runs; run += 1) {
    for (const [index, setup] of setups.entries()) {
      const timing = times[index];
      const claim = claims[index];
      const warmDriver = warmDrivers[index];
      if (timing === undefined || claim === undefined || warmDriver === undefined) continue;
      const { backend, keyring } = setup;
      const record = run >= 0;
      // New content: a payload the store has not seen. Known content through a new driver (no
      // in-memory knowledge): existence checks and the manifest. Reads with a cold and a warm cache.
      const fresh = payloadOf(run + 10 + index * 100);
      await measure(timing.fresh, () => new ChunkStoreDriver({ backend, keyring }).store({}, [fresh]), record);
      await measure(timing.again, () => new ChunkStoreDriver({ backend, keyring }).store({}, [known]), record);
      await measure(timing.cold, () => new ChunkStoreDriver({ backend, keyring }).retrieve({}, [claim]), record);
      await measure(timing.warm, () => warmDriver.retrieve({}, [claim]), record);
    }
  }
  return setups.flatMap((setup, index) => {
    const timing = times[index];
    if (timing === undefined) return [];
    const fresh = median(timing.fresh);
    const cold = median(timing.cold);
    return [
      {
        what: `${setup.label}: store 1 MB of new content`,
        value: `${fmt(fresh, 0)} ms (${fmt(mb / (fresh / 1000))} MB/s)`,
      },
      { what: `${setup.label}: store 1 MB already stored (new driver)`, value: `${fmt(median(timing.again), 0)} ms` },
      {
        what: `${setup.label}: retrieve 1 MB, cold cache`,
        value: `${fmt(cold, 0)} ms (${fmt(mb / (cold / 1000))} MB/s)`,
      },
      { what: `${setup.label}: retrieve 1 MB, warm cache`, value: `${fmt(median(timing.warm), 1)} ms` },
    ];
  });
}

// ---------------------------------------------------------------------------------------------
// 3. A 1 MB value through a workflow

interface WorkflowRow {
  label: string;
  medianMs: number;
  historyBytes: number;
  largestPayload: number;
}

interface WorkflowSetup {
  label: string;
  dataConverter: DataConverter | undefined;
}

/**
 * One worker and client per configuration, all polling at once on their own task queues; the
 * runs alternate between configurations (A, B, C, D, A, ...) so they compare side by side.
 */
async function workflowRoundTrips(
  setups: WorkflowSetup[],
  address: string,
  bundlePath: string,
  runs: number,
): Promise<WorkflowRow[]> {
  const connection = await Connection.connect({ address, channelArgs: LARGE_MESSAGES });
  const nativeConnection = await NativeConnection.connect({ address });
  const started: Array<{
    setup: WorkflowSetup;
    worker: Worker;
    running: Promise<void>;
    client: Client;
    taskQueue: string;
    times: number[];
    historyBytes: number;
    largestPayload: number;
  }> = [];
  try {
    for (const [index, setup] of setups.entries()) {
      const taskQueue = `bench-payloads-${process.pid}-${index}-${Date.now().toString(36)}`;
      const worker = await Worker.create({
        connection: nativeConnection,
        taskQueue,
        workflowBundle: { codePath: bundlePath },
        activities: {
          echo: async (value: EchoValue) => value,
          incompressible: async (bytes: number) => new Uint8Array(randomBytes(bytes)),
        },
        ...(setup.dataConverter === undefined ? {} : { dataConverter: setup.dataConverter }),
      });
      const client = new Client({
        connection,
        ...(setup.dataConverter === undefined ? {} : { dataConverter: setup.dataConverter }),
      });
      started.push({
        setup,
        worker,
        running: worker.run(),
        client,
        taskQueue,
        times: [],
        historyBytes: 0,
        largestPayload: 0,
      });
    }
    for (let run = -1; run < runs; run += 1) {
      for (const [index, entry] of started.entries()) {
        // A fresh 1 MB every run: the store's worst case (nothing to dedup against).
        const value: EchoValue = { text: prose(1_000_000, (run + 2) * 10 + index), note: entry.setup.label };
        const workflowId = `bench-payloads-${index}-${run}-${Date.now().toString(36)}`;
        const begin = performance.now();
        const result = await entry.client.workflow.execute('storeEcho', {
          taskQueue: entry.taskQueue,
          workflowId,
          args: [value],
        });
        const ms = performance.now() - begin;
        if (JSON.stringify(result) !== JSON.stringify({ ...value, length: value.text.length }))
          throw new Error(`${entry.setup.label}: the workflow result differs`);
        if (run < 0) continue;
        entry.times.push(ms);
        const description = await entry.client.workflow.getHandle(workflowId).describe();
        entry.historyBytes = Number(description.historySize ?? 0);
        const { events } = await wholeChain(connection, workflowId);
        for (const event of events) {
          for (const payloads of [
            event.workflowExecutionStartedEventAttributes?.input?.payloads,
            event.activityTaskScheduledEventAttributes?.input?.payloads,
            event.activityTaskCompletedEventAttributes?.result?.payloads,
            event.workflowExecutionCompletedEventAttributes?.result?.payloads,
          ]) {
            for (const payload of payloads ?? [])
              entry.largestPayload = Math.max(entry.largestPayload, payloadProtoSize(payload));
          }
        }
      }
    }
    return started.map((entry) => {
      progress(
        `${entry.setup.label}: median ${fmt(median(entry.times), 0)} ms, history ${groupDigits(entry.historyBytes)} bytes, largest payload ${groupDigits(entry.largestPayload)} bytes`,
      );
      return {
        label: entry.setup.label,
        medianMs: median(entry.times),
        historyBytes: entry.historyBytes,
        largestPayload: entry.largestPayload,
      };
    });
  } finally {
    for (const entry of started) entry.worker.shutdown();
    await Promise.allSettled(started.map((entry) => entry.running));
    await nativeConnection.close();
    await connection.close();
  }
}

// ---------------------------------------------------------------------------------------------
// 4. agentRun history per round

interface RoundRow {
  label: string;
  trajectory: string;
  /** Runs of the continue-as-new chain. */
  runs: number;
  rounds: number;
  medianRoundBytes: number;
  p90RoundBytes: number;
  /** Milliseconds per round, by the events' timestamps: from a chat activity's scheduling to the next one's. */
  medianRoundMs: number;
  startBytes: number;
  endBytes: number;
  largestPayload: number;
}

const HistoryEvent = proto.temporal.api.history.v1.HistoryEvent;
type Event = proto.temporal.api.history.v1.IHistoryEvent;

/** An event's time by the server's clock, in milliseconds. */
const eventMs = (event: Event): number =>
  Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);

/** Every event of a workflow id's continue-as-new chain, oldest run first (all pages). */
async function wholeChain(connection: Connection, workflowId: string): Promise<{ events: Event[]; runs: number }> {
  const chain: Event[][] = [];
  let runId: string | undefined;
  do {
    const events: Event[] = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await connection.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId, ...(runId === undefined ? {} : { runId }) },
        ...(nextPageToken === undefined ? {} : { nextPageToken }),
      });
      events.push(...(page.history?.events ?? []));
      nextPageToken =
        page.nextPageToken !== null && page.nextPageToken !== undefined && page.nextPageToken.length > 0
          ? page.nextPageToken
          : undefined;
    } while (nextPageToken !== undefined);
    chain.unshift(events);
    const previous = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    runId = previous === null || previous === undefined || previous === '' ? undefined : previous;
  } while (runId !== undefined);
  return { events: chain.flat(), runs: chain.length };
}

/** Names each agentRun's task queue: as short as the default `compactor` (a round's history names it four times). */
let agentQueues = 0;

async function agentRounds(
  label: string,
  address: string,
  env: Record<string, string>,
  bundlePath: string,
  trajectoryDir: string,
  trajectory: string,
  contextWindow: number,
): Promise<RoundRow> {
  const connection = await Connection.connect({ address, channelArgs: LARGE_MESSAGES });
  const nativeConnection = await NativeConnection.connect({ address });
  try {
    agentQueues += 1;
    const taskQueue = `compactor-${agentQueues}`;
    // Set up as a user's worker is: compactorPlugin() with a prebuilt bundle (and its short build id).
    const config = loadConfig({ env });
    const { dataConverter } = payloadConverterFromConfig(config);
    const plugin = compactorPlugin({
      config,
      summarizer: createExtractiveSummarizer(),
      activities: { trajectoryDir },
      dataConverter,
      tracing: 'off',
    });
    const worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      workflowBundle: { codePath: bundlePath },
      plugins: [plugin],
    });
    const client = new Client({ connection, dataConverter });
    const opening = openingMessages(JSON.parse(readFileSync(join(trajectoryDir, `${trajectory}.json`), 'utf8')));
    const workflowId = `bench-payloads-agent-${label.replace(/\W+/g, '-')}-${Date.now().toString(36)}`;
    await worker.runUntil(() =>
      client.workflow.execute(agentRun, {
        taskQueue,
        workflowId,
        args: [
          {
            messages: opening,
            model: { provider: 'replay', trajectory, contextWindow, maxOutputTokens: 1_000 },
            compaction: { ageObservations: true },
            maxRounds: 1000,
          },
        ],
      }),
    );
    const { events, runs } = await wholeChain(connection, workflowId);
    // A round: from the scheduling of its chat activity to the next one's. Before the first: the
    // start (the input); from the completion on: the end (the result).
    const rounds: number[] = [];
    const roundMs: number[] = [];
    let roundStarted: number | undefined;
    let startBytes = 0;
    let endBytes = 0;
    let largestPayload = 0;
    for (const event of events) {
      const size = HistoryEvent.encode(event).finish().length;
      if (event.activityTaskScheduledEventAttributes?.activityType?.name === 'chat') {
        rounds.push(0);
        const at = eventMs(event);
        if (roundStarted !== undefined) roundMs.push(at - roundStarted);
        roundStarted = at;
      }
      if (
        event.workflowExecutionCompletedEventAttributes !== undefined &&
        event.workflowExecutionCompletedEventAttributes !== null
      )
        endBytes += size;
      else if (rounds.length === 0) startBytes += size;
      else rounds[rounds.length - 1] = (rounds.at(-1) ?? 0) + size;
      const payloads = [
        ...(event.workflowExecutionStartedEventAttributes?.input?.payloads ?? []),
        ...(event.activityTaskScheduledEventAttributes?.input?.payloads ?? []),
        ...(event.activityTaskCompletedEventAttributes?.result?.payloads ?? []),
        ...(event.workflowExecutionCompletedEventAttributes?.result?.payloads ?? []),
      ];
      for (const payload of payloads) largestPayload = Math.max(largestPayload, payloadProtoSize(payload));
    }
    const last = events.at(-1);
    if (roundStarted !== undefined && last !== undefined) roundMs.push(eventMs(last) - roundStarted);
    const sorted = [...rounds].sort((a, b) => a - b);
    const row = {
      label,
      trajectory,
      runs,
      rounds: rounds.length,
      medianRoundBytes: median(rounds),
      p90RoundBytes: sorted[Math.floor(sorted.length * 0.9)] ?? 0,
      medianRoundMs: median(roundMs),
      startBytes,
      endBytes,
      largestPayload,
    };
    progress(
      `agentRun ${trajectory}, ${label}: ${row.rounds} rounds, median ${groupDigits(row.medianRoundBytes)} B per round, p90 ${groupDigits(row.p90RoundBytes)} B, median ${fmt(row.medianRoundMs, 0)} ms per round`,
    );
    return row;
  } finally {
    await nativeConnection.close();
    await connection.close();
  }
}

// ---------------------------------------------------------------------------------------------
// 5. What the store costs a round of agentRun: objects, bytes and requests

/** An ObjectBackend that logs every request with its time (to split them into rounds) and keeps each key's size. */
class CountingBackend implements ObjectBackend {
  readonly description: string;
  readonly requests: Array<{ op: 'get' | 'put' | 'stat' | 'touch'; at: number }> = [];
  /** Every key written, with the size of its last write: what the store holds (nothing is removed here). */
  readonly sizes = new Map<string, number>();
  constructor(private readonly inner: ObjectBackend) {
    this.description = inner.description;
  }
  async get(key: string, signal?: AbortSignal): Promise<Uint8Array | undefined> {
    this.requests.push({ op: 'get', at: Date.now() });
    return this.inner.get(key, signal);
  }
  async put(key: string, body: Uint8Array, signal?: AbortSignal): Promise<void> {
    this.requests.push({ op: 'put', at: Date.now() });
    await this.inner.put(key, body, signal);
    this.sizes.set(key, body.length);
  }
  async stat(key: string, signal?: AbortSignal): Promise<{ modifiedMs: number } | undefined> {
    this.requests.push({ op: 'stat', at: Date.now() });
    return this.inner.stat(key, signal);
  }
  async touch(key: string, signal?: AbortSignal): Promise<void> {
    this.requests.push({ op: 'touch', at: Date.now() });
    return this.inner.touch(key, signal);
  }
}

interface CostRow {
  trajectory: string;
  backend: string;
  rounds: number;
  trajectoryBytes: number;
  storedBytes: number;
  objects: number;
  /** Medians per round, then p90. */
  writes: [number, number];
  reads: [number, number];
  checks: [number, number];
  historyBytes: [number, number];
  /** Sealed bytes by kind, and objects. */
  byKind: Record<'chunk' | 'node' | 'manifest', { objects: number; bytes: number }>;
  /** Objects a worker that has seen nothing reads to take the last chat input (its whole chain). */
  coldReads: number;
}

const p90 = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.9)] ?? 0;

/**
 * One agentRun over a trajectory with the store on `backend` (the default threshold, no key), the
 * worker set up as a user's is. Every request of the store is split into rounds by the server's
 * times of the `chat` schedulings (one machine, one clock): a round is from one to the next.
 */
async function storeCost(
  address: string,
  bundlePath: string,
  trajectoryDir: string,
  trajectory: string,
  contextWindow: number,
  backendLabel: string,
  inner: ObjectBackend,
): Promise<CostRow> {
  const backend = new CountingBackend(inner);
  const config = loadConfig({ env: {} });
  const driver = new ChunkStoreDriver({ backend });
  const codec = new CompactorCodec({ passThroughAtOrAbove: config.payloadThreshold });
  const dataConverter: DataConverter = {
    payloadCodecs: [codec],
    externalStorage: new ExternalStorage({ drivers: [driver], payloadSizeThreshold: config.payloadThreshold }),
  };
  const connection = await Connection.connect({ address, channelArgs: LARGE_MESSAGES });
  const nativeConnection = await NativeConnection.connect({ address });
  let lastChatClaim: Payload | undefined;
  try {
    agentQueues += 1;
    const taskQueue = `compactor-${agentQueues}`;
    const plugin = compactorPlugin({
      config,
      summarizer: createExtractiveSummarizer(),
      activities: { trajectoryDir },
      dataConverter,
      tracing: 'off',
    });
    const worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      workflowBundle: { codePath: bundlePath },
      plugins: [plugin],
    });
    const client = new Client({ connection, dataConverter });
    const messages: unknown = JSON.parse(readFileSync(join(trajectoryDir, `${trajectory}.json`), 'utf8'));
    const workflowId = `bench-payloads-cost-${Date.now().toString(36)}`;
    const result = await worker.runUntil(() =>
      client.workflow.execute(agentRun, {
        taskQueue,
        workflowId,
        args: [
          {
            messages: openingMessages(messages),
            model: { provider: 'replay', trajectory, contextWindow, maxOutputTokens: 1_000 },
            compaction: { ageObservations: true },
            maxRounds: 1000,
          },
        ],
      }),
    );
    const { events } = await wholeChain(connection, workflowId);
    const chats: number[] = [];
    const history: number[] = [];
    for (const event of events) {
      if (event.activityTaskScheduledEventAttributes?.activityType?.name === 'chat') {
        chats.push(eventMs(event));
        history.push(0);
        lastChatClaim = event.activityTaskScheduledEventAttributes.input?.payloads?.[0] ?? undefined;
      }
      if (history.length > 0)
        history[history.length - 1] = (history.at(-1) ?? 0) + HistoryEvent.encode(event).finish().length;
    }
    const roundOf = (at: number): number => {
      let round = -1;
      while (round + 1 < chats.length && (chats[round + 1] ?? 0) <= at) round += 1;
      return round;
    };
    const perRound = chats.map(() => ({ put: 0, get: 0, check: 0 }));
    for (const request of backend.requests) {
      const counts = perRound[roundOf(request.at)];
      if (counts === undefined) continue;
      if (request.op === 'put') counts.put += 1;
      else if (request.op === 'get') counts.get += 1;
      else counts.check += 1;
    }
    const byKind = {
      chunk: { objects: 0, bytes: 0 },
      node: { objects: 0, bytes: 0 },
      manifest: { objects: 0, bytes: 0 },
    };
    for (const [key, bytes] of backend.sizes) {
      const kind = parseObjectKey(key)?.kind;
      if (kind === undefined) continue;
      byKind[kind].objects += 1;
      byKind[kind].bytes += bytes;
    }
    // A worker that has seen nothing takes the last chat input: the objects it reads.
    let coldReads = 0;
    if (lastChatClaim !== undefined) {
      const cold = new CountingBackend(inner);
      const reader = new ChunkStoreDriver({ backend: cold });
      const { claimData } = decodeReferencePayload(lastChatClaim);
      await reader.retrieve({}, [new StorageDriverClaim(claimData)]);
      coldReads = cold.requests.filter((request) => request.op === 'get').length;
    }
    const row: CostRow = {
      trajectory,
      backend: backendLabel,
      rounds: result.rounds,
      trajectoryBytes: JSON.stringify(messages).length,
      storedBytes: [...backend.sizes.values()].reduce((sum, bytes) => sum + bytes, 0),
      objects: backend.sizes.size,
      writes: [median(perRound.map((round) => round.put)), p90(perRound.map((round) => round.put))],
      reads: [median(perRound.map((round) => round.get)), p90(perRound.map((round) => round.get))],
      checks: [median(perRound.map((round) => round.check)), p90(perRound.map((round) => round.check))],
      historyBytes: [median(history), p90(history)],
      byKind,
      coldReads,
    };
    progress(
      `store cost ${trajectory}, ${backendLabel}: ${row.rounds} rounds, ${kb(row.storedBytes)} stored for ${kb(row.trajectoryBytes)} (${fmt(row.storedBytes / row.trajectoryBytes, 2)}×), ${groupDigits(row.objects)} objects, per round ${row.writes[0]} written / ${row.reads[0]} read / ${row.checks[0]} checked, history ${groupDigits(row.historyBytes[0])} B`,
    );
    return row;
  } finally {
    await nativeConnection.close();
    await connection.close();
  }
}

// ---------------------------------------------------------------------------------------------

function markdown(
  growthRows: GrowthRow[],
  throughput: ThroughputRow[],
  workflowRows: WorkflowRow[],
  roundRows: RoundRow[],
  costRows: CostRow[],
  machine: string,
): string {
  const lines = [
    '## Payloads',
    '',
    'What the payload store (`COMPACTOR_PAYLOAD_STORE`) and the codec (`COMPACTOR_CODEC_KEY`) cost and',
    "save. S3 is moto's server on 127.0.0.1 (a local Python process: its per-request latency, not",
    "S3's). Reproduce: `npm run bench:payloads`.",
    '',
    '### Store growth over new content',
    '',
    'A synthetic agent run (`corpus/chat-inputs.ts`, seeded): every round the chat input grows by an',
    'assistant turn with a tool call and a ~10 KB tool result; a compaction every 15 rounds replaces the',
    'middle with a ~2 KB summary. *New content* is the bytes of the messages each input has that the one',
    'before did not (the whole first input). *Stored* is what the store grew by (compressed, sealed',
    'objects); *plaintext* the same objects before compression (the dedup alone). *Whole payloads* is what',
    'a driver that stores each payload as one object would hold (raw, then deflated).',
    '',
    '| run | rounds | sent | new content | stored | stored / new | plaintext / new | chunks · nodes · manifests | whole payloads / new (raw · deflated) | store ms per round |',
    '|---|---:|---:|---:|---:|---:|---:|---|---|---:|',
    ...growthRows.map(
      (row) =>
        `| ${row.label} | ${row.rounds} | ${kb(row.sentBytes)} | ${kb(row.newContent)} | ${kb(row.stored)} | **${fmt(row.stored / row.newContent, 2)}×** | ${fmt(row.plaintext / row.newContent, 2)}× | ${groupDigits(row.chunks)} · ${groupDigits(row.nodes)} · ${groupDigits(row.manifests)} | ${fmt(row.wholePayloads / row.newContent, 1)}× · ${fmt(row.wholeCompressed / row.newContent, 1)}× | ${fmt(row.msPerRound, 1)} |`,
    ),
    '',
    'The store grows with the new content (target: at most 1.5×), with and without encryption: equal',
    "chunks encrypt to equal objects (the nonce comes from the chunk's keyed hash). A whole-payload driver",
    'grows with the conversation every round instead.',
    '',
    '### Throughput (in-process)',
    '',
    'Medians. The codec handles the payloads that stay inline (under the threshold); the 1 MB rows show its',
    'rate when it is used without a store. The store rows run the whole driver (chunking, hashing,',
    "compression, encryption with a key, the backend's I/O; files are fsynced), 7 runs after a warm-up,",
    'the three stores interleaved run by run so load on the shared machine hits them alike.',
    '',
    '| what | median |',
    '|---|---|',
    ...throughput.map((row) => `| ${row.what} | ${row.value} |`),
    '',
    '### A 1 MB value through a workflow, store off and on',
    '',
    "The `storeEcho` test workflow (`test/payloads/store-workflows.ts`): a 1 MB value as the workflow's",
    'input, the input and result of one activity, and the result (four payloads of 1 MB). Median from',
    '`start` to the result over 7 runs after a warm-up, a fresh value every run (nothing to dedup against:',
    "the store's worst case), one worker and client per configuration, all polling at once against one",
    'dev server, the runs alternating between configurations. Client and worker share the process here,',
    'so the worker finds the chunks the client just stored in its in-memory index. *History bytes* is the',
    "server's history size of the last run.",
    '',
    '| configuration | median ms | history bytes | largest payload in history |',
    '|---|---:|---:|---:|',
    ...workflowRows.map(
      (row) =>
        `| ${row.label} | ${fmt(row.medianMs, 0)} | ${groupDigits(row.historyBytes)} | ${groupDigits(row.largestPayload)} |`,
    ),
    '',
    '### agentRun: history bytes per round by threshold',
    '',
    'Recorded trajectories through `agentRun` (replay provider, `ageObservations`, the extractive',
    'summarizer) with the store off and on at several `COMPACTOR_PAYLOAD_THRESHOLD`s (no key but in one row). A round is',
    "every event from the scheduling of its `chat` activity to the next one's (protobuf bytes of the",
    'events, across continue-as-new: *runs* counts the chain); *start* is what comes before the first',
    "(the input), *end* the completion (the result); *ms per round* is the time between two rounds' `chat`",
    "schedulings by the server's timestamps, the rows run one after another on one dev server (the",
    "file store, worker and client in this process). Each worker is set up as a user's would be",
    '(`compactorPlugin()`, a prebuilt bundle) and polls a queue named like the default `compactor`.',
    '',
    '| trajectory (window) | store | runs | rounds | median bytes per round | p90 | median ms per round | start | end | largest payload |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...roundRows.map(
      (row) =>
        `| ${row.trajectory} | ${row.label} | ${row.runs} | ${row.rounds} | ${groupDigits(row.medianRoundBytes)} | ${groupDigits(row.p90RoundBytes)} | ${fmt(row.medianRoundMs, 0)} | ${groupDigits(row.startBytes)} | ${groupDigits(row.endBytes)} | ${groupDigits(row.largestPayload)} |`,
    ),
    '',
    ...costMarkdown(costRows),
    `Machine: ${machine}.`,
  ];
  return lines.join('\n');
}

/** Section 5's runs: every trajectory with the file store and with S3. */
async function storeCosts(
  address: string,
  bundlePath: string,
  fileBackend: () => ObjectBackend,
  s3Backend: () => ObjectBackend,
  scratch: string,
): Promise<CostRow[]> {
  const runs: Array<[string, string, number]> = [];
  const examples = fileURLToPath(new URL('../examples/trajectories/', import.meta.url));
  runs.push([examples, 'openhands_gpt4o_Project-MONAI__MONAI-3715', 9_000]);
  const corpus = extendedCorpusLocation();
  const django = 'claudecode_django__django-11797';
  if (corpus.present) runs.push([corpus.dir, django, 32_000]);
  else progress(`${extendedCorpusMissing(corpus)}: store cost without ${django}`);
  const synthetic = { rounds: 200, resultChars: 16_000 };
  writeFileSync(join(scratch, `${longRunName(synthetic)}.json`), JSON.stringify(generateLongRun(synthetic)));
  runs.push([scratch, longRunName(synthetic), 16_000]);
  const rows: CostRow[] = [];
  for (const [dir, trajectory, window] of runs) {
    rows.push(await storeCost(address, bundlePath, dir, trajectory, window, 'file', fileBackend()));
    rows.push(await storeCost(address, bundlePath, dir, trajectory, window, 'S3 (moto)', s3Backend()));
  }
  return rows;
}

/** The store's goal for the real trajectories (the generated one aside), row by row: met or not, from this run. */
function goalLine(rows: CostRow[]): string {
  const real = rows.filter((row) => !row.trajectory.startsWith('generated_'));
  const met = (test: (row: CostRow) => boolean): string => `${real.filter(test).length} of ${real.length}`;
  return (
    'Goal, on the real trajectories with either store: at most 0.6× the trajectory stored, at most 5 ' +
    `objects written and 2 KB of history a round at the median. Met here: bytes on ${met((row) => row.storedBytes <= 0.6 * row.trajectoryBytes)} rows, ` +
    `objects on ${met((row) => row.writes[0] <= 5)}, history on ${met((row) => row.historyBytes[0] <= 2048)}.`
  );
}

/** What the store costs a round, a row per trajectory and backend. */
function costTable(rows: CostRow[]): string {
  const range = ([middle, high]: [number, number]): string => `${groupDigits(middle)} · ${groupDigits(high)}`;
  return [
    '| trajectory (window) | store | rounds | trajectory | stored | stored / trajectory | objects (chunks · nodes · manifests) | written per round | read per round | checked per round | cold reads | history per round, B |',
    '|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|',
    ...rows.map(
      (row) =>
        `| ${row.trajectory} | ${row.backend} | ${row.rounds} | ${kb(row.trajectoryBytes)} | ${kb(row.storedBytes)} | **${fmt(row.storedBytes / row.trajectoryBytes, 2)}×** | ${groupDigits(row.objects)} (${groupDigits(row.byKind.chunk.objects)} · ${groupDigits(row.byKind.node.objects)} · ${groupDigits(row.byKind.manifest.objects)}) | ${range(row.writes)} | ${range(row.reads)} | ${range(row.checks)} | ${row.coldReads} | ${range(row.historyBytes)} |`,
    ),
  ].join('\n');
}

function costMarkdown(rows: CostRow[]): string[] {
  return [
    '### agentRun: what the store costs a round',
    '',
    'Each trajectory through `agentRun` (replay provider, `ageObservations`, the extractive summarizer,',
    'the default threshold, no key) with the file store and with S3 (moto). *Stored* is every object',
    "the run left in the store (sealed bytes), against the trajectory's JSON; a round is every request",
    "from the scheduling of one `chat` activity to the next's (medians · p90): *written* are PUTs,",
    '*read* GETs, *checked* existence checks and touches (HEAD/COPY on S3); worker and client share',
    'one driver here, so what a round stored is read from its cache. *Cold reads* are the GETs a',
    'worker that has seen nothing makes to take the last chat input. *History* is the protobuf bytes',
    'of the events of a round. A payload on a base, or a fresh one, is its manifest',
    'alone: its new bytes inline, listed again by later payloads as slices of that manifest; each',
    'manifest is compressed against the window of the object stored before it (a chain of contexts',
    'a cold reader opens first). A chunk object is a pack (the new bytes of a payload over a tree of',
    'nodes, written end to end).',
    '',
    costTable(rows),
    '',
    goalLine(rows),
    '',
    'Bytes by kind (sealed): ' +
      rows
        .map(
          (row) =>
            `${row.trajectory.split('_').slice(-1)[0] ?? row.trajectory} on ${row.backend}: chunks ${kb(row.byKind.chunk.bytes)}, nodes ${kb(row.byKind.node.bytes)}, manifests ${kb(row.byKind.manifest.bytes)}`,
        )
        .join('; ') +
      '.',
    '',
  ];
}

/**
 * The README's section: the table of what the store costs a round, and the other four measurements
 * a line each (stdout has their tables).
 */
function readmeMarkdown(
  growthRows: GrowthRow[],
  workflowRows: WorkflowRow[],
  roundRows: RoundRow[],
  costRows: CostRow[],
  machine: string,
): string {
  const trajectories = [...new Set(roundRows.map((row) => row.trajectory))];
  return [
    '## Payloads',
    '',
    'What the payload store (`COMPACTOR_PAYLOAD_STORE`) costs and saves: trajectories through `agentRun`',
    '(default threshold, no key) with the file store and S3 (moto on 127.0.0.1). *Stored*: every object',
    "left, sealed, against the trajectory's JSON; per round (median · p90) *written* PUTs, *read* GETs,",
    '*checked* existence checks; *cold reads*: the GETs a fresh worker makes for the last chat input.',
    '',
    `Command: \`npm run bench:payloads\` (\`-- --only store-cost\`: this table alone). Date: ${new Date().toISOString().slice(0, 10)}.`,
    `Machine: ${machine}.`,
    '',
    costTable(costRows),
    '',
    "**How to read it.** *Stored / trajectory* under 1× is a store that grows with the run's new content,",
    'not with the conversation it sends every round; *history per round* is what a round adds to the',
    "workflow's history. The rest of the run (stdout has the tables):",
    '',
    `- *Store growth*, stored / new content: ${growthRows.map((row) => `${row.label} ${fmt(row.stored / row.newContent, 2)}×`).join('; ')}.`,
    `- *History bytes per round by threshold*, median: ${trajectories
      .map(
        (trajectory) =>
          `${trajectory}: ${roundRows
            .filter((row) => row.trajectory === trajectory)
            .map((row) => `${row.label} ${groupDigits(row.medianRoundBytes)}`)
            .join(' · ')}`,
      )
      .join('; ')}.`,
    `- *A 1 MB value through a workflow*, median ms and history bytes: ${workflowRows.map((row) => `${row.label} ${fmt(row.medianMs, 0)} and ${groupDigits(row.historyBytes)}`).join('; ')}.`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values: options } = parseArgs({ options: { only: { type: 'string' } } });
  if (options.only !== undefined && options.only !== 'store-cost')
    throw new Error(`--only: expected store-cost, got ${JSON.stringify(options.only)}`);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const cleanups: Array<() => void | Promise<void>> = [];
  let devServer: DevServer | undefined;
  let s3: S3TestServer | undefined;
  try {
    progress('starting moto (S3) on 127.0.0.1...');
    s3 = await startS3Server({ bucket: 'bench-payloads' });
    const s3Server = s3;
    const key = keyringOf(codecKey(randomBytes(32)));
    const fileBackend = (): ObjectBackend => {
      const made = temporaryDirectory();
      cleanups.push(made.remove);
      return new FileBackend({ directory: made.directory });
    };
    let prefixCounter = 0;
    const s3Backend = (): ObjectBackend =>
      new S3Backend({ bucket: s3Server.bucket, prefix: `run-${(prefixCounter += 1)}`, client: s3Server.client() });

    if (options.only === 'store-cost') {
      devServer = await startDevServer({ ui: false });
      const scratch = temporaryDirectory();
      cleanups.push(scratch.remove);
      const bundle = await bundleWorkflowCode({
        workflowsPath: fileURLToPath(new URL('../corpus/store-workflows.ts', import.meta.url)),
        logger: new DefaultLogger('WARN'),
      });
      writeFileSync(join(scratch.directory, 'bundle.js'), bundle.code);
      const rows = await storeCosts(
        devServer.address,
        join(scratch.directory, 'bundle.js'),
        fileBackend,
        s3Backend,
        scratch.directory,
      );
      process.stdout.write(`${costMarkdown(rows).join('\n')}\n`);
      return;
    }

    progress('store growth (after a warm-up run)...');
    await growth('warm-up', fileBackend(), key, { rounds: 20 });
    const sequence = { rounds: 60, bytesPerRound: 10_000, compactEvery: 15 };
    const long = { rounds: 120, bytesPerRound: 10_000, compactEvery: 0 };
    const growthRows: GrowthRow[] = [];
    for (const [label, make, keyring, options] of [
      ['file, no encryption, compaction every 15 rounds', fileBackend, undefined, sequence],
      ['file, AES-256-GCM, compaction every 15 rounds', fileBackend, key, sequence],
      ['S3 (moto), AES-256-GCM, compaction every 15 rounds', s3Backend, key, sequence],
      ['file, AES-256-GCM, no compaction (input reaches 1.2 MB)', fileBackend, key, long],
    ] as const) {
      const row = await growth(label, make(), keyring, options);
      progress(
        `${label}: stored ${kb(row.stored)} for ${kb(row.newContent)} new (${fmt(row.stored / row.newContent, 2)}×), ${fmt(row.msPerRound, 1)} ms per round`,
      );
      growthRows.push(row);
    }

    progress('throughput...');
    const throughput = [
      ...(await codecThroughput()),
      ...(await storeThroughput(
        [
          { label: 'file store, no encryption', backend: fileBackend(), keyring: undefined },
          { label: 'file store, AES-256-GCM', backend: fileBackend(), keyring: key },
          { label: 'S3 store (moto), AES-256-GCM', backend: s3Backend(), keyring: key },
        ],
        7,
      )),
    ];
    for (const row of throughput) progress(`${row.what}: ${row.value}`);

    progress('starting a Temporal dev server...');
    devServer = await startDevServer({ ui: false });
    const bundleDir = temporaryDirectory();
    cleanups.push(bundleDir.remove);
    const bundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('../corpus/store-workflows.ts', import.meta.url)),
      logger: new DefaultLogger('WARN'),
    });
    const bundlePath = join(bundleDir.directory, 'bundle.js');
    writeFileSync(bundlePath, bundle.code);
    const codecKeyText = randomBytes(32).toString('base64');
    const fileStore = temporaryDirectory();
    cleanups.push(fileStore.remove);
    const configurations: Array<[string, Record<string, string>]> = [
      ['store off (payloads inline)', {}],
      ['file store, no encryption', { COMPACTOR_PAYLOAD_STORE: `file:${fileStore.directory}/plain` }],
      [
        'file store, AES-256-GCM',
        { COMPACTOR_PAYLOAD_STORE: `file:${fileStore.directory}/encrypted`, COMPACTOR_CODEC_KEY: codecKeyText },
      ],
      [
        'S3 store (moto), AES-256-GCM',
        {
          ...s3Server.env,
          COMPACTOR_PAYLOAD_STORE: `s3://${s3Server.bucket}/workflows`,
          COMPACTOR_CODEC_KEY: codecKeyText,
        },
      ],
    ];
    // The S3 client reads AWS_* from the environment, as a worker's would.
    Object.assign(process.env, s3Server.env);
    const setups = configurations.map(([label, env]) => ({
      label,
      dataConverter: label.startsWith('store off')
        ? undefined
        : payloadConverterFromConfig(loadConfig({ env })).dataConverter,
    }));
    const workflowRows = await workflowRoundTrips(setups, devServer.address, bundlePath, 7);

    progress('agentRun history per round...');
    const trajectories: Array<[string, string, number]> = [
      ['openhands_gpt4o_Project-MONAI__MONAI-3715 (9,000)', 'openhands_gpt4o_Project-MONAI__MONAI-3715', 9_000],
    ];
    const examples = fileURLToPath(new URL('../examples/trajectories/', import.meta.url));
    // The extended corpus: COMPACTOR_EXTENDED_CORPUS, else ../shared/corpus beside the repository.
    const corpus = extendedCorpusLocation().dir;
    const corpusRun = 'claudecode_django__django-11797';
    let haveCorpus = false;
    try {
      readFileSync(join(corpus, `${corpusRun}.json`));
      haveCorpus = true;
      trajectories.push([`${corpusRun} (32,000)`, corpusRun, 32_000]);
    } catch {
      progress(`no ${corpusRun} in ${corpus}: agentRun rounds on the bundled trajectory only`);
    }
    const roundRows: RoundRow[] = [];
    const roundStores = temporaryDirectory();
    cleanups.push(roundStores.remove);
    for (const [name, trajectory, window] of trajectories) {
      const dir = trajectory === corpusRun && haveCorpus ? corpus : examples;
      for (const setting of ['off', '128', '256', '256 + key', '512', '1024', '2048']) {
        const threshold = setting.split(' ')[0] ?? setting;
        const env: Record<string, string> =
          setting === 'off'
            ? {}
            : {
                COMPACTOR_PAYLOAD_STORE: `file:${roundStores.directory}/${threshold}`,
                COMPACTOR_PAYLOAD_THRESHOLD: threshold,
                ...(setting.endsWith('key') ? { COMPACTOR_CODEC_KEY: codecKeyText } : {}),
              };
        const label =
          setting === 'off'
            ? 'off'
            : `threshold ${threshold}${Number(threshold) === DEFAULT_PAYLOAD_THRESHOLD ? ' (default)' : ''}${setting.endsWith('key') ? ', AES-256-GCM' : ''}`;
        const row = await agentRounds(label, devServer.address, env, bundlePath, dir, trajectory, window);
        roundRows.push({ ...row, trajectory: name });
      }
    }

    progress('what the store costs a round of agentRun...');
    const costRows = await storeCosts(devServer.address, bundlePath, fileBackend, s3Backend, roundStores.directory);

    const machine = `${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores, Node ${process.version}, ${process.platform}/${process.arch}, load average ${fmt(loadavg()[0] ?? 0)} at the end`;
    const section = markdown(growthRows, throughput, workflowRows, roundRows, costRows, machine);
    writeReadmeSection('payloads', readmeMarkdown(growthRows, workflowRows, roundRows, costRows, machine));
    process.stdout.write(`${section}\n`);
  } finally {
    await devServer?.stop();
    await s3?.stop();
    for (const cleanup of cleanups) await cleanup();
  }
}

await main();
