// A request over the summarizer's window, or past its deadline, is a signal, not a rejection
// (docs/design.md#summarizer-overflow): the engine learns the server's window and its tokens per
// estimated token from the numbers, cuts what is left of the middle smaller, keeps the pieces
// already summarized, and ends in the hard trim only after MAX_RECUTS re-cuts.
import { describe, expect, it } from 'vitest';
import { Compactor } from '../../src/compactor.js';
import { MAX_RECUTS, newCalibration, UNCALIBRATED_RATIO } from '../../src/core/compaction/calibration.js';
import { inputRoom } from '../../src/core/compaction/pieces.js';
import { compactionSteps, type SummarizeStep } from '../../src/core/compaction/engine.js';
import { runCompactionSteps } from '../../corpus/fake-summarizer.js';
import { resolveOptions } from '../../src/core/compaction/options.js';
import { isSummaryMessage, summarizerMessages } from '../../src/core/compaction/transcript.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage, SummarizeRequest, Summarizer } from '../../src/core/types.js';
import { assistant, system, tool, transcriptOf, user } from '../support/messages.js';

/** About 60k tokens by the default counter: 60 rounds of a 2,000-character thought and result. */
function longConversation(): ChatMessage[] {
  const messages: ChatMessage[] = [system('You are an agent.'), user('Fix the bug in app.py.')];
  for (let round = 0; round < 60; round += 1) {
    messages.push(
      assistant(`thought ${round} ${'t'.repeat(2000)}`, [
        [`call_${round}`, 'fs_read', JSON.stringify({ path: `f${round}.py` })],
      ]),
    );
    messages.push(tool(`call_${round}`, `result ${round} ${String(round % 10).repeat(2000)}`));
  }
  messages.push(user('Go on.'));
  return messages;
}

const estimate = (request: SummarizeRequest): number => defaultCounter.count(summarizerMessages(request));

/** The server's window, and its tokenizer: 4/3 of the character estimator's count. */
const SERVER_WINDOW = 8192;
const serverTokens = (request: SummarizeRequest): number => Math.ceil((estimate(request) * 4) / 3);

/** llama.cpp's answer to a prompt over its window, as openai-node throws it (an APIError's status and error). */
function llamaCppOverflow(prompt: number, window: number): Error {
  const message = `request (${prompt} tokens) exceeds the available context size (${window} tokens), try increasing it`;
  return Object.assign(new Error(`400 ${message}`), {
    status: 400,
    error: { code: 400, type: 'exceed_context_size_error', message, n_prompt_tokens: prompt, n_ctx: window },
  });
}

/** Rounds a request holds, by number. */
const roundsOf = (request: SummarizeRequest): number[] =>
  [...transcriptOf(request).matchAll(/\[assistant\]\nthought (\d+) /g)].map((match) => Number(match[1]));

/** A summarizer in front of a server of SERVER_WINDOW tokens that bills what its tokenizer counted. */
function serverSummarizer(refuse: (request: SummarizeRequest, call: number) => Error | undefined = () => undefined) {
  const requests: SummarizeRequest[] = [];
  const refused: SummarizeRequest[] = [];
  const summarizer: Summarizer = {
    summarize: (request) => {
      requests.push(request);
      const prompt = serverTokens(request);
      const error = prompt > SERVER_WINDOW ? llamaCppOverflow(prompt, SERVER_WINDOW) : refuse(request, requests.length);
      if (error !== undefined) {
        refused.push(request);
        return Promise.reject(error);
      }
      const rounds = roundsOf(request);
      return Promise.resolve({
        text: `## Goals\nfix app.py\n## Decisions\nread rounds ${rounds.at(0)}-${rounds.at(-1)}`,
        usage: { promptTokens: prompt, completionTokens: 20 },
      });
    },
  };
  return { summarizer, requests, refused };
}

/** Every round of the middle is in exactly one request that was answered, in order. */
function expectEveryRoundSummarizedOnce(requests: SummarizeRequest[], refused: SummarizeRequest[]): void {
  const answered = requests.filter((request) => !refused.includes(request));
  const rounds = answered.flatMap(roundsOf);
  expect(rounds).toEqual([...Array(rounds.length).keys()]);
  expect(rounds.length).toBeGreaterThan(50);
}

const options = { contextBudget: 70_000, toolResultCap: 5000 } as const;

describe("the summarizer's window learned from its refusal", () => {
  it('no window configured: one request refused, the rest cut from its numbers, every one within the window', async () => {
    const { summarizer, requests, refused } = serverSummarizer();
    const result = await new Compactor({ summarizer, ...options }).compact(longConversation());

    expect(refused).toHaveLength(1);
    expect(refused[0]).toBe(requests[0]);
    for (const request of requests.slice(1)) expect(serverTokens(request)).toBeLessThanOrEqual(SERVER_WINDOW);
    expect(result.fallback).toBe(false);
    expect(result.summary).toContain('read rounds');
    expect(result.summaryPieces).toBe(requests.length - 1);
    expectEveryRoundSummarizedOnce(requests, refused);
  });

  it('the window configured as the server states it: no request refused, the first planned before any bill included (regression)', async () => {
    const { summarizer, requests, refused } = serverSummarizer();
    const calibrated = new Compactor({ summarizer, ...options, summarizerContextWindow: SERVER_WINDOW });
    const result = await calibrated.compact(longConversation());
    expect(refused).toHaveLength(0);
    expect(requests.length).toBeGreaterThan(3);
    expect(result.fallback).toBe(false);
    expectEveryRoundSummarizedOnce(requests, refused);
    // Every request within the input room (0.75) of the window in the server's own tokens: the first
    // planned with UNCALIBRATED_RATIO server tokens per estimated token, the rest re-cut after the
    // first bill for the 4/3 it measured.
    for (const request of requests) expect(serverTokens(request)).toBeLessThanOrEqual(SERVER_WINDOW * 0.75);
    expect(estimate(requests[0] as SummarizeRequest)).toBeLessThanOrEqual(
      inputRoom(Math.floor(SERVER_WINDOW / UNCALIBRATED_RATIO)),
    );
    // A summarizer that bills nothing is planned with the uncalibrated ratio throughout: more requests.
    const unbilled = serverSummarizer();
    const silent: Summarizer = {
      summarize: (request) => unbilled.summarizer.summarize(request).then(({ text }) => ({ text })),
    };
    await new Compactor({ summarizer: silent, ...options, summarizerContextWindow: SERVER_WINDOW }).compact(
      longConversation(),
    );
    expect(unbilled.refused).toHaveLength(0);
    expect(unbilled.requests.length).toBeGreaterThan(requests.length);
  });

  it('what a compaction learned, the next compaction of the same Compactor plans with: nothing refused', async () => {
    const { summarizer, requests, refused } = serverSummarizer();
    const compactor = new Compactor({ summarizer, ...options });
    await compactor.compact(longConversation());
    expect(refused).toHaveLength(1);
    const first = requests.length;
    const again = await compactor.compact(longConversation());
    expect(refused).toHaveLength(1);
    expect(again.fallback).toBe(false);
    expect(requests.length - first).toBe(first - 1);

    // A new Compactor knows nothing: its first request is refused again.
    const fresh = serverSummarizer();
    await new Compactor({ summarizer: fresh.summarizer, ...options }).compact(longConversation());
    expect(fresh.refused).toHaveLength(1);
  });

  it('a piece refused part-way: the pieces summarized before it are kept, and what is left is cut smaller', async () => {
    const { summarizer, requests, refused } = serverSummarizer((request, call) =>
      call === 3 ? llamaCppOverflow(serverTokens(request), Math.floor(serverTokens(request) * 0.9)) : undefined,
    );
    const result = await new Compactor({ summarizer, ...options, summarizerContextWindow: SERVER_WINDOW }).compact(
      longConversation(),
    );
    expect(refused).toEqual([requests[2]]);
    expect(result.fallback).toBe(false);
    const [, second, third, fourth] = requests as [
      SummarizeRequest,
      SummarizeRequest,
      SummarizeRequest,
      SummarizeRequest,
    ];
    // The next request carries the summary so far (piece 2's, which folded piece 1's in) and starts
    // where the refused piece did.
    const carried = fourth.middle[0];
    expect(carried !== undefined && isSummaryMessage(carried)).toBe(true);
    expect(carried?.content).toContain(`read rounds ${roundsOf(second)[0]}-${roundsOf(second).at(-1)}`);
    expect(roundsOf(fourth)[0]).toBe(roundsOf(third)[0]);
    expect(serverTokens(fourth)).toBeLessThan(serverTokens(third) * 0.9);
    expectEveryRoundSummarizedOnce(requests, refused);
  });

  it('a piece past its deadline is not sent again as it is: what it held goes in pieces of at most half its size', async () => {
    const deadline = Object.assign(new Error('summarizer: no complete answer within 60000 ms'), {
      cause: Object.assign(new Error('no complete answer within 60000 ms'), { name: 'CompletionDeadlineError' }),
    });
    const { summarizer, requests, refused } = serverSummarizer((_, call) => (call === 2 ? deadline : undefined));
    const result = await new Compactor({
      summarizer,
      ...options,
      summarizerContextWindow: SERVER_WINDOW,
      maxAttempts: 3,
    }).compact(longConversation());
    expect(refused).toEqual([requests[1]]);
    expect(result.fallback).toBe(false);
    const [first, late, next] = requests as [SummarizeRequest, SummarizeRequest, SummarizeRequest];
    expect(next).not.toEqual(late);
    expect(estimate(next)).toBeLessThanOrEqual(estimate(late) / 2);
    expect(next.middle[0]?.content).toContain(`read rounds 0-${roundsOf(first).at(-1)}`);
    expect(roundsOf(next)[0]).toBe(roundsOf(late)[0]);
    expectEveryRoundSummarizedOnce(requests, refused);
  });

  it(`ends in the hard trim after ${MAX_RECUTS} re-cuts, each request smaller than the one before`, async () => {
    const ollama = Object.assign(new Error('400 the prompt is longer than the context length'), {
      status: 400,
      error: {
        message: 'the prompt is longer than the context length currently available to the model',
        type: 'invalid_request_error',
      },
    });
    const { summarizer, requests } = serverSummarizer(() => ollama);
    const result = await new Compactor({ summarizer, ...options }).compact(longConversation());
    expect(result.fallback).toBe(true);
    expect(requests).toHaveLength(MAX_RECUTS + 1);
    const sizes = requests.map(estimate);
    for (let index = 1; index < sizes.length; index += 1)
      expect(sizes[index]).toBeLessThanOrEqual((sizes[index - 1] ?? 0) * 0.75);
  });

  it('the step machine takes the same steps as the in-process driver, with the calibration it is handed', () => {
    const { summarizer, requests } = serverSummarizer();
    const inProcess = new Compactor({ summarizer, ...options });
    return inProcess.compact(longConversation()).then((expected) => {
      const steps: SummarizeStep[] = [];
      const calibration = newCalibration();
      const result = runCompactionSteps(
        compactionSteps(longConversation(), resolveOptions(options), {}, undefined, { calibration }),
        (step) => {
          steps.push(step);
          const prompt = serverTokens(step.request);
          if (prompt > SERVER_WINDOW)
            return { kind: 'overflow', message: 'over', contextWindow: SERVER_WINDOW, promptTokens: prompt };
          const rounds = roundsOf(step.request);
          return {
            kind: 'summary',
            text: `## Goals\nfix app.py\n## Decisions\nread rounds ${rounds.at(0)}-${rounds.at(-1)}`,
            usage: { promptTokens: prompt },
          };
        },
      );
      expect(steps.map((step) => step.request)).toEqual(requests);
      expect(result).toEqual(expected);
      expect(calibration).toEqual({ ratio: expect.closeTo(4 / 3, 2) as number, measured: true, window: SERVER_WINDOW });
    });
  });
});
