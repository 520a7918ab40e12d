// Node: a real model against the extractive summarizer on the same conversations. Three corpus
// trajectories (examples/trajectories/) are each compacted once, in-process (`Compactor`), with the
// same options, by two summarizers: the built-in extractive one, and our OpenAI summarizer against
// llama.cpp's `llama-server` with SmolLM2-135M-Instruct (test/support/llama-server.ts; installed by
// scripts/llm-server.mjs, as `npm run test:llm` does). A benchmark, not a test: it prints figures
// and asserts nothing.
//
// Per trajectory and summarizer:
// - identifiers: of the identifiers (`identifiersIn`) in the messages the summary replaced, how many
//   the summary message holds; and the coverage check's own figure, the identifiers of the replaced
//   part that the kept messages still use (`result.coverage`), split into those the summarizer
//   wrote and those only the engine's carried-facts line holds;
// - summary tokens: o200k BPE tokens of the summary message's text;
// - requests: summarize calls made (refused ones and retries included), and the prompt tokens billed;
// - wall time of the compaction; and how it ended (a summary, or the hard trim).
//
// Run: `npm run bench:llm` (prints); `--write` also writes bench/llm-figures.md. Flags:
//   --budget N          the context budget of every compaction (default 4000)
//   --ctx N             the server's context, `--ctx-size` (default 8192, SmolLM2's trained context);
//                       `summarizerContextWindow` is what the server states in /props
//   --max-tokens N      the real model's max tokens per summary (default: derived from the summary's room)
//   --trajectories a,b  file names under examples/trajectories/ without .json
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { BUNDLED_DIR } from '../corpus/index.js';
import { Compactor, createExtractiveSummarizer, createOpenAISummarizer } from '../src/index.js';
import { countTextTokens } from '../src/core/counting/bpe-counter.js';
import { identifiersIn } from '../src/core/compaction/coverage.js';
import type { ChatMessage, CompactionResult, Summarizer } from '../src/core/types.js';
import { fetchServerContextWindow } from '../scripts/server-window.js';
import { freePort } from '../dev/dev-server.js';
import { resolveLlmServer } from '../scripts/llm-server.mjs';

const FIGURES = fileURLToPath(new URL('./llm-figures.md', import.meta.url));
const DEFAULT_TRAJECTORIES = [
  'taubench_gpt4o_airline_task46_trial3',
  'taubench_gpt4o_airline_task2_trial1',
  'openhands_gpt4o_Project-MONAI__MONAI-3715',
];

interface Flags {
  budget: number;
  ctx: number;
  maxTokens: number | undefined;
  trajectories: string[];
  write: boolean;
}

function parseFlags(argv: readonly string[]): Flags {
  const flags: Flags = {
    budget: 4000,
    ctx: 8192,
    maxTokens: undefined,
    trajectories: DEFAULT_TRAJECTORIES,
    write: false,
  };
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    const value = (): string => {
      const next = argv[i + 1];
      if (next === undefined) throw new Error(`${flag} needs a value`);
      i += 1;
      return next;
    };
    const integer = (): number => {
      const text = value();
      const parsed = Number(text);
      if (!Number.isInteger(parsed) || parsed < 1)
        throw new Error(`${flag}: expected a positive integer, got "${text}"`);
      return parsed;
    };
    if (flag === '--write') flags.write = true;
    else if (flag === '--budget') flags.budget = integer();
    else if (flag === '--ctx') flags.ctx = integer();
    else if (flag === '--max-tokens') flags.maxTokens = integer();
    else if (flag === '--trajectories') flags.trajectories = value().split(',');
    else
      throw new Error(`unknown flag ${flag} (flags: --budget N, --ctx N, --max-tokens N, --trajectories a,b, --write)`);
  }
  return flags;
}

/**
 * llama-server on 127.0.0.1 and a free port with one slot, as the real-model suite starts it
 * (test/support/llama-server.ts, which benchmarks do not import): ready once /health answers 200.
 */
async function startServer(contextSize: number): Promise<{ url: string; model: string; stop: () => void }> {
  const { server, model } = await resolveLlmServer({ install: false });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const child = spawn(
    server,
    [
      ...['--model', model, '--host', '127.0.0.1', '--port', String(port)],
      ...['--ctx-size', String(contextSize), '--parallel', '1', '--threads', '2'],
    ],
    // Passive OpenMP waits: active spinning starves two threads on a busy two-core machine (docs/testing.md).
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, OMP_WAIT_POLICY: 'PASSIVE' } },
  );
  child.stdout.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8000)));
  child.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8000)));
  const stop = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };
  process.once('exit', stop);
  for (const deadline = Date.now() + 120_000; ;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`llama-server exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${output}`);
    const health = await fetch(`${url}/health`).catch(() => undefined);
    await health?.body?.cancel();
    if (health?.status === 200) break;
    if (Date.now() > deadline) {
      stop();
      throw new Error(`llama-server at ${url} was not ready within 120 s:\n${output}`);
    }
    await sleep(250);
  }
  return { url, model: basename(model), stop };
}

function progress(line: string): void {
  process.stderr.write(`${line}\n`);
}

function loadMessages(name: string): ChatMessage[] {
  const parsed: unknown = JSON.parse(readFileSync(join(BUNDLED_DIR, `${name}.json`), 'utf8'));
  return (Array.isArray(parsed) ? parsed : (parsed as { messages: ChatMessage[] }).messages) as ChatMessage[];
}

function messageText(message: ChatMessage): string {
  const content = typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? '');
  const calls =
    message.role === 'assistant' && message.tool_calls !== undefined ? JSON.stringify(message.tool_calls) : '';
  return `${content}\n${calls}`;
}

interface Row {
  trajectory: string;
  summarizer: string;
  messages: string;
  tokens: string;
  outcome: string;
  identifiers: string;
  coverage: string;
  summaryTokens: number | undefined;
  requests: number;
  promptTokens: number | undefined;
  seconds: number;
}

/** Counts every summarize call and the prompt tokens billed, around `inner`. */
function counted(inner: Summarizer): { summarizer: Summarizer; calls: () => number; billed: () => number | undefined } {
  let calls = 0;
  let billed: number | undefined;
  return {
    summarizer: {
      async summarize(request, options) {
        calls += 1;
        const response = await inner.summarize(request, options);
        const prompt = response.usage?.promptTokens;
        if (prompt !== undefined) billed = (billed ?? 0) + prompt;
        return response;
      },
    },
    calls: () => calls,
    billed: () => billed,
  };
}

async function measure(
  trajectory: string,
  label: string,
  inner: Summarizer,
  flags: Flags,
  window: number,
): Promise<Row> {
  const messages = loadMessages(trajectory);
  const { summarizer, calls, billed } = counted(inner);
  const compactor = new Compactor({
    summarizer,
    contextBudget: flags.budget,
    summarizerContextWindow: window,
  });
  const started = performance.now();
  const result: CompactionResult = await compactor.compact(messages, {
    onProgress: (step) =>
      progress(
        `  ${label}: ${step.piece === undefined ? step.purpose : `piece ${step.piece.index} of ${step.piece.of} (${step.purpose})`}, ${step.estimatedTokens} tokens${step.promptTokens === undefined ? '' : ` (${step.promptTokens} billed)`}, ${(step.elapsedMs / 1000).toFixed(1)} s: ${step.outcome}`,
      ),
  });
  const seconds = (performance.now() - started) / 1000;
  const kept = new Set(result.messages.map((message) => JSON.stringify(message)));
  const replaced = messages.filter((message) => !kept.has(JSON.stringify(message)));
  const inReplaced = new Set<string>();
  for (const message of replaced) identifiersIn(messageText(message), inReplaced);
  const summary = result.summary ?? '';
  const inSummary = identifiersIn(summary);
  const retained = [...inReplaced].filter((identifier) => inSummary.has(identifier)).length;
  const coverage = result.coverage;
  return {
    trajectory,
    summarizer: label,
    messages: `${messages.length} → ${result.messages.length}`,
    tokens: `${result.tokensBefore.toLocaleString('en-US')} → ${result.tokensAfter.toLocaleString('en-US')}`,
    outcome: result.fallback
      ? 'hard trim'
      : `summary${result.summaryPieces === undefined ? '' : ` (${result.summaryPieces} pieces)`}`,
    identifiers: result.summary === undefined ? '—' : `${retained} of ${inReplaced.size}`,
    coverage:
      coverage === undefined
        ? '—'
        : `${coverage.kept - coverage.carried} of ${coverage.required} (+${coverage.carried} carried)`,
    summaryTokens: result.summary === undefined ? undefined : countTextTokens(summary),
    requests: calls(),
    promptTokens: billed(),
    seconds,
  };
}

function table(rows: readonly Row[]): string {
  const lines = [
    '| trajectory | summarizer | messages | tokens before → after | outcome | identifiers of the replaced part in the summary | coverage: written by the summarizer | summary tokens (o200k) | requests | prompt tokens billed | wall time |',
    '|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|',
  ];
  for (const row of rows)
    lines.push(
      `| ${row.trajectory} | ${row.summarizer} | ${row.messages} | ${row.tokens} | ${row.outcome} | ${row.identifiers} | ${row.coverage} | ${row.summaryTokens?.toLocaleString('en-US') ?? '—'} | ${row.requests} | ${row.promptTokens?.toLocaleString('en-US') ?? '—'} | ${row.seconds.toFixed(1)} s |`,
    );
  return lines.join('\n');
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  const startedAt = performance.now();
  const llama = await startServer(flags.ctx);
  const baseURL = `${llama.url}/v1`;
  const rows: Row[] = [];
  let window: number;
  try {
    const stated = await fetchServerContextWindow({ baseURL, model: llama.model });
    if (stated === undefined) throw new Error(`llama-server at ${llama.url} states no window in /props`);
    window = stated.contextWindow;
    const model = createOpenAISummarizer({
      baseURL,
      apiKey: 'unused',
      model: llama.model,
      temperature: 0,
      timeout: 600_000,
      ...(flags.maxTokens === undefined ? {} : { maxTokens: flags.maxTokens }),
    });
    for (const trajectory of flags.trajectories) {
      progress(`${trajectory}: extractive ...`);
      rows.push(await measure(trajectory, 'extractive', createExtractiveSummarizer(), flags, window));
      progress(`${trajectory}: SmolLM2-135M on llama-server ...`);
      rows.push(await measure(trajectory, 'SmolLM2-135M-Instruct Q4_1', model, flags, window));
      progress(
        `  ${JSON.stringify(rows.slice(-2).map(({ summarizer, outcome, seconds }) => ({ summarizer, outcome, seconds })))}`,
      );
    }
  } finally {
    llama.stop();
  }
  const seconds = (performance.now() - startedAt) / 1000;
  const command = `npm run bench:llm -- ${process.argv.slice(2).join(' ')}`.trim().replace(/ --$/, '');
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const text = [
    '# A real model against the extractive summarizer',
    '',
    `Each trajectory compacted once in-process (\`Compactor\`) at a budget of ${flags.budget.toLocaleString('en-US')} tokens (character estimator), with \`summarizerContextWindow\` ${window.toLocaleString('en-US')} (what the server states in /props), by the built-in extractive summarizer and by SmolLM2-135M-Instruct (Q4_1) on llama.cpp's \`llama-server\` (\`--ctx-size ${flags.ctx} --parallel 1 --threads 2\`, temperature 0, max tokens ${flags.maxTokens === undefined ? "derived from the summary's room" : flags.maxTokens}). "Identifiers of the replaced part in the summary": of the identifiers in the messages the summary replaced, how many the summary message holds, its carried-facts line included. "Coverage": of the identifiers of the replaced part that the kept messages still use, how many the summarizer wrote (the engine carries the rest in its carried-facts line). Requests count every summarize call, refused or retried.`,
    '',
    table(rows),
    '',
    `Command: \`${command}\`. ${seconds.toFixed(0)} s in all on ${availableParallelism()} CPUs (${cpu}), Node ${process.version}, load average ${loadavg()[0]?.toFixed(1)} at the end (a machine shared with other jobs), ${new Date().toISOString().slice(0, 10)}.`,
    '',
  ].join('\n');
  process.stdout.write(text);
  if (flags.write) {
    writeFileSync(FIGURES, text);
    progress(`wrote ${FIGURES}`);
  }
}

await main();
