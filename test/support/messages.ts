// Small named builders for hand-written conversations in unit tests.
import type { ChatMessage, SessionLine, SummarizeRequest, Summarizer, TokenCounter } from '../../src/index.js';
import { messageChars } from '../../src/core/counting/tokens.js';
import { summarizerMessages } from '../../src/core/compaction/transcript.js';

/** The transcript a model is sent for a request (the user message of `summarizerMessages`); '' for none. */
export function transcriptOf(request: SummarizeRequest | undefined): string {
  if (request === undefined) return '';
  const content = summarizerMessages(request)[1]?.content;
  return typeof content === 'string' ? content : '';
}

export const system = (content: string, extra: Partial<ChatMessage> = {}): ChatMessage => ({
  role: 'system',
  content,
  ...extra,
});
export const user = (content: string, extra: Partial<ChatMessage> = {}): ChatMessage => ({
  role: 'user',
  content,
  ...extra,
});
export const assistant = (
  content: string | null,
  calls: Array<[id: string, name: string, args: string]> = [],
): ChatMessage =>
  calls.length === 0
    ? { role: 'assistant', content }
    : {
        role: 'assistant',
        content,
        tool_calls: calls.map(([id, name, args]) => ({ id, type: 'function', function: { name, arguments: args } })),
      };
export const tool = (toolCallId: string, content: string, extra: Partial<ChatMessage> = {}): ChatMessage => ({
  role: 'tool',
  tool_call_id: toolCallId,
  content,
  ...extra,
});

/** One token per character of content and tool-call text: makes expected numbers easy to read. */
export const charCounter: TokenCounter = {
  count: (messages) => messages.reduce((sum, message) => sum + messageChars(message), 0),
};

/** A conversation of `rounds` tool rounds after a system prompt and a task. */
export function toolRounds(rounds: number, resultChars = 100): ChatMessage[] {
  const messages: ChatMessage[] = [system('You are an agent.'), user('Fix the bug in app.py.')];
  for (let round = 0; round < rounds; round += 1) {
    messages.push(assistant(`step ${round}`, [[`call_${round}`, 'fs_read', JSON.stringify({ path: `f${round}.py` })]]));
    messages.push(tool(`call_${round}`, String(round % 10).repeat(resultChars)));
  }
  return messages;
}

export interface ScriptedSummarizer extends Summarizer {
  requests: SummarizeRequest[];
}

type Answer = string | Error | ((request: SummarizeRequest, signal?: AbortSignal) => Promise<string>);

/** A summarizer that answers each call with the next scripted answer (the last one repeats). */
export function scriptedSummarizer(...answers: Answer[]): ScriptedSummarizer {
  const requests: SummarizeRequest[] = [];
  return {
    requests,
    async summarize(request, options) {
      requests.push(request);
      const answer = answers[Math.min(requests.length - 1, answers.length - 1)] ?? 'summary';
      if (answer instanceof Error) throw answer;
      if (typeof answer === 'function') return { text: await answer(request, options?.signal) };
      return { text: answer };
    },
  };
}

/** An error shaped like openai's APIError: a numeric `status`. */
export function httpError(status: number, retryAfterMs?: number): Error {
  return Object.assign(new Error(`HTTP ${status}`), {
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

/** Transcript lines as JSONL text: one JSON object a line, each line ended by a newline. */
export function toJsonl(lines: readonly SessionLine[]): string {
  return lines.map((line) => JSON.stringify(line)).join('\n') + (lines.length > 0 ? '\n' : '');
}
