// A tool call written by the real model, through agentRun's tool dispatch: llama.cpp's
// `llama-server` with SmolLM2-135M-Instruct (test/support/llama-server.ts), on a dev server.
// SmolLM2's own chat template has no place for tools (a request that declares one is rendered
// without it), so this file's server renders the model's own format with ours,
// chatml-tools.jinja (`--chat-template-file`): llama-server derives from it how a call is written
// (`<tool_call>{"name": ..., "arguments": ...}</tool_call>`), parses the model's text into
// `tool_calls`, and constrains a call once the model starts one with a grammar built from the
// declared parameters. The prompt asks for the call word for word; what the model wrote is the
// server's to parse, and the rest is the package's: the `chat` activity reads the call, agentRun
// runs `fs_read` as an activity under the tool root and sends its result back, and the model answers.
// `npm run test:llm` runs this file.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../../src/activities/index.js';
import type { ChatMessage } from '../../../src/core/types.js';
import { createExtractiveSummarizer } from '../../../src/summarizers/extractive.js';
import { agentRun } from '../../../src/workflows/agent-run.js';
import { startLlamaServer, type LlamaServer } from '../../support/llama-server.js';
import { bundleWorkflows, testConnection, uniqueId, withWorker } from '../../support/temporal.js';

const TEMPLATE = fileURLToPath(new URL('chatml-tools.jinja', import.meta.url));
const CONTEXT_SIZE = 4096;
const NOTES = 'The launch window opens at 06:40 UTC.\nBring the blue folder.\n';

let llama: LlamaServer;
let root: string;
let bundle: Awaited<ReturnType<typeof bundleWorkflows>>;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'llm-tool-root-'));
  writeFileSync(join(root, 'notes.txt'), NOTES);
  [llama, bundle] = await Promise.all([
    startLlamaServer({ contextSize: CONTEXT_SIZE, args: ['--chat-template-file', TEMPLATE] }),
    bundleWorkflows(new URL('../../../src/workflows/index.ts', import.meta.url)),
  ]);
});

afterAll(async () => {
  await llama?.stop();
  rmSync(root, { recursive: true, force: true });
});

function occurrences(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

describe('a tool call written by the real model', () => {
  it('llama-server states it renders tools with our template', async () => {
    const props = (await (await fetch(`${llama.url}/props`)).json()) as {
      chat_template_caps?: { supports_tools?: boolean; supports_tool_calls?: boolean };
    };
    expect(props.chat_template_caps).toMatchObject({ supports_tools: true, supports_tool_calls: true });
  });

  it("agentRun dispatches the model's fs_read call as an activity, sends the file back, and the run ends with the model's answer", async () => {
    const t = await testConnection();
    const offset = (await llama.log()).length;
    const workflowId = uniqueId('llm-tool-call');
    const messages: ChatMessage[] = [
      {
        role: 'user',
        content:
          'Reply with exactly this and nothing else:\n<tool_call>\n{"name": "fs_read", "arguments": {"path": "notes.txt"}}\n</tool_call>',
      },
    ];
    const result = await withWorker(
      t,
      {
        workflowBundle: bundle,
        activities: createActivities({
          summarizer: createExtractiveSummarizer(),
          openai: new OpenAI({ baseURL: llama.baseURL, apiKey: 'unused', maxRetries: 0 }),
          chatTimeoutMs: 240_000,
          toolsRoot: root,
        }),
      },
      () =>
        t.client.workflow.execute(agentRun, {
          taskQueue: t.taskQueue,
          workflowId,
          args: [
            {
              messages,
              model: {
                provider: 'openai',
                model: llama.model,
                contextWindow: CONTEXT_SIZE,
                maxOutputTokens: 96,
                temperature: 0,
              },
              tools: ['fs_read'],
              compaction: {},
              maxRounds: 3,
            },
          ],
        }),
    );
    console.info(`[llama-server] agentRun with a tool: ${JSON.stringify(result.messages.slice(1))}`);

    // Round 1: the model's text, parsed by the server into one call, with the arguments it wrote.
    const call = result.messages[1];
    expect(call?.role).toBe('assistant');
    expect(call?.tool_calls).toHaveLength(1);
    const [toolCall] = call?.tool_calls ?? [];
    expect(toolCall?.function.name).toBe('fs_read');
    expect(JSON.parse(toolCall?.function.arguments ?? 'null')).toEqual({ path: 'notes.txt' });
    expect(toolCall?.id).toMatch(/\S/);
    // The tool ran as an activity under the tool root; its result answers that call.
    expect(result.messages[2]).toEqual({
      role: 'tool',
      tool_call_id: toolCall?.id,
      content: '     1\tThe launch window opens at 06:40 UTC.\n     2\tBring the blue folder.\n     3\t',
    });
    const history = (await t.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const activityTypes = history.flatMap((event) => {
      const name = event.activityTaskScheduledEventAttributes?.activityType?.name;
      return name === undefined || name === null ? [] : [name];
    });
    expect(activityTypes.filter((name) => name === 'chat')).toHaveLength(2);
    expect(activityTypes.filter((name) => name === 'fs_read')).toHaveLength(1);
    // Round 2: the model read the result and answered without a call; the run completed.
    expect(result.stopReason).toBe('completed');
    expect(result.rounds).toBe(2);
    expect(result.messages).toHaveLength(4);
    expect(result.messages[3]?.role).toBe('assistant');
    expect(result.messages[3]?.tool_calls).toBeUndefined();
    // The server took both chat requests, and billed the second for the tool result it was sent.
    const log = (await llama.log()).slice(offset);
    expect(occurrences(log, 'processing task')).toBe(2);
    expect(occurrences(log, 'prompt eval time')).toBe(2);
    expect(result.compactions.usage.requests).toBe(2);
  });
});
