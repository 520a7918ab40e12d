import { defineConfig } from 'vitest/config';

// `npm run test:cluster`: the tests that start a three-node Temporal cluster on PostgreSQL
// (scripts/cluster). Kept out of `npm test` because the first start builds the server from its Go
// module (minutes); no dev server here (no globalSetup): the tests start their own cluster.
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.test.ts'],
    testTimeout: 300_000,
    // startCluster builds the binaries when they are not cached yet (.ci/run builds them first).
    hookTimeout: 1_800_000,
    // One cluster at a time on two cores.
    fileParallelism: false,
    maxWorkers: 1,
  },
});
