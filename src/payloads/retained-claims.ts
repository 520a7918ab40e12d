// Node only: the claims a garbage collector must keep — every claim of the chunk store in the
// histories Temporal still retains, and in the schedules of the namespace. Visibility lists the
// runs (open and closed, every run of a continue-as-new chain); each run's history is read page by
// page as the server stores it (claims unresolved, nothing decoded), and every External Storage
// reference naming our driver in any event is collected. A run deleted between the listing and the
// read has nothing left to keep. A schedule holds the payloads of the runs it will start (a client
// with the store on stores its action's arguments and its memo like any other payload), so every
// schedule is described as the server stores it too; one that cannot be described stops the
// collection (what it claims is unknown), one deleted meanwhile has nothing left to keep.
import { isGrpcServiceError, type Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { decodeReferencePayload, isReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { historyEvents } from '../client/session-reader.js';
import { CHUNK_STORE_DRIVER_NAME } from './chunk-store.js';
import { claimManifestId } from './claims.js';
import { GarbageCollectionError } from './gc.js';

/** gRPC's NOT_FOUND: the run's history is gone (deleted, or past retention). */
const GRPC_NOT_FOUND = 5;

export interface RetainedClaimsOptions {
  /** One client per namespace whose workflows write to the store (the same store may serve several). */
  clients: readonly Client[];
  /** Histories read at once. @default 8 */
  concurrency?: number;
  /** Progress, at most one line every two seconds. */
  onProgress?: (line: string) => void;
}

/** What {@link collectRetainedClaims} found. */
export interface RetainedClaims {
  /** Ids of the manifests the claims name. */
  manifests: Set<string>;
  /** Claims seen (one payload may appear in several events). */
  claims: number;
  /** Runs listed by visibility and read. */
  runs: number;
  /** Runs listed whose history was gone by the time it was read. */
  gone: number;
  /** Schedules listed and described (their actions' arguments and their memos are claims too). */
  schedules: number;
  namespaces: string[];
}

function isPayloadLike(value: object): value is Payload {
  const metadata: unknown = Reflect.get(value, 'metadata');
  if (typeof metadata !== 'object' || metadata === null) return false;
  const encoding: unknown = Reflect.get(metadata, 'encoding');
  return encoding instanceof Uint8Array;
}

/**
 * Every manifest id (hex) our claims name anywhere in `value` (an event, walked field by field),
 * from claims of either format. A claim the driver would refuse to read names nothing to keep.
 */
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
 * Reads every retained history and every schedule of the namespaces of `clients` and collects the
 * manifests their claims name. Visibility is eventually consistent: a run or a schedule created
 * moments ago may not be listed yet, which is why the collector also keeps everything younger than
 * its grace period.
 *
 * @throws GarbageCollectionError when a schedule cannot be described.
 */
export async function collectRetainedClaims({
  clients,
  concurrency = 8,
  onProgress,
}: RetainedClaimsOptions): Promise<RetainedClaims> {
  const result: RetainedClaims = {
    manifests: new Set(),
    claims: 0,
    runs: 0,
    gone: 0,
    schedules: 0,
    namespaces: clients.map((client) => client.options.namespace),
  };
  // Short work prints only the last line: the first comes two seconds in.
  let lastProgress = Date.now();
  const progress = (force = false): void => {
    if (onProgress === undefined || (!force && Date.now() - lastProgress < 2_000)) return;
    lastProgress = Date.now();
    const runs = `${result.runs.toLocaleString('en-US')} run${result.runs === 1 ? '' : 's'}`;
    onProgress(
      `gc: ${force ? 'read the histories of' : 'reading histories:'} ${runs}, ${result.claims.toLocaleString('en-US')} claims to ${result.manifests.size.toLocaleString('en-US')} manifests`,
    );
  };
  const readRun = async (client: Client, workflowId: string, runId: string): Promise<void> => {
    // Merged only once the whole history is read: a run deleted halfway has nothing left to keep.
    const found: string[] = [];
    try {
      for await (const event of historyEvents(client, workflowId, runId))
        claimedManifestsIn(event, (manifest) => found.push(manifest));
    } catch (error) {
      if (isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND) {
        result.gone += 1;
        return;
      }
      throw error;
    }
    result.runs += 1;
    result.claims += found.length;
    for (const manifest of found) result.manifests.add(manifest);
    progress();
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
        const found: string[] = [];
        claimedManifestsIn(described, (manifest) => found.push(manifest));
        result.schedules += 1;
        result.claims += found.length;
        for (const manifest of found) result.manifests.add(manifest);
      }
      nextPageToken =
        page.nextPageToken !== undefined && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
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
      if (inFlight.size >= concurrency) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    if (failure !== undefined) throw failure.error;
  }
  progress(true);
  return result;
}
