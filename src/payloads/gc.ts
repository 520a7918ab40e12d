// Node only: the payload store's garbage collector (`temporal-compactor gc`), mark and sweep.
//
// Mark: the manifests named by claims in the histories Temporal still retains (retained-claims.ts
// finds them), and every manifest, node and chunk younger than the grace period (a payload being
// stored right now, or stored by a workflow task whose claim has not reached history yet; a node
// or chunk touched by a store that never got to write its manifest); then every node and chunk
// reachable from them — an object lists the object it was deflated against (its context,
// sealed-object.ts: a pack or a manifest), and a manifest its base and the manifests whose inline
// bytes it lists slices of, so marking reads every marked chunk's header too. Sweep: every other object
// older than the grace period is removed.
//
// Why that is safe while workers keep storing (chunk-store.ts): a store writes children before
// parents and rewrites its manifest every time, and an object it reuses is at most 1.5 × the
// driver's refresh period old (24 h: touched when a check finds it older, and checks are cached
// for half of it). So with a grace period of at least 48 h, an object any store in flight may
// still reuse is younger than the grace period, and one it touches during the sweep is seen as
// renewed and kept (each removal re-checks the time: `SweepableBackend.removeIfOlder`; on S3, where a
// renewal between that check and the delete cannot be ruled out, removals wait in a quarantine that
// reads still find, and the next collection puts back what a claim needs). The grace
// period must also exceed the longest time between a payload being stored and its claim landing
// in history: the longest workflow task or activity attempt, or client call.
//
// Objects it cannot read — sealed with a key it was not given (a retired key, another
// environment's), failing authentication, malformed, not hashing to their name — are reported and
// kept, never removed: gc cannot tell what such an object lists, nor that it is ours (another
// environment may share the prefix). The collection goes on; everything sealed under a key it
// lacks lists only objects sealed under that key, so those are kept too. Errors of the store
// itself (I/O, the network) still stop it before anything is removed.
//
// Order of removal: every object before everything it lists — a manifest before its base, its nodes
// and the objects it lists slices of, a node before its children, an object before the one it was
// deflated against (a pack or a manifest) — so that at every moment an object that
// exists still has all its descendants (a store that finds one reuses it without looking below).
// When a store renews an object meanwhile, everything under it is kept.
import { ChunkIntegrityError, ChunkMissingError, PayloadKeyMissingError } from './errors.js';
import type { ChunkStoreDriver, InspectedObject } from './chunk-store.js';
import { isSweepable } from './object-backend.js';
import { objectKey, parseObjectKey, type ObjectKind } from './object-format.js';

/** @default 48 h: twice the chunk store's refresh period (see the module comment). */
export const DEFAULT_GC_GRACE_MS = 48 * 3_600_000;

/** What the sweep sorts objects into: the three object kinds, and temporary files of unfinished writes. */
export type SweptKind = ObjectKind | 'temporary';

/** A number of objects and their stored bytes. */
export interface Tally {
  objects: number;
  bytes: number;
}

export type TallyByKind = Record<SweptKind, Tally>;

/** What a collection found and did. */
export interface GarbageReport {
  /** The store, e.g. `file:/var/lib/compactor`. */
  store: string;
  dryRun: boolean;
  graceMs: number;
  /** Objects last written or touched before this time (ms since the epoch) were candidates. */
  cutoffMs: number;
  /** Distinct manifests named by retained claims. */
  claimedManifests: number;
  /** Manifests younger than the grace period (marked whether or not a claim names them). */
  youngManifests: number;
  /**
   * Nodes younger than the grace period, marked with everything under them: a store touches a node
   * it reuses but not what lies below, so a young node may list old chunks.
   */
  youngNodes: number;
  /** Chunks younger than the grace period, marked with the objects they were deflated against. */
  youngChunks: number;
  /** Objects a marked manifest needs that are not in the store (a claim that cannot be resolved any more), first 20 keys. */
  missing: string[];
  missingCount: number;
  /** Reachable from a claimed manifest or a young manifest or node: kept. */
  reachable: TallyByKind;
  /** Unreachable but younger than the grace period: kept. */
  young: TallyByKind;
  /** Removed (in a dry run: what would be). */
  deleted: TallyByKind;
  /** Old and unreachable when listed, but renewed by a store during the sweep (or under such an object): kept. */
  renewed: TallyByKind;
  /** Old and unreachable, but unreadable (see {@link unreadableObjects}): kept, never removed. */
  unreadable: TallyByKind;
  /** Objects gc could not read, marked or not, with why (the first 20); each is kept. */
  unreadableObjects: Array<{ key: string; reason: string }>;
  /** How many objects gc could not read. */
  unreadableCount: number;
  /** Quarantined by an earlier removal (S3), put back because a claim marked now needs them. */
  restored: Tally;
  /** Quarantined by an earlier removal (S3) longer than the grace period and needed by nothing: removed for good. */
  purged: Tally;
}

/** Why an object cannot be read, when that is the object's doing (not the store's): a key gc lacks, or bytes that are not what the name promises. */
function unreadableReason(error: unknown): string | undefined {
  return error instanceof PayloadKeyMissingError || error instanceof ChunkIntegrityError ? error.message : undefined;
}

export interface CollectGarbageOptions {
  /** The store's driver (its backend must list and remove: both shipped backends do), with every key the workers have. */
  driver: ChunkStoreDriver;
  /** Ids of the manifests named by claims in retained histories (see `collectRetainedClaims`). */
  claimedManifests: Iterable<string>;
  /** @default DEFAULT_GC_GRACE_MS */
  graceMs?: number;
  /** Report what would be removed, remove nothing. @default false */
  dryRun?: boolean;
  /** Backend operations in flight at once. @default 16 */
  concurrency?: number;
  /** One line at a time, at most every two seconds per phase, for long collections. */
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
  /** @default Date.now */
  now?: () => number;
}

/** The sweep cannot go on safely: nothing has been removed when this is thrown during marking or reading candidates. */
export class GarbageCollectionError extends Error {
  override readonly name = 'GarbageCollectionError';
}

const KINDS: readonly SweptKind[] = ['manifest', 'node', 'chunk', 'temporary'];
const emptyTallies = (): TallyByKind => ({
  manifest: { objects: 0, bytes: 0 },
  node: { objects: 0, bytes: 0 },
  chunk: { objects: 0, bytes: 0 },
  temporary: { objects: 0, bytes: 0 },
});
const MISSING_SHOWN = 20;
const PROGRESS_EVERY_MS = 2_000;

/** Runs `work` over `items` (which `work` may extend) with at most `concurrency` at once; the first error stops it. */
async function drain<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined) {
      const item = items.pop();
      if (item === undefined) return;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  // Workers that found the list empty while others still add to it would end early: run rounds until it stays empty.
  while (items.length > 0 && failure === undefined) await Promise.all(Array.from({ length: concurrency }, worker));
  if (failure !== undefined) throw failure.error;
}

/** Progress lines: forced ones always, others at most every two seconds (so short work prints only the forced ones). */
function throttled(onProgress: ((line: string) => void) | undefined): (line: () => string, force?: boolean) => void {
  let last = Date.now();
  return (line, force = false) => {
    if (onProgress === undefined) return;
    const now = Date.now();
    if (!force && now - last < PROGRESS_EVERY_MS) return;
    last = now;
    onProgress(line());
  };
}

const count = (value: number): string => value.toLocaleString('en-US');

interface Candidate {
  key: string;
  kind: SweptKind;
  id: string | undefined;
  bytes: number;
  /** What it lists (undefined: not read yet, or unreadable). */
  inspected?: InspectedObject;
  /** Removed by someone else since the listing. */
  gone?: boolean;
  /** Why it cannot be read: then it is kept. */
  unreadable?: string;
}

/**
 * How deep each candidate lies under the others: 0 when no candidate lists it, else one more than
 * the deepest candidate that does. Removing level by level, from 0 up, takes every object before
 * what it lists. (Objects are content-addressed and written after what they list: no cycles; one
 * would leave its members at level 0.)
 */
function removalLevels(candidates: readonly Candidate[]): Map<string, number> {
  // The candidates each candidate lists, and how many candidates list each one not yet levelled.
  const lists = new Map<string, string[]>();
  const keys = new Set(candidates.map((candidate) => candidate.key));
  const parentsLeft = new Map<string, number>();
  for (const candidate of candidates)
    for (const child of candidate.inspected?.children ?? []) {
      const key = objectKey(child.kind, child.id);
      if (!keys.has(key) || key === candidate.key) continue;
      const listed = lists.get(candidate.key) ?? [];
      listed.push(key);
      lists.set(candidate.key, listed);
      parentsLeft.set(key, (parentsLeft.get(key) ?? 0) + 1);
    }
  const levels = new Map<string, number>();
  const ready = candidates.map((candidate) => candidate.key).filter((key) => !parentsLeft.has(key));
  for (const key of ready) levels.set(key, 0);
  while (ready.length > 0) {
    const key = ready.pop() ?? '';
    const level = levels.get(key) ?? 0;
    for (const child of lists.get(key) ?? []) {
      levels.set(child, Math.max(levels.get(child) ?? 0, level + 1));
      const left = (parentsLeft.get(child) ?? 1) - 1;
      parentsLeft.set(child, left);
      if (left === 0) ready.push(child);
    }
  }
  return levels;
}

/**
 * Collects the garbage of a payload store: marks from `claimedManifests` and the objects younger
 * than the grace period, sweeps every other object older than it. Marking reads every marked
 * object (of a chunk, its header: the chunk it was deflated against), so it needs every key they
 * were sealed with; an object it cannot read (a key it lacks, bytes that are not ours) is kept and
 * reported in `unreadableObjects`, and the collection goes on.
 *
 * @example
 * const { manifests } = await collectRetainedClaims({ clients: [client] });
 * const report = await collectGarbage({ driver, claimedManifests: manifests, dryRun: true });
 */
export async function collectGarbage({
  driver,
  claimedManifests,
  graceMs = DEFAULT_GC_GRACE_MS,
  dryRun = false,
  concurrency = 16,
  onProgress,
  signal,
  now = Date.now,
}: CollectGarbageOptions): Promise<GarbageReport> {
  const backend = driver.backend;
  if (!isSweepable(backend))
    throw new GarbageCollectionError(
      `the payload store ${backend.description} cannot be listed, so it cannot be collected`,
    );
  const cutoffMs = now() - graceMs;
  const report: GarbageReport = {
    store: backend.description,
    dryRun,
    graceMs,
    cutoffMs,
    claimedManifests: 0,
    youngManifests: 0,
    youngNodes: 0,
    youngChunks: 0,
    missing: [],
    missingCount: 0,
    reachable: emptyTallies(),
    young: emptyTallies(),
    deleted: emptyTallies(),
    renewed: emptyTallies(),
    unreadable: emptyTallies(),
    unreadableObjects: [],
    unreadableCount: 0,
    restored: { objects: 0, bytes: 0 },
    purged: { objects: 0, bytes: 0 },
  };
  const progress = throttled(onProgress);
  const noteUnreadable = (key: string, reason: string): void => {
    report.unreadableCount += 1;
    if (report.unreadableObjects.length < MISSING_SHOWN) report.unreadableObjects.push({ key, reason });
  };

  // Mark. Roots: claimed manifests, and every manifest and node younger than the grace period.
  const claimed = new Set([...claimedManifests].filter((id) => /^[0-9a-f]{64}$/.test(id)));
  report.claimedManifests = claimed.size;
  const marked = new Set<string>();
  const queue: Array<{ kind: ObjectKind; id: string }> = [];
  const root = (kind: ObjectKind, id: string): void => {
    const key = objectKey(kind, id);
    if (marked.has(key)) return;
    marked.add(key);
    queue.push({ kind, id });
  };
  claimed.forEach((id) => root('manifest', id));
  const youngOnly = new Set<string>();
  let listed = 0;
  for (const prefix of ['v1/manifests/', 'v1/nodes/', 'v1/chunks/']) {
    for await (const object of backend.list(prefix, signal)) {
      listed += 1;
      progress(
        () =>
          `gc: listing objects: ${count(listed)} so far, ${count(report.youngManifests + report.youngNodes + report.youngChunks)} younger than the grace period`,
      );
      const parsed = parseObjectKey(object.key);
      if (parsed === undefined || object.modifiedMs < cutoffMs) continue;
      if (parsed.kind === 'manifest') report.youngManifests += 1;
      else if (parsed.kind === 'node') report.youngNodes += 1;
      else report.youngChunks += 1;
      if (!marked.has(object.key)) youngOnly.add(object.key);
      root(parsed.kind, parsed.id);
    }
  }
  progress(
    () =>
      `gc: listed ${count(listed)} objects: ${count(report.youngManifests)} manifests, ${count(report.youngNodes)} nodes and ${count(report.youngChunks)} chunks younger than the grace period`,
    true,
  );
  progress(
    () =>
      `gc: marking from ${count(queue.length)} roots (${count(report.claimedManifests)} claimed manifests, and the young ones)`,
    true,
  );
  await drain(queue, concurrency, async (item) => {
    let inspected: InspectedObject;
    try {
      inspected = await driver.inspect(item.kind, item.id, signal);
    } catch (error) {
      // A young root can vanish between the listing and the read only if someone else removed it.
      if (error instanceof ChunkMissingError) {
        if (!youngOnly.has(objectKey(item.kind, item.id))) {
          report.missingCount += 1;
          if (report.missing.length < MISSING_SHOWN) report.missing.push(error.objectKey);
        }
        return;
      }
      // Kept (it is marked) and reported; what it lists cannot be known, and is kept only if
      // something else reaches it, or if it cannot be read either (a key gc lacks).
      const reason = unreadableReason(error);
      if (reason !== undefined) {
        noteUnreadable(objectKey(item.kind, item.id), reason);
        return;
      }
      throw new GarbageCollectionError(
        `marking stopped, nothing was removed: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    for (const child of inspected.children) {
      const key = objectKey(child.kind, child.id);
      if (marked.has(key)) continue;
      marked.add(key);
      // A manifest lists its base manifest (the payload starts with a prefix of the base's), and
      // every object the object it was deflated against.
      queue.push({ kind: child.kind, id: child.id });
    }
    progress(() => `gc: marking: ${count(marked.size)} objects reachable so far`);
  });
  progress(
    () =>
      `gc: marked ${count(marked.size)} reachable objects${report.missingCount > 0 ? ` (${count(report.missingCount)} missing from the store)` : ''}`,
    true,
  );

  // Sweep: sort every object; candidates are old and unreachable.
  const candidates: Candidate[] = [];
  let seen = 0;
  for await (const object of backend.list('v1/', signal)) {
    seen += 1;
    const parsed = parseObjectKey(object.key);
    const kind: SweptKind = parsed?.kind ?? 'temporary';
    const tally =
      parsed !== undefined && marked.has(object.key)
        ? report.reachable[kind]
        : object.modifiedMs >= cutoffMs
          ? report.young[kind]
          : undefined;
    if (tally !== undefined) {
      tally.objects += 1;
      tally.bytes += object.bytes;
    } else {
      candidates.push({ key: object.key, kind, id: parsed?.id, bytes: object.bytes });
    }
    progress(
      () =>
        `gc: sweeping: listed ${count(seen)} objects, ${count(candidates.length)} unreachable and older than the grace period`,
    );
  }
  progress(
    () => `gc: listed ${count(seen)} objects, ${count(candidates.length)} unreachable and older than the grace period`,
    true,
  );
  // What candidates list decides the order of removal and what a renewal protects.
  const toRead = candidates.filter((candidate) => candidate.kind !== 'temporary');
  let read = 0;
  await drain([...toRead], concurrency, async (candidate) => {
    if (candidate.id === undefined || candidate.kind === 'temporary') return;
    try {
      candidate.inspected = await driver.inspect(candidate.kind, candidate.id, signal);
    } catch (error) {
      // Gone ones need nothing; unreadable ones are kept, whatever they are.
      const reason = unreadableReason(error);
      if (error instanceof ChunkMissingError) candidate.gone = true;
      else if (reason !== undefined) {
        candidate.unreadable = reason;
        noteUnreadable(candidate.key, reason);
      } else {
        throw new GarbageCollectionError(
          `reading ${candidate.key} stopped the sweep, nothing was removed: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
    }
    read += 1;
    progress(() => `gc: sweeping: read ${count(read)} of ${count(toRead.length)} unreachable objects`);
  });

  const protectedKeys = new Set<string>();
  // Every object before the objects it lists (temporaries first): a manifest before its base, its
  // nodes and the slices it lists, a node before its children, an object before the one it was
  // deflated against (its context: a pack or a manifest). Each candidate's round is
  // its longest path from a candidate no candidate lists (an object a kept one lists is never a
  // candidate: marking reached it).
  const levels = removalLevels(candidates);
  const byRemovalOrder = (candidate: Candidate): number =>
    candidate.kind === 'temporary' ? Number.MAX_SAFE_INTEGER : -(levels.get(candidate.key) ?? 0);
  const rounds = new Map<number, Candidate[]>();
  for (const candidate of candidates) {
    if (candidate.gone === true) continue;
    if (candidate.unreadable !== undefined) {
      report.unreadable[candidate.kind].objects += 1;
      report.unreadable[candidate.kind].bytes += candidate.bytes;
      continue;
    }
    const order = byRemovalOrder(candidate);
    const round = rounds.get(order);
    if (round === undefined) rounds.set(order, [candidate]);
    else round.push(candidate);
  }
  let done = 0;
  const total = [...rounds.values()].reduce((sum, round) => sum + round.length, 0);
  for (const order of [...rounds.keys()].sort((a, b) => b - a)) {
    await drain([...(rounds.get(order) ?? [])], concurrency, async (candidate) => {
      const keep = (): void => {
        report.renewed[candidate.kind].objects += 1;
        report.renewed[candidate.kind].bytes += candidate.bytes;
        for (const child of candidate.inspected?.children ?? []) protectedKeys.add(objectKey(child.kind, child.id));
      };
      if (protectedKeys.has(candidate.key)) keep();
      else if (dryRun || (await backend.removeIfOlder(candidate.key, cutoffMs, signal))) {
        report.deleted[candidate.kind].objects += 1;
        report.deleted[candidate.kind].bytes += candidate.bytes;
      } else keep();
      done += 1;
      progress(() => `gc: ${dryRun ? 'would remove' : 'removing'}: ${count(done)} of ${count(total)} objects`);
    });
  }
  // What earlier removals quarantined (S3): back if a claim marked now needs it, else gone for good once old.
  if (backend.settleQuarantine !== undefined) {
    const settled = await backend.settleQuarantine((key) => marked.has(key), cutoffMs, dryRun, signal);
    report.restored = settled.restored;
    report.purged = settled.purged;
  }
  progress(
    () =>
      `gc: ${dryRun ? 'dry run done: would remove' : 'done: removed'} ${count(totalOf(report.deleted).objects)} objects`,
    true,
  );
  return report;
}

/** Sums a tally over the kinds. */
export function totalOf(tallies: TallyByKind): Tally {
  return KINDS.reduce(
    (sum, kind) => ({ objects: sum.objects + tallies[kind].objects, bytes: sum.bytes + tallies[kind].bytes }),
    { objects: 0, bytes: 0 },
  );
}
