// One set of defaults (src/core/compaction/defaults.ts): every entry point keeps the task — the
// first user message — verbatim, as agentRun always did; a hard trim included.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { planAgentRun } from '../../src/core/agent/agent-input.js';
import { COMPACTION_DEFAULTS, LIBRARY_KEEP_TASK } from '../../src/core/compaction/defaults.js';
import { REFERENCE_EXACT, resolveOptions } from '../../src/core/compaction/options.js';
import { capText, TASK_HEADING } from '../../src/core/compaction/transcript.js';
import { Compactor, type ChatMessage } from '../../src/index.js';
import { charCounter, httpError, scriptedSummarizer, system, toolRounds, user } from '../support/messages.js';
import { closedPort } from '../support/closed-port.js';

const TASK = 'Find out why the tests fail in src/app.ts and fix it.';
const messages: ChatMessage[] = [system('You are a coding agent.'), user(TASK), ...toolRounds(20, 600)];
const tokens = charCounter.count(messages);

const directories: string[] = [];
afterAll(() => directories.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

describe('keepTask', () => {
  it('the defaults module says it: on for agentRun and the CLI, off for the library (a transcript replays by sticky flags)', () => {
    expect(COMPACTION_DEFAULTS.keepTask).toBe(true);
    expect(LIBRARY_KEEP_TASK).toBe(false);
    expect(resolveOptions({ contextBudget: 1000 }).keepTask).toBe(LIBRARY_KEEP_TASK);
    expect(REFERENCE_EXACT.keepTask).toBe(false);
  });

  it('a hard trim keeps the task (regression: it dropped the first user message)', async () => {
    const compactor = new Compactor({
      summarizer: scriptedSummarizer(httpError(401)),
      counter: charCounter,
      contextBudget: Math.floor(tokens / 3),
      keepTask: true,
    });
    const result = await compactor.compact(messages);
    expect(result.fallback).toBe(true);
    expect(result.messages.slice(0, 2)).toEqual(messages.slice(0, 2));
    // Off, it is a middle message like any other: the same trim drops it.
    const reference = await new Compactor({
      summarizer: scriptedSummarizer(httpError(401)),
      counter: charCounter,
      contextBudget: Math.floor(tokens / 3),
      keepTask: false,
    }).compact(messages);
    expect(reference.messages.map((message) => message.content)).not.toContain(TASK);
  });

  it('a summary replaces the middle after the task, which stays verbatim', async () => {
    const result = await new Compactor({
      summarizer: scriptedSummarizer('short summary'),
      counter: charCounter,
      contextBudget: Math.floor(tokens / 3),
      keepTask: true,
    }).compact(messages);
    expect(result.fallback).toBe(false);
    expect(result.messages[1]).toEqual(messages[1]);
    expect(result.messages.filter((message) => String(message.content).includes('short summary'))).toHaveLength(1);
    expect(result.messages.filter((message) => message.content === TASK)).toHaveLength(1);
  });

  describe('the summarizer is told the task it does not summarize', () => {
    const compactWith = async (options: { keepTask: boolean }, input: ChatMessage[] = messages) => {
      const summarizer = scriptedSummarizer('short summary');
      await new Compactor({
        summarizer,
        counter: charCounter,
        contextBudget: Math.floor(tokens / 3),
        ...options,
      }).compact(input);
      return summarizer.requests;
    };

    it('a task kept by keepTask is in the request and its instruction, under TASK_HEADING', async () => {
      const [request] = await compactWith({ keepTask: true });
      expect(request?.task).toBe(TASK);
      expect(request?.instruction).toContain(`${TASK_HEADING}\n${TASK}`);
      expect(request?.middle.map((message) => message.content)).not.toContain(TASK);
    });

    it('a task kept by its sticky flag (as agentRun pins it) is told too', async () => {
      const pinned = messages.map((message) => (message.content === TASK ? { ...message, sticky: true } : message));
      const [request] = await compactWith({ keepTask: false }, pinned);
      expect(request?.task).toBe(TASK);
    });

    it('a task in the middle is summarized with it, not told apart', async () => {
      const [request] = await compactWith({ keepTask: false });
      expect(request?.task).toBeUndefined();
      expect(request?.instruction).not.toContain(TASK_HEADING);
      expect(request?.middle.map((message) => message.content)).toContain(TASK);
    });

    it('a long task is cut at toolResultCap, as a tool result is', async () => {
      const long = `${TASK} ${'Details. '.repeat(400)}`;
      const input = messages.map((message) => (message.content === TASK ? { ...message, content: long } : message));
      const [request] = await compactWith({ keepTask: true }, input);
      expect(request?.task).toBe(capText(long.trim(), 2000));
    });
  });

  it('`temporal-compactor compact conv.json --budget 2000` keeps the task in a hard trim (regression)', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'keep-task-'));
    directories.push(directory);
    const file = join(directory, 'conv.json');
    writeFileSync(file, JSON.stringify(messages));
    let out = '';
    let err = '';
    const env = { OPENAI_BASE_URL: `http://127.0.0.1:${await closedPort()}/v1`, OPENAI_API_KEY: 'sk-test' };
    const code = await main(['compact', file, '--budget', '2000', '--max-attempts', '1'], {
      stdout: (text) => (out += text),
      stderr: (text) => (err += text),
      env,
    });
    expect(code, err).toBe(3);
    const compacted: unknown = JSON.parse(out);
    expect(Array.isArray(compacted) ? compacted.slice(0, 2) : compacted).toEqual(messages.slice(0, 2));
    expect(readFileSync(file, 'utf8')).toBe(JSON.stringify(messages));
  });

  it('agentRun keeps its own keepTask (input.keepTask) and hands the engine none', () => {
    const base = {
      messages,
      model: { provider: 'replay', trajectory: 't', contextWindow: 8000, maxOutputTokens: 500 },
      compaction: {},
    };
    const plan = planAgentRun(base);
    expect(plan.keepTask).toBe(COMPACTION_DEFAULTS.keepTask);
    expect(plan.compaction.options.keepTask).toBe(false);
    expect(() => planAgentRun({ ...base, compaction: { keepTask: false } })).toThrow(
      /^input\.compaction\.keepTask: the run keeps its task by input\.keepTask/,
    );
  });
});
