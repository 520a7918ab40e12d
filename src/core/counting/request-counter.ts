// Sandbox-safe: a complete-request adapter that adds a backend's tool declarations and framing to a counter (docs/design.md#request-framing).
import { InvalidInputError } from '../errors.js';
import type { ChatMessage, TokenCounter } from '../types.js';

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
  /** Extra tokens per request for framing the wrapped counter does not count (a backend's fixed preamble, ...). @default 0 */
  perRequest?: number;
}

/** A {@link TokenCounter} that counts a complete request; exposes what it adds to every count. */
export interface RequestCounter extends TokenCounter {
  /** Tokens of the tool declarations, measured once by the wrapped counter. */
  readonly toolTokens: number;
  /** The per-request framing added to every count. */
  readonly perRequest: number;
}

/**
 * `count(messages) = counter.count(messages) + toolTokens + perRequest`, so a preflight counts in the
 * backend's units. `toolTokens` is counted once, as the JSON of `tools` in one system message: OpenAI
 * renders tools more compactly, so this errs on the safe side. Wrap an estimator, not a `UsageCounter`
 * (billed counts already include the tools and the framing).
 */
export function withRequestFraming(counter: TokenCounter, options: RequestFramingOptions = {}): RequestCounter {
  const { tools = [], perRequest = 0 } = options;
  if (!Array.isArray(tools)) throw new InvalidInputError('options.tools', 'must be an array of tool declarations');
  tools.forEach((tool: unknown, index) => {
    if (typeof tool !== 'object' || tool === null || !('function' in tool)) {
      throw new InvalidInputError(
        `options.tools[${index}]`,
        'must be a tool declaration { type: "function", function: { name, ... } }',
      );
    }
    const declared: unknown = tool.function;
    if (
      typeof declared !== 'object' ||
      declared === null ||
      !('name' in declared) ||
      typeof declared.name !== 'string'
    ) {
      throw new InvalidInputError(`options.tools[${index}].function.name`, 'must be a string');
    }
  });
  if (!Number.isFinite(perRequest) || perRequest < 0) {
    throw new InvalidInputError('options.perRequest', 'must be a non-negative finite number');
  }
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
