// Sandbox-safe: the AI SDK format mapped to the engine's chat messages through a view (view.ts), and back.
import { isRecord } from '../schema.js';
import type { ContentPart } from '../types.js';
import {
  validateAiSdk,
  type AiSdkMessage,
  type AiSdkPart,
  type AiSdkToolCallPart,
  type AiSdkToolResultOutput,
  type AiSdkToolResultPart,
} from './ai-sdk-schema.js';
import { EngineMessages, formatView, withPartStubs, type FormatView, type MappedCompactionResult } from './view.js';

/** A compaction of AI SDK messages: positions (`elisions`, `cutIndex`, `dropped`) count the input's messages. */
export type AiSdkCompactionResult = MappedCompactionResult<AiSdkMessage>;

const isToolCall = (part: AiSdkPart): part is AiSdkToolCallPart => part.type === 'tool-call';
const isToolResult = (part: AiSdkPart): part is AiSdkToolResultPart => part.type === 'tool-result';

/** A tool's output as the engine reads it: the text a model sees, or the parts of `content` (media counted by size). */
function outputContent(output: AiSdkToolResultOutput): string | ContentPart[] {
  const { type, value } = output;
  if ((type === 'text' || type === 'error-text') && typeof value === 'string') return value;
  if (type === 'json' || type === 'error-json') return JSON.stringify(value ?? null);
  if (type === 'content' && Array.isArray(value))
    return value.flatMap((item: unknown): ContentPart[] => {
      if (!isRecord(item) || typeof item.type !== 'string') return [];
      if (item.type === 'text' && typeof item.text === 'string') return [{ type: 'text', text: item.text }];
      return [{ ...item, type: item.type }];
    });
  // A denial's reason, or an output type to come: its text, so it is counted.
  return typeof output.reason === 'string' ? output.reason : JSON.stringify(output);
}

export function aiSdkView(conversation: unknown): FormatView<AiSdkCompactionResult> {
  const messages = validateAiSdk(conversation);
  const engine = new EngineMessages();
  messages.forEach((message, index) => {
    const origin = { message: index };
    const { role, content } = message;
    if (typeof content === 'string') return engine.push({ role: role === 'tool' ? 'user' : role, content }, origin);
    if (role === 'system' || role === 'user') return engine.push({ role, content }, origin);
    if (role === 'assistant')
      // A provider-executed call has its result beside it: it stays a part of the message.
      return engine.pushAssistant(
        content,
        (part) =>
          isToolCall(part) && part.providerExecuted !== true
            ? {
                id: part.toolCallId,
                type: 'function',
                function: { name: part.toolName, arguments: JSON.stringify(part.input ?? {}) },
              }
            : undefined,
        origin,
      );
    engine.pushUserParts(index, content, (part) =>
      isToolResult(part)
        ? { role: 'tool', tool_call_id: part.toolCallId, content: outputContent(part.output) }
        : undefined,
    );
  });
  return formatView(
    engine,
    { sources: messages, withStubs, summary: (content): AiSdkMessage => ({ role: 'user', content }) },
    (mapped) => mapped,
  );
}

/** The message with the tool results at `stubs`' positions holding their stub as a text output (an error stays an error). */
function withStubs(message: AiSdkMessage, stubs: ReadonlyMap<number, string>): AiSdkMessage {
  return withPartStubs(message, stubs, (part: AiSdkPart, value) =>
    isToolResult(part)
      ? { ...part, output: { type: part.output.type.startsWith('error') ? 'error-text' : 'text', value } }
      : part,
  );
}
