// The worker's API keys taken out of failures (src/redact.ts); the end-to-end check with a worker
// process and an echoing provider is test/e2e/secrets.test.ts.
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { REDACTED, redactFailure, redactText, workerSecrets } from '../src/redact.js';

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
});
