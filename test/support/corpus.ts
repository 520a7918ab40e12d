// Node (test support, vitest): the trajectories a test runs over — the repository set always, the
// rest of the extended corpus when it is present. When it is absent a test file shows ONE skipped
// test that says where it was looked for and how to point at it, instead of failing or passing silently.
import { it } from 'vitest';
import {
  extendedCorpusLocation,
  extendedCorpusMissing,
  extendedOnly,
  repositoryCorpus,
  type Trajectory,
} from '../../corpus/index.js';

/**
 * The extended corpus' trajectories beyond the repository set. When the corpus is absent this
 * registers one skipped test (in the suite being collected) named by `extendedCorpusMissing()`,
 * and returns no trajectories.
 */
export function extendedCases(): Trajectory[] {
  const extended = extendedOnly();
  if (extended === undefined) {
    it.skip(extendedCorpusMissing(extendedCorpusLocation()), () => undefined);
    return [];
  }
  return extended;
}

/** The repository set, then the extended corpus' other trajectories (or the one skip line). */
export function testCorpus(): Trajectory[] {
  return [...repositoryCorpus(), ...extendedCases()];
}
