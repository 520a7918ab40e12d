// The conversation and scripted model replies the undo tests share (test/workflows/agent-run-undo*.test.ts):
// a middle worth compacting with an image in it, then a tool call that brings the run to a compaction.
import type { ChatMessage } from '../../src/index.js';
import { replayTokens } from './agent.js';
import { assistantReply as completion, type ScriptedResponse } from './fake-openai.js';
import { dataUrl, pngBytes } from './images.js';

/** A dozen sentences of notes on `subject`, to give a message a size worth compacting. */
export function notes(subject: string): string {
  return Array.from(
    { length: 12 },
    (_, step) => `Step ${step + 1} on ${subject}: looked at case ${step * 7 + 3}, as logged in run ${step + 40}.`,
  ).join(' ');
}

/** A conversation with a middle to compact, an image among it. */
export const undoOpening: ChatMessage[] = [
  { role: 'system', content: 'You are a careful agent.' },
  { role: 'user', content: 'Find out why the parser test fails.' },
  { role: 'assistant', content: `The failing test is test_parse_empty. ${notes('the test suite')}` },
  {
    role: 'user',
    content: [
      { type: 'text', text: `Here is the screen of the failure. ${notes('the logs')}` },
      { type: 'image_url', image_url: { url: dataUrl(pngBytes(64, 48)), detail: 'low' } },
    ],
  },
  { role: 'assistant', content: `parser.py line 42 returns None for an empty string. ${notes('parser.py')}` },
  { role: 'user', content: 'Read a.txt next, please.' },
];

/** An assistant reply billed about what its request holds (o200k of its messages). */
export const billedReply =
  (message: Record<string, unknown>): ScriptedResponse =>
  (request) => {
    const { messages } = request.body as { messages: ChatMessage[] };
    const prompt = replayTokens(messages);
    return completion(message, { prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 });
  };

/** A reply that calls `fs_read` on a.txt, under the call id `id`. */
export const readCall = (id: string): ScriptedResponse =>
  billedReply({
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'fs_read', arguments: '{"path":"a.txt"}' } }],
  });
