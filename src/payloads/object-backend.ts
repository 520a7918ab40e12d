// Node only: the small interface the chunk store needs from where objects live. Two
// implementations: the local filesystem (file-backend.ts) and S3 (s3-backend.ts).
import { ChunkIntegrityError } from './errors.js';

/** The refusal of an object larger than a reader takes (`ObjectBackend.get`'s `maxBytes`). */
export function tooLarge(key: string, size: number, maxBytes: number): ChunkIntegrityError {
  return new ChunkIntegrityError(key, `is ${size} bytes, more than the ${maxBytes} any object of the store takes`);
}

/** What the store knows about an object without reading it. */
export interface ObjectStat {
  /** Last write or touch, in ms since the epoch (a gc's grace period is measured from it). */
  modifiedMs: number;
}

/**
 * A flat namespace of immutable objects under `/`-separated keys such as `v1/chunks/3f/a2/<id>`.
 * Writes are atomic (a reader sees the whole object or none) and may overwrite (with the same
 * bytes: objects are content-addressed). Every call takes the operation's abort signal.
 */
export interface ObjectBackend {
  /** Where the objects live, for messages: `file:/var/lib/compactor` or `s3://bucket/prefix`. */
  readonly description: string;
  /**
   * The object's bytes, or undefined when there is none. With `maxBytes`, an object larger than
   * that is refused before it is read (a `ChunkIntegrityError` naming its size).
   */
  get(key: string, signal?: AbortSignal, maxBytes?: number): Promise<Uint8Array | undefined>;
  /** Writes the whole object atomically. */
  put(key: string, body: Uint8Array, signal?: AbortSignal): Promise<void>;
  /** Its modification time, or undefined when there is no such object. */
  stat(key: string, signal?: AbortSignal): Promise<ObjectStat | undefined>;
  /** Sets its modification time to now (an object reused by a new payload must not look old to a gc). */
  touch(key: string, signal?: AbortSignal): Promise<void>;
}

/** An object as a listing shows it. */
export interface ListedObject {
  /** Its key, e.g. `v1/chunks/3f/a2/<id>` (relative to the store's directory or prefix). */
  key: string;
  modifiedMs: number;
  /** Stored bytes. */
  bytes: number;
}

/** What settling a quarantine did (or in a dry run would do). */
export interface QuarantineSettled {
  /** Put back under their names: a claim gc marked needs them. */
  restored: { objects: number; bytes: number };
  /** Removed for good: claimed by nothing, and quarantined for longer than the grace period. */
  purged: { objects: number; bytes: number };
}

/**
 * A backend a garbage collector can sweep: it lists objects and removes them, each removal
 * guarded against a writer that renewed the object meanwhile.
 */
export interface SweepableBackend extends ObjectBackend {
  /** Every object whose key starts with `prefix` (e.g. `v1/`), in no particular order, temporary files of unfinished writes included. */
  list(prefix: string, signal?: AbortSignal): AsyncIterable<ListedObject>;
  /**
   * Removes the object unless it was written or touched at or after `cutoffMs` (a store reused it
   * since it was listed). Returns whether it removed it; a missing object counts as removed. A
   * backend that cannot rule out a renewal between its check and its removal keeps what it
   * removes in a quarantine, where reads still find it, until `settleQuarantine`.
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

/** Whether `backend` can be swept (both shipped backends can). */
export function isSweepable(backend: ObjectBackend): backend is SweepableBackend {
  return (
    'list' in backend &&
    typeof backend.list === 'function' &&
    'removeIfOlder' in backend &&
    typeof backend.removeIfOlder === 'function'
  );
}
