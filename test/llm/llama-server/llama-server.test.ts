// Against a real OpenAI-compatible server we did not write: llama.cpp's `llama-server` with
// SmolLM2-135M-Instruct (8,192-token context), started on 127.0.0.1 (test/support/llama-server.ts).
// What the server says of its window up front, a summary written by the real model through our
// OpenAI summarizer, and the server's own answer to a request over its window, which
// readContextOverflow must read; and how many of SmolLM2's tokens the corpus's summarizer requests
// are per estimated token, which the margin before the first bill (UNCALIBRATED_RATIO) must cover.
// `npm run test:llm` runs this file; `npm test` does not.
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledTrajectories, findTrajectory, generatedTrajectory } from '../../../corpus/index.js';
import { UNCALIBRATED_RATIO } from '../../../src/core/compaction/calibration.js';
import {
  capMiddle,
  renderTranscript,
  requestFor,
  summarizerMessages,
  baseInstruction,
} from '../../../src/core/compaction/transcript.js';
import { defaultCounter } from '../../../src/core/counting/tokens.js';
import { toProviderMessages } from '../../../src/core/schema.js';
import { SummarizerError } from '../../../src/core/errors.js';
import { readContextOverflow } from '../../../src/llm/context-overflow.js';
import {
  contextWindowFromModels,
  contextWindowFromProps,
  fetchServerContextWindow,
} from '../../../scripts/server-window.js';
import { createOpenAISummarizer } from '../../../src/summarizers/openai.js';
import { startLlamaServer, type LlamaServer } from '../../support/llama-server.js';

/** Tool results are cut at this many characters in the transcript, as the engine's default does. */
const TOOL_RESULT_CAP = 2_000;

let llama: LlamaServer;

beforeAll(async () => {
  llama = await startLlamaServer({ contextSize: 8192 });
});

afterAll(async () => {
  await llama.stop();
});

async function postJson(url: string, body: unknown): Promise<unknown> {
  const response = await fetch(url, { method: 'POST', body: JSON.stringify(body) });
  expect(response.status).toBe(200);
  return response.json();
}

async function getJson(url: string): Promise<unknown> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return response.json();
}

describe('llama-server states its window up front', () => {
  it('in /props (default_generation_settings.n_ctx) and /v1/models (data[].meta.n_ctx)', async () => {
    expect(contextWindowFromProps(await getJson(`${llama.url}/props`))).toEqual({
      contextWindow: 8192,
      source: 'llama.cpp /props',
    });
    expect(contextWindowFromModels(await getJson(`${llama.baseURL}/models`), llama.model)).toEqual({
      contextWindow: 8192,
      source: 'llama.cpp /v1/models',
    });
    await expect(fetchServerContextWindow({ baseURL: llama.baseURL, model: llama.model })).resolves.toEqual({
      contextWindow: 8192,
      source: 'llama.cpp /props',
    });
  });
});

describe('our OpenAI summarizer against the real model', () => {
  it('returns a summary of a short corpus conversation, with the usage the server billed', async () => {
    // The first turns of a tau-bench airline run after its system prompt: the user's request, the
    // agent's answer and the user's reply.
    const middle = capMiddle(
      findTrajectory('taubench_gpt4o_airline_task2_trial1').messages.slice(1, 4),
      TOOL_RESULT_CAP,
    );
    // Enough for the start of a summary: every token is seconds of generation on two shared cores.
    const maxTokens = 64;
    const summarizer = createOpenAISummarizer({
      baseURL: llama.baseURL,
      model: llama.model,
      maxTokens,
      maxTokensParameter: 'max_tokens',
      temperature: 0,
      timeout: 240_000,
    });
    const started = Date.now();
    const summary = await summarizer.summarize(requestFor(baseInstruction(), middle));
    console.info(
      `[llama-server] summary of ${middle.length} messages: ${summary.text.length} characters, ` +
        `usage ${JSON.stringify(summary.usage)}, ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    expect(summary.text.trim().length).toBeGreaterThan(0);
    expect(summary.usage?.promptTokens).toBeGreaterThan(0);
    expect(summary.usage?.promptTokens).toBeLessThan(llama.contextSize);
    expect(summary.usage?.completionTokens).toBeGreaterThan(0);
    expect(summary.usage?.completionTokens).toBeLessThanOrEqual(maxTokens);
  });
});

describe('a request over the window', () => {
  /** A middle far over 8,192 tokens: a generated run of 100 rounds with 1,500-character tool results. */
  const longMiddle = (): ReturnType<typeof capMiddle> =>
    capMiddle(generatedTrajectory('generated_long-run-100x1500').messages, TOOL_RESULT_CAP);

  it("gets the server's exceed_context_size_error, with its numbers, and readContextOverflow reads them", async () => {
    const client = new OpenAI({ baseURL: llama.baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
    const messages = [
      { role: 'system' as const, content: baseInstruction() },
      { role: 'user' as const, content: renderTranscript(longMiddle(), Number.POSITIVE_INFINITY) },
    ];
    const error = await client.chat.completions.create({ model: llama.model, messages }).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    if (!(error instanceof APIError)) throw new Error(`expected an APIError, got ${String(error)}`);
    // The answer as the server sent it (docs/testing.md quotes it).
    console.info(`[llama-server] HTTP ${error.status} ${JSON.stringify({ error: error.error })}`);
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ type: 'exceed_context_size_error', n_ctx: 8192 });

    const overflow = readContextOverflow(error);
    expect(overflow).toMatchObject({ source: 'llama.cpp', contextWindow: 8192 });
    expect(overflow?.promptTokens).toBeGreaterThan(8192);
    expect(overflow?.requestTokens).toBe(overflow?.promptTokens);
    expect(error.error).toMatchObject({ n_prompt_tokens: overflow?.promptTokens });
    expect(await llama.log()).toContain('exceeds the available context size');
  });

  it('reaches the summarizer as a rejected SummarizerError that readContextOverflow still reads', async () => {
    const summarizer = createOpenAISummarizer({ baseURL: llama.baseURL, model: llama.model, timeout: 120_000 });
    const caught = await summarizer.summarize(requestFor(baseInstruction(), longMiddle())).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(caught).toBeInstanceOf(SummarizerError);
    expect(caught).toMatchObject({ kind: 'rejected', status: 400 });
    expect(readContextOverflow(caught)).toMatchObject({ source: 'llama.cpp', contextWindow: 8192 });
  });
});

describe("SmolLM2's tokens per estimated token", () => {
  /** Requests of about this many estimated tokens: the size of a piece under a 4,096-token window. */
  const TARGET = 2_900;

  /** The prompt the server makes of `messages` (its chat template) and how many tokens it counts in it. */
  async function serverCount(messages: unknown): Promise<number> {
    const { prompt } = (await postJson(`${llama.url}/apply-template`, { messages })) as { prompt: string };
    const { tokens } = (await postJson(`${llama.url}/tokenize`, {
      content: prompt,
      add_special: true,
      parse_special: true,
    })) as { tokens: unknown[] };
    return tokens.length;
  }

  it('on summarizer requests cut from the bundled trajectories: under the margin planned with before the first bill', async () => {
    const ratios: Array<{ name: string; estimate: number; ratio: number }> = [];
    for (const { name, messages } of bundledTrajectories()) {
      const seen = capMiddle(messages.slice(1), TOOL_RESULT_CAP);
      const estimateOf = (from: number, to: number): number =>
        defaultCounter.count(summarizerMessages(requestFor(baseInstruction(), seen.slice(from, to))));
      for (let start = 0; start < seen.length;) {
        let end = start + 1;
        while (end < seen.length && estimateOf(start, end + 1) <= TARGET) end += 1;
        const estimate = estimateOf(start, end);
        // Requests far smaller than a piece (a trajectory's tail) say little of the ratio.
        if (estimate >= TARGET / 2) {
          const request = summarizerMessages(requestFor(baseInstruction(), seen.slice(start, end)));
          ratios.push({ name, estimate, ratio: (await serverCount(toProviderMessages(request))) / estimate });
        }
        start = end;
      }
    }
    const sorted = ratios.map(({ ratio }) => ratio).sort((a, b) => a - b);
    console.info(
      `[llama-server] SmolLM2 tokens per estimated token over ${sorted.length} requests: ` +
        `min ${sorted[0]?.toFixed(2)}, median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(2)}, ` +
        `max ${sorted.at(-1)?.toFixed(2)} (${ratios.find(({ ratio }) => ratio === sorted.at(-1))?.name})`,
    );
    expect(ratios.length).toBeGreaterThan(10);
    // SmolLM2 counts more than the estimate on every request (the margin is needed)...
    expect(sorted[0]).toBeGreaterThan(1);
    // ...and never as much as the margin assumes before anything was billed.
    expect(sorted.at(-1)).toBeLessThan(UNCALIBRATED_RATIO);
  });
});
