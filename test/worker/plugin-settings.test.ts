// Settings are read at the edge: compactorPlugin (and createWorker, the CLI and the demo through it)
// hands the activities the tool root, the trajectory directory and the chat server from the
// configuration; the activities and the OpenAI adapter read no environment of their own.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChatActivityInput } from '../../src/activities/index.js';
import { loadConfig } from '../../src/config.js';
import { FailureType } from '../../src/core/errors.js';
import { createOpenAIClient, PLACEHOLDER_API_KEY } from '../../src/llm/openai-adapter.js';
import { compactorPlugin, type CompactorPluginOptions } from '../../src/worker/plugin.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';

/** An activity a plugin registers on an activities-only worker, run as an activity would be (one input). */
type RegisteredActivity = (input: unknown) => Promise<unknown>;

/** The activities a plugin registers on an activities-only worker, by name. */
function pluginActivities(options: CompactorPluginOptions = {}): (name: string) => RegisteredActivity {
  const plugin = compactorPlugin({
    register: 'activities',
    summarizer: createExtractiveSummarizer(),
    dataConverter: {},
    tracing: 'off',
    ...options,
  });
  const { activities = {} } = plugin.configureWorker({ taskQueue: 'settings-test' });
  return (name) => {
    const activity: unknown = Reflect.get(activities, name);
    if (typeof activity !== 'function') throw new Error(`the plugin registered no ${name} activity`);
    return async (input) => {
      const output: unknown = await Reflect.apply(activity, undefined, [input]);
      return output;
    };
  };
}

function run(activity: RegisteredActivity, input: unknown): Promise<unknown> {
  return new MockActivityEnvironment().run<[unknown], unknown, RegisteredActivity>(activity, input);
}

/** What the plugin's `fs_list` lists at the tool root. */
function listed(activities: (name: string) => RegisteredActivity): Promise<unknown> {
  return run(activities('fs_list'), {});
}

async function failureOf(run: () => Promise<unknown>): Promise<ApplicationFailure> {
  try {
    const output = await run();
    throw new Error(`expected a failure, got ${JSON.stringify(output)}`);
  } catch (error) {
    if (!(error instanceof ApplicationFailure)) throw error;
    return error;
  }
}

describe('the plugin hands the activities their settings', () => {
  const roots: string[] = [];
  /** A directory holding one file of the given name. */
  const rootWith = (file: string): string => {
    const root = mkdtempSync(join(tmpdir(), 'compactor-settings-'));
    writeFileSync(join(root, file), 'x\n');
    roots.push(root);
    return root;
  };
  afterEach(() => vi.unstubAllEnvs());
  afterAll(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })));

  describe('toolsRoot', () => {
    it('COMPACTOR_TOOLS_ROOT of the environment, when neither a configuration nor a root is given', async () => {
      vi.stubEnv('COMPACTOR_TOOLS_ROOT', rootWith('from-env.txt'));
      expect(await listed(pluginActivities())).toBe('from-env.txt');
    });

    it('the configuration handed to the plugin, over the environment', async () => {
      vi.stubEnv('COMPACTOR_TOOLS_ROOT', rootWith('from-env.txt'));
      const config = loadConfig({ env: { COMPACTOR_TOOLS_ROOT: rootWith('from-config.txt') } });
      expect(await listed(pluginActivities({ config }))).toBe('from-config.txt');
    });

    it('activities.toolsRoot, over both', async () => {
      vi.stubEnv('COMPACTOR_TOOLS_ROOT', rootWith('from-env.txt'));
      const config = loadConfig({ env: { COMPACTOR_TOOLS_ROOT: rootWith('from-config.txt') } });
      expect(await listed(pluginActivities({ config, activities: { toolsRoot: rootWith('given.txt') } }))).toBe(
        'given.txt',
      );
    });

    it('none when nothing names one: the built-in tools read nothing, not even the current directory', async () => {
      vi.stubEnv('COMPACTOR_TOOLS_ROOT', '');
      const failure = await failureOf(() => listed(pluginActivities()));
      expect([failure.type, failure.message]).toEqual([
        'Tool.NoRoot',
        'fs_list: this worker has no tool root (COMPACTOR_TOOLS_ROOT): the built-in tools read nothing',
      ]);
    });
  });

  describe('toolsAllow', () => {
    const readEnv = (activities: (name: string) => RegisteredActivity): Promise<unknown> =>
      run(activities('fs_read'), { path: '.env' });

    it('COMPACTOR_TOOLS_ALLOW of the environment lets the tools read what it names; unset, they refuse it', async () => {
      const root = rootWith('.env');
      vi.stubEnv('COMPACTOR_TOOLS_ROOT', root);
      expect((await failureOf(() => readEnv(pluginActivities()))).type).toBe('Tool.SecretPath');
      vi.stubEnv('COMPACTOR_TOOLS_ALLOW', '.env');
      expect(await readEnv(pluginActivities())).toBe('     1\tx\n     2\t');
    });

    it('activities.toolsAllow, over the configuration', async () => {
      const root = rootWith('.env');
      const config = loadConfig({ env: { COMPACTOR_TOOLS_ROOT: root, COMPACTOR_TOOLS_ALLOW: '.env' } });
      expect(await readEnv(pluginActivities({ config }))).toBe('     1\tx\n     2\t');
      const refused = await failureOf(() => readEnv(pluginActivities({ config, activities: { toolsAllow: [] } })));
      expect(refused.type).toBe('Tool.SecretPath');
    });
  });

  describe('trajectoryDir', () => {
    it('COMPACTOR_TRAJECTORY_DIR of the environment: replayTool looks there', async () => {
      const dir = rootWith('unrelated.json');
      vi.stubEnv('COMPACTOR_TRAJECTORY_DIR', dir);
      const replayTool = pluginActivities()('replayTool');
      const failure = await failureOf(() => run(replayTool, { trajectory: 'missing', toolCallId: 'call_1' }));
      expect(failure.message).toBe(
        `replay: no trajectory "missing" in ${dir} (set COMPACTOR_TRAJECTORY_DIR or createActivities({ trajectoryDir }))`,
      );
    });
  });

  describe('summarizerContextWindow', () => {
    /** About 40k characters: five times a window of 2,048 tokens with the default counter. */
    const big = {
      instruction: 'Summarize the transcript.',
      middle: Array.from({ length: 40 }, (_, index) => ({
        role: index % 2 === 0 ? 'user' : 'assistant',
        content: `Turn ${index}: ${'looked at one more file and wrote down what it held. '.repeat(18)}`,
      })),
    };
    /** The window the activity's Summarizer.ContextOverflow states, or 'sent' when it sent the request. */
    const refusedWindow = async (activities: (name: string) => RegisteredActivity): Promise<unknown> =>
      run(activities('summarize'), big).then(
        () => 'sent',
        (error: unknown) =>
          error instanceof ApplicationFailure && error.type === FailureType.Summarizer.ContextOverflow
            ? Reflect.get(Object(error.details?.[0]), 'contextWindow')
            : error,
      );

    it('COMPACTOR_SUMMARIZER_CONTEXT_WINDOW of the environment: the summarize activity refuses a middle over it, stating it', async () => {
      vi.stubEnv('COMPACTOR_SUMMARIZER_CONTEXT_WINDOW', '2048');
      expect(await refusedWindow(pluginActivities())).toBe(2048);
    });

    it('activities.summarizerContextWindow over the environment; unset, the request is sent', async () => {
      vi.stubEnv('COMPACTOR_SUMMARIZER_CONTEXT_WINDOW', '2048');
      expect(await refusedWindow(pluginActivities({ activities: { summarizerContextWindow: 200_000 } }))).toBe('sent');
      vi.stubEnv('COMPACTOR_SUMMARIZER_CONTEXT_WINDOW', '');
      expect(await refusedWindow(pluginActivities())).toBe('sent');
    });

    it('a bad COMPACTOR_SUMMARIZER_CONTEXT_WINDOW is refused when the plugin is made, naming the setting', () => {
      vi.stubEnv('COMPACTOR_SUMMARIZER_CONTEXT_WINDOW', '100');
      expect(() => pluginActivities()).toThrow(/COMPACTOR_SUMMARIZER_CONTEXT_WINDOW/);
    });
  });

  describe('chat server', () => {
    let server: FakeOpenAI;
    beforeEach(async () => {
      server = await startFakeOpenAI();
    });
    afterEach(() => server.close());
    const input: ChatActivityInput = {
      backend: { provider: 'openai', model: 'fake-agent', contextWindow: 8000, maxOutputTokens: 100 },
      messages: [{ role: 'user', content: 'Say ok' }],
      tools: [],
      turn: 0,
    };
    /** The reply's message of the plugin's `chat`. */
    const chat = async (activities: (name: string) => RegisteredActivity): Promise<unknown> => {
      const output = await run(activities('chat'), input);
      return typeof output === 'object' && output !== null ? Reflect.get(output, 'message') : output;
    };

    it('OPENAI_BASE_URL and OPENAI_API_KEY of the environment', async () => {
      vi.stubEnv('OPENAI_BASE_URL', server.baseURL);
      vi.stubEnv('OPENAI_API_KEY', 'sk-from-env');
      server.script({ kind: 'summary', text: 'ok' });
      expect(await chat(pluginActivities())).toEqual({ role: 'assistant', content: 'ok' });
      expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-from-env');
    });

    it('the configuration handed to the plugin, over the environment', async () => {
      vi.stubEnv('OPENAI_BASE_URL', 'http://127.0.0.1:9/v1');
      vi.stubEnv('OPENAI_API_KEY', 'sk-from-env');
      server.script({ kind: 'summary', text: 'ok' });
      const config = loadConfig({ env: { OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: 'sk-from-config' } });
      expect(await chat(pluginActivities({ config }))).toEqual({ role: 'assistant', content: 'ok' });
      expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-from-config');
    });

    it('a chatServer base URL given without a key takes the key of the environment', async () => {
      vi.stubEnv('OPENAI_BASE_URL', 'http://127.0.0.1:9/v1');
      vi.stubEnv('OPENAI_API_KEY', 'sk-from-env');
      server.script({ kind: 'summary', text: 'ok' });
      expect(await chat(pluginActivities({ activities: { chatServer: { baseURL: server.baseURL } } }))).toEqual({
        role: 'assistant',
        content: 'ok',
      });
      expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-from-env');
    });

    it('a bad OPENAI_BASE_URL is refused when the plugin is made, naming the setting', () => {
      vi.stubEnv('OPENAI_BASE_URL', 'localhost:11434/v1');
      expect(() => pluginActivities()).toThrow(
        'OPENAI_BASE_URL: expected an http(s) URL without user:password@ or query, e.g. http://localhost:11434/v1, got "localhost:11434/v1"',
      );
    });
  });
});

describe('the OpenAI adapter reads no environment', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('a base URL without a key gets the placeholder key, whatever OPENAI_API_KEY says', () => {
    vi.stubEnv('OPENAI_API_KEY', 'sk-from-env');
    const client = createOpenAIClient({ baseURL: 'http://127.0.0.1:9/v1', timeoutMs: 1000 });
    expect([client.baseURL, client.apiKey]).toEqual(['http://127.0.0.1:9/v1', PLACEHOLDER_API_KEY]);
  });

  it('what it is given, as given', () => {
    vi.stubEnv('OPENAI_API_KEY', 'sk-from-env');
    vi.stubEnv('OPENAI_BASE_URL', 'http://127.0.0.1:8/v1');
    const client = createOpenAIClient({ baseURL: 'http://127.0.0.1:9/v1', apiKey: 'sk-given', timeoutMs: 1000 });
    expect([client.baseURL, client.apiKey]).toEqual(['http://127.0.0.1:9/v1', 'sk-given']);
  });
});

describe('no module under src/activities or src/llm reads the environment or the configuration', () => {
  const sources = ['activities', 'llm'].flatMap((folder) => {
    const dir = new URL(`../../src/${folder}/`, import.meta.url);
    return readdirSync(dir)
      .filter((name) => name.endsWith('.ts'))
      .map((name) => ({ path: `src/${folder}/${name}`, text: readFileSync(new URL(name, dir), 'utf8') }));
  });

  it.each(sources.map((source) => [source.path, source.text]))('%s', (_path, text) => {
    expect(text).not.toMatch(/process\.env|\breadSettings\b|\bloadConfig\b/);
  });
});
