// Node only: the payload store's garbage collector (`temporal-compactor gc`), mark and sweep.
//
// Mark: the manifests named by claims in retained histories (retained-claims.ts), and every object
// younger than the grace period (a payload being stored, or whose claim has not reached history
// yet; a node or chunk touched by a store that never wrote its manifest); then everything reachable
// from them: an object lists its context (sealed-object.ts), a manifest its base and the manifests
// whose inline bytes it lists. Sweep: every other object older than the grace period is removed.
//
// Safe while workers store, by what chunk-store.ts keeps true: an object a store reuses is at most
// 1.5 × the 24 h refresh period old, so with a grace period of at least 48 h anything a store in
// flight may reuse is young, and one it touches during the sweep is kept (`removeIfOlder` re-checks
// the time; on S3 removals wait in a quarantine reads still find: s3-backend.ts). The grace period
// must also exceed the longest time from storing a payload to its claim landing in history.
//
// Objects it cannot read (a key it lacks, failed authentication, not hashing to their name) are
// reported and kept: gc cannot tell what they list, nor that they are ours. Store errors (I/O, the
// network) stop it before anything is removed. Removal goes parents first, so an object that exists
// always has all its descendants (a store reuses one without looking below).
import { ChunkIntegrityError, ChunkMissingError, PayloadKeyMissingError } from './errors.js';
import type { ChunkStoreDriver } from './chunk-store.js';
import { BACKEND_CALLS_AT_ONCE as CONCURRENCY, drain } from './limiter.js';
import type { InspectedObject } from './object-reader.js';
import { addTo, isSweepable, noTally, type Tally } from './object-backend.js';
import { objectKey, parseObjectKey, type ObjectKind } from './object-format.js';

/** Twice the chunk store's refresh period (see the module comment). */
export const DEFAULT_GC_GRACE_MS = 48 * 3_600_000;

/** What the sweep sorts objects into: the three object kinds, and temporary files of unfinished writes. */
export type SweptKind = ObjectKind | 'temporary';

export type { Tally };

export type TallyByKind = Record<SweptKind, Tally>;

export interface GarbageReport {
  store: string;
  dryRun: boolean;
  graceMs: number;
  /** Objects last written or touched before this time (ms since the epoch) were candidates. */
  cutoffMs: number;
  /** Distinct manifests named by retained claims. */
  claimedManifests: number;
  /** Manifests younger than the grace period (marked whether or not a claim names them). */
  youngManifests: number;
  /** Nodes younger than the grace period, marked with everything under them (a young node may list old chunks). */
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
  unreadableCount: number;
  /** Quarantined by an earlier removal (S3), put back because a claim marked now needs them. */
  restored: Tally;
  /** Quarantined by an earlier removal (S3) longer than the grace period and needed by nothing: removed for good. */
  purged: Tally;
}

export interface CollectGarbageOptions {
  /** The store's driver (its backend must list and remove: both shipped backends do), with every key the workers have. */
  driver: ChunkStoreDriver;
  /** Ids of the manifests named by claims in retained histories (see `collectRetainedClaims`). */
  claimedManifests: Iterable<string>;
  graceMs?: number;
  dryRun?: boolean;
  /** One line at a time, at most every two seconds per phase, for long collections. */
  onProgress?: (line: string) => void;
  now?: () => number;
}

/** The sweep cannot go on safely: nothing has been removed when this is thrown during marking or reading candidates. */
export class GarbageCollectionError extends Error {
  override readonly name = 'GarbageCollectionError';
}

const KINDS: readonly SweptKind[] = ['manifest', 'node', 'chunk', 'temporary'];
const emptyTallies = (): TallyByKind => Object.fromEntries(KINDS.map((kind) => [kind, noTally()])) as TallyByKind;
const YOUNG = { manifest: 'youngManifests', node: 'youngNodes', chunk: 'youngChunks' } as const;
const MISSING_SHOWN = 20;
const PROGRESS_EVERY_MS = 2_000;

/** Progress lines: forced ones always, others at most every two seconds (so short work prints only the forced ones). */
export function throttled(
  onProgress: ((line: string) => void) | undefined,
): (line: () => string, force?: boolean) => void {
  let last = Date.now();
  return (line, force = false) => {
    if (onProgress === undefined) return;
    const now = Date.now();
    if (!force && now - last < PROGRESS_EVERY_MS) return;
    last = now;
    onProgress(line());
  };
}

export const count = (value: number): string => value.toLocaleString('en-US');

type Inspected = InspectedObject | ChunkMissingError | 'unreadable';

interface Candidate {
  key: string;
  kind: SweptKind;
  id: string | undefined;
  bytes: number;
  /** What it lists, once read; left unread (gone since the listing, or unreadable: kept), it is not removed. */
  inspected?: InspectedObject;
}

/**
 * How deep each candidate lies under the others: 0 when no candidate lists it, else one more than the
 * deepest that does. Removing level by level from 0 takes every object before what it lists.
 */
function removalLevels(candidates: readonly Candidate[]): Map<string, number> {
  const keys = new Set(candidates.map((candidate) => candidate.key));
  const listedBy = new Map<string, string[]>();
  for (const candidate of candidates)
    for (const child of candidate.inspected?.children ?? []) {
      const key = objectKey(child.kind, child.id);
      if (!keys.has(key) || key === candidate.key) continue;
      // Pushed, not copied: a chunk many unreachable objects list would make copying quadratic.
      const parents = listedBy.get(key) ?? [];
      parents.push(candidate.key);
      listedBy.set(key, parents);
    }
  const levels = new Map<string, number>();
  const levelOf = (key: string): number => {
    const known = levels.get(key);
    if (known !== undefined) return known;
    // Set before the parents are visited: a cycle (objects are content-addressed, so only a forged store has one) ends.
    levels.set(key, 0);
    const level = (listedBy.get(key) ?? []).reduce((deepest, parent) => Math.max(deepest, levelOf(parent) + 1), 0);
    levels.set(key, level);
    return level;
  };
  keys.forEach(levelOf);
  return levels;
}

/**
 * Marks from `claimedManifests` and the young objects, sweeps every other object older than the grace
 * period. Marking reads every marked object, so it needs every key they were sealed with.
 */
export async function collectGarbage({
  driver,
  claimedManifests,
  graceMs = DEFAULT_GC_GRACE_MS,
  dryRun = false,
  onProgress,
  now = Date.now,
}: CollectGarbageOptions): Promise<GarbageReport> {
  const backend = driver.backend;
  if (!isSweepable(backend))
    throw new GarbageCollectionError(
      `the payload store ${backend.description} cannot be listed, so it cannot be collected`,
    );
  const cutoffMs = now() - graceMs;
  const claimed = new Set([...claimedManifests].filter((id) => /^[0-9a-f]{64}$/.test(id)));
  const report: GarbageReport = {
    store: backend.description,
    dryRun,
    graceMs,
    cutoffMs,
    claimedManifests: claimed.size,
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
    restored: noTally(),
    purged: noTally(),
  };
  const progress = throttled(onProgress);
  /**
   * What object `kind`/`id` lists; its ChunkMissingError when it is not in the store, `'unreadable'` (reported) when
   * that is the object's doing (a key gc lacks, bytes not as named); a GarbageCollectionError when it is the store's.
   */
  const inspect = async (kind: ObjectKind, id: string, stopped: string): Promise<Inspected> => {
    try {
      return await driver.reader.inspect(kind, id);
    } catch (error) {
      if (error instanceof ChunkMissingError) return error;
      if (!(error instanceof PayloadKeyMissingError || error instanceof ChunkIntegrityError))
        throw new GarbageCollectionError(
          `${stopped}, nothing was removed: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      report.unreadableCount += 1;
      if (report.unreadableObjects.length < MISSING_SHOWN)
        report.unreadableObjects.push({ key: objectKey(kind, id), reason: error.message });
      return 'unreadable';
    }
  };

  const marked = new Set<string>();
  const queue: Array<{ kind: ObjectKind; id: string }> = [];
  const mark = (kind: ObjectKind, id: string): void => {
    const key = objectKey(kind, id);
    if (marked.has(key)) return;
    marked.add(key);
    queue.push({ kind, id });
  };
  claimed.forEach((id) => mark('manifest', id));
  const youngOnly = new Set<string>();
  let listed = 0;
  for await (const object of backend.list('v1/')) {
    listed += 1;
    progress(
      () =>
        `gc: listing objects: ${count(listed)} so far, ${count(report.youngManifests + report.youngNodes + report.youngChunks)} younger than the grace period`,
    );
    const parsed = parseObjectKey(object.key);
    if (parsed === undefined || object.modifiedMs < cutoffMs) continue;
    report[YOUNG[parsed.kind]] += 1;
    if (!marked.has(object.key)) youngOnly.add(object.key);
    mark(parsed.kind, parsed.id);
  }
  progress(
    () =>
      `gc: listed ${count(listed)} objects: ${count(report.youngManifests)} manifests, ${count(report.youngNodes)} nodes and ${count(report.youngChunks)} chunks younger than the grace period; marking from ${count(queue.length)} roots (those and ${count(report.claimedManifests)} claimed manifests)`,
    true,
  );
  await drain(queue, CONCURRENCY, async (item) => {
    const inspected = await inspect(item.kind, item.id, 'marking stopped');
    // A young root can vanish between the listing and the read only if someone else removed it.
    if (inspected instanceof ChunkMissingError && !youngOnly.has(objectKey(item.kind, item.id))) {
      report.missingCount += 1;
      if (report.missing.length < MISSING_SHOWN) report.missing.push(inspected.objectKey);
    }
    // An unreadable one is kept and reported; what it lists is kept only if something else reaches it.
    if (inspected instanceof ChunkMissingError || inspected === 'unreadable') return;
    for (const child of inspected.children) mark(child.kind, child.id);
    progress(() => `gc: marking: ${count(marked.size)} objects reachable so far`);
  });
  progress(
    () =>
      `gc: marked ${count(marked.size)} reachable objects${report.missingCount > 0 ? ` (${count(report.missingCount)} missing from the store)` : ''}`,
    true,
  );

  const candidates: Candidate[] = [];
  let seen = 0;
  const listedLine = (phase: string) => (): string =>
    `gc: ${phase}${count(seen)} objects, ${count(candidates.length)} unreachable and older than the grace period`;
  for await (const object of backend.list('v1/')) {
    seen += 1;
    const parsed = parseObjectKey(object.key);
    const kind: SweptKind = parsed?.kind ?? 'temporary';
    const tally =
      parsed !== undefined && marked.has(object.key)
        ? report.reachable[kind]
        : object.modifiedMs >= cutoffMs
          ? report.young[kind]
          : undefined;
    if (tally !== undefined) addTo(tally, object.bytes);
    else candidates.push({ key: object.key, kind, id: parsed?.id, bytes: object.bytes });
    progress(listedLine('sweeping: listed '));
  }
  progress(listedLine('listed '), true);
  // What candidates list decides the order of removal and what a renewal protects.
  const toRead = candidates.filter((candidate) => candidate.kind !== 'temporary');
  let read = 0;
  await drain([...toRead], CONCURRENCY, async (candidate) => {
    if (candidate.id === undefined || candidate.kind === 'temporary') return;
    const inspected = await inspect(candidate.kind, candidate.id, `reading ${candidate.key} stopped the sweep`);
    // Gone ones need nothing; unreadable ones are kept, whatever they are.
    if (inspected === 'unreadable') addTo(report.unreadable[candidate.kind], candidate.bytes);
    else if (!(inspected instanceof ChunkMissingError)) candidate.inspected = inspected;
    read += 1;
    progress(() => `gc: sweeping: read ${count(read)} of ${count(toRead.length)} unreachable objects`);
  });

  const protectedKeys = new Set<string>();
  const removable = candidates.filter(({ kind, inspected }) => kind === 'temporary' || inspected !== undefined);
  // Temporaries first, then every object before the objects it lists.
  const levels = removalLevels(removable);
  const orderOf = (candidate: Candidate): number =>
    candidate.kind === 'temporary' ? -1 : (levels.get(candidate.key) ?? 0);
  let done = 0;
  const remove = async (candidate: Candidate): Promise<void> => {
    const removed =
      !protectedKeys.has(candidate.key) && (dryRun || (await backend.removeIfOlder(candidate.key, cutoffMs)));
    addTo((removed ? report.deleted : report.renewed)[candidate.kind], candidate.bytes);
    if (!removed)
      for (const child of candidate.inspected?.children ?? []) protectedKeys.add(objectKey(child.kind, child.id));
    done += 1;
    progress(() => `gc: ${dryRun ? 'would remove' : 'removing'}: ${count(done)} of ${count(removable.length)} objects`);
  };
  const atOrder = (order: number): Candidate[] => removable.filter((candidate) => orderOf(candidate) === order);
  for (const order of [...new Set(removable.map(orderOf))].sort((a, b) => a - b))
    await drain(atOrder(order), CONCURRENCY, remove);
  // What earlier removals quarantined (S3): back if a claim marked now needs it, else gone for good once old.
  if (backend.settleQuarantine !== undefined)
    Object.assign(report, await backend.settleQuarantine((key) => marked.has(key), cutoffMs, dryRun));
  progress(
    () =>
      `gc: ${dryRun ? 'dry run done: would remove' : 'done: removed'} ${count(totalOf(report.deleted).objects)} objects`,
    true,
  );
  return report;
}

export function totalOf(tallies: TallyByKind): Tally {
  return KINDS.reduce(
    (sum, kind) => ({ objects: sum.objects + tallies[kind].objects, bytes: sum.bytes + tallies[kind].bytes }),
    { objects: 0, bytes: 0 },
  );
}
