// Node only: reads an agent run's transcript back: the `recordSession` inputs in the history of each run
// of its continue-as-new chain, then (for a run still going) the pending lines, by the `session` query.
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
// The SDK's own claim resolution and decoding: history events come back as stored, claims unresolved.
import {
  decodeFromPayloadsAtIndex,
  decodeReferencePayload,
  ExternalStorageRunner,
  isReferencePayload,
} from '@temporalio/common/lib/internal-non-workflow/index.js';
import type { temporal } from '@temporalio/proto';
import { isRecord } from '../core/schema.js';
import type { SessionBatch, SessionLine, SessionReference, SessionSnapshot } from '../core/agent/session.js';
import { PayloadStoreNotConfiguredError } from '../shared/payload-store-missing.js';

export class SessionReadError extends Error {
  override readonly name = 'SessionReadError';
}

export interface ReadSessionOptions {
  /** For a run still going, also query the lines it has not recorded yet (needs a worker). @default true */
  pending?: boolean;
  /** @default 15_000 */
  queryTimeoutMs?: number;
}

function isSnapshot(value: unknown): value is SessionSnapshot {
  return (
    isRecord(value) &&
    Array.isArray(value.pending) &&
    isRecord(value.reference) &&
    typeof value.reference.lines === 'number'
  );
}

function isBatch(value: unknown): value is SessionBatch {
  return isRecord(value) && typeof value.from === 'number' && Array.isArray(value.lines);
}

/** The runs of a continue-as-new chain up to `runId`, first run first. */
export async function chainRunIds(client: Client, workflowId: string, runId: string): Promise<string[]> {
  const runs = [runId];
  for (;;) {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId, runId: runs[0] },
      maximumPageSize: 1,
    });
    const previous = page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (previous === undefined || previous === null || previous === '') return runs;
    if (runs.includes(previous))
      throw new SessionReadError(`the continue-as-new chain of ${workflowId} loops at run ${previous}`);
    runs.unshift(previous);
  }
}

/** Without a payload store an event can carry 2 MB: 16 events stay under {@link HISTORY_CHANNEL_ARGS}' limit. */
const HISTORY_PAGE_EVENTS = 16;

/** For a client that reads histories holding large inline payloads (gRPC's default 4 MB is below two). */
export const HISTORY_CHANNEL_ARGS = { 'grpc.max_receive_message_length': 64 * 1024 * 1024 } as const;

/** One run's history as the server stores it; without a store, connect with HISTORY_CHANNEL_ARGS. */
export async function* historyEvents(
  client: Client,
  workflowId: string,
  runId: string,
): AsyncGenerator<temporal.api.history.v1.IHistoryEvent> {
  let nextPageToken: Uint8Array | undefined;
  for (;;) {
    const page: temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryResponse =
      await client.workflowService.getWorkflowExecutionHistory({
        namespace: client.options.namespace,
        execution: { workflowId, runId },
        maximumPageSize: HISTORY_PAGE_EVENTS,
        ...(nextPageToken === undefined ? {} : { nextPageToken }),
      });
    yield* page.history?.events ?? [];
    if (!page.nextPageToken?.length) return;
    nextPageToken = page.nextPageToken;
  }
}

/** In the order they were scheduled. */
async function* batchesOf(client: Client, workflowId: string, runId: string): AsyncGenerator<SessionBatch> {
  const { externalStorage } = client.options.loadedDataConverter;
  const runner = externalStorage === undefined ? undefined : new ExternalStorageRunner(externalStorage);
  for await (const event of historyEvents(client, workflowId, runId)) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name !== 'recordSession') continue;
    let payloads: Payload[] = scheduled.input?.payloads ?? [];
    const claim = payloads.find((payload) => isReferencePayload(payload));
    if (claim !== undefined) {
      if (runner === undefined) {
        const driver = decodeReferencePayload(claim).driverName;
        throw new PayloadStoreNotConfiguredError(`the client reading run ${runId} of ${workflowId}`, driver);
      }
      payloads = await runner.retrieve(payloads);
    }
    const batch: unknown = await decodeFromPayloadsAtIndex(client.options.loadedDataConverter, 0, payloads);
    if (!isBatch(batch))
      throw new SessionReadError(
        `run ${runId} of ${workflowId}: event ${String(event.eventId)} is not a transcript batch`,
      );
    yield batch;
  }
}

/**
 * The whole transcript of an agent run, holding one run's history at a time. `from` is a workflow id
 * (its latest run) or the `session` reference of a result or a query.
 */
export async function* readSession(
  client: Client,
  from: SessionReference | string,
  options: ReadSessionOptions = {},
): AsyncGenerator<SessionLine> {
  const workflowId = typeof from === 'string' ? from : from.workflowId;
  const latest = await client.workflow
    .getHandle(workflowId, typeof from === 'string' ? undefined : from.runId)
    .describe();
  let snapshot: SessionSnapshot | undefined;
  if (latest.status.name === 'RUNNING' && options.pending !== false) {
    const handle = client.workflow.getHandle(workflowId, latest.runId);
    const answer: unknown = await client.withDeadline(Date.now() + (options.queryTimeoutMs ?? 15_000), () =>
      handle.query('session'),
    );
    if (!isSnapshot(answer))
      throw new SessionReadError(`the session query of ${workflowId} answered something else than a session snapshot`);
    snapshot = answer;
  }
  let next = 0;
  for (const runId of await chainRunIds(client, workflowId, latest.runId)) {
    for await (const batch of batchesOf(client, workflowId, runId)) {
      if (batch.from !== next)
        throw new SessionReadError(
          `run ${runId} of ${workflowId} recorded lines from ${batch.from}, but ${next} lines came before it`,
        );
      yield* batch.lines;
      next += batch.lines.length;
    }
  }
  const expected = snapshot?.reference.lines ?? (typeof from === 'string' ? undefined : from.lines);
  if (expected !== undefined && next < expected)
    throw new SessionReadError(`${workflowId} recorded ${expected} transcript lines, but its histories hold ${next}`);
  if (snapshot !== undefined) {
    const skip = next - snapshot.reference.lines;
    // Lines recorded between the query and the history read are already out; the rest are pending.
    yield* snapshot.pending.slice(Math.max(0, skip));
  }
}

/** Every line of an agent run's transcript, in an array (prefer the stream for long runs). */
export async function readSessionLines(
  client: Client,
  from: SessionReference | string,
  options?: ReadSessionOptions,
): Promise<SessionLine[]> {
  const lines: SessionLine[] = [];
  for await (const line of readSession(client, from, options)) lines.push(line);
  return lines;
}
