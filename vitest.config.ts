import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Workflow tests share one dev server (globalSetup) and each bundles its workflows once;
    // two cores: keep file parallelism modest so bundling does not starve the server.
    maxWorkers: 2,
  },
});
