// Node only (activities): loads recorded trajectories for the replay provider from a directory on
// the worker, so workflow input names a trajectory instead of carrying it.
import { readFile, realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import type { ApplicationFailure } from '@temporalio/common';
import { FailureType, InvalidInputError } from '../core/errors.js';
import { replayScript, type ReplayScript } from '../core/agent/trajectory.js';
import { nonRetryableFailure } from '../shared/failures.js';

export interface TrajectoryStore {
  /** The directory names are resolved in. */
  readonly dir: string;
  /** Loads (once per worker) the trajectory `name`: a file name, `.json` optional, or a relative path under `dir`. */
  load(name: string): Promise<ReplayScript>;
}

const notFound = (message: string): ApplicationFailure =>
  nonRetryableFailure(FailureType.Replay.TrajectoryNotFound, message);

/** True when `path` is `root` or below it (both resolved). */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/**
 * A trajectory store over a directory. A name that is absolute or climbs out of it is refused:
 * workflow input must not read arbitrary files on the worker.
 */
export function createTrajectoryStore({ dir = process.cwd() }: { dir?: string | undefined } = {}): TrajectoryStore {
  const root = resolve(dir);
  const cache = new Map<string, Promise<ReplayScript>>();
  const loadFile = async (name: string): Promise<ReplayScript> => {
    if (isAbsolute(name))
      throw notFound(
        `replay: trajectory "${name}" must be a name or a relative path under ${root}, not an absolute path`,
      );
    const candidates = name.endsWith('.json') ? [name] : [`${name}.json`, name];
    for (const candidate of candidates) {
      const real = await realpath(resolve(root, candidate)).catch(() => undefined);
      if (real === undefined) continue;
      const realRoot = await realpath(root);
      if (real === realRoot || !isInside(realRoot, real))
        throw notFound(`replay: trajectory "${name}" resolves outside the trajectory directory ${root}`);
      let parsed: unknown;
      try {
        parsed = JSON.parse(await readFile(real, 'utf8'));
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        throw nonRetryableFailure(FailureType.Replay.BadTrajectory, `replay: ${real} is not JSON: ${reason}`);
      }
      try {
        return replayScript(parsed);
      } catch (error) {
        if (error instanceof InvalidInputError)
          throw nonRetryableFailure(FailureType.Replay.BadTrajectory, `replay: ${real}: ${error.message}`);
        throw error;
      }
    }
    throw notFound(
      `replay: no trajectory "${name}" in ${root} (set COMPACTOR_TRAJECTORY_DIR or createActivities({ trajectoryDir }))`,
    );
  };
  return {
    dir: root,
    load(name) {
      let loading = cache.get(name);
      if (loading === undefined) {
        loading = loadFile(name);
        cache.set(name, loading);
        // A failed load is not cached: the file may appear (or be fixed) before the next attempt.
        loading.catch(() => cache.delete(name));
      }
      return loading;
    },
  };
}
