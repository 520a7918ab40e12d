// Node only: what the chunk store needs from where objects live (file-backend.ts, s3-backend.ts).
import { ChunkIntegrityError } from './errors.js';

export function tooLarge(key: string, size: number, maxBytes: number): ChunkIntegrityError {
  return new ChunkIntegrityError(key, `is ${size} bytes, more than the ${maxBytes} any object of the store takes`);
}

/** What `work` yields, or undefined when `isMissing` says its error means there is no such object. */
export async function orMissing<T>(work: Promise<T>, isMissing: (error: unknown) => boolean): Promise<T | undefined> {
  try {
    return await work;
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

export interface ObjectStat {
  /** Last write or touch, in ms since the epoch (a gc's grace period is measured from it). */
  modifiedMs: number;
}

/** Immutable objects under `/`-separated keys; writes are atomic and may overwrite (with the same bytes). */
export interface ObjectBackend {
  /** Where the objects live, for messages: `file:/var/lib/compactor` or `s3://bucket/prefix`. */
  readonly description: string;
  /** The object's bytes, or undefined when there is none; one over `maxBytes` is refused before it is read. */
  get(key: string, signal?: AbortSignal, maxBytes?: number): Promise<Uint8Array | undefined>;
  put(key: string, body: Uint8Array, signal?: AbortSignal): Promise<void>;
  /** Its modification time, or undefined when there is no such object. */
  stat(key: string, signal?: AbortSignal): Promise<ObjectStat | undefined>;
  /** Sets its modification time to now (an object reused by a new payload must not look old to a gc). */
  touch(key: string, signal?: AbortSignal): Promise<void>;
}

export interface ListedObject extends ObjectStat {
  /** Relative to the store's directory or prefix. */
  key: string;
  bytes: number;
}

export interface Tally {
  objects: number;
  bytes: number;
}

export const noTally = (): Tally => ({ objects: 0, bytes: 0 });

export const addTo = (tally: Tally, bytes: number): void => {
  tally.objects += 1;
  tally.bytes += bytes;
};

export interface QuarantineSettled {
  /** Put back under their names: a claim gc marked needs them. */
  restored: Tally;
  /** Removed for good: claimed by nothing, and quarantined for longer than the grace period. */
  purged: Tally;
}

/** A backend gc can sweep: it lists objects and removes them, guarded against a writer that renewed one meanwhile. */
export interface SweepableBackend extends ObjectBackend {
  /** Every object whose key starts with `prefix`, in no order, temporary files of unfinished writes included. */
  list(prefix: string, signal?: AbortSignal): AsyncIterable<ListedObject>;
  /**
   * Removes the object unless written or touched at or after `cutoffMs`; says whether it did (a missing
   * one counts). A backend that cannot rule out a renewal between check and removal quarantines it
   * (reads still find it) until `settleQuarantine`.
   */
  removeIfOlder(key: string, cutoffMs: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * Puts back what `removeIfOlder` quarantined and `isNeeded` says a claim needs, and removes for
   * good what was quarantined before `cutoffMs` and is not needed. Absent: removals are final.
   */
  settleQuarantine?(
    isNeeded: (key: string) => boolean,
    cutoffMs: number,
    dryRun: boolean,
    signal?: AbortSignal,
  ): Promise<QuarantineSettled>;
}

export const isSweepable = (backend: ObjectBackend): backend is SweepableBackend =>
  typeof Reflect.get(backend, 'list') === 'function' && typeof Reflect.get(backend, 'removeIfOlder') === 'function';
