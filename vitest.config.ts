import { configDefaults, defineConfig } from 'vitest/config';
import { LongestFirst } from './test/support/file-order.js';

/**
 * Files that need a process of their own: metrics.test.ts installs the SDK's Runtime with a metrics
 * endpoint, which must come before any connection the process opens.
 */
const OWN_PROCESS = ['test/workflows/metrics.test.ts'];

const common = {
  // One Temporal dev server for the whole run (skipped when TEMPORAL_ADDRESS is set), and a
  // per-file afterAll that closes the connections opened by test/support/temporal.ts.
  globalSetup: ['test/support/global-setup.ts'],
  setupFiles: ['test/support/setup-file.ts'],
  testTimeout: 30_000,
  hookTimeout: 120_000,
};

export default defineConfig({
  test: {
    // Six files at a time on two cores: most workflow tests wait on the dev server, timers and
    // child processes, so two at a time left a third of the CPU idle, and four about a tenth
    // (docs/testing.md#where-the-time-goes).
    // They share one dev server and the workflow bundles built once for the run (test/support/bundle-cache.ts).
    maxWorkers: 6,
    // The longest files first, also in a fresh clone, where vitest has timed none.
    sequence: { sequencer: LongestFirst },
    // Each module as transformed is kept under node_modules/.cache between runs, named by its
    // content and vitest's settings: a warm run transforms only what changed (docs/testing.md).
    experimental: { fsModuleCache: true, fsModuleCachePath: 'node_modules/.cache/vitest-modules' },
    projects: [
      {
        test: {
          ...common,
          name: 'shared',
          include: ['test/**/*.test.ts'],
          // The cluster and chaos tests build and start a three-node cluster: `npm run test:cluster`
          // and `npm run test:chaos` run them. The tests against a real model server need it built
          // and a model downloaded: `npm run test:llm` runs them.
          exclude: [
            ...configDefaults.exclude,
            'test/cluster/**',
            'test/chaos/**',
            'test/llm/llama-server/**',
            ...OWN_PROCESS,
          ],
          // Each process runs file after file with the modules it already loaded:
          // loading them again for every file (vitest's default) cost about half the CPU time of
          // the engine's unit tests. Test files therefore leave no global state behind (a test's
          // cleanups run in its file's afterAll, test/support/cleanup.ts).
          isolate: false,
        },
      },
      { test: { ...common, name: 'own-process', include: OWN_PROCESS } },
    ],
  },
});
