// Node (vitest's config): the order in which `npm test` starts its files.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that run longest, longest first (the agentRun transcript tests over the extended corpus
 * run for minutes). Vitest starts the files it has timed longest first; a file it has not timed
 * (every file, in a fresh clone) it orders by size, largest first, and these are mostly small, so
 * they would start among the last. They start first until vitest has timed them.
 */
export const LONGEST: readonly string[] = [
  'test/workflows/agent-run-transcript.test.ts',
  'test/workflows/agent-run-transcript-aged.test.ts',
  'test/workflows/long-run.test.ts',
  'test/workflows/agent-run.test.ts',
  'test/payloads/gc.test.ts',
  'test/e2e/demo.test.ts',
  'test/workflows/hostile-model.test.ts',
  'test/workflows/plugin.test.ts',
  'test/workflows/agent-run-undo-kill.test.ts',
  'test/e2e/ui-closed-run.test.ts',
  'test/workflows/agent-run-crash.test.ts',
];

/** Vitest's order, with the files of `LONGEST` it has not timed moved to the front of their project. */
export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { cache, config } = this.ctx;
    const path = (file: TestSpecification): string => relative(config.root, file.moduleId);
    const rank = (file: TestSpecification): number => {
      const index = LONGEST.indexOf(path(file));
      const timed = cache.getFileTestResults(`${file.project.name}:${path(file)}`) !== undefined;
      return index < 0 || timed ? LONGEST.length : index;
    };
    const sorted = await super.sort(files);
    // Projects still run one after the other, and the files not moved keep vitest's order (a stable sort).
    const projects = [...new Set(sorted.map((file) => file.project.name))];
    const project = (file: TestSpecification): number => projects.indexOf(file.project.name);
    return sorted.sort((a, b) => project(a) - project(b) || rank(a) - rank(b));
  }
}
