// Lint the layers (docs/design.md#layers). The core, the shared definitions and the workflows run
// in Temporal's deterministic sandbox, so Node built-ins, the OpenAI client and the Node-only
// Temporal packages are banned there; and the dependencies point one way: core ← shared ←
// workflows and activities, workflows import activities as types only, activities never import
// workflow code, the core imports nothing of Temporal, and src/ imports nothing that does not ship.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** src/ is the package: dev/, scripts/, test/, bench/ and corpus/ never ship with it. */
const outsideThePackage = {
  regex: '^(\\.\\./)+(dev|scripts|test|bench|corpus)(/|$)',
  message: 'src/ imports nothing from dev/, scripts/, test/, bench/ or corpus/: they do not ship with the package.',
};

/** Workflow code (src/workflows/, the `temporal-compactor/workflow` entry): what activities and shared code never import. */
const workflowCode = {
  regex: '^(\\.\\./)+(workflows(/|$)|workflow\\.js$)|^\\./(workflows/|workflow\\.js$)',
  message: 'Activities and shared code never import workflow code: move what both sides need to src/shared/.',
};

const sandboxPatterns = [
  outsideThePackage,
  { group: ['node:*'], message: 'Node built-ins are not available in the workflow sandbox.' },
  { group: ['openai', 'openai/*'], message: 'The OpenAI client runs in activities only.' },
  {
    group: ['@temporalio/activity', '@temporalio/worker', '@temporalio/client', '@temporalio/testing'],
    message: 'Node-only Temporal packages cannot be imported by sandboxed code.',
  },
  {
    // The API alone is sandbox-safe (a no-op until the tracing interceptors register a tracer in the sandbox).
    group: [
      '@opentelemetry/*',
      '!@opentelemetry/api',
      '@temporalio/interceptors-opentelemetry',
      '@temporalio/interceptors-opentelemetry/*',
    ],
    message:
      'Workflow code uses @opentelemetry/api only; the OpenTelemetry SDK and exporters run on the worker (src/telemetry).',
  },
  {
    group: ['**/activities', '**/activities/*', '../activities/**'],
    allowTypeImports: true,
    message: 'Workflows import activities as types only.',
  },
];

const sandboxPaths = [
  'fs',
  'path',
  'os',
  'crypto',
  'child_process',
  'http',
  'https',
  'net',
  'util',
  'events',
  'stream',
  'process',
].map((name) => ({
  name,
  message: 'Node built-ins are not available in the workflow sandbox.',
}));

/** Sandboxed code other than the core and the shared layer: the workflows and the sandbox-safe entry points. */
const sandboxBans = { patterns: sandboxPatterns, paths: sandboxPaths };

/** The shared layer: sandbox-safe, and below both sides of the sandbox, so it imports only the core. */
const sharedBans = {
  patterns: [
    ...sandboxPatterns,
    workflowCode,
    {
      regex: '^\\.\\./(?!core/)',
      message:
        'src/shared/ imports only the core (and itself): workflows and activities import it, not the other way round.',
    },
  ],
  paths: sandboxPaths,
};

/** The core: pure TypeScript, imports nothing of Temporal and nothing outside itself. */
function coreBans(leaveCore) {
  return {
    patterns: [
      ...sandboxPatterns,
      {
        group: ['@temporalio/*'],
        message: 'src/core/ is plain TypeScript: Temporal belongs to the workflows, the activities and src/shared/.',
      },
      { regex: leaveCore, message: 'src/core/ imports nothing outside src/core/: the other layers import it.' },
    ],
    paths: sandboxPaths,
  };
}

const sandboxRules = (imports) => ({
  'no-restricted-imports': ['error', imports],
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
});

const SANDBOX_ENTRIES = ['src/workflow.ts'];

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
    // Everything in src/ that runs on Node: the package, and nothing from outside it.
    files: ['src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [outsideThePackage] }] },
  },
  {
    // Activities run on Node and never import workflow code; what both sides need is in src/shared/.
    files: ['src/activities/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [outsideThePackage, workflowCode] }] },
  },
  {
    files: ['src/workflows/**/*.ts', ...SANDBOX_ENTRIES],
    rules: sandboxRules(sandboxBans),
  },
  {
    files: ['src/shared/**/*.ts'],
    rules: sandboxRules(sharedBans),
  },
  {
    files: ['src/core/*.ts'],
    rules: sandboxRules(coreBans('^\\.\\./')),
  },
  {
    // The core's subfolders (compaction/, counting/, agent/, limits/) import each other, never outside src/core/.
    files: ['src/core/*/**/*.ts'],
    rules: sandboxRules(coreBans('^\\.\\./\\.\\./')),
  },
  {
    // Benchmarks share corpus/ with the tests, never the tests' own helpers.
    files: ['bench/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/test/**', '../test', '../test/*'], message: 'Benchmarks import corpus/, not test helpers.' },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
