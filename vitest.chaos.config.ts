import { defineConfig } from 'vitest/config';

// `npm run test:chaos`: agent runs on the three-node cluster under load and faults (test/chaos).
// Not part of `npm test` (it takes minutes and starts its own cluster; .ci/run runs the `ci`
// profile). No dev server (no globalSetup). One file, its scenarios in order, on one cluster.
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.test.ts'],
    // Each scenario sets its own deadline; the cluster build (when not cached) runs in beforeAll.
    testTimeout: 40 * 60_000,
    hookTimeout: 45 * 60_000,
    fileParallelism: false,
    maxWorkers: 1,
  },
});
