// Sandbox-safe: a complete-request adapter that adds a backend's tool declarations and framing to a counter (docs/design.md#request-framing).
import { z } from 'zod';
import { checkWith } from '../schema.js';
import type { ChatMessage, TokenCounter } from '../types.js';
import { assertTokenAmount } from './tokens.js';

/** An OpenAI chat-completions function tool declaration, as sent in the request's `tools`. */
export interface ToolDeclaration {
  type: 'function';
  function: {
    name: string;
    description?: string;
    /** JSON Schema of the arguments. */
    parameters?: Record<string, unknown>;
    strict?: boolean | null;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

export interface RequestFramingOptions {
  /** The tool declarations the backend sends with every request. @default [] */
  tools?: readonly ToolDeclaration[];
  /** Extra tokens per request the wrapped counter does not count. @default 0 */
  perRequest?: number;
}

export interface RequestCounter extends TokenCounter {
  readonly toolTokens: number;
  readonly perRequest: number;
}

/** What counting needs of a declaration: its function's name (the rest is counted as written). */
const toolsSchema = z.array(z.looseObject({ function: z.looseObject({ name: z.string() }) }));

/**
 * `counter.count(messages) + toolTokens + perRequest`, `toolTokens` the JSON of `tools` as one system message (OpenAI
 * renders them more compactly: the safe side). Wrap an estimator: a `UsageCounter`'s billed counts include them.
 */
export function withRequestFraming(counter: TokenCounter, options: RequestFramingOptions = {}): RequestCounter {
  const { tools = [], perRequest = 0 } = options;
  checkWith(toolsSchema, tools, 'options.tools');
  assertTokenAmount('perRequest', perRequest);
  const toolsMessage: ChatMessage = { role: 'system', content: JSON.stringify(tools) };
  const toolTokens = tools.length === 0 ? 0 : Math.max(0, counter.count([toolsMessage]) - counter.count([]));
  return {
    toolTokens,
    perRequest,
    count(messages) {
      return counter.count(messages) + toolTokens + perRequest;
    },
  };
}
