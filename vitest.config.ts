import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The cluster and chaos tests build and start a three-node cluster: `npm run test:cluster` and
    // `npm run test:chaos` run them. The tests against a real model server need it built and a
    // model downloaded: `npm run test:llm` runs them.
    exclude: [...configDefaults.exclude, 'test/cluster/**', 'test/chaos/**', 'test/llm/llama-server/**'],
    // One Temporal dev server for the whole run (skipped when TEMPORAL_ADDRESS is set), and a
    // per-file afterAll that closes the connections opened by test/support/temporal.ts.
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/setup-file.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Workflow tests share one dev server and the workflow bundles built once for the run
    // (test/support/bundle-cache.ts); two cores: keep file parallelism modest so the workers do
    // not starve the server.
    maxWorkers: 2,
  },
});
