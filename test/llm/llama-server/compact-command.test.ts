// `temporal-compactor compact` on a corpus trajectory against a real llama.cpp `llama-server` with
// SmolLM2-135M-Instruct (test/support/llama-server.ts), as a user runs it: a process, configured by
// its environment. The server is started with a 2,048-token context, so the middle of the tau-bench
// run's first 26 messages (a request of about 2,500 of the server's tokens) is over it and is
// summarized in pieces. What the server saw is read from its own log: a request it refuses for its
// size logs "exceeds the available context size", every request it takes logs "processing task".
// `npm run test:llm` runs this file.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchServerContextWindow } from '../../../scripts/server-window.js';
import { temporaryDirectory } from '../../support/cleanup.js';
import { runCli, type CliRun } from '../../support/cli-process.js';
import { realSummarizerEnv, startLlamaServer, type LlamaServer } from '../../support/llama-server.js';

const TRAJECTORY = 'examples/trajectories/taubench_gpt4o_airline_task46_trial3.json';
/** The messages of TRAJECTORY compacted: a middle over the window, in as few pieces as show the cut. */
const MESSAGES = 26;
const CONTEXT_SIZE = 2048;
/** A bound on each summary, so a piece takes seconds of generation on two shared cores. */
const MAX_TOKENS = 64;

const REFUSAL = 'exceeds the available context size';
const TASK_STARTED = 'processing task';

let llama: LlamaServer;
/** The first MESSAGES messages of TRAJECTORY, as a file the CLI reads. */
let conversation: string;

beforeAll(async () => {
  conversation = join(temporaryDirectory('llm-compact-in-'), 'conversation.json');
  const messages = JSON.parse(readFileSync(TRAJECTORY, 'utf8')) as unknown[];
  writeFileSync(conversation, JSON.stringify(messages.slice(0, MESSAGES)));
  llama = await startLlamaServer({ contextSize: CONTEXT_SIZE });
});

afterAll(async () => {
  await llama.stop();
});

function occurrences(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

/** The prompt tokens each summarize request was billed, from the CLI's progress lines (`... (N billed), T s`). */
function billedPromptTokens(stderr: string): number[] {
  return [...stderr.matchAll(/^summarize[^\n]*?\(([\d,]+) billed\)/gm)].map((match) =>
    Number((match[1] ?? '').replaceAll(',', '')),
  );
}

/** Runs `compact` on the conversation at a 2,000-token budget; returns the run and what the server logged meanwhile. */
async function compact(extraArgs: string[]): Promise<{ run: CliRun; serverLog: string; output: unknown }> {
  const out = join(temporaryDirectory('llm-compact-'), 'compacted.json');
  const before = (await llama.log()).length;
  const started = Date.now();
  const run = await runCli(['compact', conversation, '--budget', '2000', '--out', out, ...extraArgs], {
    ...realSummarizerEnv(llama, MAX_TOKENS),
  });
  console.info(
    `[llama-server] compact ${extraArgs.join(' ') || '(no window)'}: exit ${run.code}, ${((Date.now() - started) / 1000).toFixed(1)} s\n${run.stderr}`,
  );
  const serverLog = (await llama.log()).slice(before);
  const output: unknown = run.code === 0 ? JSON.parse(readFileSync(out, 'utf8')) : undefined;
  return { run, serverLog, output };
}

/** The compacted conversation holds the engine's summary message, and the report's row says so. */
function expectSummary(run: CliRun, output: unknown): void {
  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr).toMatch(/\| summary \([\d,]+ chars\) \| no \|/);
  expect(run.stderr).not.toContain('Hard trim');
  expect(JSON.stringify(output)).toContain('[Summary by the harness of');
}

describe('compact on a corpus trajectory against llama-server', () => {
  it('with the window the server states (/props n_ctx): no request refused, every one within it, ending with a summary (regression)', async () => {
    const stated = await fetchServerContextWindow({ baseURL: llama.baseURL, model: llama.model });
    expect(stated).toEqual({ contextWindow: CONTEXT_SIZE, source: 'llama.cpp /props' });
    const { run, serverLog, output } = await compact(['--summarizer-context-window', String(stated?.contextWindow)]);
    expectSummary(run, output);
    // The first piece is planned before anything was billed, with the margin (UNCALIBRATED_RATIO);
    // its bill calibrates the cut of the rest (docs/design.md#summarizer-overflow).
    expect(occurrences(serverLog, REFUSAL)).toBe(0);
    const lines = run.stderr.split('\n').filter((line) => line.startsWith('summarize'));
    expect(lines.every((line) => !line.includes('over the summarizer'))).toBe(true);
    expect(lines[0]).toMatch(/^summarize piece 1 of \d+:/);
    const billed = billedPromptTokens(run.stderr);
    expect(billed.length).toBeGreaterThan(1);
    expect(billed).toHaveLength(lines.length);
    expect(occurrences(serverLog, TASK_STARTED)).toBe(lines.length);
    for (const tokens of billed) expect(tokens + MAX_TOKENS).toBeLessThanOrEqual(CONTEXT_SIZE);
  });

  it('with no window configured: one request refused for its size, the rest cut from what the refusal said', async () => {
    const { run, serverLog, output } = await compact([]);
    expectSummary(run, output);
    // The one request for the whole middle is the only one refused: its numbers set the window and
    // the ratio of the server's tokens to the estimate for every later request.
    expect(occurrences(serverLog, REFUSAL)).toBe(1);
    const lines = run.stderr.split('\n').filter((line) => line.startsWith('summarize'));
    expect(lines[0]).toMatch(/^summarize: [\d,]+ tokens, [\d.]+ s: over the summarizer's window, cut smaller$/);
    expect(lines.slice(1).every((line) => !line.includes('over the summarizer'))).toBe(true);
    expect(lines[1]).toMatch(/^summarize piece 1 of \d+:/);
    const billed = billedPromptTokens(run.stderr);
    expect(billed).toHaveLength(lines.length - 1);
    expect(occurrences(serverLog, TASK_STARTED)).toBe(lines.length);
    for (const tokens of billed) expect(tokens).toBeLessThan(CONTEXT_SIZE);
  });
});
