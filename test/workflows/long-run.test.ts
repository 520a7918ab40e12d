// A long agent run completes. Its transcript (2.5 MB here: 120 rounds with a 20 KB tool result each,
// at a 16,000-token window) is past the server's 2 MB payload limit, so a run that carried it
// through continue-as-new or returned it in the result would fail every workflow task
// (PAYLOADS_TOO_LARGE), forever: the run holds only its live context, and the transcript stays
// outside its state. With the payload store on, a run longer than any corpus trajectory must also
// keep its history growing with what each round adds, not with the conversation every chat
// request carries.
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import proto, { type temporal } from '@temporalio/proto';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateLongRun, longRunName } from '../../corpus/index.js';
import {
  agentRun,
  createExtractiveSummarizer,
  loadConfig,
  type AgentRunResult,
  type ChatMessage,
} from '../../src/index.js';
import { compactionRecordsFromSession } from '../../src/core/agent/compaction-history.js';
import { createActivities } from '../../src/activities/index.js';
import { replaySession } from '../../src/core/agent/session.js';
import { chainRunIds, historyEvents, readSessionLines } from '../../src/client/session-reader.js';
import { openingMessages } from '../../src/core/agent/trajectory.js';
import { STORED_SESSION_BATCH_BYTES } from '../../src/workflows/agent/transcript-writer.js';
import { UI_PAYLOAD_MAX_BYTES, UI_PAYLOAD_METADATA_KEY } from '../../src/shared/ui-payload.js';
import { runAgentThroughPlugin } from '../support/agent.js';
import {
  bundleWorkflows,
  chainHistories,
  testConnection,
  uniqueId,
  withFileWorker,
  type TestConnection,
} from '../support/temporal.js';

const LONG_RUN = { rounds: 120, resultChars: 20_000 };

/** The sizes of an event's payloads; with `marked`, only those marked for the UI (the memo's table), else the others. */
function payloadSizes(event: temporal.api.history.v1.IHistoryEvent, marked = false): number[] {
  const sizes: number[] = [];
  const visit = (value: unknown): void => {
    if (typeof value !== 'object' || value === null) return;
    if (value instanceof Uint8Array) return;
    if ('data' in value && 'metadata' in value && value.data instanceof Uint8Array) {
      const metadata = value.metadata as Record<string, Uint8Array> | null | undefined;
      if ((metadata?.[UI_PAYLOAD_METADATA_KEY] != null) === marked) sizes.push(value.data.length);
      return;
    }
    for (const child of Object.values(value)) visit(child);
  };
  visit(event);
  return sizes;
}

// One connection and one bundle for both runs: bundling takes seconds on a loaded machine.
let t: TestConnection;
let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  t = await testConnection();
  bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
});

describe('a long agent run', { timeout: 900_000 }, () => {
  let dir: string;
  const name = longRunName(LONG_RUN);
  const trajectory = generateLongRun(LONG_RUN);

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'long-run-'));
    writeFileSync(join(dir, `${name}.json`), JSON.stringify(trajectory));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('120 rounds with a 20 KB tool result each (2.5 MB of transcript), at a 16,000-token window: every round played, state and payloads bounded (regression)', async () => {
    const workflowId = uniqueId('agent-long');
    const activities = createActivities({ summarizer: createExtractiveSummarizer(), trajectoryDir: dir });
    const result: AgentRunResult = await withFileWorker(t, { workflowBundle: bundle, activities }, (t) =>
      t.client.workflow.execute(agentRun, {
        taskQueue: t.taskQueue,
        workflowId,
        args: [
          {
            messages: openingMessages(trajectory),
            model: { provider: 'replay', trajectory: name, contextWindow: 16_000, maxOutputTokens: 1_000 },
            compaction: {},
            maxRounds: 1_000,
          },
        ],
      }),
    );
    expect(result.stopReason).toBe('completed');
    expect(result.rounds).toBe(LONG_RUN.rounds);
    // The result is bounded by the live context, not by the ~2.5 MB the run went through.
    expect(JSON.stringify(result).length).toBeLessThan(150_000);
    expect(result.compactions.recent.length).toBeLessThanOrEqual(20);

    // The whole transcript is still there, outside the run's state, and replays to its conversation.
    const lines = await readSessionLines(t.client, result.session);
    expect(lines).toHaveLength(result.session.lines);
    expect(replaySession(lines)).toEqual(result.messages);
    expect(lines.filter((line) => line.type === 'message' && line.message.role === 'assistant')).toHaveLength(
      LONG_RUN.rounds,
    );
    const records = compactionRecordsFromSession(lines);
    expect(records).toHaveLength(result.compactions.totals.compactions);
    expect(records.slice(-result.compactions.recent.length)).toEqual(result.compactions.recent);

    // No workflow task failed in any run of the chain, and no payload in any history is over 256 KB.
    let failures = 0;
    let largest = 0;
    const runs = await chainRunIds(
      t.client,
      workflowId,
      (await t.client.workflow.getHandle(workflowId).describe()).runId,
    );
    expect(runs).toHaveLength(result.continuedAsNew + 1);
    for (const runId of runs) {
      for await (const event of historyEvents(t.client, workflowId, runId)) {
        if (event.workflowTaskFailedEventAttributes) failures += 1;
        largest = Math.max(largest, ...payloadSizes(event), ...payloadSizes(event, true));
      }
    }
    expect(failures).toBe(0);
    expect(largest).toBeLessThan(200 * 1024);
  });
});

/** Longer than any corpus trajectory (at most 126 rounds), and its transcript (2.3 MB) past the server's 2 MB payload limit. */
const STORE_RUN = { rounds: 130, resultChars: 16_000 };
/**
 * What one round may add to history beyond its own new content: its events (two workflow tasks, the
 * chat and tool activities, a search-attribute upsert; 1,946 bytes at the median in bench:agent-long,
 * more here with the tests' longer queue names) with claims of ~200 bytes in place of the payloads. A
 * chat request carried inline is the whole window (~36 KB here), far over it.
 */
const ROUND_OVERHEAD_BYTES = 4 * 1024;
/** A claim as history holds it: the driver's name and a manifest id (193 bytes, 210 with a key). */
const CLAIM_BYTES = 512;

const { HistoryEvent } = proto.temporal.api.history.v1;
const { Payload } = proto.temporal.api.common.v1;
const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));
/** The lower median. */
const median = (values: readonly number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? 0;

/**
 * What each round adds to the conversation, in JSON bytes, from the trajectory the run replays:
 * round r is the r-th recorded assistant turn with the tool results and user messages after it.
 */
function newBytesPerRound(trajectory: readonly ChatMessage[], opening: number): number[] {
  const rounds: number[] = [];
  for (const message of trajectory.slice(opening)) {
    if (message.role === 'assistant') rounds.push(0);
    rounds[rounds.length - 1] = (rounds.at(-1) ?? 0) + jsonBytes(message);
  }
  return rounds;
}

interface RoundHistory {
  /** Protobuf bytes of the events of each round: from its chat activity's scheduling to the next one's (the last round: to the end). */
  bytes: number[];
  /** Bytes of each round's chat request as it stands in history (a claim, or the payload itself). */
  chatInHistory: number[];
  /** Bytes of each round's chat request itself (a claim records the size of what it stands for). */
  chatRequest: number[];
}

function historyPerRound(events: readonly temporal.api.history.v1.IHistoryEvent[]): RoundHistory {
  const rounds: RoundHistory = { bytes: [], chatInHistory: [], chatRequest: [] };
  for (const event of events) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'chat') {
      const [payload] = scheduled.input?.payloads ?? [];
      const size = payload === undefined ? 0 : Payload.encode(payload).finish().length;
      const claimed = payload?.externalPayloads?.[0]?.sizeBytes;
      rounds.bytes.push(0);
      rounds.chatInHistory.push(size);
      rounds.chatRequest.push(claimed === undefined || claimed === null ? size : Number(claimed));
    }
    const last = rounds.bytes.length - 1;
    if (last >= 0) rounds.bytes[last] = (rounds.bytes[last] ?? 0) + HistoryEvent.encode(event).finish().length;
  }
  return rounds;
}

function directoryBytes(directory: string): number {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .reduce((sum, entry) => sum + statSync(join(entry.parentPath, entry.name)).size, 0);
}

describe('a long agent run with the payload store', { timeout: 900_000 }, () => {
  let dir: string;
  let store: string;
  const name = longRunName(STORE_RUN);
  const trajectory = generateLongRun(STORE_RUN);

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'long-run-store-'));
    store = mkdtempSync(join(tmpdir(), 'long-run-store-objects-'));
    writeFileSync(join(dir, `${name}.json`), JSON.stringify(trajectory));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(store, { recursive: true, force: true });
  });

  it('130 rounds with a 16 KB tool result each (2.3 MB of transcript): history grows by what each round adds, not by the window; the store by the new content', async () => {
    const config = loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: `file:${store}` } });
    const workflowId = uniqueId('agent-long-store');
    const opening = openingMessages(trajectory);
    const { result, client } = await runAgentThroughPlugin(t, {
      workflowBundle: bundle,
      plugin: { config, activities: { trajectoryDir: dir }, searchAttributes: 'skip' },
      workflowId,
      input: {
        messages: opening,
        model: { provider: 'replay', trajectory: name, contextWindow: 16_000, maxOutputTokens: 1_000 },
        compaction: {},
        maxRounds: 1_000,
      },
    });
    expect(result.stopReason).toBe('completed');
    expect(result.rounds).toBe(STORE_RUN.rounds);
    const lines = await readSessionLines(client, result.session);
    expect(replaySession(lines)).toEqual(result.messages);

    const runs = await chainHistories(client, workflowId);
    const events = runs.flat();
    expect(events.filter((event) => event.workflowTaskFailedEventAttributes)).toEqual([]);
    // Every payload over the threshold is a claim, but the memo's table, which stays in history for
    // the UI (docs/design.md#ui-payloads), bounded.
    expect(Math.max(...events.flatMap((event) => payloadSizes(event)))).toBeLessThan(config.payloadThreshold);
    expect(Math.max(0, ...events.flatMap((event) => payloadSizes(event, true)))).toBeLessThanOrEqual(
      UI_PAYLOAD_MAX_BYTES,
    );

    // History per round is bounded by what the round adds plus a constant, wherever the run is:
    // the median round, and every round within twice the constant (compactions, continue-as-new).
    const added = newBytesPerRound(trajectory, opening.length);
    const history = historyPerRound(events);
    expect(history.bytes).toHaveLength(STORE_RUN.rounds);
    const excess = history.bytes.map((bytes, round) => bytes - (added[round] ?? 0));
    expect(median(excess)).toBeLessThanOrEqual(ROUND_OVERHEAD_BYTES);
    expect(Math.max(...excess)).toBeLessThanOrEqual(2 * ROUND_OVERHEAD_BYTES);
    // Not by the window: every chat request (the whole context, ~36 KB) stands in history as a claim
    // of the same few hundred bytes. (Inline, the codec would deflate it to ~10 KB: the median bound
    // above alone would not see that, this does.)
    expect(Math.max(...history.chatInHistory)).toBeLessThanOrEqual(CLAIM_BYTES);
    // The bounds are not vacuous: with each chat request inline in place of its claim, the median round would break the first.
    const inline = excess.map(
      (bytes, round) => bytes - (history.chatInHistory[round] ?? 0) + (history.chatRequest[round] ?? 0),
    );
    expect(median(inline)).toBeGreaterThan(ROUND_OVERHEAD_BYTES);

    // The store grows with the run's new content (its transcript, every line once), compressed
    // (bench/README.md#payloads has the measured figures).
    const transcriptBytes = lines.reduce((sum, line) => sum + jsonBytes(line), 0);
    expect(directoryBytes(store)).toBeLessThanOrEqual(0.18 * transcriptBytes);

    // With the store a transcript batch is a claim whatever its size, so the run records in large
    // batches: one per STORED_SESSION_BATCH_BYTES of transcript, plus one where each run of the chain
    // ends (128 KiB batches would have taken one every ~7 rounds here, 18 in all).
    const recorded = events.filter(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'recordSession',
    ).length;
    expect(recorded).toBeGreaterThan(0);
    expect(recorded).toBeLessThanOrEqual(Math.ceil(transcriptBytes / STORED_SESSION_BATCH_BYTES) + runs.length);
  });
});
