// Sandbox-safe: pure. Recognizes a request past its deadline, and a server's "the request does not
// fit my context window" answer and the numbers it states: either is sent again smaller, a measurement
// rather than a rejection (docs/design.md#summarizer-overflow). Structured data first (`type`, `code`,
// numeric fields), then a bounded piece of the message; not the HTTP status (400 from most servers,
// 500 from older Ollama). The shapes (samples in test/llm/context-overflow.test.ts):
// - llama.cpp `llama-server` (server-context.cpp `send_error`): `type: "exceed_context_size_error"`,
//   `n_prompt_tokens`, `n_ctx` (one slot's context: the window a request gets), and the message
//   "request (N tokens) exceeds the available context size (M tokens)…" or "input (N tokens) is larger…".
// - OpenAI: `code: "context_length_exceeded"`, "This model's maximum context length is N tokens. However,
//   your messages resulted in M tokens" / "you requested T tokens (M in the messages, X in the
//   completion)"; newer models "Your input exceeds the context window of this model", no numbers.
// - vLLM (serving_engine.py `_validate_input`, renderer.py, input_processor.py `_validate_prompt_len`):
//   `type: "BadRequestError"`, the OpenAI sentences or "your request has M input tokens", "'max_tokens'
//   or 'max_completion_tokens' is too large: X…", "The decoder prompt (length M) is longer than…".
//   Old releases answered a top-level body that openai-node drops: read from `{ status, body }` only.
// - Ollama (openai/openai.go `NewError`): "the prompt is longer than the context length currently
//   available to the model" or "the input length exceeds the context length", no numbers. With
//   context shift on (its default) it truncates and answers 200: nothing a client can read.
// - Anthropic: "prompt is too long: N tokens > M maximum".
import { isRecord } from '../core/schema.js';

export type ContextOverflowSource = 'llama.cpp' | 'openai' | 'vllm' | 'ollama' | 'anthropic';

/** A context-overflow answer and the numbers it states, each in the server's own tokens. */
export interface ContextOverflow {
  source: ContextOverflowSource;
  contextWindow?: number;
  /** The tokens the request needs: the prompt's plus the completion it reserved (`max_tokens`). */
  requestTokens?: number;
  promptTokens?: number;
  completionTokens?: number;
}

/** How much of a message is read: the patterns sit at its start, and a provider's text is untrusted. */
const MAX_MESSAGE_CHARS = 2_000;
/** How many `cause` links are followed from the error handed in (a `SummarizerError` wraps the client's). */
const MAX_CAUSE_DEPTH = 4;
/** The adapter's whole-call deadline and openai-node's wait for headers, by name: no OpenAI client is loaded. */
const DEADLINE_ERRORS: ReadonlySet<string> = new Set(['CompletionDeadlineError', 'APIConnectionTimeoutError']);
/** A count above this is not believed (no window is that large); the answer still counts as an overflow. */
const MAX_TOKEN_COUNT = 1_000_000_000;

/** A token count as sent (a non-negative safe integer, or its decimal digits), else undefined. */
function count(value: unknown): number | undefined {
  const parsed = typeof value === 'string' && /^\d{1,12}$/.test(value) ? Number(value) : value;
  return typeof parsed === 'number' && Number.isSafeInteger(parsed) && parsed >= 0 && parsed <= MAX_TOKEN_COUNT
    ? parsed
    : undefined;
}

const windowOf = (value: unknown): number | undefined => count(value) || undefined;

/**
 * What one error says: its `detail`, the provider's error object (`APIError.error`, a body's `error`, or
 * a top-level error body), and its message; of openai-node's `APIError`, a caller's `{ status, body }`,
 * or anything with a `message`.
 */
function factsOf(error: Record<string, unknown>) {
  const body = isRecord(error['body']) ? error['body'] : undefined;
  const given = error['error'] ?? body?.['error'] ?? (body?.['object'] === 'error' ? body : undefined);
  const detail = isRecord(given) ? given : undefined;
  const message = [detail?.['message'], given, error['message']].find((text) => typeof text === 'string') ?? '';
  return { detail, message: message.slice(0, MAX_MESSAGE_CHARS) };
}

/** Holds only the counts the answer stated. */
function overflow(source: ContextOverflowSource, counts: Omit<ContextOverflow, 'source'>): ContextOverflow {
  return { source, ...Object.fromEntries(Object.entries(counts).filter(([, value]) => value !== undefined)) };
}

/** The prompt's tokens alone stated: they are the request's. */
function promptOverflow(source: ContextOverflowSource, contextWindow: number | undefined, prompt: number | undefined) {
  return overflow(source, { contextWindow, requestTokens: prompt, promptTokens: prompt });
}

const LLAMA_CPP_MESSAGE =
  /\b(?:request|input) \((\d{1,12}) tokens\) (?:exceeds the available context size|is larger than the max context size) \((\d{1,12}) tokens\)/i;
// OpenAI, vLLM up to v0.10, and the servers that copied them
const MAXIMUM_CONTEXT = /maximum context length is (\d{1,12}) tokens/i;
const MESSAGES_RESULTED_IN = /your messages resulted in (\d{1,12}) tokens/i;
const REQUESTED_SPLIT =
  /you requested (\d{1,12}) tokens \((\d{1,12}) in (?:the messages|your prompt)[,;] (\d{1,12}) (?:in|for) the completion\)/i;
const INPUT_EXCEEDS_WINDOW = /your input exceeds the context window/i;
// vLLM
const REQUEST_HAS_INPUT = /your (?:request has|prompt contains at least) (\d{1,12}) input tokens/i;
const REQUESTED_IN_MESSAGES = /you requested (\d{1,12}) tokens in the messages/i;
const MAX_TOKENS_TOO_LARGE =
  /'max_tokens' or 'max_completion_tokens' is too large: (\d{1,12})\. This model's maximum context length is (\d{1,12}) tokens and your request has (\d{1,12}) input tokens/i;
const DECODER_PROMPT =
  /The decoder prompt \(length (\d{1,12})\) (?:plus the number of requested output tokens \(at least 1\) )?is longer than the maximum model length of (\d{1,12})/i;
const OLLAMA_MESSAGE =
  /the prompt is longer than the context length currently available to the model|the input length exceeds the context length/i;
const ANTHROPIC_MESSAGE = /prompt is too long: (\d{1,12}) tokens > (\d{1,12}) maximum/i;

/** Reads one error (no `cause`); undefined when it is not a context overflow. */
function recognize({ detail, message }: ReturnType<typeof factsOf>): ContextOverflow | undefined {
  const type = detail?.['type'];
  const code = detail?.['code'];

  if (type === 'exceed_context_size_error' || LLAMA_CPP_MESSAGE.test(message)) {
    const match = LLAMA_CPP_MESSAGE.exec(message);
    const prompt = count(detail?.['n_prompt_tokens']) ?? count(match?.[1]);
    return promptOverflow('llama.cpp', windowOf(detail?.['n_ctx']) ?? windowOf(match?.[2]), prompt);
  }

  const maxTokens = MAX_TOKENS_TOO_LARGE.exec(message);
  if (maxTokens !== null) {
    const completion = count(maxTokens[1]);
    const prompt = count(maxTokens[3]);
    return overflow('vllm', {
      contextWindow: windowOf(maxTokens[2]),
      requestTokens: prompt === undefined || completion === undefined ? undefined : count(prompt + completion),
      promptTokens: prompt,
      completionTokens: completion,
    });
  }

  const decoder = DECODER_PROMPT.exec(message);
  if (decoder !== null) return promptOverflow('vllm', windowOf(decoder[2]), count(decoder[1]));

  const maximum = MAXIMUM_CONTEXT.exec(message);
  if (code === 'context_length_exceeded' || maximum !== null || INPUT_EXCEEDS_WINDOW.test(message)) {
    const contextWindow = windowOf(maximum?.[1]);
    const split = REQUESTED_SPLIT.exec(message);
    const resulted = MESSAGES_RESULTED_IN.exec(message);
    const vllmInput = REQUEST_HAS_INPUT.exec(message) ?? REQUESTED_IN_MESSAGES.exec(message);
    // The OpenAI code, or OpenAI's own error type, says OpenAI; vLLM copied the sentence with its own type.
    const source: ContextOverflowSource =
      code === 'context_length_exceeded' || type === 'invalid_request_error' || resulted !== null ? 'openai' : 'vllm';
    if (split !== null) {
      return overflow(source, {
        contextWindow,
        requestTokens: count(split[1]),
        promptTokens: count(split[2]),
        completionTokens: count(split[3]),
      });
    }
    return promptOverflow(vllmInput === null ? source : 'vllm', contextWindow, count(resulted?.[1] ?? vllmInput?.[1]));
  }

  if (OLLAMA_MESSAGE.test(message)) return overflow('ollama', {});

  const anthropic = ANTHROPIC_MESSAGE.exec(message);
  return anthropic === null ? undefined : promptOverflow('anthropic', windowOf(anthropic[2]), count(anthropic[1]));
}

/**
 * Whether a failed request was refused for not fitting the server's context window, and the counts
 * the answer states. `error` is what the OpenAI client threw, an error wrapping one as its `cause`,
 * or a caller's `{ status, body }`. Never throws.
 */
export function readContextOverflow(error: unknown): ContextOverflow | undefined {
  let current: unknown = error;
  try {
    for (let depth = 0; depth <= MAX_CAUSE_DEPTH && isRecord(current); depth++) {
      const found = recognize(factsOf(current));
      if (found !== undefined) return found;
      current = current['cause'];
    }
  } catch {
    // A getter that throws on a hand-made error object: that error says nothing about a window.
  }
  return undefined;
}

/** True when `error`, or an error in its `cause` chain, says a request's deadline passed. */
export function pastDeadline(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && current instanceof Error; depth += 1) {
    if (DEADLINE_ERRORS.has(current.name) || DEADLINE_ERRORS.has(current.constructor.name)) return true;
    current = current.cause;
  }
  return false;
}
