import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ConfigError,
  configFlagsFromArgs,
  configParseArgsOptions,
  configTable,
  loadConfig,
  temporalEnvVars,
  type CompactorConfig,
} from '../src/config.js';
import type { SummarizeRequest } from '../src/core/types.js';
import { configTableMarkdown } from '../scripts/config-table.js';
import { EXTRACTIVE_SUMMARY_NOTICE } from '../src/summarizers/extractive/format.js';
import { summarizerFromConfig } from '../src/worker/summarizer-from-config.js';
import { startFakeOpenAI, type FakeOpenAI } from './support/fake-openai.js';

const defaults: CompactorConfig = {
  temporalAddress: undefined,
  temporalNamespace: 'default',
  temporalApiKey: undefined,
  temporalTls: undefined,
  temporalCliPath: undefined,
  taskQueue: 'compactor',
  summarizerTaskQueue: 'compactor',
  workerMode: 'all',
  workflowBundle: undefined,
  shutdownGraceMs: 10_000,
  summarizer: 'auto',
  openaiBaseUrl: undefined,
  openaiApiKey: undefined,
  summarizerModel: 'gpt-4o-mini',
  summarizerTimeoutMs: 60_000,
  summarizerMaxTokens: undefined,
  chatTimeoutMs: 120_000,
  maxConcurrentActivities: undefined,
  maxConcurrentWorkflowTasks: undefined,
  contextBudget: undefined,
  summarizerContextWindow: undefined,
  toolsRoot: undefined,
  toolsAllow: [],
  trajectoryDir: undefined,
  payloadStore: undefined,
  payloadThreshold: 256,
  s3Endpoint: undefined,
  codecKeyring: undefined,
  codecServerHost: '127.0.0.1',
  codecServerPort: 8081,
  codecServerOrigins: ['http://localhost:8233', 'http://127.0.0.1:8233'],
  codecServerInlineLimit: 2_097_152,
  codecServerToken: undefined,
  codecServerEncodeStore: false,
  tracing: 'off',
  prometheusAddress: undefined,
};

/** Two valid codec keys (base64 of 32 bytes). */
const KEY_1 = Buffer.alloc(32, 1).toString('base64');
const KEY_2 = Buffer.alloc(32, 2).toString('base64');

/** The message `loadConfig` throws for these inputs (fails the test when it does not throw a ConfigError). */
function configErrorOf(options: Parameters<typeof loadConfig>[0]): ConfigError {
  try {
    loadConfig(options);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(options)}`);
}

describe('loadConfig', () => {
  describe('defaults', () => {
    it('applies every default on an empty environment', () => {
      expect(loadConfig({ env: {}, flags: {} })).toEqual(defaults);
    });

    it('reads process.env when no env is given', () => {
      const before = process.env.COMPACTOR_TASK_QUEUE;
      process.env.COMPACTOR_TASK_QUEUE = 'from-process-env';
      try {
        expect(loadConfig().taskQueue).toBe('from-process-env');
      } finally {
        if (before === undefined) delete process.env.COMPACTOR_TASK_QUEUE;
        else process.env.COMPACTOR_TASK_QUEUE = before;
      }
    });

    it('counts a blank variable as unset, as `KEY=` in a compose file means', () => {
      const config = loadConfig({
        env: { COMPACTOR_TASK_QUEUE: '', OPENAI_API_KEY: '   ', COMPACTOR_MAX_CONCURRENT_ACTIVITIES: '' },
      });
      expect(config.taskQueue).toBe('compactor');
      expect(config.openaiApiKey).toBeUndefined();
      expect(config.maxConcurrentActivities).toBeUndefined();
    });
  });

  describe('environment', () => {
    it('reads every setting from its variable', () => {
      const config = loadConfig({
        env: {
          TEMPORAL_ADDRESS: 'my-ns.a1b2c.tmprl.cloud:7233',
          TEMPORAL_NAMESPACE: 'my-ns.a1b2c',
          TEMPORAL_API_KEY: 'temporal-key',
          TEMPORAL_TLS: 'true',
          TEMPORAL_CLI_PATH: '/opt/temporal/bin/temporal',
          COMPACTOR_TASK_QUEUE: 'agents',
          COMPACTOR_SUMMARIZER_TASK_QUEUE: 'summarizers',
          COMPACTOR_WORKER_MODE: 'activities',
          COMPACTOR_WORKFLOW_BUNDLE: '/app/dist/workflow-bundle.js',
          COMPACTOR_SHUTDOWN_GRACE_TIME: '0s',
          COMPACTOR_SUMMARIZER: 'openai',
          OPENAI_BASE_URL: 'http://localhost:11434/v1',
          OPENAI_API_KEY: 'openai-key',
          COMPACTOR_SUMMARIZER_MODEL: 'qwen2.5:7b',
          COMPACTOR_SUMMARIZER_TIMEOUT: '90s',
          COMPACTOR_CHAT_TIMEOUT: '3m',
          COMPACTOR_MAX_CONCURRENT_ACTIVITIES: '25',
          COMPACTOR_MAX_CONCURRENT_WORKFLOW_TASKS: '8',
          COMPACTOR_CONTEXT_BUDGET: '32000',
          COMPACTOR_TOOLS_ROOT: '/srv/repo',
          COMPACTOR_TOOLS_ALLOW: '.env.example, *.pem,config/dev.key',
          COMPACTOR_TRAJECTORY_DIR: '/srv/trajectories',
          COMPACTOR_PAYLOAD_STORE: 's3://my-bucket/compactor/prod/',
          COMPACTOR_PAYLOAD_THRESHOLD: '4096',
          COMPACTOR_S3_ENDPOINT: 'http://127.0.0.1:9000',
          COMPACTOR_CODEC_KEY: KEY_1,
          COMPACTOR_CODEC_KEY_ID: 'prod-2026',
          COMPACTOR_CODEC_OLD_KEYS: `prod-2025:${KEY_2}`,
          COMPACTOR_CODEC_SERVER_HOST: '0.0.0.0',
          COMPACTOR_CODEC_SERVER_PORT: '9443',
          COMPACTOR_CODEC_SERVER_ORIGINS: 'https://cloud.temporal.io, http://localhost:8080/',
          COMPACTOR_CODEC_SERVER_INLINE_LIMIT: '0',
          COMPACTOR_CODEC_SERVER_TOKEN: 'a-token-of-enough-length',
          COMPACTOR_CODEC_SERVER_ENCODE_STORE: 'true',
          COMPACTOR_TRACING: 'otlp',
          COMPACTOR_PROMETHEUS_ADDRESS: '127.0.0.1:9464',
        },
      });
      expect([...(config.codecKeyring?.byId.keys() ?? [])]).toEqual(['prod-2026', 'prod-2025']);
      expect(config.codecKeyring?.current.id).toBe('prod-2026');
      expect(config).toEqual({
        codecKeyring: config.codecKeyring,
        temporalAddress: 'my-ns.a1b2c.tmprl.cloud:7233',
        temporalNamespace: 'my-ns.a1b2c',
        temporalApiKey: 'temporal-key',
        temporalTls: true,
        temporalCliPath: '/opt/temporal/bin/temporal',
        taskQueue: 'agents',
        summarizerTaskQueue: 'summarizers',
        workerMode: 'activities',
        workflowBundle: '/app/dist/workflow-bundle.js',
        shutdownGraceMs: 0,
        summarizer: 'openai',
        openaiBaseUrl: 'http://localhost:11434/v1',
        openaiApiKey: 'openai-key',
        summarizerModel: 'qwen2.5:7b',
        summarizerTimeoutMs: 90_000,
        chatTimeoutMs: 180_000,
        maxConcurrentActivities: 25,
        maxConcurrentWorkflowTasks: 8,
        contextBudget: 32_000,
        toolsRoot: '/srv/repo',
        toolsAllow: ['.env.example', '*.pem', 'config/dev.key'],
        trajectoryDir: '/srv/trajectories',
        payloadStore: { kind: 's3', bucket: 'my-bucket', prefix: 'compactor/prod' },
        payloadThreshold: 4096,
        s3Endpoint: 'http://127.0.0.1:9000',
        codecServerHost: '0.0.0.0',
        codecServerPort: 9443,
        codecServerOrigins: ['https://cloud.temporal.io', 'http://localhost:8080'],
        codecServerInlineLimit: 0,
        codecServerToken: 'a-token-of-enough-length',
        codecServerEncodeStore: true,
        tracing: 'otlp',
        prometheusAddress: '127.0.0.1:9464',
      });
    });

    it('reads `*` as any origin for the codec server', () => {
      expect(loadConfig({ env: { COMPACTOR_CODEC_SERVER_ORIGINS: '*' } }).codecServerOrigins).toEqual(['*']);
    });

    it('runs summarize activities on the task queue unless a summarizer queue is set', () => {
      expect(loadConfig({ env: { COMPACTOR_TASK_QUEUE: 'agents' } }).summarizerTaskQueue).toBe('agents');
      expect(
        loadConfig({ env: { COMPACTOR_TASK_QUEUE: 'agents', COMPACTOR_SUMMARIZER_TASK_QUEUE: 'llm' } })
          .summarizerTaskQueue,
      ).toBe('llm');
    });

    it.each([
      ['500ms', 500],
      ['2s', 2000],
      ['1.5m', 90_000],
      ['1h', 3_600_000],
      ['45000', 45_000],
      [' 30s ', 30_000],
    ])('reads the summarizer timeout %j as %i ms', (value, milliseconds) => {
      expect(loadConfig({ env: { COMPACTOR_SUMMARIZER_TIMEOUT: value } }).summarizerTimeoutMs).toBe(milliseconds);
    });

    it.each([
      ['true', true],
      ['1', true],
      ['false', false],
      ['0', false],
    ])('reads TEMPORAL_TLS=%s as %s', (value, expected) => {
      expect(loadConfig({ env: { TEMPORAL_TLS: value } }).temporalTls).toBe(expected);
    });

    it.each([
      ['off', { kind: 'off' }],
      ['file:/var/lib/compactor', { kind: 'file', directory: '/var/lib/compactor' }],
      ['file:///var/lib/compactor', { kind: 'file', directory: '/var/lib/compactor' }],
      ['file:store', { kind: 'file', directory: `${process.cwd()}/store` }],
      ['s3://bucket-1', { kind: 's3', bucket: 'bucket-1', prefix: '' }],
      ['s3://my.bucket/a/b', { kind: 's3', bucket: 'my.bucket', prefix: 'a/b' }],
    ])('reads COMPACTOR_PAYLOAD_STORE=%s', (value, expected) => {
      expect(loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: value } }).payloadStore).toEqual(expected);
    });

    it('names a codec key by a hash of it unless COMPACTOR_CODEC_KEY_ID is set', () => {
      const config = loadConfig({ env: { COMPACTOR_CODEC_KEY: KEY_1 } });
      expect(config.codecKeyring?.current.id).toMatch(/^k-[0-9a-f]{8}$/);
      expect(loadConfig({ env: { COMPACTOR_CODEC_KEY: ` ${KEY_1}\n` } }).codecKeyring?.current.id).toBe(
        config.codecKeyring?.current.id,
      );
      expect(loadConfig({ env: { COMPACTOR_CODEC_KEY: KEY_2 } }).codecKeyring?.current.id).not.toBe(
        config.codecKeyring?.current.id,
      );
    });

    it('accepts addresses without a port and IPv6 hosts', () => {
      expect(loadConfig({ env: { TEMPORAL_ADDRESS: 'temporal' } }).temporalAddress).toBe('temporal');
      expect(loadConfig({ env: { TEMPORAL_ADDRESS: '[::1]:7233' } }).temporalAddress).toBe('[::1]:7233');
    });

    it('binds the metrics endpoint to an IPv4 or bracketed IPv6 address with a port', () => {
      expect(loadConfig({ env: { COMPACTOR_PROMETHEUS_ADDRESS: '0.0.0.0:9464' } }).prometheusAddress).toBe(
        '0.0.0.0:9464',
      );
      expect(loadConfig({ env: { COMPACTOR_PROMETHEUS_ADDRESS: '[::1]:9464' } }).prometheusAddress).toBe('[::1]:9464');
      expect(loadConfig({ flags: { tracing: 'console', prometheusAddress: '127.0.0.1:1' } })).toMatchObject({
        tracing: 'console',
        prometheusAddress: '127.0.0.1:1',
      });
    });
  });

  describe('flags', () => {
    it('override the environment', () => {
      const config = loadConfig({
        env: { COMPACTOR_TASK_QUEUE: 'from-env', COMPACTOR_SUMMARIZER_MODEL: 'env-model', TEMPORAL_TLS: 'true' },
        flags: { taskQueue: 'from-flag', maxConcurrentActivities: 7, temporalTls: false, summarizerTimeout: 1500 },
      });
      expect(config.taskQueue).toBe('from-flag');
      expect(config.summarizerModel).toBe('env-model');
      expect(config.maxConcurrentActivities).toBe(7);
      expect(config.temporalTls).toBe(false);
      expect(config.summarizerTimeoutMs).toBe(1500);
    });

    it('leave the environment in force when blank', () => {
      expect(loadConfig({ env: { COMPACTOR_TASK_QUEUE: 'from-env' }, flags: { taskQueue: '' } }).taskQueue).toBe(
        'from-env',
      );
    });

    it('come from node:util parseArgs with the options the schema gives', () => {
      const { values } = parseArgs({
        args: [
          '--task-queue',
          'agents',
          '--max-concurrent-activities',
          '12',
          '--keep-server',
          '--openai-base-url',
          'http://127.0.0.1:8000/v1',
        ],
        options: { ...configParseArgsOptions(), 'keep-server': { type: 'boolean' } },
      });
      const flags = configFlagsFromArgs(values);
      expect(flags).toEqual({
        taskQueue: 'agents',
        maxConcurrentActivities: '12',
        openaiBaseUrl: 'http://127.0.0.1:8000/v1',
      });
      const config = loadConfig({ env: {}, flags });
      expect(config.taskQueue).toBe('agents');
      expect(config.maxConcurrentActivities).toBe(12);
      expect(config.openaiBaseUrl).toBe('http://127.0.0.1:8000/v1');
    });

    it('have no form for secrets: API keys come from the environment only', () => {
      const options = configParseArgsOptions();
      expect(Object.keys(options)).not.toContain('openai-api-key');
      expect(Object.keys(options)).not.toContain('temporal-api-key');
      expect(configFlagsFromArgs({ 'openai-api-key': 'sk-flag', 'temporal-api-key': 'tk-flag' })).toEqual({});
      expect(
        configTable()
          .filter((row) => row.flag === undefined)
          .map((row) => row.env),
      ).toEqual([
        'TEMPORAL_API_KEY',
        'OPENAI_API_KEY',
        'COMPACTOR_CODEC_KEY',
        'COMPACTOR_CODEC_OLD_KEYS',
        'COMPACTOR_CODEC_SERVER_TOKEN',
      ]);
      expect(configFlagsFromArgs({ 'codec-key': KEY_1, 'codec-old-keys': KEY_2 })).toEqual({});
    });
  });

  describe('bad values', () => {
    it.each([
      [
        'COMPACTOR_MAX_CONCURRENT_ACTIVITIES',
        'abc',
        'COMPACTOR_MAX_CONCURRENT_ACTIVITIES: expected a positive integer, got "abc"',
      ],
      [
        'COMPACTOR_MAX_CONCURRENT_ACTIVITIES',
        '0',
        'COMPACTOR_MAX_CONCURRENT_ACTIVITIES: expected a positive integer, got "0"',
      ],
      [
        'COMPACTOR_MAX_CONCURRENT_ACTIVITIES',
        '2.5',
        'COMPACTOR_MAX_CONCURRENT_ACTIVITIES: expected a positive integer, got "2.5"',
      ],
      [
        'COMPACTOR_MAX_CONCURRENT_WORKFLOW_TASKS',
        '1',
        'COMPACTOR_MAX_CONCURRENT_WORKFLOW_TASKS: expected an integer of at least 2, got "1"',
      ],
      [
        'COMPACTOR_MAX_CONCURRENT_WORKFLOW_TASKS',
        '-4',
        'COMPACTOR_MAX_CONCURRENT_WORKFLOW_TASKS: expected an integer of at least 2, got "-4"',
      ],
      [
        'COMPACTOR_CONTEXT_BUDGET',
        '128k',
        'COMPACTOR_CONTEXT_BUDGET: expected a positive integer (tokens), got "128k"',
      ],
      [
        'COMPACTOR_SUMMARIZER_CONTEXT_WINDOW',
        '512',
        'COMPACTOR_SUMMARIZER_CONTEXT_WINDOW: expected an integer of at least 1024 (tokens), got "512"',
      ],
      [
        'COMPACTOR_SUMMARIZER_TIMEOUT',
        '5 minutes',
        'COMPACTOR_SUMMARIZER_TIMEOUT: expected a positive duration such as "60s", "500ms", "2m" or milliseconds, got "5 minutes"',
      ],
      [
        'COMPACTOR_SUMMARIZER_TIMEOUT',
        '0s',
        'COMPACTOR_SUMMARIZER_TIMEOUT: expected a positive duration such as "60s", "500ms", "2m" or milliseconds, got "0s"',
      ],
      [
        'COMPACTOR_TOOLS_ALLOW',
        '/home/me/.ssh/id_rsa',
        'COMPACTOR_TOOLS_ALLOW: expected comma-separated rules of the secret files (e.g. *.pem) or paths relative to the tool root (e.g. config/dev.pem), none absolute, with no "..", got "/home/me/.ssh/id_rsa"',
      ],
      [
        'COMPACTOR_TOOLS_ALLOW',
        '.env,../outside/.env',
        'COMPACTOR_TOOLS_ALLOW: expected comma-separated rules of the secret files (e.g. *.pem) or paths relative to the tool root (e.g. config/dev.pem), none absolute, with no "..", got ".env,../outside/.env"',
      ],
      [
        'COMPACTOR_TOOLS_ALLOW',
        '.env,,*.pem',
        'COMPACTOR_TOOLS_ALLOW: expected comma-separated rules of the secret files (e.g. *.pem) or paths relative to the tool root (e.g. config/dev.pem), none absolute, with no "..", got ".env,,*.pem"',
      ],
      ['TEMPORAL_TLS', 'yes', 'TEMPORAL_TLS: expected true, false, 1 or 0, got "yes"'],
      ['TEMPORAL_TLS', 'TRUE', 'TEMPORAL_TLS: expected true, false, 1 or 0, got "TRUE"'],
      [
        'TEMPORAL_ADDRESS',
        'http://localhost:7233',
        'TEMPORAL_ADDRESS: expected host:port, e.g. localhost:7233, got "http://localhost:7233"',
      ],
      [
        'TEMPORAL_ADDRESS',
        'localhost:port',
        'TEMPORAL_ADDRESS: expected host:port, e.g. localhost:7233, got "localhost:port"',
      ],
      [
        'OPENAI_BASE_URL',
        'localhost:11434/v1',
        'OPENAI_BASE_URL: expected an http(s) URL without user:password@ or query, e.g. http://localhost:11434/v1, got "localhost:11434/v1"',
      ],
      [
        'OPENAI_BASE_URL',
        'ftp://models.example/v1',
        'OPENAI_BASE_URL: expected an http(s) URL without user:password@ or query, e.g. http://localhost:11434/v1, got "ftp://models.example/v1"',
      ],
      ['COMPACTOR_SUMMARIZER', 'gpt', 'COMPACTOR_SUMMARIZER: expected "auto", "openai" or "extractive", got "gpt"'],
      [
        'COMPACTOR_WORKER_MODE',
        'summarizer',
        'COMPACTOR_WORKER_MODE: expected "all", "workflows" or "activities", got "summarizer"',
      ],
      [
        'COMPACTOR_SHUTDOWN_GRACE_TIME',
        'soon',
        'COMPACTOR_SHUTDOWN_GRACE_TIME: expected a duration such as "10s", "500ms", "1m" or milliseconds, got "soon"',
      ],
      [
        'COMPACTOR_PAYLOAD_STORE',
        'on',
        'COMPACTOR_PAYLOAD_STORE: expected "off", "file:DIR" or "s3://BUCKET/PREFIX" (a valid S3 bucket name), got "on"',
      ],
      [
        'COMPACTOR_PAYLOAD_STORE',
        'file:',
        'COMPACTOR_PAYLOAD_STORE: expected "off", "file:DIR" or "s3://BUCKET/PREFIX" (a valid S3 bucket name), got "file:"',
      ],
      [
        'COMPACTOR_PAYLOAD_STORE',
        's3://My_Bucket/x',
        'COMPACTOR_PAYLOAD_STORE: expected "off", "file:DIR" or "s3://BUCKET/PREFIX" (a valid S3 bucket name), got "s3://My_Bucket/x"',
      ],
      [
        'COMPACTOR_PAYLOAD_STORE',
        's3://bucket/../x',
        'COMPACTOR_PAYLOAD_STORE: expected "off", "file:DIR" or "s3://BUCKET/PREFIX" (a valid S3 bucket name), got "s3://bucket/../x"',
      ],
      [
        'COMPACTOR_PAYLOAD_THRESHOLD',
        '1KB',
        'COMPACTOR_PAYLOAD_THRESHOLD: expected a byte count from 0 to 2097152, got "1KB"',
      ],
      [
        'COMPACTOR_PAYLOAD_THRESHOLD',
        '3000000',
        'COMPACTOR_PAYLOAD_THRESHOLD: expected a byte count from 0 to 2097152, got "3000000"',
      ],
      [
        'COMPACTOR_S3_ENDPOINT',
        '127.0.0.1:9000',
        'COMPACTOR_S3_ENDPOINT: expected an http(s) URL without user:password@ or query, e.g. http://127.0.0.1:9000, got "127.0.0.1:9000"',
      ],
      [
        'COMPACTOR_CODEC_KEY_ID',
        'k1',
        'COMPACTOR_CODEC_KEY_ID: expected COMPACTOR_CODEC_KEY to be set as well (a key id names a key), got "k1"',
      ],
      [
        'COMPACTOR_CODEC_SERVER_PORT',
        '70000',
        'COMPACTOR_CODEC_SERVER_PORT: expected a port number from 0 to 65535 (0: any free port), got "70000"',
      ],
      [
        'COMPACTOR_CODEC_SERVER_ORIGINS',
        'http://localhost:8233/ui',
        'COMPACTOR_CODEC_SERVER_ORIGINS: expected comma-separated origins such as http://localhost:8233,https://cloud.temporal.io (scheme, host and port, no path), or *, got "http://localhost:8233/ui"',
      ],
      [
        'COMPACTOR_CODEC_SERVER_ORIGINS',
        'localhost:8233',
        'COMPACTOR_CODEC_SERVER_ORIGINS: expected comma-separated origins such as http://localhost:8233,https://cloud.temporal.io (scheme, host and port, no path), or *, got "localhost:8233"',
      ],
      ['COMPACTOR_TRACING', 'jaeger', 'COMPACTOR_TRACING: expected "off", "otlp" or "console", got "jaeger"'],
      [
        'COMPACTOR_PROMETHEUS_ADDRESS',
        'localhost:9464',
        'COMPACTOR_PROMETHEUS_ADDRESS: expected an IP address and port, e.g. 127.0.0.1:9464, got "localhost:9464"',
      ],
      [
        'COMPACTOR_PROMETHEUS_ADDRESS',
        '127.0.0.1',
        'COMPACTOR_PROMETHEUS_ADDRESS: expected an IP address and port, e.g. 127.0.0.1:9464, got "127.0.0.1"',
      ],
      [
        'COMPACTOR_PROMETHEUS_ADDRESS',
        '127.0.0.1:70000',
        'COMPACTOR_PROMETHEUS_ADDRESS: expected an IP address and port, e.g. 127.0.0.1:9464, got "127.0.0.1:70000"',
      ],
      [
        'COMPACTOR_PROMETHEUS_ADDRESS',
        '300.0.0.1:9464',
        'COMPACTOR_PROMETHEUS_ADDRESS: expected an IP address and port, e.g. 127.0.0.1:9464, got "300.0.0.1:9464"',
      ],
    ])('%s=%j stops start-up with a message naming it', (name, value, message) => {
      const error = configErrorOf({ env: { [name]: value } });
      expect(error.message).toBe(message);
      expect(error.setting).toBe(name);
      expect(error.value).toBe(value);
    });

    it.each([
      [{ COMPACTOR_CODEC_KEY: 'c2hvcnQ=' }, 'COMPACTOR_CODEC_KEY', 'base64 of exactly 32 random bytes'],
      [{ COMPACTOR_CODEC_KEY: 'not base64 at all!' }, 'COMPACTOR_CODEC_KEY', 'base64 of exactly 32 random bytes'],
      [{ COMPACTOR_CODEC_OLD_KEYS: KEY_2 }, 'COMPACTOR_CODEC_OLD_KEYS', 'COMPACTOR_CODEC_KEY to be set as well'],
      [
        { COMPACTOR_CODEC_KEY: KEY_1, COMPACTOR_CODEC_OLD_KEYS: `old:${KEY_2},old:c2hvcnQ=` },
        'COMPACTOR_CODEC_OLD_KEYS',
        'entry 2 is not one',
      ],
      [
        { COMPACTOR_CODEC_KEY: KEY_1, COMPACTOR_CODEC_KEY_ID: 'a', COMPACTOR_CODEC_OLD_KEYS: `a:${KEY_2}` },
        'COMPACTOR_CODEC_OLD_KEYS',
        'reuses the id "a" for another key',
      ],
      [
        { COMPACTOR_CODEC_KEY: KEY_1, COMPACTOR_CODEC_KEY_ID: 'has space' },
        'COMPACTOR_CODEC_KEY_ID',
        '1-64 characters',
      ],
    ])('rejects bad key settings %j naming the setting and never echoing a key', (env, setting, expected) => {
      const error = configErrorOf({ env });
      expect(error.setting).toBe(setting);
      expect(error.message).toContain(expected);
      if (setting !== 'COMPACTOR_CODEC_KEY_ID') expect(error.message).toMatch(/got an invalid value \(not shown\)$/);
      expect(error.message).not.toContain(KEY_2.slice(0, 12));
    });

    it('refuses a short codec server token, or one a URL path would have to escape, without echoing it', () => {
      for (const token of ['short', 'a token with spaces in it', 'slashes/are/path/segments'])
        expect(configErrorOf({ env: { COMPACTOR_CODEC_SERVER_TOKEN: token } }).message).toBe(
          "COMPACTOR_CODEC_SERVER_TOKEN: expected a token of 16 to 256 characters of A-Z, a-z, 0-9, '-', '_', '.' or '~', got an invalid value (not shown)",
        );
    });

    it('names the flag, not the variable, when the flag gave the bad value', () => {
      const error = configErrorOf({
        env: { COMPACTOR_MAX_CONCURRENT_ACTIVITIES: '10' },
        flags: { maxConcurrentActivities: 'lots' },
      });
      expect(error.message).toBe('--max-concurrent-activities: expected a positive integer, got "lots"');
      expect(error.setting).toBe('--max-concurrent-activities');
    });

    it('rejects a flag value of the wrong type', () => {
      expect(configErrorOf({ env: {}, flags: { taskQueue: true } }).message).toBe(
        '--task-queue: expected a task queue name, got true',
      );
      expect(configErrorOf({ env: {}, flags: { contextBudget: -1 } }).message).toBe(
        '--context-budget: expected a positive integer (tokens), got -1',
      );
    });

    it('refuses the OpenAI summarizer when nothing configures it', () => {
      expect(configErrorOf({ env: { COMPACTOR_SUMMARIZER: 'openai' } }).message).toBe(
        'COMPACTOR_SUMMARIZER: expected "auto" or "extractive" when neither OPENAI_API_KEY nor OPENAI_BASE_URL is set, got "openai"',
      );
      expect(configErrorOf({ env: {}, flags: { summarizer: 'openai' } }).setting).toBe('--summarizer');
    });

    it('is an Error named ConfigError', () => {
      const error = configErrorOf({ env: { TEMPORAL_TLS: 'on' } });
      expect(error).toBeInstanceOf(Error);
      expect(error.name).toBe('ConfigError');
      expect(error.expected).toBe('true, false, 1 or 0');
    });
  });
});

describe('summarizerFromConfig', () => {
  let server: FakeOpenAI;

  beforeEach(async () => {
    server = await startFakeOpenAI();
  });

  afterEach(async () => {
    await server.close();
  });

  const request: SummarizeRequest = {
    instruction: 'Summarize.',
    middle: [{ role: 'user', content: 'Please fix src/app.py.' }],
  };

  it('picks the offline extractive summarizer when no model is configured, and says so', async () => {
    const configured = summarizerFromConfig(loadConfig({ env: {} }));
    expect(configured.kind).toBe('extractive');
    expect(configured.describe).toBe(
      'built-in offline extractive summarizer (no model configured; set OPENAI_API_KEY or OPENAI_BASE_URL to use one)',
    );
    const { text } = await configured.summarizer.summarize(request);
    expect(text.startsWith(EXTRACTIVE_SUMMARY_NOTICE)).toBe(true);
    expect(text).toContain('- Please fix src/app.py.');
  });

  it('picks the OpenAI-compatible summarizer when OPENAI_BASE_URL is set, with the configured model', async () => {
    server.script({ kind: 'summary', text: '## Goals\n- fix src/app.py' });
    const config = loadConfig({
      env: {
        OPENAI_BASE_URL: server.baseURL,
        COMPACTOR_SUMMARIZER_MODEL: 'local-model',
        COMPACTOR_SUMMARIZER_TIMEOUT: '5s',
      },
    });
    const configured = summarizerFromConfig(config);
    expect(configured.kind).toBe('openai');
    expect(configured.describe).toBe(
      `OpenAI-compatible summarizer: model local-model at ${server.baseURL}, timeout 5000 ms`,
    );
    const { text } = await configured.summarizer.summarize(request);
    expect(text).toBe('## Goals\n- fix src/app.py');
    const [sent] = await server.waitForRequests(1);
    expect(sent?.body).toMatchObject({
      model: 'local-model',
      messages: [
        { role: 'system', content: 'Summarize.' },
        { role: 'user', content: 'Transcript to summarize (1 messages):\n\n[user]\nPlease fix src/app.py.' },
      ],
    });
    // No key configured: the placeholder key goes out, as local servers expect none.
    expect(sent?.headers.authorization).toBe('Bearer unused');
  });

  it('sends the configured API key', async () => {
    server.script({ kind: 'summary', text: 'ok' });
    const configured = summarizerFromConfig(
      loadConfig({ env: { OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: 'sk-configured' } }),
    );
    await configured.summarizer.summarize(request);
    const [sent] = await server.waitForRequests(1);
    expect(sent?.headers.authorization).toBe('Bearer sk-configured');
  });

  it('picks the OpenAI-compatible summarizer when only OPENAI_API_KEY is set', () => {
    const configured = summarizerFromConfig(loadConfig({ env: { OPENAI_API_KEY: 'sk-test' } }));
    expect(configured.kind).toBe('openai');
    expect(configured.describe).toBe(
      'OpenAI-compatible summarizer: model gpt-4o-mini at https://api.openai.com/v1, timeout 60000 ms',
    );
  });

  it('keeps the extractive summarizer when COMPACTOR_SUMMARIZER=extractive, even with a key', () => {
    const configured = summarizerFromConfig(
      loadConfig({ env: { OPENAI_API_KEY: 'sk-test', COMPACTOR_SUMMARIZER: 'extractive' } }),
    );
    expect(configured.kind).toBe('extractive');
    expect(configured.describe).toBe('built-in offline extractive summarizer (COMPACTOR_SUMMARIZER=extractive)');
  });
});

describe('temporalEnvVars', () => {
  it('carries the configuration, flags included, and passes other variables through', () => {
    const env = {
      TEMPORAL_ADDRESS: 'env-host:7233',
      TEMPORAL_TLS_SERVER_NAME: 'frontend.internal',
      TEMPORAL_API_KEY: '',
      PATH: '/usr/bin',
    };
    const config = loadConfig({ env, flags: { temporalAddress: 'flag-host:7233', temporalTls: 'true' } });
    expect(temporalEnvVars(config, env)).toEqual({
      TEMPORAL_ADDRESS: 'flag-host:7233',
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TLS: 'true',
      TEMPORAL_TLS_SERVER_NAME: 'frontend.internal',
      PATH: '/usr/bin',
    });
  });

  it('drops a blank API key, which envconfig would read as a key and turn TLS on for', () => {
    const env = { TEMPORAL_API_KEY: '', TEMPORAL_ADDRESS: '' };
    expect(temporalEnvVars(loadConfig({ env }), env)).toEqual({ TEMPORAL_NAMESPACE: 'default' });
  });
});

describe('the configuration table of docs/configuration.md', () => {
  const page = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
  const start = '<!-- config-table:start -->';
  const end = '<!-- config-table:end -->';

  it('sits under the page\'s "## Settings" heading between its markers', () => {
    expect(page.split('\n')).toContain('## Settings');
    expect(page.indexOf('## Settings')).toBeLessThan(page.indexOf(start));
    expect(page.indexOf(start)).toBeLessThan(page.indexOf(end));
  });

  it('is the table the schema generates (regenerate it with configTableMarkdown())', () => {
    const section = page.slice(page.indexOf(start) + start.length, page.indexOf(end)).trim();
    expect(section).toBe(configTableMarkdown());
  });

  it('lists every setting exactly once', () => {
    const section = page.slice(page.indexOf(start), page.indexOf(end));
    const rows = configTable();
    expect(rows.length).toBe(38);
    for (const row of rows) {
      const occurrences = section.split('\n').filter((line) => line.startsWith(`| \`${row.env}\` |`));
      expect(occurrences, row.env).toHaveLength(1);
    }
  });
});

describe('loadConfig keys', () => {
  it('has every key of the configuration, unset ones as undefined (regression: zod leaves absent optional keys out)', () => {
    const config = loadConfig({ env: {} });
    expect(Object.keys(config).sort()).toEqual(Object.keys(defaults).sort());
    expect(config).toHaveProperty('openaiApiKey', undefined);
  });
});
