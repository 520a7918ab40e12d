// The in-process driver over real sockets: Compactor + createOpenAISummarizer + the fake OpenAI server.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Compactor, createOpenAISummarizer } from '../src/index.js';
import { startFakeOpenAI, type FakeOpenAI } from './support/fake-openai.js';
import { charCounter, toolRounds } from './support/messages.js';

let server: FakeOpenAI;
beforeEach(async () => {
  server = await startFakeOpenAI();
});
afterEach(async () => {
  await server.close();
});

const messages = toolRounds(8, 200);

function compactor(
  options: { maxAttempts?: number; retryBackoff?: number | string; timeout?: number } = {},
): Compactor {
  const { timeout = 5000, ...rest } = options;
  return new Compactor({
    summarizer: createOpenAISummarizer({
      model: 'summarizer-test',
      baseURL: server.baseURL,
      apiKey: 'test-key',
      timeout,
    }),
    counter: charCounter,
    contextBudget: 1000,
    keepRecent: 2,
    retryBackoff: 1,
    ...rest,
  });
}

describe('Compactor with the OpenAI summarizer', () => {
  it('summarizes with one request carrying the fixed instruction and the transcript', async () => {
    server.script({ kind: 'summary', text: '## Goals\nfix app.py' });
    const result = await compactor().compact(messages);
    expect(result.summary).toContain('## Goals\nfix app.py');
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.body).toMatchObject({
      model: 'summarizer-test',
      messages: [{ role: 'system' }, { role: 'user' }],
    });
  });

  it('retries a 500 and a connection reset, then accepts the summary', async () => {
    server.script({ kind: 'status', status: 500 }, { kind: 'reset' }, { kind: 'summary', text: 'third time' });
    const result = await compactor({ maxAttempts: 3 }).compact(messages);
    expect(server.requests).toHaveLength(3);
    expect(result).toMatchObject({ fallback: false });
    expect(result.summary).toContain('third time');
  });

  it.each([400, 401, 402, 403, 404])('HTTP %i: exactly one request, then the hard trim', async (status) => {
    server.setDefault({ kind: 'status', status });
    const result = await compactor({ maxAttempts: 3 }).compact(messages);
    expect(server.requests).toHaveLength(1);
    expect(result).toMatchObject({ fallback: true, summary: null });
  });

  it('honours Retry-After on a 429 (the backoff is an hour; the hint is 1 s)', async () => {
    server.script(
      { kind: 'status', status: 429, headers: { 'retry-after': '1' } },
      { kind: 'summary', text: 'after the hint' },
    );
    const started = Date.now();
    const result = await compactor({ retryBackoff: '1h' }).compact(messages);
    expect(result.summary).toContain('after the hint');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('an empty body and malformed JSON are retried, and all attempts failing ends in the hard trim', async () => {
    server.script({ kind: 'empty' }, { kind: 'malformed' }, { kind: 'empty' });
    const result = await compactor({ maxAttempts: 3 }).compact(messages);
    expect(server.requests).toHaveLength(3);
    expect(result).toMatchObject({ fallback: true, summary: null });
  });

  it('a request that times out is not sent again as it is: what it held goes in pieces of at most half its size', async () => {
    server.script({ kind: 'hang' });
    server.setDefault({ kind: 'summary', text: '## Goals\nsmaller tries' });
    const result = await compactor({ timeout: 200, maxAttempts: 3 }).compact(messages);
    const [late, ...rest] = server.requests.map((request) => JSON.stringify(request.body).length);
    expect(rest.length).toBeGreaterThanOrEqual(2);
    for (const size of rest) expect(size).toBeLessThan(late ?? 0);
    expect(result).toMatchObject({ fallback: false, summaryPieces: rest.length });
    expect(result.summary).toContain('smaller tries');
  });

  it('aborting while the request hangs closes the request and resolves with the hard trim', async () => {
    server.script({ kind: 'hang' });
    const controller = new AbortController();
    const running = compactor().compact(messages, { signal: controller.signal });
    await server.waitForRequests(1);
    controller.abort();
    const result = await running;
    expect(result).toMatchObject({ fallback: true });
    await server.waitUntil(() => server.requests[0]?.outcome === 'aborted', 5000, 'the request to be aborted');
  });
});
