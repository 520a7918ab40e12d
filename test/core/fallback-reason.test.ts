// A compaction that ends in the hard trim says why on its result (`fallbackReason`), so the caller
// of `compact` learns of a summarizer outage without reading a worker's log.
import { describe, expect, it } from 'vitest';
import { Compactor, createOpenAISummarizer, type ChatMessage, type Summarizer } from '../../src/index.js';
import { charCounter, httpError, scriptedSummarizer, system, toolRounds, user } from '../support/messages.js';
import { closedPort } from '../support/closed-port.js';

const messages: ChatMessage[] = [system('You are a coding agent.'), user('Fix the bug.'), ...toolRounds(12, 400)];
const tokens = charCounter.count(messages);

function compactor(summarizer: Summarizer, extra: Partial<ConstructorParameters<typeof Compactor>[0]> = {}) {
  return new Compactor({
    summarizer,
    counter: charCounter,
    contextBudget: Math.floor(tokens / 2),
    maxAttempts: 2,
    retryBackoff: 0,
    ...extra,
  });
}

describe('fallbackReason', () => {
  it('is absent when a summary answered', async () => {
    const result = await compactor(scriptedSummarizer('short summary')).compact(messages);
    expect(result.fallback).toBe(false);
    expect(result).not.toHaveProperty('fallbackReason');
  });

  it('summarizer-failed, with the last error, when every attempt failed', async () => {
    const result = await compactor(scriptedSummarizer(httpError(503))).compact(messages);
    expect(result.fallback).toBe(true);
    expect(result.fallbackReason).toEqual({
      cause: 'summarizer-failed',
      message: 'the summarizer failed the summary request (every attempt): HTTP 503',
    });
  });

  it('summarizer-failed, refused and not retried, for a 401', async () => {
    const summarizer = scriptedSummarizer(httpError(401));
    const result = await compactor(summarizer).compact(messages);
    expect(summarizer.requests).toHaveLength(1);
    expect(result.fallbackReason).toEqual({
      cause: 'summarizer-failed',
      message: 'the summarizer failed the summary request (refused, not retried): HTTP 401',
    });
  });

  it('summary-too-long when neither the summary nor its tighter retry made the conversation smaller', async () => {
    const long = 'x'.repeat(tokens * 2);
    const result = await compactor(scriptedSummarizer(long, long)).compact(messages);
    expect(result.fallback).toBe(true);
    expect(result.fallbackReason?.cause).toBe('summary-too-long');
  });

  it('cancelled when the caller cancelled the summary', async () => {
    const controller = new AbortController();
    const summarizer = scriptedSummarizer(async (_request, signal) => {
      controller.abort();
      return await new Promise<string>((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason)));
    });
    const result = await compactor(summarizer).compact(messages, { signal: controller.signal });
    expect(result.fallbackReason).toEqual({ cause: 'cancelled', message: 'the summary request was cancelled' });
  });

  it('over-summarizer-window when the middle cannot be cut to the summarizer window', async () => {
    const summarizer = scriptedSummarizer('short');
    const result = await compactor(summarizer, {
      summarizerContextWindow: 1024,
      summaryInstructions: 'Keep every file name. '.repeat(100),
    }).compact(messages);
    expect(summarizer.requests).toHaveLength(0);
    expect(result.fallbackReason?.cause).toBe('over-summarizer-window');
  });

  it('names the endpoint of a summarizer server that is down (regression: only a worker log said why)', async () => {
    const baseURL = `http://127.0.0.1:${await closedPort()}/v1`;
    const summarizer = createOpenAISummarizer({ model: 'gpt-4o-mini', baseURL, apiKey: 'sk-test' });
    const result = await compactor(summarizer).compact(messages);
    expect(result.fallback).toBe(true);
    expect(result.fallbackReason?.cause).toBe('summarizer-failed');
    expect(result.fallbackReason?.message).toContain(
      `(every attempt): summarizer: connection to ${baseURL} failed: Connection error. (connect ECONNREFUSED`,
    );
  });
});
