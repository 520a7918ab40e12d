// The summarize activity under MockActivityEnvironment: failure mapping, cancellation, heartbeats.
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createOpenAISummarizer,
  FailureType,
  SummarizerError,
  type SummarizeRequest,
  type Summarizer,
} from '../../src/index.js';
import { createActivities } from '../../src/activities/index.js';
import { requestFor, SUMMARY_INSTRUCTION, summarizerMessages } from '../../src/core/compaction/transcript.js';
import { summarizeRequest } from '../support/summarize-request.js';
import { inputRoom } from '../../src/core/compaction/pieces.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage } from '../../src/core/types.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';

const request: SummarizeRequest = {
  instruction: 'Summarize.',
  middle: [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'hello' },
  ],
};

/** Runs the activity and returns what it threw (failing the test if it resolved). */
async function failureOf(env: MockActivityEnvironment, summarizer: Summarizer): Promise<unknown> {
  const { summarize } = createActivities({ summarizer });
  try {
    const output = await env.run(summarize, request);
    throw new Error(`expected a failure, got ${JSON.stringify(output)}`);
  } catch (error) {
    return error;
  }
}

function expectApplicationFailure(error: unknown, type: string, nonRetryable: boolean): ApplicationFailure {
  expect(error).toBeInstanceOf(ApplicationFailure);
  if (!(error instanceof ApplicationFailure)) throw error;
  expect(error.type).toBe(type);
  expect(error.nonRetryable).toBe(nonRetryable);
  return error;
}

const fails = (error: unknown): Summarizer => ({ summarize: () => Promise.reject(error) });
const answers = (text: string): Summarizer => ({ summarize: () => Promise.resolve({ text }) });

describe('summarize activity input: the request', () => {
  const middle: ChatMessage[] = [
    { role: 'user', content: 'Fix app.py' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }],
    },
    { role: 'tool', tool_call_id: 'c1', content: 'app.py' },
  ];
  /** A summarizer that records what it was asked. */
  function recording(): { summarizer: Summarizer; seen: SummarizeRequest[] } {
    const seen: SummarizeRequest[] = [];
    return { seen, summarizer: { summarize: (asked) => (seen.push(asked), Promise.resolve({ text: 'ok' })) } };
  }

  it('hands the summarizer the request the engine built, as it was sent', async () => {
    const { summarizer, seen } = recording();
    const { summarize } = createActivities({ summarizer });
    const sent = summarizeRequest(middle, 2000, undefined, { summaryInstructions: 'Keep app.py.' });
    await expect(new MockActivityEnvironment().run(summarize, sent)).resolves.toEqual({ text: 'ok' });
    expect(seen).toEqual([sent]);
    expect(seen[0]?.instruction.startsWith(SUMMARY_INSTRUCTION)).toBe(true);
  });

  it.each([
    [{}, 'instruction'],
    [{ instruction: 7, middle }, 'instruction'],
    [{ instruction: 'Summarize.' }, 'middle'],
    [{ instruction: 'Summarize.', middle: [{ role: 'robot', content: 'x' }] }, 'role'],
    [{ instruction: 'Summarize.', middle, instructions: 3 }, 'instructions'],
    [{ instruction: 'Summarize.', middle, task: ['Fix it.'] }, 'task'],
    [{ request: { instruction: 'Summarize.', middle } }, 'input.request: unknown field'],
    [[], 'input'],
  ])('refuses %j naming %s, without calling the summarizer', async (input, named) => {
    const { summarizer, seen } = recording();
    const { summarize } = createActivities({ summarizer });
    const failure = expectApplicationFailure(
      await new MockActivityEnvironment().run(summarize, input as SummarizeRequest).catch((error: unknown) => error),
      'Compaction.InvalidInput',
      true,
    );
    expect(failure.message).toContain(named);
    expect(seen).toEqual([]);
  });
});

describe('summarize activity', () => {
  describe('with the OpenAI summarizer against the fake server', () => {
    let server: FakeOpenAI;
    let summarizer: Summarizer;
    beforeEach(async () => {
      server = await startFakeOpenAI();
      summarizer = createOpenAISummarizer({
        model: 'fake-summarizer',
        baseURL: server.baseURL,
        apiKey: 'test-key',
        timeout: 5000,
      });
    });
    afterEach(() => server.close());

    it('returns the summary text and the billed usage', async () => {
      server.script({
        kind: 'summary',
        text: '## Goals\nShip it.',
        usage: { promptTokens: 120, completionTokens: 7, totalTokens: 127 },
      });
      const { summarize } = createActivities({ summarizer });
      const output = await new MockActivityEnvironment().run(summarize, request);
      expect(output).toEqual({
        text: '## Goals\nShip it.',
        usage: { promptTokens: 120, completionTokens: 7, totalTokens: 127 },
      });
      expect(server.requests).toHaveLength(1);
    });

    it.each([400, 401, 402, 403, 404])(
      'HTTP %i → non-retryable Summarizer.Rejected carrying the status',
      async (status) => {
        server.script({ kind: 'status', status });
        const failure = expectApplicationFailure(
          await failureOf(new MockActivityEnvironment(), summarizer),
          FailureType.Summarizer.Rejected,
          true,
        );
        expect(failure.details).toEqual([{ status }]);
      },
    );

    it.each([408, 409, 422, 500, 502, 503])('HTTP %i → retryable Summarizer.Transient', async (status) => {
      server.script({ kind: 'status', status });
      const failure = expectApplicationFailure(
        await failureOf(new MockActivityEnvironment(), summarizer),
        FailureType.Summarizer.Transient,
        false,
      );
      expect(failure.nextRetryDelay).toBeUndefined();
    });

    it('429 with Retry-After → Summarizer.Transient with nextRetryDelay from the header', async () => {
      server.script({ kind: 'status', status: 429, headers: { 'retry-after': '3' } });
      const failure = expectApplicationFailure(
        await failureOf(new MockActivityEnvironment(), summarizer),
        FailureType.Summarizer.Transient,
        false,
      );
      expect(failure.nextRetryDelay).toBe(3000);
      expect(failure.details).toEqual([{ status: 429, retryAfterMs: 3000 }]);
    });

    it('an empty completion → retryable Summarizer.Empty', async () => {
      server.script({ kind: 'empty' });
      expectApplicationFailure(
        await failureOf(new MockActivityEnvironment(), summarizer),
        FailureType.Summarizer.Empty,
        false,
      );
    });

    it('a malformed body or a reset connection → retryable Summarizer.Transient', async () => {
      server.script({ kind: 'malformed' }, { kind: 'reset' });
      expectApplicationFailure(
        await failureOf(new MockActivityEnvironment(), summarizer),
        FailureType.Summarizer.Transient,
        false,
      );
      expectApplicationFailure(
        await failureOf(new MockActivityEnvironment(), summarizer),
        FailureType.Summarizer.Transient,
        false,
      );
    });

    it("cancelled while the request hangs: aborts the request and rethrows the activity's CancelledFailure, not openai's abort error", async () => {
      server.script({ kind: 'hang' });
      const env = new MockActivityEnvironment();
      const { summarize } = createActivities({ summarizer });
      const running = env.run(summarize, request);
      await server.waitForRequests(1);
      env.cancel();
      const error = await running.then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(CancelledFailure);
      expect(error).toBe(env.context.cancellationSignal.reason);
      await server.waitUntil(() => server.requests[0]?.outcome === 'aborted', 2000, 'the request to be aborted');
    });
  });

  describe('with any summarizer', () => {
    it('a blank summary is Summarizer.Empty, never accepted', async () => {
      expectApplicationFailure(
        await failureOf(new MockActivityEnvironment(), answers(' \n\t ')),
        FailureType.Summarizer.Empty,
        false,
      );
    });

    it('classifies plain errors by their numeric status: 401 rejects, none retries', async () => {
      const rejected = Object.assign(new Error('unauthorized'), { status: 401 });
      expectApplicationFailure(
        await failureOf(new MockActivityEnvironment(), fails(rejected)),
        FailureType.Summarizer.Rejected,
        true,
      );
      expectApplicationFailure(
        await failureOf(new MockActivityEnvironment(), fails(new Error('socket hang up'))),
        FailureType.Summarizer.Transient,
        false,
      );
    });

    it('maps SummarizerError kinds and keeps the retry hint', async () => {
      const transient = new SummarizerError('slow down', 'transient', 429, 1500);
      const failure = expectApplicationFailure(
        await failureOf(new MockActivityEnvironment(), fails(transient)),
        FailureType.Summarizer.Transient,
        false,
      );
      expect(failure.nextRetryDelay).toBe(1500);
      expect(failure.message).toBe('slow down');
      const empty = new SummarizerError('blank', 'empty');
      expectApplicationFailure(
        await failureOf(new MockActivityEnvironment(), fails(empty)),
        FailureType.Summarizer.Empty,
        false,
      );
    });

    it('passes an ApplicationFailure the backend chose through unchanged', async () => {
      const own = ApplicationFailure.create({ type: 'Backend.Quota', nonRetryable: true, message: 'quota' });
      expect(await failureOf(new MockActivityEnvironment(), fails(own))).toBe(own);
    });

    it('a request with invalid messages → non-retryable Compaction.InvalidInput naming the field', async () => {
      const { summarize } = createActivities({ summarizer: answers('unused') });
      const bad: SummarizeRequest = {
        instruction: 'Summarize.',
        middle: [
          { role: 'user', content: 'ok' },
          { role: 'tool', content: 'no id' },
        ],
      };
      const error = await new MockActivityEnvironment().run(summarize, bad).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      const failure = expectApplicationFailure(error, FailureType.Compaction.InvalidInput, true);
      expect(failure.message).toContain('middle[1].tool_call_id');
      expect(failure.details).toEqual([expect.objectContaining({ field: 'middle[1].tool_call_id', index: 1 })]);
    });

    it('cancelled while a backend ignores its signal: still rethrows the cancellation at once', async () => {
      const deaf: Summarizer = { summarize: () => new Promise(() => undefined) };
      const env = new MockActivityEnvironment();
      const { summarize } = createActivities({ summarizer: deaf });
      const running = env.run(summarize, request);
      setTimeout(() => env.cancel(), 20);
      await expect(running).rejects.toBeInstanceOf(CancelledFailure);
    });

    it('passes the activity cancellation signal to the summarizer', async () => {
      let seen: AbortSignal | undefined;
      const env = new MockActivityEnvironment();
      const { summarize } = createActivities({
        summarizer: {
          summarize: (_request, options) => {
            seen = options?.signal;
            return Promise.resolve({ text: 'ok' });
          },
        },
      });
      await env.run(summarize, request);
      expect(seen).toBe(env.context.cancellationSignal);
    });

    it('heartbeats while the request is in flight, at a quarter of the heartbeat timeout from one quarter in, and stops after', async () => {
      const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 200 });
      const beats: number[] = [];
      env.on('heartbeat', () => beats.push(performance.now()));
      const slow: Summarizer = {
        summarize: () => new Promise((resolve) => setTimeout(() => resolve({ text: 'done' }), 420)),
      };
      const { summarize } = createActivities({ summarizer: slow });
      const started = performance.now();
      await expect(env.run(summarize, request)).resolves.toEqual({ text: 'done' });
      const during = beats.length;
      // Every 50 ms for 420 ms, the first 50 ms in (each is a request the server writes): generously at least 4.
      expect(during).toBeGreaterThanOrEqual(4);
      expect(beats[0]! - started).toBeGreaterThanOrEqual(45);
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(beats).toHaveLength(during);
    });

    it("every heartbeat carries the request's estimated tokens and the time waited, for the Temporal UI", async () => {
      const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 200 });
      const details: unknown[] = [];
      env.on('heartbeat', (detail: unknown) => details.push(detail));
      const slow: Summarizer = {
        summarize: () => new Promise((resolve) => setTimeout(() => resolve({ text: 'done' }), 200)),
      };
      await env.run(createActivities({ summarizer: slow }).summarize, request);
      const estimatedTokens = defaultCounter.count(summarizerMessages(request));
      expect(details.length).toBeGreaterThanOrEqual(2);
      for (const detail of details)
        expect(detail).toEqual({ estimatedTokens, elapsedMs: expect.any(Number) as number });
      const waited = details.map((detail) => Number(Reflect.get(Object(detail), 'elapsedMs')));
      expect(waited).toEqual([...waited].sort((a, b) => a - b));
      expect(waited.at(-1)).toBeGreaterThan(waited[0] ?? 0);
    });
  });

  it('createActivities needs a summarizer or a model name', () => {
    expect(() => createActivities({})).toThrow(/summarizer/);
  });
});

describe("summarize activity: requests over the summarizer's window (docs/design.md#summarizer-overflow)", () => {
  const window = 2048;
  const room = inputRoom(window);
  /** About 40k characters (10k tokens with the default counter): five times the window. */
  const middle: ChatMessage[] = Array.from({ length: 40 }, (_, index) => ({
    role: index % 2 === 0 ? 'user' : 'assistant',
    content: `Turn ${index}: ${`checked module_${index}.py and its tests, found nothing new there. `.repeat(14)}`,
  }));
  const input: SummarizeRequest = { instruction: SUMMARY_INSTRUCTION, middle };

  /** A summarizer that records every request and answers one line. */
  function recording(): { summarizer: Summarizer; asked: SummarizeRequest[] } {
    const asked: SummarizeRequest[] = [];
    const summarizer: Summarizer = {
      summarize: (request) => {
        asked.push(request);
        return Promise.resolve({ text: 'Summary: the modules held nothing new.' });
      },
    };
    return { summarizer, asked };
  }

  it("over the worker's window: refused unsent, a non-retryable Summarizer.ContextOverflow with the window and the estimate", async () => {
    const estimate = defaultCounter.count(summarizerMessages(requestFor(SUMMARY_INSTRUCTION, middle)));
    expect(estimate).toBeGreaterThan(4 * window);
    const { summarizer, asked } = recording();
    const { summarize } = createActivities({ summarizer, summarizerContextWindow: window });
    const failed = await new MockActivityEnvironment().run(summarize, input).catch((error: unknown) => error);
    const failure = expectApplicationFailure(failed, FailureType.Summarizer.ContextOverflow, true);
    expect(failure.message).toContain(`the request is ${estimate} tokens (estimated), over the ${room}`);
    expect(failure.message).toContain('summarizerContextWindow');
    expect(failure.details).toEqual([{ contextWindow: window, promptTokens: estimate }]);
    expect(asked).toHaveLength(0);
  });

  it('within the window: one request, as the workflow sent it', async () => {
    const { summarizer, asked } = recording();
    const { summarize } = createActivities({ summarizer, summarizerContextWindow: 64_000 });
    const output = await new MockActivityEnvironment().run(summarize, input);
    expect(asked).toEqual([input]);
    expect(output).toEqual({ text: 'Summary: the modules held nothing new.' });
  });

  describe('from the server', () => {
    let server: FakeOpenAI;
    beforeEach(async () => {
      server = await startFakeOpenAI();
    });
    afterEach(() => server.close());

    it("llama.cpp's exceed_context_size_error: Summarizer.ContextOverflow with the window and prompt tokens it states", async () => {
      server.script({
        kind: 'status',
        status: 400,
        body: {
          error: {
            code: 400,
            type: 'exceed_context_size_error',
            message: 'request (8624 tokens) exceeds the available context size (8192 tokens), try increasing it',
            n_prompt_tokens: 8624,
            n_ctx: 8192,
          },
        },
      });
      const summarizer = createOpenAISummarizer({ baseURL: server.baseURL, apiKey: 'k', model: 'm' });
      const failed = await new MockActivityEnvironment()
        .run(createActivities({ summarizer }).summarize, request)
        .catch((error: unknown) => error);
      const failure = expectApplicationFailure(failed, FailureType.Summarizer.ContextOverflow, true);
      expect(failure.details).toEqual([{ status: 400, contextWindow: 8192, promptTokens: 8624 }]);
      expect(failure.message).toContain('exceeds the available context size');
    });

    it('past its deadline: a non-retryable Summarizer.Deadline, so the compaction sends it again smaller', async () => {
      server.script({ kind: 'hang' });
      const summarizer = createOpenAISummarizer({ baseURL: server.baseURL, apiKey: 'k', model: 'm', timeout: 200 });
      const failed = await new MockActivityEnvironment()
        .run(createActivities({ summarizer }).summarize, request)
        .catch((error: unknown) => error);
      expect(expectApplicationFailure(failed, FailureType.Summarizer.Deadline, true).message).toContain('200 ms');
    });
  });
});
