// The in-process driver over real sockets: Compactor + createOpenAISummarizer + the fake OpenAI server.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Compactor, createOpenAISummarizer, REFERENCE_EXACT } from '../../src/index.js';
import { loadConfig } from '../../src/config.js';
import { summarizerFromConfig } from '../../src/worker/summarizer-from-config.js';
import { MAX_SUMMARY_TOKENS, MIN_SUMMARY_TOKENS } from '../../src/core/compaction/calibration.js';
import { startFakeOpenAI, type FakeOpenAI, type ScriptedResponse } from '../support/fake-openai.js';
import { charCounter, toolRounds } from '../support/messages.js';

let server: FakeOpenAI;
beforeEach(async () => {
  server = await startFakeOpenAI();
});
afterEach(async () => {
  await server.close();
});

const messages = toolRounds(8, 200);

function compactor(
  options: { maxAttempts?: number; retryBackoff?: number | string; timeout?: number; contextBudget?: number } = {},
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

  describe('max tokens (docs/design.md#summary-length)', () => {
    const lengthCut = (text: string): ScriptedResponse => ({
      kind: 'status',
      status: 200,
      body: {
        id: 'c',
        object: 'chat.completion',
        created: 0,
        model: 'summarizer-test',
        choices: [{ index: 0, finish_reason: 'length', message: { role: 'assistant', content: text } }],
        usage: { prompt_tokens: 300, completion_tokens: 50, total_tokens: 350 },
      },
    });

    it("each request carries max tokens derived from the summary's room; an answer cut at it is kept as written", async () => {
      server.script(lengthCut('## Goals\nfix app.py\n## Decisions\nread f0.py and'));
      const result = await compactor().compact(messages);
      const body = server.requests[0]?.body;
      const sent: unknown =
        typeof body === 'object' && body !== null ? Reflect.get(body, 'max_completion_tokens') : undefined;
      expect(sent).toBeGreaterThanOrEqual(MIN_SUMMARY_TOKENS);
      expect(sent).toBeLessThanOrEqual(MAX_SUMMARY_TOKENS);
      // The budget is 1,000 tokens (characters, with this counter): the summary has a few hundred of them.
      expect(sent).toBeLessThan(1000);
      expect(result).toMatchObject({ fallback: false });
      expect(result.summary).toContain('read f0.py and');
      // A larger budget leaves the summary more room: more max tokens, up to the ceiling.
      server.script({ kind: 'summary', text: '## Goals\nfix app.py' });
      await compactor({ contextBudget: 200_000 }).compact(toolRounds(300, 2000));
      const roomy = server.requests[1]?.body;
      expect(
        typeof roomy === 'object' && roomy !== null ? Reflect.get(roomy, 'max_completion_tokens') : undefined,
      ).toBe(MAX_SUMMARY_TOKENS);
    });

    it("the summarizer's maxTokens overrides what the request derived", async () => {
      server.script({ kind: 'summary', text: '## Goals\nfix app.py' });
      const summarizer = createOpenAISummarizer({
        model: 'summarizer-test',
        baseURL: server.baseURL,
        apiKey: 'test-key',
        maxTokens: 77,
        maxTokensParameter: 'max_tokens',
      });
      await new Compactor({ summarizer, counter: charCounter, contextBudget: 1000, keepRecent: 2 }).compact(messages);
      expect(server.requests[0]?.body).toMatchObject({ max_tokens: 77 });
    });

    it('COMPACTOR_SUMMARIZER_MAX_TOKENS overrides it for the configured summarizer', async () => {
      server.script({ kind: 'summary', text: '## Goals\nfix app.py' });
      const config = loadConfig({
        env: { OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: 'k', COMPACTOR_SUMMARIZER_MAX_TOKENS: '99' },
      });
      const { summarizer } = summarizerFromConfig(config);
      await new Compactor({ summarizer, counter: charCounter, contextBudget: 1000, keepRecent: 2 }).compact(messages);
      expect(server.requests[0]?.body).toMatchObject({ max_completion_tokens: 99 });
    });

    it('REFERENCE_EXACT sends no limit: the reference tightens with words only', async () => {
      server.script({ kind: 'summary', text: '## Goals\nfix app.py' });
      const summarizer = createOpenAISummarizer({ model: 'summarizer-test', baseURL: server.baseURL, apiKey: 'k' });
      await new Compactor({
        summarizer,
        counter: charCounter,
        contextBudget: 1000,
        keepRecent: 2,
        ...REFERENCE_EXACT,
      }).compact(messages);
      expect(server.requests[0]?.body).not.toHaveProperty('max_completion_tokens');
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
