// Node only: writes what a plan (write-plan.ts) lists, children before parents, so an object that
// exists has all its descendants. An object already stored is reused, touched when older than the
// refresh period; one a gc took meanwhile fails the store, and the next attempt writes it again.
import type { CompressionChain } from './compression-chain.js';
import { ChunkMissingError } from './errors.js';
import type { Keyring } from './keyring.js';
import type { Limiter } from './limiter.js';
import { LruMap } from './lru-map.js';
import { addTo, type ObjectBackend } from './object-backend.js';
import { objectKey, type ObjectKind } from './object-format.js';
import type { ObjectReader } from './object-reader.js';
import { sealObject, windowAfter } from './sealed-object.js';
import type { SliceIndex } from './slice-index.js';
import type { PlannedObject } from './write-plan.js';

const PRESENT_OBJECTS = 200_000;

export interface ObjectWriterSettings {
  backend: ObjectBackend;
  keyring: Keyring | undefined;
  limiter: Limiter;
  refreshAfterMs: number;
  now: () => number;
}

export interface WriteCounters {
  /** Objects written, and their sealed bytes (what the store grew by) and plaintext bytes. */
  written: Record<ObjectKind, { objects: number; bytes: number; plaintextBytes: number }>;
  /** Objects a store found already present (dedup hits), not counting in-memory hits. */
  reused: Record<ObjectKind, number>;
}

export class ObjectWriter {
  /** Objects known to be in the store, with when that was last confirmed. */
  private readonly present = new LruMap<number>(PRESENT_OBJECTS, () => 1);

  constructor(
    private readonly settings: ObjectWriterSettings,
    private readonly chain: CompressionChain,
    private readonly reader: ObjectReader,
    private readonly slices: SliceIndex,
    private readonly counters: WriteCounters,
  ) {}

  /** Makes sure `object` and everything below it is stored; `inFlight` checks and writes each once per call. */
  ensure(object: PlannedObject, inFlight: Map<string, Promise<void>>, signal: AbortSignal | undefined): Promise<void> {
    const { now, refreshAfterMs } = this.settings;
    const key = objectKey(object.kind, object.id);
    const running = inFlight.get(key);
    if (running !== undefined) return running;
    const work = (async () => {
      const confirmed = this.present.get(key);
      if (confirmed !== undefined && now() - confirmed < refreshAfterMs / 2) return;
      // An object that exists has all its descendants (they were written first): nothing below to check.
      if (await this.stillStored(key, signal)) {
        this.counters.reused[object.kind] += 1;
        return;
      }
      if (object.plaintext === undefined) {
        // An object written before, gone since it was checked (a gc took it): this store fails, and
        // the next attempt writes its slices again.
        this.slices.markGone(object.id);
        throw new ChunkMissingError(key, this.settings.backend.description);
      }
      await Promise.all(object.children.map((child) => this.ensure(child, inFlight, signal)));
      await this.write(object, signal);
    })();
    inFlight.set(key, work);
    return work;
  }

  /** Whether an object a plan would reuse is in the store (touched when old, so a gc keeps it); false when it is gone. */
  async stillStored(key: string, signal: AbortSignal | undefined): Promise<boolean> {
    const { backend, limiter, now, refreshAfterMs } = this.settings;
    const confirmed = this.present.get(key);
    if (confirmed !== undefined && now() - confirmed < refreshAfterMs / 2) return true;
    const found = await limiter.run(() => backend.stat(key, signal));
    if (found === undefined) return false;
    if (now() - found.modifiedMs >= refreshAfterMs)
      try {
        await limiter.run(() => backend.touch(key, signal));
      } catch (error) {
        // Vanished meanwhile (a gc took it): it is written anew.
        if ((await limiter.run(() => backend.stat(key, signal))) === undefined) return false;
        throw error;
      }
    this.present.set(key, now());
    return true;
  }

  /** Seals and writes `object`, whether or not it exists (a manifest's time tells a gc a claim to it was handed out). */
  async write(object: PlannedObject, signal: AbortSignal | undefined): Promise<void> {
    const { backend, keyring, limiter, now } = this.settings;
    const key = objectKey(object.kind, object.id);
    if (object.plaintext === undefined) throw new ChunkMissingError(key, backend.description);
    const keyId = keyring?.current.id;
    // A pack or manifest against its planned context (its id binds it); a node against the last
    // object's window when that makes it smaller.
    const chained = object.kind !== 'node';
    const { sealed, context, before } = sealObject(object.plaintext, keyring?.current, {
      context: chained ? object.context : this.chain.contextFor(keyId),
      contextIfSmaller: !chained,
    });
    await limiter.run(() => backend.put(key, sealed, signal));
    // Only once it is stored may a later object be deflated against it.
    const window = chained ? windowAfter(before, object.plaintext) : undefined;
    const kind = object.kind === 'manifest' ? 'manifest' : 'chunk';
    if (window !== undefined) this.chain.extend(keyId, { id: object.id, kind }, context, window);
    const counters = this.counters.written[object.kind];
    addTo(counters, sealed.length);
    counters.plaintextBytes += object.plaintext.length;
    this.present.set(key, now());
    // What was just written is what the next retrieve reads (an activity taking its workflow's input).
    this.reader.remember(object.kind, object.id, keyId, object.plaintext, window);
  }
}
