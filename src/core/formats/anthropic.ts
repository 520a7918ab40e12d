// Sandbox-safe: the Anthropic Messages format mapped to the engine's chat messages through a view (view.ts), and back.
import {
  validateAnthropic,
  type AnthropicBlock,
  type AnthropicMessage,
  type AnthropicRequest,
  type AnthropicToolResultBlock,
  type AnthropicToolUseBlock,
} from './anthropic-schema.js';
import { EngineMessages, formatView, withPartStubs, type FormatView, type MappedCompactionResult } from './view.js';

/** Positions (`elisions`, `cutIndex`, `dropped`) count the input's messages; token counts are the engine's. */
export interface AnthropicCompactionResult extends MappedCompactionResult<AnthropicMessage> {
  /** When the input was a request body: that body with `messages` replaced, every other field as it came (the same values). */
  request?: AnthropicRequest;
}

const isToolUse = (block: AnthropicBlock): block is AnthropicToolUseBlock => block.type === 'tool_use';
const isToolResult = (block: AnthropicBlock): block is AnthropicToolResultBlock => block.type === 'tool_result';

export function anthropicView(conversation: unknown): FormatView<AnthropicCompactionResult> {
  const { messages, system, body } = validateAnthropic(conversation);
  const engine = new EngineMessages();
  if (system !== undefined) engine.push({ role: 'system', content: system }, { message: -1 });
  messages.forEach((message, index) => {
    const origin = { message: index };
    if (typeof message.content === 'string')
      return engine.push({ role: message.role, content: message.content }, origin);
    if (message.role === 'assistant')
      return engine.pushAssistant(
        message.content,
        (block) =>
          isToolUse(block)
            ? { id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } }
            : undefined,
        origin,
      );
    engine.pushUserParts(index, message.content, (block) =>
      isToolResult(block) ? { role: 'tool', tool_call_id: block.tool_use_id, content: block.content ?? '' } : undefined,
    );
  });
  return formatView(
    engine,
    {
      sources: messages,
      withStubs,
      summary: (content): AnthropicMessage => ({ role: 'user', content }),
    },
    (mapped): AnthropicCompactionResult =>
      body === undefined ? mapped : { ...mapped, request: { ...body, messages: mapped.messages } },
  );
}

/** The message with the `tool_result` blocks at `stubs`' positions holding their stub as content (every other field kept). */
function withStubs(message: AnthropicMessage, stubs: ReadonlyMap<number, string>): AnthropicMessage {
  return withPartStubs(message, stubs, (block: AnthropicBlock, stub) => ({ ...block, content: stub }));
}
