// Node only: reads an agent run's transcript back. The run records its lines in batches, as the
// input of its `recordSession` activity, in the history of each run of its continue-as-new chain
// (with a payload store the history holds claims, which the client resolves). So reading is: find
// the chain, read each run's history in order, decode the batches; and, for a run still going,
// ask it (the `session` query) for the lines it has not recorded yet.
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
// The SDK's own claim resolution and decoding (internal modules of @temporalio/common, used the way
// the client resolves a workflow's result): history events come back as stored, claims unresolved.
import {
  decodeFromPayloadsAtIndex,
  decodeReferencePayload,
  ExternalStorageRunner,
  isReferencePayload,
} from '@temporalio/common/lib/internal-non-workflow/index.js';
import type { temporal } from '@temporalio/proto';
import type { SessionBatch, SessionLine, SessionReference, SessionSnapshot } from '../core/agent/session.js';
import { PayloadStoreNotConfiguredError } from '../shared/payload-store-missing.js';

/** The name of the activity whose inputs hold the transcript. */
export const RECORD_SESSION_ACTIVITY = 'recordSession';

/** The transcript cannot be read back as the run wrote it. */
export class SessionReadError extends Error {
  override readonly name = 'SessionReadError';
}

export interface ReadSessionOptions {
  /**
   * For a run that is still going: also ask it (the `session` query) for the lines it holds and has
   * not recorded yet. That needs a worker polling the run's task queue. @default true
   */
  pending?: boolean;
  /** Deadline of that query in ms. @default 15_000 */
  queryTimeoutMs?: number;
}

function isSnapshot(value: unknown): value is SessionSnapshot {
  if (typeof value !== 'object' || value === null) return false;
  const reference: unknown = Reflect.get(value, 'reference');
  return (
    Array.isArray(Reflect.get(value, 'pending')) &&
    typeof reference === 'object' &&
    reference !== null &&
    typeof Reflect.get(reference, 'lines') === 'number'
  );
}

function isBatch(value: unknown): value is SessionBatch {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof Reflect.get(value, 'from') === 'number' &&
    Array.isArray(Reflect.get(value, 'lines'))
  );
}

/** The runs of a continue-as-new chain up to `runId`, first run first (each run's start event names the run it continued). */
export async function chainRunIds(client: Client, workflowId: string, runId: string): Promise<string[]> {
  const runs = [runId];
  for (let current: string | undefined = runId; current !== undefined;) {
    const page: temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryResponse =
      await client.workflowService.getWorkflowExecutionHistory({
        namespace: client.options.namespace,
        execution: { workflowId, runId: current },
        maximumPageSize: 1,
      });
    const previous: string | null | undefined =
      page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    current = previous === undefined || previous === null || previous === '' ? undefined : previous;
    if (current !== undefined) {
      if (runs.includes(current))
        throw new SessionReadError(`the continue-as-new chain of ${workflowId} loops at run ${current}`);
      runs.unshift(current);
    }
  }
  return runs;
}

/**
 * Events per history page. Without a payload store one event can carry up to the 2 MB payload
 * limit, so pages are kept short: 16 events stay under a 64 MB gRPC receive limit
 * ({@link HISTORY_CHANNEL_ARGS}); with a store every event is small.
 */
export const HISTORY_PAGE_EVENTS = 16;

/**
 * gRPC channel arguments for a client that reads histories holding large inline payloads: the
 * default receive limit (4 MB) is below two 2 MB payloads. `Connection.connect({ address, channelArgs: HISTORY_CHANNEL_ARGS })`.
 */
export const HISTORY_CHANNEL_ARGS = { 'grpc.max_receive_message_length': 64 * 1024 * 1024 } as const;

/**
 * The events of one run's history, page by page, as the server stores them (claims unresolved).
 * Pages are {@link HISTORY_PAGE_EVENTS} events: without a payload store, connect with
 * {@link HISTORY_CHANNEL_ARGS} (the CLI does), or a page of large events may pass the default limit.
 */
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
    const token = page.nextPageToken;
    if (token === undefined || token === null || token.length === 0) return;
    nextPageToken = token;
  }
}

/** The transcript batches in one run's history, in the order they were scheduled. */
async function* batchesOf(client: Client, workflowId: string, runId: string): AsyncGenerator<SessionBatch> {
  const { externalStorage } = client.options.loadedDataConverter;
  const runner = externalStorage === undefined ? undefined : new ExternalStorageRunner(externalStorage);
  for await (const event of historyEvents(client, workflowId, runId)) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name !== RECORD_SESSION_ACTIVITY) continue;
    let payloads: Payload[] = scheduled.input?.payloads ?? [];
    if (payloads.some((payload) => isReferencePayload(payload))) {
      if (runner === undefined) {
        const claim = payloads.find((payload) => isReferencePayload(payload));
        throw new PayloadStoreNotConfiguredError(
          `the client reading run ${runId} of ${workflowId}`,
          claim === undefined ? undefined : decodeReferencePayload(claim).driverName,
        );
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
 * The whole transcript of an agent run, line by line, first line first: the batches it recorded in
 * every run of its continue-as-new chain, then (for a run still going, unless `pending: false`)
 * the lines it holds and has not recorded yet. Holds one run's history at a time.
 *
 * `from` is a workflow id (its latest run) or the `session` reference of a result or a query.
 *
 * @throws SessionReadError when a batch is missing or out of order (the transcript would not replay).
 * @example
 * const result = await handle.result();
 * const messages = await transcript.replayStream(readSession(client, result.session));
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
  const running = latest.status.name === 'RUNNING';
  let snapshot: SessionSnapshot | undefined;
  if (running && options.pending !== false) {
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

/** Every line of an agent run's transcript, in an array (see {@link readSession}; prefer the stream for long runs). */
export async function readSessionLines(
  client: Client,
  from: SessionReference | string,
  options?: ReadSessionOptions,
): Promise<SessionLine[]> {
  const lines: SessionLine[] = [];
  for await (const line of readSession(client, from, options)) lines.push(line);
  return lines;
}
