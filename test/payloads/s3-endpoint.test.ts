// An S3 store that cannot be reached says which endpoint (and bucket) it tried: the SDK's own
// words name neither (`connect ECONNREFUSED 127.0.0.1:9`).
import { describe, expect, it } from 'vitest';
import { S3Backend } from '../../src/payloads/s3-backend.js';
import { closedPort } from '../support/closed-port.js';

describe('S3Backend: an endpoint that cannot be reached', () => {
  it('names the endpoint and the bucket, its credentials redacted (regression: it named neither)', async () => {
    const port = await closedPort();
    const backend = new S3Backend({
      bucket: 'runs',
      endpoint: `http://127.0.0.1:${port}/?token=secret-in-url`,
      clientConfig: { maxAttempts: 1, credentials: { accessKeyId: 'a', secretAccessKey: 'b' } },
    });
    const error: unknown = await backend.get('v1/some-object').then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(Error);
    const message = error instanceof Error ? error.message : '';
    expect(message).toMatch(
      new RegExp(`^S3 at http://127\\.0\\.0\\.1:${port}/\\?token=\\[redacted\\] \\(bucket runs\\): .*ECONNREFUSED`),
    );
    expect(message).not.toContain('secret-in-url');
  });
});
