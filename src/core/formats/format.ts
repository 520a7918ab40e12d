// Sandbox-safe: the message formats (docs/compaction.md#formats), and the view a non-OpenAI one is compacted through.
import { InvalidInputError } from '../errors.js';
import type { ChatMessage, CompactionResult } from '../types.js';
import type { AiSdkMessage } from './ai-sdk-schema.js';
import { aiSdkView, type AiSdkCompactionResult } from './ai-sdk.js';
import type { AnthropicConversation } from './anthropic-schema.js';
import { anthropicView, type AnthropicCompactionResult } from './anthropic.js';
import type { FormatView } from './view.js';

/** The message formats, in and out: OpenAI chat (the default), Anthropic Messages, AI SDK messages. */
export const MESSAGE_FORMATS = ['openai', 'anthropic', 'ai-sdk'] as const;
export type MessageFormat = (typeof MESSAGE_FORMATS)[number];

/** The option that names a conversation's format, on every function that compacts one. */
export interface FormatOption {
  /** The conversation's message format; the result comes back in it (docs/compaction.md#formats). @default 'openai' */
  format?: MessageFormat;
}

/** The `format` option: undefined is `openai`; anything else not a format is an error naming `field`. */
export function formatOption(value: unknown, field: string): MessageFormat {
  const format = value === undefined ? 'openai' : MESSAGE_FORMATS.find((each) => each === value);
  if (format === undefined)
    throw new InvalidInputError(field, `must be one of ${MESSAGE_FORMATS.join(', ')}, got ${JSON.stringify(value)}`);
  return format;
}

/** A conversation in any format: OpenAI chat messages, an Anthropic conversation, AI SDK messages. */
export type Conversation = readonly ChatMessage[] | AnthropicConversation | readonly AiSdkMessage[];

export type FormatCompactionResult = AnthropicCompactionResult | AiSdkCompactionResult;

export type AnyCompactionResult = CompactionResult | FormatCompactionResult;

/** The view of a conversation in `format`, or undefined for `openai` (the engine reads it as it is). Validates it. */
export function formatView(
  format: MessageFormat,
  conversation: unknown,
): FormatView<FormatCompactionResult> | undefined {
  if (format === 'openai') return undefined;
  return format === 'anthropic' ? anthropicView(conversation) : aiSdkView(conversation);
}
