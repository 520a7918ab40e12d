// Lint what the workflow sandbox forbids: the core and the workflows must stay pure and
// deterministic, so Node built-ins, the OpenAI client and the Node-only Temporal packages are
// banned there, and activities may be imported as types only.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const sandboxBans = {
  patterns: [
    { group: ['node:*'], message: 'Node built-ins are not available in the workflow sandbox.' },
    { group: ['**/corpus', '**/corpus/*'], message: 'src/ must not import the dev-only corpus/.' },
    { group: ['openai', 'openai/*'], message: 'The OpenAI client runs in activities only.' },
    {
      group: ['@temporalio/activity', '@temporalio/worker', '@temporalio/client', '@temporalio/testing'],
      message: 'Node-only Temporal packages cannot be imported by sandboxed code.',
    },
    {
      // The API alone is sandbox-safe (a no-op until the tracing interceptors register a tracer in the sandbox).
      group: ['@opentelemetry/*', '!@opentelemetry/api', '@temporalio/interceptors-opentelemetry', '@temporalio/interceptors-opentelemetry/*'],
      message: 'Workflow code uses @opentelemetry/api only; the OpenTelemetry SDK and exporters run on the worker (src/telemetry).',
    },
    {
      group: ['**/activities', '**/activities/*', '../activities/**'],
      allowTypeImports: true,
      message: 'Workflows import activities as types only.',
    },
  ],
  paths: ['fs', 'path', 'os', 'crypto', 'child_process', 'http', 'https', 'net', 'util', 'events', 'stream', 'process'].map(
    (name) => ({ name, message: 'Node built-ins are not available in the workflow sandbox.' }),
  ),
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.temporal/', 'test-results/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/ban-ts-comment': 'error',
    },
  },
  {
    files: ['src/core/**/*.ts', 'src/workflows/**/*.ts', 'src/workflow.ts'],
    rules: {
      'no-restricted-imports': ['error', sandboxBans],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'No process in the sandbox.' },
        { name: 'setTimeout', message: 'Use the driver (workflow sleep) for time.' },
        { name: 'fetch', message: 'No I/O in the sandbox.' },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'No randomness in deterministic code.' },
        { object: 'Date', property: 'now', message: 'No clock in deterministic code.' },
      ],
    },
  },
  {
    // corpus/ is dev-only material (test trajectories, the fake summarizer): the package never ships it.
    files: ['src/**/*.ts'],
    ignores: ['src/core/**/*.ts', 'src/workflows/**/*.ts', 'src/workflow.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/corpus', '**/corpus/*'], message: 'src/ must not import the dev-only corpus/.' }] }],
    },
  },
  {
    // Benchmarks share corpus/ with the tests, never the tests' own helpers.
    files: ['bench/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/test/**', '../test', '../test/*'], message: 'Benchmarks import corpus/, not test helpers.' }] }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
