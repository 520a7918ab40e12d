// Node (tests): a real OpenAI-compatible server we did not write — llama.cpp's `llama-server` with
// SmolLM2-135M-Instruct, both installed into .temporal/llm by scripts/llm-server.mjs — on 127.0.0.1
// and a free port. It resolves once `/health` answers 200 (the model is loaded); `stop()` kills it,
// waits for it to exit and removes its log, and runs after the test file in any case.
//
//   const llama = await startLlamaServer();
//   const summarizer = createOpenAISummarizer({ baseURL: llama.baseURL, model: llama.model });
//   ...
//   expect(await llama.log()).toContain('exceeds the available context size');
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../dev/dev-server.js';
import { resolveLlmServer } from '../../scripts/llm-server.mjs';
import { registerCleanup } from './cleanup.js';

export interface LlamaServer {
  /** `http://127.0.0.1:PORT`: where `/health`, `/props` and `/slots` are. */
  url: string;
  /** The OpenAI base URL, `${url}/v1`. */
  baseURL: string;
  /** The model's name as the server lists it (a single-model llama-server answers to any name). */
  model: string;
  /** The context the server was started with (`-c`); with one slot, the window of every request. */
  contextSize: number;
  /** Everything the server has written so far (stdout and stderr: its log). */
  log(): Promise<string>;
  stop(): Promise<void>;
}

export interface StartLlamaServerOptions {
  /** `-c`: the context size in tokens. @default 8192 (SmolLM2's trained context) */
  contextSize?: number;
  /** `-t`: the threads that run the model. @default 2 */
  threads?: number;
  /** More `llama-server` arguments. */
  args?: string[];
}

const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 10_000;

/**
 * Starts `llama-server` on 127.0.0.1 with one slot (so `contextSize` is the window of each request).
 * Needs `node scripts/llm-server.mjs` to have installed it (`npm run test:llm` does first).
 */
export async function startLlamaServer({
  contextSize = 8192,
  threads = 2,
  args = [],
}: StartLlamaServerOptions = {}): Promise<LlamaServer> {
  const { server, model } = await resolveLlmServer({ install: false });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const directory = mkdtempSync(join(tmpdir(), 'llama-server-'));
  const logFile = join(directory, 'server.log');
  const output = openSync(logFile, 'a');
  const child = spawn(
    server,
    [
      ...['--model', model, '--host', '127.0.0.1', '--port', String(port)],
      ...['--ctx-size', String(contextSize), '--parallel', '1', '--threads', String(threads)],
      ...args,
    ],
    // OpenMP threads that wait by spinning starve each other on a busy two-core machine: with the
    // default (active) wait, two threads generated about ten times slower here than one thread or
    // two that wait passively (docs/testing.md#the-real-model-suite).
    { stdio: ['ignore', output, output], env: { ...process.env, OMP_WAIT_POLICY: 'PASSIVE' } },
  );
  closeSync(output);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = (): Promise<string> => readFile(logFile, 'utf8').catch(() => '');
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const ended = await Promise.race([exited.then(() => true), sleep(STOP_TIMEOUT_MS, false)]);
        if (!ended) {
          child.kill('SIGKILL');
          await exited;
        }
      }
      rmSync(directory, { recursive: true, force: true });
    })();
    return stopped;
  };
  registerCleanup(stop);

  try {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(
          `llama-server exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${(await log()).slice(-4000)}`,
        );
      }
      const health = await fetch(`${url}/health`).catch(() => undefined);
      await health?.body?.cancel();
      if (health?.status === 200) break;
      if (Date.now() > deadline) {
        throw new Error(
          `llama-server at ${url} was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${(await log()).slice(-4000)}`,
        );
      }
      await sleep(250);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, baseURL: `${url}/v1`, model: basename(model), contextSize, log, stop };
}

/**
 * The settings that make the CLI or a worker process summarize with `server`'s model: bounded
 * summaries of `maxTokens`, and a deadline a piece meets on a loaded two-core machine (these
 * tests check windows and round trips, not deadlines).
 */
export function realSummarizerEnv(server: LlamaServer, maxTokens: number): Record<string, string> {
  return {
    COMPACTOR_SUMMARIZER: 'openai',
    OPENAI_BASE_URL: server.baseURL,
    OPENAI_API_KEY: 'unused',
    COMPACTOR_SUMMARIZER_MODEL: server.model,
    COMPACTOR_SUMMARIZER_MAX_TOKENS: String(maxTokens),
    COMPACTOR_SUMMARIZER_TIMEOUT: '240s',
  };
}
