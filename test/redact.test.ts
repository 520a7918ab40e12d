// Secrets taken out of failures and of what is printed (src/redact.ts): the values of every secret
// setting of the configuration and of the secrets the libraries we configure read, and the userinfo
// and query values of URLs. The end-to-end check with a worker process and an echoing provider is
// test/e2e/secrets.test.ts.
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { configTable, LIBRARY_SECRET_VARIABLES, loadConfig, secretVariables, workerSecrets } from '../src/config.js';
import { REDACTED, redactFailure, redactText, redactUrls } from '../src/redact.js';
import { createTracing } from '../src/telemetry/tracing.js';
import { summarizerFromConfig } from '../src/worker/summarizer-from-config.js';

/** One canary per secret variable, each long enough to count as a secret. */
const CANARY_ENV: Record<string, string> = {
  OPENAI_API_KEY: 'sk-canary-openai-1111',
  TEMPORAL_API_KEY: 'canary-temporal-2222',
  COMPACTOR_CODEC_KEY: Buffer.alloc(32, 7).toString('base64'),
  COMPACTOR_CODEC_OLD_KEYS: `old-1:${Buffer.alloc(32, 8).toString('base64')},${Buffer.alloc(32, 9).toString('base64')}`,
  COMPACTOR_CODEC_SERVER_TOKEN: 'canary-codec-token-3333',
  AWS_SECRET_ACCESS_KEY: 'canary-aws-secret-4444',
  AWS_SESSION_TOKEN: 'canary-aws-session-5555',
  OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer canary-otel-6666,x-team=compactor',
};

/** The canaries as they could appear in a message: whole values, and each old key and header value alone. */
const CANARIES = [
  'sk-canary-openai-1111',
  'canary-temporal-2222',
  Buffer.alloc(32, 7).toString('base64'),
  Buffer.alloc(32, 8).toString('base64'),
  Buffer.alloc(32, 9).toString('base64'),
  'canary-codec-token-3333',
  'canary-aws-secret-4444',
  'canary-aws-session-5555',
  'Bearer canary-otel-6666',
];

describe('redact', () => {
  it('finds the secrets in the environment and the extra keys, ignoring placeholders shorter than 8 characters', () => {
    expect(
      workerSecrets(['sk-client-key-123', 'unused', null, undefined], {
        OPENAI_API_KEY: ' sk-env-key-456 ',
        TEMPORAL_API_KEY: '',
        PATH: '/bin',
      }),
    ).toEqual(['sk-env-key-456', 'sk-client-key-123']);
  });

  it('replaces every occurrence', () => {
    expect(redactText('a sk-1234567890 b sk-1234567890', ['sk-1234567890'])).toBe(`a ${REDACTED} b ${REDACTED}`);
  });

  it('cleans the message and stack of a failure and of its causes, keeping its type and retry hints', () => {
    const cause = new Error('401 Incorrect API key provided: sk-1234567890.');
    const failure = ApplicationFailure.create({
      type: 'Chat.Rejected',
      message: 'chat: HTTP 401 Incorrect API key provided: sk-1234567890.',
      nonRetryable: true,
      cause,
      nextRetryDelay: 500,
    });
    expect(redactFailure(failure, ['sk-1234567890'])).toBe(failure);
    expect([failure.type, failure.nonRetryable, failure.nextRetryDelay]).toEqual(['Chat.Rejected', true, 500]);
    expect(failure.message).toBe(`chat: HTTP 401 Incorrect API key provided: ${REDACTED}.`);
    expect(cause.message).toBe(`401 Incorrect API key provided: ${REDACTED}.`);
    expect(`${failure.stack}\n${cause.stack}`).not.toContain('sk-1234567890');
  });

  describe('every secret the configuration knows', () => {
    it("is marked once: every environment-only setting of the table is a secret variable, and so are the libraries' secrets", () => {
      const envOnly = configTable()
        .filter((row) => row.flag === undefined)
        .map((row) => row.env);
      expect(envOnly.length).toBeGreaterThanOrEqual(5);
      expect(secretVariables()).toEqual([...envOnly, ...LIBRARY_SECRET_VARIABLES]);
      expect(secretVariables()).toEqual(expect.arrayContaining(Object.keys(CANARY_ENV)));
    });

    it('is taken out of a failure that quotes it: keys, old keys, tokens, AWS and OpenTelemetry secrets', () => {
      const failure = ApplicationFailure.create({
        type: 'Chat.Transient',
        message: `the proxy echoed its environment: ${CANARIES.join(' ')}`,
        cause: new Error(`and again: ${CANARIES.join(';')}`),
      });
      redactFailure(failure, workerSecrets([], CANARY_ENV));
      const texts = [failure.message, failure.stack ?? '', String(failure.cause?.message), failure.cause?.stack ?? ''];
      expect(CANARIES.filter((canary) => texts.some((text) => text.includes(canary)))).toEqual([]);
      expect(failure.message).toContain(REDACTED);
    });
  });

  describe('URLs', () => {
    it('lose their userinfo and query values, in a URL alone and within text', () => {
      expect(redactUrls('https://alice:pw-canary-77@proxy.example:8443/v1?api-key=q-canary-88&mode=fast')).toBe(
        `https://${REDACTED}@proxy.example:8443/v1?api-key=${REDACTED}&mode=${REDACTED}`,
      );
      expect(redactUrls('fetch http://tok-canary-99@127.0.0.1:9/v1 failed; see https://docs.example/x?id=1.')).toBe(
        `fetch http://${REDACTED}@127.0.0.1:9/v1 failed; see https://docs.example/x?id=${REDACTED}`,
      );
      expect(redactUrls('http://localhost:11434/v1 and s3://bucket/prefix')).toBe(
        'http://localhost:11434/v1 and s3://bucket/prefix',
      );
    });

    it('in a failure, even with no secret configured', () => {
      const failure = new Error(
        'Request cannot be constructed from a URL that includes credentials: http://u:pw-canary-77@h/v1',
      );
      expect(redactFailure(failure, []).message).toBe(
        `Request cannot be constructed from a URL that includes credentials: http://${REDACTED}@h/v1`,
      );
    });

    it("the summarizer line of the worker's start-up names its server without them", () => {
      const config = {
        ...loadConfig({ env: {} }),
        openaiBaseUrl: 'https://alice:pw-canary-77@proxy.example/v1?key=q-canary-88',
      };
      const { describe: line } = summarizerFromConfig(config);
      expect(line).toBe(
        `OpenAI-compatible summarizer: model gpt-4o-mini at https://${REDACTED}@proxy.example/v1?key=${REDACTED}, timeout 60000 ms`,
      );
    });

    it('the tracing line names the OTLP endpoint without them', () => {
      const tracing = createTracing('otlp', {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://ingest:pw-canary-77@127.0.0.1:4318/v1/traces?token=q-canary-88',
      });
      expect(tracing?.describe).toBe(`OTLP/HTTP to http://${REDACTED}@127.0.0.1:4318/v1/traces?token=${REDACTED}`);
    });

    it('a URL setting with userinfo or a query is refused (fetch cannot send either), the message without them', () => {
      for (const [variable, value] of [
        ['OPENAI_BASE_URL', 'https://alice:pw-canary-77@proxy.example/v1'],
        ['OPENAI_BASE_URL', 'https://proxy.example/v1?api-key=q-canary-88'],
        ['COMPACTOR_S3_ENDPOINT', 'http://minio:pw-canary-77@127.0.0.1:9000'],
      ] as const) {
        let message = '';
        try {
          loadConfig({ env: { [variable]: value } });
        } catch (error) {
          message = error instanceof Error ? error.message : String(error);
        }
        expect(message).toMatch(
          new RegExp(`^${variable}: expected an http\\(s\\) URL without user:password@ or query`),
        );
        expect(message).not.toMatch(/canary/);
      }
    });
  });
});
