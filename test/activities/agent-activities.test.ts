// The agent loop's activities under MockActivityEnvironment: `chat` against the fake OpenAI server
// (tool calls, usage, failure mapping) and with the replay provider (recorded turns, BPE usage),
// the built-in read-only tools under a root (paths outside it refused), and `replayTool`.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BUILT_IN_TOOLS } from '../../src/core/agent/tool-declarations.js';
import { FailureType, type ChatMessage } from '../../src/index.js';
import type { ChatActivityInput, ChatActivityOutput } from '../../src/activities/chat.js';
import { requestCounter } from '../../src/core/agent/preflight.js';
import { createCountTokensActivity } from '../../src/activities/count-tokens.js';
import { createRecordSessionActivity } from '../../src/activities/session.js';
import { createBuiltInTools } from '../../src/activities/tools.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { REPO_ROOT } from '../../corpus/index.js';
import { loadTrajectory, openingOf, replayActivities, trajectoryDir } from '../support/agent.js';

/** MockActivityEnvironment.run does not infer the result type: name it once here. */
function runChat(
  chat: (input: ChatActivityInput) => Promise<ChatActivityOutput>,
  input: ChatActivityInput,
): Promise<ChatActivityOutput> {
  return new MockActivityEnvironment().run<[ChatActivityInput], ChatActivityOutput, typeof chat>(chat, input);
}

async function failureOf(run: () => Promise<unknown>): Promise<ApplicationFailure> {
  try {
    const output = await run();
    throw new Error(`expected a failure, got ${JSON.stringify(output).slice(0, 200)}`);
  } catch (error) {
    if (!(error instanceof ApplicationFailure)) throw error;
    return error;
  }
}

const completion = (
  message: Record<string, unknown>,
  usage: Record<string, unknown> = { prompt_tokens: 321, completion_tokens: 12, total_tokens: 333 },
) => ({
  kind: 'status' as const,
  status: 200,
  body: {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 0,
    model: 'fake',
    choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', ...message } }],
    usage,
  },
});

describe('chat activity', () => {
  describe('provider openai (fake server)', () => {
    let server: FakeOpenAI;
    let activities: ReturnType<typeof replayActivities>;
    const input = (): ChatActivityInput => ({
      backend: { provider: 'openai', model: 'fake-agent', contextWindow: 8000, maxOutputTokens: 500 },
      messages: [
        { role: 'system', content: 'Be brief.', sticky: true },
        { role: 'user', content: 'Read a.txt' },
      ],
      tools: [BUILT_IN_TOOLS.fs_read],
      turn: 0,
    });
    beforeEach(async () => {
      server = await startFakeOpenAI();
      activities = replayActivities({
        openai: new OpenAI({ baseURL: server.baseURL, apiKey: 'test-key', maxRetries: 0 }),
      });
    });
    afterEach(() => server.close());

    it('sends the conversation without harness flags, the tools and max_completion_tokens; returns tool calls and billed usage', async () => {
      server.script(
        completion({
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'fs_read', arguments: '{"path":"a.txt"}' } },
          ],
        }),
      );
      const output = await runChat(activities.chat, input());
      expect(output).toEqual({
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'fs_read', arguments: '{"path":"a.txt"}' } },
          ],
        },
        usage: { promptTokens: 321, completionTokens: 12 },
        finishReason: 'tool_calls',
      });
      const body = server.requests[0]?.body;
      expect(body).toMatchObject({ model: 'fake-agent', max_completion_tokens: 500, tools: [BUILT_IN_TOOLS.fs_read] });
      expect(body).toHaveProperty('messages', [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Read a.txt' },
      ]);
    });

    it("reports the provider's cached prompt tokens (prompt_tokens_details.cached_tokens) when it gives them", async () => {
      server.script(
        completion(
          { content: 'ok' },
          {
            prompt_tokens: 1_000,
            completion_tokens: 5,
            total_tokens: 1_005,
            prompt_tokens_details: { cached_tokens: 768 },
          },
        ),
      );
      expect((await runChat(activities.chat, input())).usage).toEqual({
        promptTokens: 1_000,
        cachedPromptTokens: 768,
        completionTokens: 5,
      });
    });

    it('a text answer without content becomes an empty assistant message', async () => {
      server.script(completion({ content: null }));
      const output = await runChat(activities.chat, input());
      expect(output.message).toEqual({ role: 'assistant', content: '' });
    });

    it.each([400, 401, 403, 404])('HTTP %i → non-retryable Chat.Rejected', async (status) => {
      server.script({ kind: 'status', status });
      const failure = await failureOf(() => runChat(activities.chat, input()));
      expect(failure.type).toBe(FailureType.Chat.Rejected);
      expect(failure.nonRetryable).toBe(true);
    });

    it('429 with Retry-After → retryable Chat.Transient with nextRetryDelay', async () => {
      server.script({ kind: 'status', status: 429, headers: { 'retry-after': '3' } });
      const failure = await failureOf(() => runChat(activities.chat, input()));
      expect(failure.type).toBe(FailureType.Chat.Transient);
      expect(failure.nonRetryable).toBe(false);
      expect(failure.nextRetryDelay).toBe(3000);
    });

    it('500 → retryable Chat.Transient; a 200 without choices → retryable Chat.Malformed', async () => {
      server.script({ kind: 'status', status: 500 }, { kind: 'status', status: 200, body: { choices: [] } });
      const transient = await failureOf(() => runChat(activities.chat, input()));
      expect([transient.type, transient.nonRetryable]).toEqual([FailureType.Chat.Transient, false]);
      const malformed = await failureOf(() => runChat(activities.chat, input()));
      expect([malformed.type, malformed.nonRetryable]).toEqual([FailureType.Chat.Malformed, false]);
    });

    it('a reply whose tool calls share an id → retryable Chat.Malformed: appended, it would fail the run at its next validation (regression)', async () => {
      const call = { id: 'call_1', type: 'function', function: { name: 'fs_read', arguments: '{"path":"a.txt"}' } };
      server.script(
        completion({
          content: null,
          tool_calls: [call, { ...call, function: { name: 'fs_read', arguments: '{"path":"b.txt"}' } }],
        }),
      );
      const failure = await failureOf(() => runChat(activities.chat, input()));
      expect([failure.type, failure.nonRetryable, failure.message]).toEqual([
        FailureType.Chat.Malformed,
        false,
        'chat: reply.tool_calls[1].id: "call_1" is also the id of tool_calls[0]: the ids of one assistant turn must differ (a result could not say which call it answers)',
      ]);
    });

    it(
      'a body that stalls past the deadline → retryable Chat.Transient (the deadline the summarizer has too)',
      { timeout: 10_000 },
      async () => {
        server.script({ kind: 'stalled-body' });
        const chat = replayActivities({
          openai: new OpenAI({ baseURL: server.baseURL, apiKey: 'test-key', maxRetries: 0 }),
          chatTimeoutMs: 200,
        }).chat;
        const failure = await failureOf(() => runChat(chat, input()));
        expect([failure.type, failure.nonRetryable, failure.message]).toEqual([
          FailureType.Chat.Transient,
          false,
          `chat: no complete answer within 200 ms (${server.baseURL})`,
        ]);
        expect(server.requests).toHaveLength(1);
      },
    );

    it('a server that is down → retryable Chat.Transient naming its URL and the refusal (regression: no URL)', async () => {
      const baseURL = server.baseURL;
      await server.close();
      const chat = replayActivities({ chatServer: { baseURL, apiKey: 'test-key' } }).chat;
      const failure = await failureOf(() => runChat(chat, input()));
      expect(failure.type).toBe(FailureType.Chat.Transient);
      expect(failure.message).toMatch(
        new RegExp(
          `^chat: connection to ${baseURL.replace(/[.]/g, '\\.')} failed: Connection error\\. \\(.*ECONNREFUSED`,
        ),
      );
      server = await startFakeOpenAI();
    });

    it('no server configured → non-retryable Chat.Rejected naming OPENAI_API_KEY and OPENAI_BASE_URL', async () => {
      const saved = { key: process.env.OPENAI_API_KEY, admin: process.env.OPENAI_ADMIN_KEY };
      delete process.env.OPENAI_API_KEY;
      delete process.env.OPENAI_ADMIN_KEY;
      try {
        const chat = replayActivities({ chatServer: {} }).chat;
        const failure = await failureOf(() => runChat(chat, input()));
        expect([failure.type, failure.nonRetryable]).toEqual([FailureType.Chat.Rejected, true]);
        expect(failure.message).toMatch(/^chat: no model server configured: set OPENAI_API_KEY .* or OPENAI_BASE_URL /);
      } finally {
        if (saved.key !== undefined) process.env.OPENAI_API_KEY = saved.key;
        if (saved.admin !== undefined) process.env.OPENAI_ADMIN_KEY = saved.admin;
      }
    });

    it('builds its client from chatServer when given no client: that base URL and key, not the environment', async () => {
      server.script(completion({ content: 'ok' }));
      const chat = replayActivities({ chatServer: { baseURL: server.baseURL, apiKey: 'sk-chat-server-key' } }).chat;
      expect((await runChat(chat, input())).message).toEqual({ role: 'assistant', content: 'ok' });
      expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-chat-server-key');
    });

    it('bad messages → non-retryable Compaction.InvalidInput naming the field', async () => {
      const failure = await failureOf(() =>
        runChat(activities.chat, { ...input(), messages: JSON.parse('[{"role":"tool","content":"x"}]') }),
      );
      expect([failure.type, failure.nonRetryable]).toEqual([FailureType.Compaction.InvalidInput, true]);
      expect(failure.message).toBe('messages[0].tool_call_id: required for role "tool"');
      expect(server.requests).toHaveLength(0);
    });
  });

  describe('provider replay', () => {
    const name = 'taubench_gpt4o_airline_task2_trial1';
    const trajectory = loadTrajectory(name);
    const activities = replayActivities();
    const backend = { provider: 'replay' as const, trajectory: name, contextWindow: 100_000, maxOutputTokens: 1000 };

    it('returns recorded turn `turn` and bills the BPE count of the request actually sent', async () => {
      const messages = openingOf(name);
      const output = await runChat(activities.chat, { backend, messages, tools: [], turn: 0 });
      expect(output.message).toEqual(trajectory[messages.length]);
      expect(output.usage?.promptTokens).toBe(requestCounter('o200k_base', []).count(messages));
      const withTools = await runChat(activities.chat, { backend, messages, tools: [BUILT_IN_TOOLS.grep], turn: 0 });
      expect(withTools.usage?.promptTokens).toBe(requestCounter('o200k_base', [BUILT_IN_TOOLS.grep]).count(messages));
      expect(withTools.usage?.promptTokens).toBeGreaterThan(output.usage?.promptTokens ?? Infinity);
    });

    it('hands back the recorded user reply after a text turn, and marks the last turn', async () => {
      const assistantTurns = trajectory.filter((message) => message.role === 'assistant');
      const textTurn = assistantTurns.findIndex((message) => (message.tool_calls ?? []).length === 0);
      const output = await runChat(activities.chat, { backend, messages: openingOf(name), tools: [], turn: textTurn });
      const at = trajectory.indexOf(assistantTurns[textTurn] as ChatMessage);
      expect(output.userMessages).toEqual([trajectory[at + 1]]);
      expect(output.endOfTrajectory).toBeUndefined();
      const last = await runChat(activities.chat, {
        backend,
        messages: openingOf(name),
        tools: [],
        turn: assistantTurns.length - 1,
      });
      expect(last.endOfTrajectory).toBe(true);
    });

    it('a turn past the recording, or an unknown trajectory, is a non-retryable Replay failure', async () => {
      const past = await failureOf(() =>
        runChat(activities.chat, { backend, messages: openingOf(name), tools: [], turn: 10_000 }),
      );
      expect([past.type, past.nonRetryable]).toEqual([FailureType.Replay.NotRecorded, true]);
      const missing = await failureOf(() =>
        runChat(activities.chat, {
          backend: { ...backend, trajectory: 'no-such-run' },
          messages: openingOf(name),
          tools: [],
          turn: 0,
        }),
      );
      expect([missing.type, missing.nonRetryable]).toEqual([FailureType.Replay.TrajectoryNotFound, true]);
      expect(missing.message).toContain('no-such-run');
      // A relative name that climbs out of the trajectory directory to a file that exists (this repository's package.json).
      const outside = relative(trajectoryDir(), join(REPO_ROOT, 'package.json'));
      expect(outside.startsWith('..')).toBe(true);
      const escape = await failureOf(() =>
        runChat(activities.chat, {
          backend: { ...backend, trajectory: outside },
          messages: openingOf(name),
          tools: [],
          turn: 0,
        }),
      );
      expect([escape.type, escape.message]).toEqual([
        FailureType.Replay.TrajectoryNotFound,
        expect.stringContaining('outside the trajectory directory'),
      ]);
    });

    it('replayTool returns the recorded result message verbatim', async () => {
      const result = trajectory.find((message) => message.role === 'tool');
      const output = await new MockActivityEnvironment().run(activities.replayTool, {
        trajectory: name,
        toolCallId: result?.tool_call_id ?? '',
      });
      expect(output).toEqual(result);
      const unknown = await failureOf(() =>
        new MockActivityEnvironment().run(activities.replayTool, { trajectory: name, toolCallId: 'call_nope' }),
      );
      expect([unknown.type, unknown.nonRetryable]).toEqual([FailureType.Replay.NotRecorded, true]);
    });
  });
});

describe('built-in tools', () => {
  let root: string;
  let outside: string;
  let tools: ReturnType<typeof replayActivities>;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'compactor-tools-'));
    outside = mkdtempSync(join(tmpdir(), 'compactor-outside-'));
    mkdirSync(join(root, 'src'));
    writeFileSync(join(root, 'src', 'app.py'), 'import os\n\ndef main():\n    print("hello")\n');
    writeFileSync(join(root, 'README.md'), 'hello world\n');
    writeFileSync(join(outside, 'secret.txt'), 'top secret\n');
    symlinkSync(join(outside, 'secret.txt'), join(root, 'link.txt'));
    tools = replayActivities({ toolsRoot: root });
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });
  const run = <T>(fn: (args: unknown) => Promise<T>, args: unknown) => new MockActivityEnvironment().run(fn, args);

  it('the built-in tools heartbeat while they run, so a killed worker is noticed within the heartbeat timeout; a call that ends within the first interval sends none', async () => {
    // A heartbeat every quarter of the heartbeat timeout.
    const heartbeatsOf = async (
      heartbeatTimeoutMs: number,
      tool: (args: unknown) => Promise<unknown>,
      args: unknown,
    ) => {
      const environment = new MockActivityEnvironment({ heartbeatTimeoutMs });
      let heartbeats = 0;
      environment.on('heartbeat', () => (heartbeats += 1));
      await environment.run(tool, args);
      return heartbeats;
    };
    writeFileSync(join(root, 'evil.txt'), `${'a'.repeat(42)}!\n`);
    const slow = createBuiltInTools({ root, grepTimeoutMs: 600 });
    try {
      // (a+)+$ backtracks until the search's deadline, 600 ms: a heartbeat every 50 ms meanwhile.
      expect(await heartbeatsOf(200, slow.grep, { pattern: '(a+)+$', path: 'evil.txt' })).toBeGreaterThanOrEqual(2);
      // A small file is read well within the tools' default 10 s heartbeat timeout's first quarter.
      expect(await heartbeatsOf(10_000, tools.fs_read, { path: 'src/app.py' })).toBe(0);
    } finally {
      rmSync(join(root, 'evil.txt'));
    }
    // Each runs inside the heartbeat wrapper, which also ends it when the activity is cancelled.
    for (const [tool, args] of [
      [tools.fs_read, { path: 'src/app.py' }],
      [tools.fs_list, {}],
      [tools.grep, { pattern: 'hello' }],
    ] as const) {
      const environment = new MockActivityEnvironment();
      environment.cancel();
      await expect(environment.run(tool, args), tool.name).rejects.toMatchObject({ name: 'CancelledFailure' });
    }
    expect(
      Object.keys(tools)
        .filter((name) => ['fs_read', 'fs_list', 'grep'].includes(name))
        .map((name) => Reflect.get(tools, name).name),
    ).toEqual(['fs_read', 'fs_list', 'grep']);
  });

  it('fs_read numbers lines and honours offset/limit', async () => {
    expect(await run(tools.fs_read, { path: 'src/app.py' })).toBe(
      '     1\timport os\n     2\t\n     3\tdef main():\n     4\t    print("hello")\n     5\t',
    );
    expect(await run(tools.fs_read, { path: 'src/app.py', offset: 3, limit: 1 })).toBe('     3\tdef main():');
  });

  it('fs_list lists a directory, directories with a slash', async () => {
    expect(await run(tools.fs_list, {})).toBe('README.md\nlink.txt\nsrc/');
  });

  it('grep prints path:line: text per match', async () => {
    expect(await run(tools.grep, { pattern: 'hello' })).toBe(
      'README.md:1: hello world\nsrc/app.py:4:     print("hello")',
    );
    expect(await run(tools.grep, { pattern: 'HELLO', path: 'src', ignoreCase: true })).toBe(
      'src/app.py:4:     print("hello")',
    );
    expect(await run(tools.grep, { pattern: 'absent' })).toBe('no matches for /absent/ in .');
  });

  it.each([
    ['fs_read', { path: '../etc/passwd' }],
    ['fs_read', { path: '/etc/passwd' }],
    ['fs_list', { path: '..' }],
    ['grep', { pattern: 'x', path: '../../' }],
    ['fs_read', { path: 'link.txt' }],
  ] as const)('%s %j outside the root → non-retryable Tool.PathOutsideRoot that says so', async (tool, args) => {
    const failure = await failureOf(() => run(tools[tool], args));
    expect([failure.type, failure.nonRetryable]).toEqual([FailureType.Tool.PathOutsideRoot, true]);
    expect(failure.message).toContain('is outside the tool root');
  });

  it('bad arguments and missing files fail clearly and are not retried', async () => {
    const bad = await failureOf(() => run(tools.fs_read, { file: 'x' }));
    expect([bad.type, bad.nonRetryable]).toEqual([FailureType.Tool.InvalidArguments, true]);
    const badPattern = await failureOf(() => run(tools.grep, { pattern: '(' }));
    expect([badPattern.type, badPattern.message]).toEqual([
      FailureType.Tool.InvalidArguments,
      expect.stringContaining('arguments.pattern'),
    ]);
    const missing = await failureOf(() => run(tools.fs_read, { path: 'nope.txt' }));
    expect([missing.type, missing.nonRetryable, missing.message]).toEqual([
      FailureType.Tool.NotFound,
      true,
      'fs_read: no such file or directory: nope.txt',
    ]);
  });
});

/** What `activity` refuses `input` with: a non-retryable `Compaction.InvalidInput` failure. */
async function refusal(activity: (input: never) => Promise<unknown>, input: unknown): Promise<ApplicationFailure> {
  const failure = await activity(input as never).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(failure).toBeInstanceOf(ApplicationFailure);
  expect(failure).toMatchObject({ type: FailureType.Compaction.InvalidInput, nonRetryable: true });
  return failure as ApplicationFailure;
}

describe('countTokens activity', () => {
  it('counts each text, and refuses input it cannot count naming the field and what it saw', async () => {
    const countTokens = createCountTokensActivity();
    expect(await countTokens({ encoding: 'o200k_base', texts: ['hello world', ''] })).toEqual({ tokens: [2, 0] });
    for (const [input, field, reason] of [
      [{ encoding: 'p50k', texts: [] }, 'input.encoding', 'must be one of o200k_base, cl100k_base'],
      [{ encoding: 'o200k_base', texts: ['a', 7] }, 'input.texts[1]', 'expected string, received number'],
    ] as const) {
      const { message } = await refusal(countTokens, input);
      expect(message).toContain(`${field}: `);
      expect(message).toContain(reason);
    }
  });
});

describe('recordSession activity', () => {
  it('acknowledges a batch, and refuses one it cannot place naming the field and what it saw', async () => {
    const recordSession = createRecordSessionActivity();
    expect(await recordSession({ from: 4, lines: [] })).toEqual({ recorded: 0, next: 4 });
    for (const [input, field, reason] of [
      [{ from: -1, lines: [] }, 'input.from', 'must be a non-negative integer, got -1'],
      [{ from: 1.5, lines: [] }, 'input.from', 'expected int, received number'],
      [{ from: 0, lines: 'x' }, 'input.lines', 'expected array, received string'],
      [null, 'input', 'expected object, received null'],
    ] as const) {
      const { message } = await refusal(recordSession, input);
      expect(message.startsWith(`${field}: `), message).toBe(true);
      expect(message).toContain(reason);
    }
  });
});
