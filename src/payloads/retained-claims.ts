// Node only: the claims gc must keep: every chunk-store claim in the histories Temporal retains
// (every run visibility lists, read page by page undecoded) and in the namespace's schedules (a
// client with the store on stores a schedule's arguments and memo like any payload). A run or
// schedule deleted meanwhile has nothing to keep; a schedule that cannot be described stops gc.
import { isGrpcServiceError, type Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { decodeReferencePayload, isReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { historyEvents } from '../client/session-reader.js';
import { isRecord } from '../core/schema.js';
import { CHUNK_STORE_DRIVER_NAME } from './chunk-store.js';
import { claimManifestId } from './claims.js';
import { count, GarbageCollectionError, throttled } from './gc.js';

/** gRPC's NOT_FOUND: the run's history is gone (deleted, or past retention). */
const GRPC_NOT_FOUND = 5;
/** Histories read at once. */
const CONCURRENCY = 8;

export interface RetainedClaimsOptions {
  /** One client per namespace whose workflows write to the store (the same store may serve several). */
  clients: readonly Client[];
  /** Progress, at most one line every two seconds. */
  onProgress?: (line: string) => void;
}

export interface RetainedClaims {
  manifests: Set<string>;
  /** Claims seen (one payload may appear in several events). */
  claims: number;
  runs: number;
  /** Runs listed whose history was gone by the time it was read. */
  gone: number;
  schedules: number;
}

const isPayloadLike = (value: object): value is Payload =>
  isRecord(value) && isRecord(value.metadata) && value.metadata.encoding instanceof Uint8Array;

/** Every manifest id our claims name anywhere in `value` (walked field by field); an unreadable claim names none. */
export function claimedManifestsIn(value: unknown, found: (manifest: string) => void): void {
  if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return;
  if (isPayloadLike(value) && isReferencePayload(value)) {
    const { driverName, claimData } = decodeReferencePayload(value);
    const manifest = driverName === CHUNK_STORE_DRIVER_NAME ? claimManifestId(claimData) : undefined;
    if (manifest !== undefined) found(manifest);
    return;
  }
  for (const child of Object.values(value)) claimedManifestsIn(child, found);
}

/**
 * The manifests named by every retained history and schedule of the clients' namespaces. Visibility
 * may not list what was created moments ago: gc also keeps everything younger than its grace period.
 */
export async function collectRetainedClaims({ clients, onProgress }: RetainedClaimsOptions): Promise<RetainedClaims> {
  const result: RetainedClaims = {
    manifests: new Set(),
    claims: 0,
    runs: 0,
    gone: 0,
    schedules: 0,
  };
  const progress = throttled(onProgress);
  const line = (done: boolean) => (): string =>
    `gc: ${done ? 'read the histories of' : 'reading histories:'} ${count(result.runs)} run${result.runs === 1 ? '' : 's'}, ${count(result.claims)} claims to ${count(result.manifests.size)} manifests`;
  const add = (manifest: string): void => {
    result.claims += 1;
    result.manifests.add(manifest);
  };
  const readRun = async (client: Client, workflowId: string, runId: string): Promise<void> => {
    // Merged only once the whole history is read: a run deleted halfway has nothing left to keep.
    const found: string[] = [];
    try {
      for await (const event of historyEvents(client, workflowId, runId))
        claimedManifestsIn(event, (manifest) => found.push(manifest));
    } catch (error) {
      if (!(isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND)) throw error;
      result.gone += 1;
      return;
    }
    result.runs += 1;
    found.forEach(add);
    progress(line(false));
  };
  const readSchedules = async (client: Client): Promise<void> => {
    const { namespace } = client.options;
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await client.workflowService.listSchedules({ namespace, nextPageToken, maximumPageSize: 100 });
      for (const { scheduleId } of page.schedules ?? []) {
        if (typeof scheduleId !== 'string' || scheduleId === '') continue;
        let described: unknown;
        try {
          described = await client.workflowService.describeSchedule({ namespace, scheduleId });
        } catch (error) {
          if (isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND) continue;
          throw new GarbageCollectionError(
            `schedule ${JSON.stringify(scheduleId)} of namespace ${namespace} cannot be described, so what its action claims is unknown; nothing was removed (fix or delete the schedule): ${error instanceof Error ? error.message : String(error)}`,
            { cause: error },
          );
        }
        claimedManifestsIn(described, add);
        result.schedules += 1;
      }
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken !== undefined);
  };
  let failure: { error: unknown } | undefined;
  for (const client of clients) {
    await readSchedules(client);
    const inFlight = new Set<Promise<void>>();
    for await (const execution of client.workflow.list({ query: '' })) {
      if (failure !== undefined) break;
      // Failures are kept, not thrown from here: the other reads in flight must settle first.
      const reading: Promise<void> = readRun(client, execution.workflowId, execution.runId)
        .catch((error: unknown) => {
          failure ??= { error };
        })
        .finally(() => inFlight.delete(reading));
      inFlight.add(reading);
      if (inFlight.size >= CONCURRENCY) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    if (failure !== undefined) throw failure.error;
  }
  progress(line(true), true);
  return result;
}
