import { defineConfig } from 'vitest/config';

// `npm run test:llm`: test/llm/, with the tests against a real llama.cpp `llama-server` and a real
// model (test/llm/llama-server/, which `npm test` leaves out) beside the pure ones. `test:llm`
// installs both first (scripts/llm-server.mjs: a build of minutes the first time, cached in
// .temporal/llm/). The same global setup as `npm test` (a Temporal dev server, the run's TMPDIR).
export default defineConfig({
  test: {
    include: ['test/llm/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/setup-file.ts'],
    // A 135M model on two shared cores: a summary takes seconds to a minute.
    testTimeout: 300_000,
    hookTimeout: 180_000,
    // One model server at a time: it uses both cores.
    fileParallelism: false,
    maxWorkers: 1,
  },
});
