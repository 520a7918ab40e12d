// Node only: the content-addressed chunk store, a `StorageDriver` for Temporal's External Storage.
// Storing a payload plans its objects (write-plan.ts) and writes them (object-writer.ts), sealed
// along a chain of contexts (compression-chain.ts); history keeps a claim naming the manifest
// (claims.ts). Retrieving reads the objects (object-reader.ts) and rebuilds the payload
// (payload-reader.ts). The slice index (slice-index.ts) remembers where slices this process wrote or
// read lie, so later payloads list them there. The bytes: object-format.ts, sealed-object.ts.
//
// What gc (gc.ts) relies on: an object is written only after every object it lists, so one that
// exists has all its descendants; manifests are rewritten on every store, so their modification
// time says when a claim to them was last handed out; a reused object older than `refreshAfterMs`
// is touched (not what lies under it); an object is deflated only against one this process stored
// within half of `refreshAfterMs`, so younger than any grace period.
import { setMaxListeners } from 'node:events';
import type {
  Payload,
  StorageDriver,
  StorageDriverRetrieveContext,
  StorageDriverStoreContext,
} from '@temporalio/common';
import { StorageDriverClaim } from '@temporalio/common';
import { InvalidInputError } from '../core/errors.js';
import { assertKnownKeys } from '../core/unknown-keys.js';
import { DEFAULT_CHUNKER_LIMITS, type ChunkerLimits } from './chunker.js';
import { claimDataFor, readClaim } from './claims.js';
import { payloadProtoSize } from './codec.js';
import { PayloadTooLargeError } from './errors.js';
import { CompressionChain } from './compression-chain.js';
import type { Keyring } from './keyring.js';
import { BACKEND_CALLS_AT_ONCE, Limiter } from './limiter.js';
import type { ObjectBackend } from './object-backend.js';
import { MAX_INLINE_BYTES, MAX_STORED_PAYLOAD_BYTES, objectKey, parseManifest } from './object-format.js';
import { ObjectReader } from './object-reader.js';
import { ObjectWriter, type WriteCounters } from './object-writer.js';
import { readPayload } from './payload-reader.js';
import { SliceIndex, type ReadSegment } from './slice-index.js';
import { WritePlanner } from './write-plan.js';

/** Written into every reference payload: must never change. */
export const CHUNK_STORE_DRIVER_NAME = 'compactor-chunks';
/** Reported in worker heartbeats. */
export const CHUNK_STORE_DRIVER_TYPE = 'temporal-compactor.chunk-store';

/** What a driver wrote and read, by object kind (benchmarks and tests read them). */
export interface ChunkStoreStats extends WriteCounters {
  /** Objects fetched from the backend (cache misses) and their sealed bytes. */
  fetched: { objects: number; bytes: number };
}

const perKind = () => ({ objects: 0, bytes: 0, plaintextBytes: 0 });

export interface ChunkStoreDriverOptions {
  backend: ObjectBackend;
  /** Encrypt new objects with `keyring.current`; read objects of any key in it. @default undefined — no encryption */
  keyring?: Keyring;
  /** A reused object older than this is touched, so a gc with a grace period of twice this never takes it. @default 24 h */
  refreshAfterMs?: number;
  chunkerLimits?: ChunkerLimits;
  /** A payload shorter than this is written inside its manifest: one object. @default 512 */
  inlineBelow?: number;
  /** A slice shorter than this is written inside the manifest or node that lists it, never listed in a pack or another manifest. @default 256 */
  literalBelow?: number;
  now?: () => number;
}

/** Every option, `true` for a count (an integer from 0 up): an ignored or out-of-range option would write another store. */
const DRIVER_OPTIONS: { readonly [K in keyof Required<ChunkStoreDriverOptions>]: boolean } = {
  backend: false,
  keyring: false,
  refreshAfterMs: true,
  chunkerLimits: false,
  inlineBelow: true,
  literalBelow: true,
  now: false,
};

function checkDriverOptions(options: ChunkStoreDriverOptions): void {
  assertKnownKeys(options, Object.keys(DRIVER_OPTIONS), 'driver');
  for (const [name, isCount] of Object.entries(DRIVER_OPTIONS)) {
    const value: unknown = Reflect.get(options, name);
    if (isCount && value !== undefined && !(typeof value === 'number' && Number.isSafeInteger(value) && value >= 0))
      throw new InvalidInputError(`driver.${name}`, `must be an integer from 0 up; got ${JSON.stringify(value)}`);
  }
}

export class ChunkStoreDriver implements StorageDriver {
  readonly name = CHUNK_STORE_DRIVER_NAME;
  readonly type = CHUNK_STORE_DRIVER_TYPE;
  readonly backend: ObjectBackend;
  readonly keyring: Keyring | undefined;
  /** Reads stored objects; gc asks it what each one needs (`inspect`). */
  readonly reader: ObjectReader;
  readonly stats: ChunkStoreStats = {
    written: { chunk: perKind(), node: perKind(), manifest: perKind() },
    reused: { chunk: 0, node: 0, manifest: 0 },
    fetched: { objects: 0, bytes: 0 },
  };
  private readonly slices: SliceIndex;
  private readonly writer: ObjectWriter;
  private readonly planner: WritePlanner;

  constructor(options: ChunkStoreDriverOptions) {
    checkDriverOptions(options);
    const {
      backend,
      keyring,
      refreshAfterMs = 24 * 3_600_000,
      chunkerLimits = DEFAULT_CHUNKER_LIMITS,
      inlineBelow = 512,
      literalBelow = 256,
      now = Date.now,
    } = options;
    this.backend = backend;
    this.keyring = keyring;
    const limiter = new Limiter(BACKEND_CALLS_AT_ONCE);
    const cutting = {
      chunkerLimits,
      inlineBelow: Math.min(inlineBelow, MAX_INLINE_BYTES + 1),
      literalBelow: Math.min(literalBelow, MAX_INLINE_BYTES + 1),
    };
    this.slices = new SliceIndex(cutting);
    const chain = new CompressionChain({ now, refreshAfterMs, isGone: (id) => this.slices.isGone(id) });
    this.reader = new ObjectReader(backend, keyring, limiter, this.stats.fetched);
    this.writer = new ObjectWriter(
      { backend, keyring, limiter, refreshAfterMs, now },
      chain,
      this.reader,
      this.slices,
      this.stats,
    );
    this.planner = new WritePlanner(
      { keyring, ...cutting, stillStored: (key, signal) => this.writer.stillStored(key, signal) },
      this.slices,
      chain,
    );
  }

  async store(context: StorageDriverStoreContext, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    // One call's payloads often share objects: each is checked and written once per call.
    const inFlight = new Map<string, Promise<void>>();
    return followSignal(context.abortSignal, (signal) =>
      Promise.all(payloads.map((payload) => this.storeOne(payload, inFlight, signal))),
    );
  }

  async retrieve(context: StorageDriverRetrieveContext, claims: StorageDriverClaim[]): Promise<Payload[]> {
    return followSignal(context.abortSignal, (signal) =>
      Promise.all(claims.map((claim) => this.retrieveOne(claim, signal))),
    );
  }

  /** The size of the payload a claim names, as its manifest states it, without reading the payload. */
  async payloadSize(claim: StorageDriverClaim, signal?: AbortSignal): Promise<number> {
    const { manifestId, keyId } = readClaim(claim.claimData);
    const plaintext = await this.reader.read('manifest', manifestId, keyId, signal);
    return parseManifest(plaintext, objectKey('manifest', manifestId)).size;
  }

  private async storeOne(
    payload: Payload,
    inFlight: Map<string, Promise<void>>,
    signal: AbortSignal,
  ): Promise<StorageDriverClaim> {
    const data = payload.data ?? new Uint8Array(0);
    const size = payloadProtoSize(payload);
    if (size > MAX_STORED_PAYLOAD_BYTES)
      throw new PayloadTooLargeError(
        'a payload to store',
        size,
        MAX_STORED_PAYLOAD_BYTES,
        'no reader of the store allocates more for one payload',
      );
    const metadata: Record<string, Uint8Array> = {};
    for (const [name, value] of Object.entries(payload.metadata ?? {}))
      if (value !== null && value !== undefined) metadata[name] = value;
    const plan = await this.planner.plan(data, metadata, signal);
    await Promise.all(plan.manifest.children.map((child) => this.writer.ensure(child, inFlight, signal)));
    // Always written, even when it exists: its modification time tells gc a claim was just handed out.
    await this.writer.write(plan.manifest, signal);
    plan.settle();
    // The reference the SDK writes around the claim records the size already.
    return new StorageDriverClaim(claimDataFor({ manifestId: plan.manifest.id, keyId: this.keyring?.current.id }));
  }

  private async retrieveOne(claim: StorageDriverClaim, signal: AbortSignal | undefined): Promise<Payload> {
    const { manifestId, keyId } = readClaim(claim.claimData);
    const segments: ReadSegment[] = [];
    const { data, metadata } = await readPayload(this.reader, manifestId, keyId, signal, segments);
    // Where its slices lie, for this process's later payloads (only under the key it writes with).
    if (segments.length > 0 && keyId === this.keyring?.current.id)
      this.slices.addRead(data, segments, this.keyring?.current);
    return { metadata, data };
  }
}

/**
 * Runs `work` on a signal of our own that follows the caller's. One store or retrieve has many backend
 * calls in flight on it, and the S3 client adds a listener per request: on the caller's signal that
 * would trip Node's listener-leak warning; on ours the limit is lifted, and the caller's gets one
 * listener, removed when the work ends. Not `AbortSignal.any`: on Node 20 a signal it makes that
 * has listeners stays reachable from a long-lived parent (nodejs/node#55351).
 */
async function followSignal<T>(parent: AbortSignal | undefined, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  if (parent?.aborted === true) controller.abort(parent.reason);
  const onAbort = (): void => controller.abort(parent?.reason);
  parent?.addEventListener('abort', onAbort, { once: true });
  try {
    return await work(controller.signal);
  } finally {
    parent?.removeEventListener('abort', onAbort);
  }
}
