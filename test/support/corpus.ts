// Node (test support, vitest): the trajectories a test runs over — the repository set always, the
// rest of the extended corpus in `npm run test:corpus` (COMPACTOR_TEST_CORPUS=extended), which
// fails when the corpus is absent. Elsewhere a test file shows ONE skipped test that says how its
// extended cases run, instead of running them in `npm test` or passing silently.
import { it } from 'vitest';
import {
  extendedCorpusLocation,
  extendedCorpusMissing,
  extendedOnly,
  extendedRun,
  extendedSkipped,
  repositoryCorpus,
  type Trajectory,
  TEST_CORPUS_ENV,
} from '../../corpus/index.js';

/**
 * The extended corpus' trajectories beyond the repository set, in `npm run test:corpus`; there an
 * absent corpus is an error naming where it was looked for. Elsewhere this registers one skipped
 * test (in the suite being collected) saying how the cases run, and returns no trajectories.
 */
export function extendedCases(): Trajectory[] {
  if (!extendedRun()) {
    it.skip(extendedSkipped(), () => undefined);
    return [];
  }
  const extended = extendedOnly();
  if (extended === undefined)
    throw new Error(`${TEST_CORPUS_ENV}=extended: ${extendedCorpusMissing(extendedCorpusLocation())}`);
  return extended;
}

/** The repository set, then the extended corpus' other trajectories (or the one skip line). */
export function testCorpus(): Trajectory[] {
  return [...repositoryCorpus(), ...extendedCases()];
}
