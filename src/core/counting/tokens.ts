// Sandbox-safe: the default character estimator and the character measures the engine uses.
import { InvalidInputError } from '../errors.js';
import { imageTokens, isTextPart, partJsonChars } from './parts.js';
import type { ChatMessage, TokenCounter, ToolCall } from '../types.js';

export function contentText(content: ChatMessage['content']): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (isTextPart(part) ? part.text : '')).join('');
}

export function messageChars(message: ChatMessage): number {
  let chars = contentText(message.content).length;
  const calls = message.tool_calls;
  if (calls === undefined) return chars;
  // An index loop: this runs over every message of every count.
  for (let index = 0; index < calls.length; index += 1) {
    const { name, arguments: args } = (calls[index] as ToolCall).function;
    chars += name.length + args.length;
  }
  return chars;
}

export interface CharCounterOptions {
  /** @default 4 */
  charsPerToken?: number;
  /** Tokens of framing per message (role, separators). @default 4 */
  perMessage?: number;
  /** Tokens for each non-text part, whatever it holds. @default by what it is (docs/compaction.md#counting) */
  perNonTextPart?: number;
}

export function assertTokenAmount(name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isFinite(value) && value >= 0))
    throw new InvalidInputError(`options.${name}`, 'must be a non-negative finite number');
}

/** Characters / 4 plus a per-message overhead; images by OpenAI's rule. Monotonic in what a compaction removes. */
export function createCharCounter({
  charsPerToken = 4,
  perMessage = 4,
  perNonTextPart,
}: CharCounterOptions = {}): TokenCounter {
  assertTokenAmount('perNonTextPart', perNonTextPart);
  return {
    count(messages) {
      let chars = 0;
      let partTokens = 0;
      // An index loop: an unoptimized for-of allocates an iterator result per message.
      for (let index = 0; index < messages.length; index += 1) {
        const message = messages[index] as ChatMessage;
        chars += messageChars(message);
        if (!Array.isArray(message.content)) continue;
        // Images (or every part, with `perNonTextPart`) in whole tokens; other parts by their JSON's characters.
        for (const part of message.content) {
          if (isTextPart(part)) continue;
          const tokens = perNonTextPart ?? imageTokens(part);
          if (tokens !== undefined) partTokens += tokens;
          else chars += partJsonChars(part);
        }
      }
      return Math.ceil(chars / charsPerToken) + partTokens + perMessage * messages.length;
    },
  };
}

export const defaultCounter: TokenCounter = createCharCounter();
