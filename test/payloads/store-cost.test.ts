// What the payload store costs a round of a real agent run: a recorded trajectory (the repository's
// openhands MONAI-3715, 30 rounds) through agentRun with the file store, every request of the store
// counted and split into rounds by the server's times of the `chat` schedulings: what the store
// holds against the trajectory's JSON, objects written and read a round, history a round
// (bench/README.md#payloads has the figures). With the extended corpus present the same runs over
// claudecode django-11797 (126 rounds), bound 0.6×.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExternalStorage } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUNDLED_DIR,
  extendedCorpusLocation,
  extendedCorpusMissing,
  extendedRun,
  extendedSkipped,
  TEST_CORPUS_ENV,
} from '../../corpus/index.js';
import { loadConfig } from '../../src/config.js';
import { openingMessages } from '../../src/core/agent/trajectory.js';
import { ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { CompactorCodec } from '../../src/payloads/codec.js';
import { FileBackend } from '../../src/payloads/file-backend.js';
import { parseObjectKey } from '../../src/payloads/object-format.js';
import { type ObjectBackend } from '../../src/payloads/object-backend.js';
import { runAgentThroughPlugin } from '../support/agent.js';
import { bundleWorkflows, chainHistories, testConnection, uniqueId, type TestConnection } from '../support/temporal.js';

const TRAJECTORY = 'openhands_gpt4o_Project-MONAI__MONAI-3715';

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};

let t: TestConnection;
let bundle: WorkflowBundleWithSourceMap;
let directory: string;
beforeAll(async () => {
  t = await testConnection();
  bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
  directory = mkdtempSync(join(tmpdir(), 'compactor-store-cost-'));
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** One agentRun over `trajectory` (in `dir`) with the file store: what the store holds and what each round cost. */
async function measure(dir: string, trajectory: string, contextWindow: number) {
  const files = new FileBackend({ directory: mkdtempSync(join(directory, 'store-')), durable: false });
  const requests: Array<{ op: 'get' | 'put' | 'stat' | 'touch'; at: number }> = [];
  const sizes = new Map<string, number>();
  const backend: ObjectBackend = {
    description: files.description,
    get: async (key, signal) => {
      requests.push({ op: 'get', at: Date.now() });
      return files.get(key, signal);
    },
    put: async (key, body, signal) => {
      requests.push({ op: 'put', at: Date.now() });
      await files.put(key, body, signal);
      sizes.set(key, body.length);
    },
    stat: async (key) => {
      requests.push({ op: 'stat', at: Date.now() });
      return files.stat(key);
    },
    touch: async (key) => {
      requests.push({ op: 'touch', at: Date.now() });
      return files.touch(key);
    },
  };
  const config = loadConfig({ env: {} });
  const driver = new ChunkStoreDriver({ backend });
  const dataConverter = {
    payloadCodecs: [new CompactorCodec({ passThroughAtOrAbove: config.payloadThreshold })],
    externalStorage: new ExternalStorage({ drivers: [driver], payloadSizeThreshold: config.payloadThreshold }),
  };
  const messages: unknown = JSON.parse(readFileSync(join(dir, `${trajectory}.json`), 'utf8'));
  const workflowId = uniqueId('store-cost');
  const { result, client } = await runAgentThroughPlugin(t, {
    workflowBundle: bundle,
    plugin: { config, activities: { trajectoryDir: dir }, searchAttributes: 'skip', dataConverter },
    workflowId,
    input: {
      messages: openingMessages(messages),
      model: { provider: 'replay', trajectory, contextWindow, maxOutputTokens: 1_000 },
      compaction: { ageObservations: true },
      maxRounds: 1_000,
    },
  });
  expect(result.stopReason).toBe('completed');

  // Rounds: from one `chat` scheduling to the next (the server's clock; one machine).
  const events = (await chainHistories(client, workflowId)).flat();
  const chats: number[] = [];
  const history: number[] = [];
  for (const event of events) {
    if (event.activityTaskScheduledEventAttributes?.activityType?.name === 'chat') {
      chats.push(Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6));
      history.push(0);
    }
    if (history.length > 0)
      history[history.length - 1] =
        (history.at(-1) ?? 0) + proto.temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
  }
  expect(chats).toHaveLength(result.rounds);
  const perRound = chats.map(() => ({ put: 0, get: 0 }));
  for (const request of requests) {
    let round = -1;
    while (round + 1 < chats.length && (chats[round + 1] ?? 0) <= request.at) round += 1;
    const counts = perRound[round];
    if (counts === undefined) continue;
    if (request.op === 'put') counts.put += 1;
    if (request.op === 'get') counts.get += 1;
  }
  // Manifests on bases: most rounds' chat inputs list only what follows the previous one's.
  let onBase = 0;
  for (const key of sizes.keys()) {
    const parsed = parseObjectKey(key);
    if (parsed?.kind === 'manifest' && (await driver.reader.inspect('manifest', parsed.id)).depth > 0) onBase += 1;
  }
  const stored = [...sizes.values()].reduce((sum, bytes) => sum + bytes, 0);
  return {
    rounds: result.rounds,
    ratio: stored / JSON.stringify(messages).length,
    puts: perRound.map((round) => round.put),
    gets: perRound.map((round) => round.get),
    history,
    onBase,
  };
}

/** What issue 22 asks of a round, whatever the trajectory. */
function expectRoundGoals(run: Awaited<ReturnType<typeof measure>>): void {
  // Every round wrote something (the chat input at least), and at most five objects at the median.
  expect(Math.min(...run.puts)).toBeGreaterThan(0);
  expect(median(run.puts)).toBeLessThanOrEqual(5);
  expect(run.onBase).toBeGreaterThan(run.rounds / 2);
  // Worker and client share the driver: what a round stored, the next step reads from memory.
  expect(median(run.gets)).toBe(0);
  expect(median(run.history)).toBeLessThanOrEqual(2048);
}

describe('the payload store over a recorded agent run', { timeout: 300_000 }, () => {
  it('MONAI-3715: writes at most 5 objects a round (median), holds at most 0.5× the trajectory, reads nothing back in process, history ≤ 2 KB a round', async () => {
    const run = await measure(BUNDLED_DIR, TRAJECTORY, 9_000);
    expect(run.rounds).toBeGreaterThanOrEqual(25);
    expectRoundGoals(run);
    expect(run.ratio).toBeLessThanOrEqual(0.5);
    expect(run.ratio).toBeGreaterThan(0.1);
  });

  const extended = extendedCorpusLocation();
  const django = 'claudecode_django__django-11797';
  if (!extendedRun()) it.skip(extendedSkipped(), () => undefined);
  else if (!extended.present || !existsSync(join(extended.dir, `${django}.json`)))
    throw new Error(`${TEST_CORPUS_ENV}=extended: ${extendedCorpusMissing(extended)}`);
  else
    it('django-11797 (extended corpus): holds at most 0.6× the trajectory, the same goals a round', async () => {
      const run = await measure(extended.dir, django, 32_000);
      expect(run.rounds).toBeGreaterThanOrEqual(100);
      expectRoundGoals(run);
      expect(run.ratio).toBeLessThanOrEqual(0.6);
      expect(run.ratio).toBeGreaterThan(0.1);
    });
});
