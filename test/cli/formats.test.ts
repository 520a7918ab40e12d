// `temporal-compactor compact --format auto|openai|anthropic`: an Anthropic file (a request body or a
// message array) comes back in Anthropic form, its other fields untouched, compacted as the library
// compacts it, in this process and through compactConversation on the dev server; auto detects the
// format and refuses a file with marks of two, naming them and where they are.
import { COMPACTION_DEFAULTS } from '../../src/core/compaction/defaults.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type CliIo } from '../../src/cli/main.js';
import { Compactor } from '../../src/compactor.js';
import type { AnthropicRequest } from '../../src/core/formats/anthropic-schema.js';
import type { ChatMessage } from '../../src/core/types.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { normalizeArguments, toAnthropic } from '../support/anthropic.js';
import { toAiSdk } from '../support/ai-sdk.js';
import { bundleWorkflows, testConnection, uniqueId, type TestConnection } from '../support/temporal.js';

const TRAJECTORY = fileURLToPath(
  new URL('../../examples/trajectories/swesmith_claude37_getmoto__moto-pr_6055.json', import.meta.url),
);
const openai = (): ChatMessage[] => normalizeArguments(JSON.parse(readFileSync(TRAJECTORY, 'utf8')));
const body = (): AnthropicRequest => toAnthropic(openai());

function capture(env: Record<string, string | undefined> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (text) => (out += text), stderr: (text) => (err += text), env, out: () => out, err: () => err };
}

let directory: string;
beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), 'cli-formats-'));
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function fileWith(name: string, value: unknown): string {
  const path = join(directory, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

describe('temporal-compactor compact --format', () => {
  it('auto: a request body is detected as Anthropic and comes back a body, compacted as the library does', async () => {
    const input = body();
    const io = capture();
    expect(await main(['compact', fileWith('body.json', input), '--budget', '8000', '--age-observations'], io)).toBe(0);
    const output: unknown = JSON.parse(io.out());
    const expected = await new Compactor({
      summarizer: createExtractiveSummarizer(),
      contextBudget: 8000,
      ageObservations: true,
      keepTask: COMPACTION_DEFAULTS.keepTask,
    }).compact(input, { format: 'anthropic' });
    expect(output).toEqual(JSON.parse(JSON.stringify(expected.request)));
    expect(output).toMatchObject({ model: input.model, max_tokens: input.max_tokens, system: input.system });
    expect(expected.summary).not.toBeNull();
    expect(io.err()).toContain(`${input.messages.length} messages (Anthropic Messages request body, detected)`);
    expect(io.err()).toContain(`${input.messages.length} → ${expected.messages.length}`);
  });

  it('anthropic: a bare message array comes back an array of Anthropic messages', async () => {
    const { messages } = body();
    const io = capture();
    const path = fileWith('array.json', messages);
    expect(await main(['compact', path, '--budget', '6000', '--format', 'anthropic'], io)).toBe(0);
    const output: unknown = JSON.parse(io.out());
    const expected = await new Compactor({
      summarizer: createExtractiveSummarizer(),
      contextBudget: 6000,
      keepTask: COMPACTION_DEFAULTS.keepTask,
    }).compact(messages, { format: 'anthropic' });
    expect(output).toEqual(JSON.parse(JSON.stringify(expected.messages)));
    expect(io.err()).toContain('(Anthropic Messages JSON array)');
  });

  it('auto: AI SDK messages in { "messages": [...] } are detected and come back AI SDK messages, other fields kept', async () => {
    const messages = toAiSdk(openai());
    const io = capture();
    const path = fileWith('ai-sdk.json', { id: 'chat-1', messages });
    expect(await main(['compact', path, '--budget', '6000', '--age-observations'], io)).toBe(0);
    const expected = await new Compactor({
      summarizer: createExtractiveSummarizer(),
      contextBudget: 6000,
      ageObservations: true,
      keepTask: COMPACTION_DEFAULTS.keepTask,
    }).compact(messages, { format: 'ai-sdk' });
    expect(JSON.parse(io.out())).toEqual({ id: 'chat-1', messages: JSON.parse(JSON.stringify(expected.messages)) });
    expect(expected.summary).not.toBeNull();
    expect(io.err()).toContain(`${messages.length} messages (AI SDK messages { "messages": [...] }, detected)`);
  });

  it('auto refuses a file with marks of two formats, naming one of each and where', async () => {
    const mixed = [...openai().slice(0, 3), ...body().messages.slice(1, 3)];
    const io = capture();
    expect(await main(['compact', fileWith('mixed.json', mixed)], io)).toBe(1);
    expect(io.err()).toMatch(
      /cannot tell the message format: a "tool_calls" field at messages\[\d+\]\.tool_calls \(OpenAI chat\), but a "tool_use" part at messages\[\d+\]\.content\[\d+\]\.type \(Anthropic Messages\); name it with --format openai\|anthropic\|ai-sdk/,
    );
    expect(io.out()).toBe('');
  });

  it('anthropic on an OpenAI file names the message and field that is not Anthropic', async () => {
    const io = capture();
    expect(await main(['compact', TRAJECTORY, '--format', 'anthropic'], io)).toBe(1);
    expect(io.err()).toContain(`${TRAJECTORY}: messages[0].role: must be user or assistant`);
  });

  it('a file that is no conversation says what it saw', async () => {
    const io = capture();
    expect(await main(['compact', fileWith('prompt.json', { model: 'm', prompt: 'hi' })], io)).toBe(1);
    expect(io.err()).toContain('got an object with keys model, prompt');
  });

  it('an unknown format is a usage error (exit 2) naming the choices', async () => {
    const io = capture();
    expect(await main(['compact', TRAJECTORY, '--format', 'gemini'], io)).toBe(2);
    expect(io.err()).toContain('--format takes auto, openai, anthropic, ai-sdk, got "gemini"');
  });

  describe('--via-workflow on the dev server', { timeout: 180_000 }, () => {
    let t: TestConnection;
    let bundlePath: string;
    beforeAll(async () => {
      t = await testConnection();
      const bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
      bundlePath = join(directory, 'workflow-bundle.js');
      writeFileSync(bundlePath, bundle.code);
    });

    it('a request body gives the same output as in this process (system prompt and other fields kept)', async () => {
      const path = fileWith('body-workflow.json', body());
      const local = capture();
      expect(await main(['compact', path, '--budget', '6000'], local)).toBe(0);
      const io = capture({
        TEMPORAL_ADDRESS: t.address,
        TEMPORAL_NAMESPACE: t.namespace,
        COMPACTOR_TASK_QUEUE: uniqueId('compact-cli-anthropic'),
        COMPACTOR_WORKFLOW_BUNDLE: bundlePath,
      });
      expect(await main(['compact', path, '--budget', '6000', '--via-workflow'], io), io.err()).toBe(0);
      expect(io.out()).toBe(local.out());
      expect(io.err()).toContain('run by a worker in this process');
    });
  });
});
