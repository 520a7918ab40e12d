import fc from 'fast-check';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { classifyError, FailureType, retryAfterOf, SummarizerError } from '../../src/core/errors.js';
import type { SummarizeRequest } from '../../src/core/types.js';
import { parseRetryAfter } from '../../src/llm/openai-adapter.js';
import { createOpenAISummarizer, type OpenAISummarizerOptions } from '../../src/summarizers/openai.js';
import { createHold, startFakeOpenAI } from '../support/fake-openai.js';
import type { FakeOpenAI, ScriptedResponse } from '../support/fake-openai.js';

const model = 'summarizer-model';

/** What the compactor sends: a middle whose harness flags and provider fields are not part of the transcript. */
const request: SummarizeRequest = {
  instruction: 'Summarize the transcript.',
  middle: [
    { role: 'user', content: 'The user asked for a refactoring.', depth: 0 },
    { role: 'assistant', content: 'Working on it.', reasoning_content: 'plan first', sticky: false },
  ],
};
const messagesOnTheWire = [
  { role: 'system', content: 'Summarize the transcript.' },
  {
    role: 'user',
    content:
      'Transcript to summarize (2 messages):\n\n[user]\nThe user asked for a refactoring.\n\n[assistant]\nWorking on it.',
  },
];

let server: FakeOpenAI;

beforeEach(async () => {
  server = await startFakeOpenAI();
});

afterEach(async () => {
  vi.unstubAllEnvs();
  await server.close();
});

type ExtraOptions = Omit<Partial<OpenAISummarizerOptions>, 'client' | 'baseURL' | 'apiKey'>;

function summarizer(extra: ExtraOptions = {}) {
  return createOpenAISummarizer({ model, baseURL: server.baseURL, apiKey: 'test-key', ...extra });
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

async function summarizerErrorOf(promise: Promise<unknown>): Promise<SummarizerError> {
  const error = await rejectionOf(promise);
  expect(error).toBeInstanceOf(SummarizerError);
  if (!(error instanceof SummarizerError)) throw error;
  return error;
}

describe('createOpenAISummarizer: success', () => {
  it('sends one chat completion, the instruction and the transcript, no tools, and returns text and usage', async () => {
    server.script({
      kind: 'summary',
      text: 'Goals: refactor.',
      usage: { promptTokens: 120, completionTokens: 8, totalTokens: 128 },
    });

    const response = await summarizer().summarize(request);

    expect(response).toEqual({
      text: 'Goals: refactor.',
      usage: { promptTokens: 120, completionTokens: 8, totalTokens: 128 },
    });
    expect(server.requests).toHaveLength(1);
    const [sent] = server.requests;
    expect(sent?.method).toBe('POST');
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.headers.authorization).toBe('Bearer test-key');
    expect(sent?.body).toEqual({ model, messages: messagesOnTheWire });
    expect(sent?.body).not.toHaveProperty('tools');
    expect(sent?.body).not.toHaveProperty('stream');
    expect(server.unscriptedCount).toBe(0);
  });

  it('leaves the caller’s request untouched', async () => {
    server.script({ kind: 'summary', text: 'ok' });
    const before = structuredClone(request);
    await summarizer().summarize(request);
    expect(request).toEqual(before);
  });

  it('sends maxTokens as max_completion_tokens by default, or as max_tokens, and temperature when given', async () => {
    server.script({ kind: 'summary', text: 'one' }, { kind: 'summary', text: 'two' });

    await summarizer({ maxTokens: 512, temperature: 0 }).summarize(request);
    await summarizer({ maxTokens: 256, maxTokensParameter: 'max_tokens' }).summarize(request);

    expect(server.requests[0]?.body).toEqual({
      model,
      messages: messagesOnTheWire,
      max_completion_tokens: 512,
      temperature: 0,
    });
    expect(server.requests[1]?.body).toEqual({ model, messages: messagesOnTheWire, max_tokens: 256 });
  });

  it('trims the summary and omits usage when the server reports none', async () => {
    server.script({
      kind: 'status',
      status: 200,
      body: { choices: [{ message: { role: 'assistant', content: '\n  Decisions: none.  \n' } }] },
    });
    await expect(summarizer().summarize(request)).resolves.toEqual({ text: 'Decisions: none.' });
  });

  it('joins text content parts', async () => {
    const content = [
      { type: 'text', text: 'Goals: ' },
      { type: 'reasoning', summary: 'ignored' },
      { type: 'text', text: 'ship it.' },
    ];
    server.script({ kind: 'status', status: 200, body: { choices: [{ message: { role: 'assistant', content } }] } });
    await expect(summarizer().summarize(request)).resolves.toEqual({ text: 'Goals: ship it.' });
  });

  it('answers through a dynamic response and a slow one', async () => {
    server.script((request) => ({ kind: 'summary', text: `saw ${JSON.stringify(request.body).length} bytes` }), {
      kind: 'slow',
      delayMs: 50,
      then: { kind: 'summary', text: 'late but fine' },
    });
    const backend = summarizer();
    await expect(backend.summarize(request)).resolves.toMatchObject({
      text: expect.stringMatching(/^saw \d+ bytes$/),
    });
    await expect(backend.summarize(request)).resolves.toMatchObject({ text: 'late but fine' });
  });

  it('answers a held request once it is released', async () => {
    const hold = createHold();
    server.script(hold.response);
    const pending = summarizer().summarize(request);
    await server.waitForRequests(1);
    expect(server.requests[0]?.outcome).toBe('pending');
    hold.release({ kind: 'summary', text: 'released' });
    await expect(pending).resolves.toMatchObject({ text: 'released' });
    expect(server.requests[0]?.outcome).toBe('answered');
  });
});

describe('createOpenAISummarizer: HTTP errors', () => {
  it.each([400, 401, 402, 403, 404])('%i → rejected with that status after exactly one request', async (status) => {
    server.script({ kind: 'status', status });

    const error = await summarizerErrorOf(summarizer().summarize(request));

    expect(error.kind).toBe('rejected');
    expect(error.status).toBe(status);
    expect(error.type).toBe(FailureType.Summarizer.Rejected);
    expect(classifyError(error)).toBe('abort');
    expect(error.cause).toBeInstanceOf(APIError);
    expect(server.requests).toHaveLength(1);
  });

  it.each([408, 409, 422, 429, 500, 502, 503])(
    '%i → transient with that status after exactly one request',
    async (status) => {
      server.script({ kind: 'status', status });

      const error = await summarizerErrorOf(summarizer().summarize(request));

      expect(error.kind).toBe('transient');
      expect(error.status).toBe(status);
      expect(error.type).toBe(FailureType.Summarizer.Transient);
      expect(classifyError(error)).toBe('retry');
      expect(error.retryAfterMs).toBeUndefined();
      expect(server.requests).toHaveLength(1);
    },
  );

  it('reads Retry-After in seconds', async () => {
    server.script({ kind: 'status', status: 429, headers: { 'retry-after': '3' } });
    const error = await summarizerErrorOf(summarizer().summarize(request));
    expect(error).toMatchObject({ kind: 'transient', status: 429, retryAfterMs: 3000 });
    expect(retryAfterOf(error)).toBe(3000);
  });

  it('reads Retry-After as an HTTP date', async () => {
    const retryAt = new Date(Date.now() + 120_000).toUTCString();
    server.script({ kind: 'status', status: 503, headers: { 'retry-after': retryAt } });
    const error = await summarizerErrorOf(summarizer().summarize(request));
    expect(error.kind).toBe('transient');
    // An HTTP date has one-second resolution and some time passes during the request.
    expect(error.retryAfterMs).toBeGreaterThan(100_000);
    expect(error.retryAfterMs).toBeLessThanOrEqual(120_000);
  });

  it('prefers retry-after-ms', async () => {
    server.script({ kind: 'status', status: 429, headers: { 'retry-after-ms': '250', 'retry-after': '3' } });
    const error = await summarizerErrorOf(summarizer().summarize(request));
    expect(error.retryAfterMs).toBe(250);
  });

  it('accepts a plain-text error body', async () => {
    server.script({ kind: 'status', status: 502, body: '<html>Bad Gateway</html>' });
    const error = await summarizerErrorOf(summarizer().summarize(request));
    expect(error).toMatchObject({ kind: 'transient', status: 502 });
  });
});

describe('createOpenAISummarizer: bad 200 responses', () => {
  const emptyAnswers: [string, ScriptedResponse][] = [
    ['empty content', { kind: 'empty' }],
    ['null content', { kind: 'empty', content: null }],
    ['whitespace content', { kind: 'summary', text: ' \n\t ' }],
    ['no choices', { kind: 'status', status: 200, body: { choices: [] } }],
    ['a choice without a message', { kind: 'status', status: 200, body: { choices: [{ finish_reason: 'length' }] } }],
  ];
  it.each(emptyAnswers)('%s → empty', async (_name, response) => {
    server.script(response);
    const error = await summarizerErrorOf(summarizer().summarize(request));
    expect(error.kind).toBe('empty');
    expect(error.status).toBeUndefined();
    expect(error.type).toBe(FailureType.Summarizer.Empty);
    expect(classifyError(error)).toBe('retry');
  });

  it('malformed JSON → transient without status', async () => {
    server.script({ kind: 'malformed' });
    const error = await summarizerErrorOf(summarizer().summarize(request));
    expect(error.kind).toBe('transient');
    expect(error.status).toBeUndefined();
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it.each([
    ['a JSON object that is not a chat completion', { error: { message: 'overloaded' } }],
    ['a text body', 'upstream said no'],
    ['choices that are not an array', { choices: 'none' }],
  ])('%s → transient without status', async (_name, body) => {
    server.script({ kind: 'status', status: 200, body });
    const error = await summarizerErrorOf(summarizer().summarize(request));
    expect(error.kind).toBe('transient');
    expect(error.status).toBeUndefined();
  });
});

describe('createOpenAISummarizer: connections, timeouts, cancellation', () => {
  it('a connection reset → transient without status', async () => {
    server.script({ kind: 'reset' });
    const error = await summarizerErrorOf(summarizer().summarize(request));
    expect(error.kind).toBe('transient');
    expect(error.status).toBeUndefined();
    expect(error.cause).toBeInstanceOf(APIConnectionError);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.outcome).toBe('reset');
  });

  it('a refused connection → transient without status, naming the endpoint and the refusal', async () => {
    const baseURL = server.baseURL;
    await server.close();
    const backend = createOpenAISummarizer({ model, baseURL, apiKey: 'test-key' });
    const error = await summarizerErrorOf(backend.summarize(request));
    expect(error).toMatchObject({ kind: 'transient', status: undefined });
    expect(error.message).toContain(`summarizer: connection to ${baseURL} failed: Connection error.`);
    expect(error.message).toMatch(/ECONNREFUSED/);
  });

  it('a refused connection names the endpoint without its userinfo or query values', async () => {
    const { port } = new URL(server.baseURL);
    await server.close();
    const backend = createOpenAISummarizer({
      model,
      baseURL: `http://me:hunter2@127.0.0.1:${port}/v1?key=abc`,
      apiKey: 'test-key',
    });
    const error = await summarizerErrorOf(backend.summarize(request));
    expect(error.message).toContain(`connection to http://[redacted]@127.0.0.1:${port}/v1?key=[redacted] failed`);
    expect(error.message).not.toMatch(/hunter2|abc/);
  });

  // The server never answers, so only the 1 s timeout can end this test before its 10 s limit (a
  // shorter one can run out before a busy machine has sent the request at all).
  it('a hung request times out → transient without status', { timeout: 10_000 }, async () => {
    server.script({ kind: 'hang' });
    const error = await summarizerErrorOf(summarizer({ timeout: 1_000 }).summarize(request));
    expect(error.kind).toBe('transient');
    expect(error.status).toBeUndefined();
    expect(error.message).toMatch(/timed out|within 1000 ms/);
    expect(server.requests).toHaveLength(1);
    await server.waitUntil(() => server.requests[0]?.outcome === 'aborted', 5000, 'the timed-out request to be closed');
  });

  it('a client connection timeout (APIConnectionTimeoutError) → transient without status', async () => {
    // openai reports a fetch failure whose text says "timed out" as APIConnectionTimeoutError.
    const timingOutFetch = (): Promise<Response> => Promise.reject(new Error('connect timed out'));
    const client = new OpenAI({ apiKey: 'test-key', baseURL: server.baseURL, fetch: timingOutFetch });
    const error = await summarizerErrorOf(createOpenAISummarizer({ model, client }).summarize(request));
    expect(error).toMatchObject({
      kind: 'transient',
      status: undefined,
      message: `summarizer: the request timed out (${server.baseURL})`,
    });
    expect(error.cause).toBeInstanceOf(APIConnectionTimeoutError);
  });

  // Headers arrive, the body never completes: the client's timeout does not cover the body, the deadline does.
  it('a stalled body times out → transient without status', { timeout: 10_000 }, async () => {
    server.script({ kind: 'stalled-body' });
    // 1000 ms, not less: the request must reach the server before the deadline on a busy machine.
    const error = await summarizerErrorOf(summarizer({ timeout: 1000 }).summarize(request));
    expect(error).toMatchObject({
      kind: 'transient',
      status: undefined,
      message: `summarizer: no complete answer within 1000 ms (${server.baseURL})`,
    });
    expect(server.requests).toHaveLength(1);
  });

  it('an abort while the request hangs rejects with the abort reason, not a SummarizerError', async () => {
    server.script({ kind: 'hang' });
    const controller = new AbortController();
    const pending = summarizer().summarize(request, { signal: controller.signal });
    await server.waitForRequests(1);
    const reason = new Error('the caller cancelled');
    controller.abort(reason);

    const error = await rejectionOf(pending);

    expect(error).toBe(reason);
    expect(error).not.toBeInstanceOf(SummarizerError);
    expect(server.requests).toHaveLength(1);
    await server.waitUntil(() => server.requests[0]?.outcome === 'aborted', 5000, 'the aborted request to be closed');
  });

  it('an abort without a reason rejects with the signal’s AbortError', async () => {
    server.script({ kind: 'hang' });
    const controller = new AbortController();
    const pending = summarizer().summarize(request, { signal: controller.signal });
    await server.waitForRequests(1);
    controller.abort();

    const error = await rejectionOf(pending);

    expect(error).toBe(controller.signal.reason);
    expect(error).toMatchObject({ name: 'AbortError' });
  });

  it('an abort during a slow answer wins over the answer', async () => {
    server.script({ kind: 'slow', delayMs: 10_000, then: { kind: 'summary', text: 'too late' } });
    const controller = new AbortController();
    const pending = summarizer().summarize(request, { signal: controller.signal });
    await server.waitForRequests(1);
    controller.abort('stop');
    await expect(pending).rejects.toBe('stop');
  });

  it('an already aborted signal rejects with its reason and sends nothing', async () => {
    server.setDefault({ kind: 'summary', text: 'unused' });
    const reason = new Error('already cancelled');
    await expect(summarizer().summarize(request, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(server.requests).toHaveLength(0);
  });

  it('close() ends a hanging request and the call fails as transient', async () => {
    server.script({ kind: 'hang' });
    const pending = summarizer().summarize(request);
    await server.waitForRequests(1);
    await server.close();
    const error = await summarizerErrorOf(pending);
    expect(error).toMatchObject({ kind: 'transient', status: undefined });
    expect(server.requests[0]?.outcome).toBe('aborted');
  });
});

describe('createOpenAISummarizer: one request per call', () => {
  it('never retries on its own: each call makes exactly one request', async () => {
    server.script(
      { kind: 'status', status: 500, headers: { 'x-should-retry': 'true', 'retry-after-ms': '0' } },
      { kind: 'status', status: 429, headers: { 'retry-after': '0' } },
      { kind: 'reset' },
      { kind: 'summary', text: 'finally' },
    );
    const backend = summarizer();

    await expect(backend.summarize(request)).rejects.toMatchObject({ kind: 'transient', status: 500 });
    expect(server.requests).toHaveLength(1);
    await expect(backend.summarize(request)).rejects.toMatchObject({
      kind: 'transient',
      status: 429,
      retryAfterMs: 0,
    });
    expect(server.requests).toHaveLength(2);
    await expect(backend.summarize(request)).rejects.toMatchObject({ kind: 'transient' });
    expect(server.requests).toHaveLength(3);
    await expect(backend.summarize(request)).resolves.toMatchObject({ text: 'finally' });
    expect(server.requests).toHaveLength(4);
  });

  it('overrides the retries of a client the caller built', async () => {
    server.script(
      { kind: 'status', status: 503, headers: { 'retry-after-ms': '0' } },
      { kind: 'summary', text: 'second' },
    );
    const client = new OpenAI({ apiKey: 'test-key', baseURL: server.baseURL, maxRetries: 5 });
    const backend = createOpenAISummarizer({ model, client });

    await expect(backend.summarize(request)).rejects.toMatchObject({ kind: 'transient', status: 503 });
    expect(server.requests).toHaveLength(1);
  });
});

describe('createOpenAISummarizer: configuration', () => {
  it('uses OPENAI_API_KEY when no apiKey is given', async () => {
    vi.stubEnv('OPENAI_API_KEY', 'key-from-env');
    server.script({ kind: 'summary', text: 'ok' });
    await createOpenAISummarizer({ model, baseURL: server.baseURL }).summarize(request);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer key-from-env');
  });

  it('sends a placeholder key to a local server when no key is configured', async () => {
    vi.stubEnv('OPENAI_API_KEY', '');
    server.script({ kind: 'summary', text: 'ok' });
    await createOpenAISummarizer({ model, baseURL: server.baseURL }).summarize(request);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer unused');
  });

  it('fails at creation without a key or a base URL, naming both settings', () => {
    vi.stubEnv('OPENAI_API_KEY', '');
    vi.stubEnv('OPENAI_ADMIN_KEY', '');
    vi.stubEnv('OPENAI_BASE_URL', '');
    expect(() => createOpenAISummarizer({ model })).toThrow(
      /^no model server configured: set OPENAI_API_KEY .* or OPENAI_BASE_URL .*a local one .* needs no key/,
    );
  });

  it.each([0, -1, 1.5, Number.NaN])('rejects timeout %d', (timeout) => {
    expect(() => summarizer({ timeout })).toThrow(RangeError);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');

  it('reads delta-seconds, including fractions', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after': '3' }))).toBe(3000);
    expect(parseRetryAfter(new Headers({ 'retry-after': '0' }))).toBe(0);
    expect(parseRetryAfter(new Headers({ 'retry-after': ' 1.5 ' }))).toBe(1500);
  });

  it('reads an HTTP date relative to now, and a past date as 0', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:07 GMT' }), now)).toBe(7000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Wednesday, 01-Jan-25 00:00:09 GMT' }), now)).toBe(9000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Tue, 31 Dec 2024 23:59:00 GMT' }), now)).toBe(0);
  });

  it('prefers retry-after-ms and rounds it up to whole milliseconds', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '250.2', 'retry-after': '3' }))).toBe(251);
  });

  it('falls back to retry-after when retry-after-ms is unusable', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': 'soon', 'retry-after': '2' }))).toBe(2000);
  });

  it('reads plain records case-insensitively, and arrays by their first value', () => {
    expect(parseRetryAfter({ 'Retry-After': '4' })).toBe(4000);
    expect(parseRetryAfter({ 'retry-after': ['5', '6'] })).toBe(5000);
    expect(parseRetryAfter({ 'RETRY-AFTER-MS': '12' })).toBe(12);
  });

  it.each([['-1'], ['3s'], ['0x10'], ['soon'], [''], ['1e3'], ['Infinity'], ['2025-01-01T00:00:07Z'], ['Mon']])(
    'ignores %j',
    (value) => {
      expect(parseRetryAfter(new Headers({ 'retry-after': value }), now)).toBeUndefined();
    },
  );

  it('returns undefined without headers or without a hint', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter(new Headers())).toBeUndefined();
    expect(parseRetryAfter({ 'content-type': 'application/json' })).toBeUndefined();
  });

  it('turns any whole number of seconds into that many thousand milliseconds', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), (seconds) => {
        expect(parseRetryAfter(new Headers({ 'retry-after': String(seconds) }))).toBe(seconds * 1000);
      }),
    );
  });

  it('never returns a negative or non-finite value', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (retryAfter, retryAfterMs) => {
        const headers: Record<string, string> = { 'retry-after': retryAfter, 'retry-after-ms': retryAfterMs };
        const parsed = parseRetryAfter(headers, now);
        if (parsed !== undefined) {
          expect(Number.isFinite(parsed)).toBe(true);
          expect(parsed).toBeGreaterThanOrEqual(0);
        }
      }),
    );
  });
});

describe('openai 6.49 facts this module relies on', () => {
  it('APIError.headers is a Headers object', async () => {
    server.script({ kind: 'status', status: 429, headers: { 'retry-after': '3' } });
    const client = new OpenAI({ apiKey: 'test-key', baseURL: server.baseURL, maxRetries: 0 });
    const error = await rejectionOf(
      client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(error).toBeInstanceOf(APIError);
    if (!(error instanceof APIError)) throw error;
    expect(error.headers).toBeInstanceOf(Headers);
    expect(error.status).toBe(429);
  });

  it('a client timeout is an APIConnectionTimeoutError, a subclass of APIConnectionError', () => {
    expect(new APIConnectionTimeoutError()).toBeInstanceOf(APIConnectionError);
  });
});
