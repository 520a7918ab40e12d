// Sandbox-safe: the default character estimator and the character measures the engine uses.
import type { ChatMessage, ContentPart, TokenCounter } from '../types.js';

/** The text of a message's content: a string, the text parts joined, or '' for null. */
export function contentText(content: ChatMessage['content']): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map(partText).join('');
}

function partText(part: ContentPart): string {
  return part.type === 'text' && typeof part.text === 'string' ? part.text : '';
}

/**
 * Characters of conversation content in one message: its content text plus the names and
 * argument strings of its tool calls (the measure the corpus statistics and the elision
 * grace use).
 */
export function messageChars(message: ChatMessage): number {
  let chars = contentText(message.content).length;
  for (const call of message.tool_calls ?? []) chars += call.function.name.length + call.function.arguments.length;
  return chars;
}

export interface CharCounterOptions {
  /** @default 4 */
  charsPerToken?: number;
  /** Tokens of framing per message (role, separators). @default 4 */
  perMessage?: number;
}

/**
 * The default estimator: characters / 4 plus a per-message overhead. Additive over messages,
 * so counts are monotonic in what a compaction removes.
 */
export function createCharCounter({ charsPerToken = 4, perMessage = 4 }: CharCounterOptions = {}): TokenCounter {
  return {
    count(messages) {
      let chars = 0;
      for (const message of messages) chars += messageChars(message);
      return Math.ceil(chars / charsPerToken) + perMessage * messages.length;
    },
  };
}

/** The estimator used when no counter is configured. */
export const defaultCounter: TokenCounter = createCharCounter();
