// Sandbox-safe: pure. Recognizes a server's "the request does not fit my context window" answer
// among the errors an OpenAI-compatible client throws, and reads the numbers it states (the
// window, the request's tokens), so that a caller can treat the answer as a measurement rather
// than as a final rejection. It reads structured data first (an error `type` or `code`, numeric
// fields) and a bounded piece of the message after; the HTTP status is not consulted, because the
// same answer arrives as 400 from most servers and as 500 from older Ollama releases.
//
// The answers recognized, each as its project documents or writes it (the samples in
// test/llm/context-overflow.test.ts are of these shapes):
//
// - llama.cpp `llama-server` (tools/server/server-context.cpp `send_error`, server-task.cpp
//   `server_task_result_error::to_json`, server-common.cpp `format_error_response`): HTTP 400,
//   `{"error": {"code": 400, "type": "exceed_context_size_error", "message": "request (N tokens)
//   exceeds the available context size (M tokens), try increasing it", "n_prompt_tokens": N,
//   "n_ctx": M}}`; when the prompt cannot be split the message is "input (N tokens) is larger than
//   the max context size (M tokens). skipping". `n_ctx` is the context of one slot (`-c` divided
//   among `--parallel` slots), which is the window a request gets.
// - OpenAI (the `context_length_exceeded` error code; the bodies quoted in e.g.
//   github.com/ChatGPTNextWeb/NextChat#2358 and crewAIInc/crewAI-examples#121): HTTP 400,
//   `{"error": {"message": "This model's maximum context length is N tokens. However, your
//   messages resulted in M tokens. Please reduce the length of the messages.", "type":
//   "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}`; with
//   max_tokens set, "However, you requested T tokens (M in the messages, X in the completion)";
//   the legacy completions API said "(M in your prompt; X for the completion)"; newer models say
//   "Your input exceeds the context window of this model" with the same code and no numbers.
// - vLLM (vllm/entrypoints/openai/serving_engine.py `_validate_input` up to v0.10,
//   vllm/entrypoints/renderer.py `_create_tokens_prompt`, vllm/v1/engine/input_processor.py
//   `_validate_prompt_len`): HTTP 400 with `type` "BadRequestError" and `code` 400, the message one
//   of "This model's maximum context length is N tokens. However, you requested T tokens (M in the
//   messages, X in the completion).", "... However, your request has M input tokens.", "... However,
//   your prompt contains at least M input tokens.", "'max_tokens' or 'max_completion_tokens' is too
//   large: X. This model's maximum context length is N tokens and your request has M input tokens
//   (X > N - M)." or "The decoder prompt (length M) is longer than the maximum model length of N."
//   Releases whose `ErrorResponse` is `{"error": {...}}` arrive whole through openai-node; older
//   ones answered the fields at the top level (`{"object": "error", "message": ...}`), which
//   openai-node drops (its `APIError.error` is `undefined` and its message "400 status code (no
//   body)"): those are recognized only from the body itself (`{ status, body }`).
// - Ollama (llm/llama_server.go, server/routes.go; its OpenAI layer, openai/openai.go `NewError`,
//   wraps them as `{"error": {"message": ..., "type": "invalid_request_error"}}`; its native API
//   answers `{"error": "..."}`): "the prompt is longer than the context length currently available
//   to the model; ..." when context shift is off, and "the input length exceeds the context length"
//   for embeddings. Neither states a number. With context shift on (its default) Ollama truncates
//   the prompt and answers 200: that leaves only a line in its own log, nothing a client can read.
// - Anthropic (docs.claude.com/en/api/errors for the shape; the message as in
//   github.com/anthropics/claude-code#12186): HTTP 400, `{"type": "error", "error": {"type":
//   "invalid_request_error", "message": "prompt is too long: N tokens > M maximum"}}`.

/** Which project's answer matched. */
export type ContextOverflowSource = 'llama.cpp' | 'openai' | 'vllm' | 'ollama' | 'anthropic';

/** A context-overflow answer and the numbers it states, each in the server's own tokens. */
export interface ContextOverflow {
  source: ContextOverflowSource;
  /** The window (maximum context) the server states, when it does. */
  contextWindow?: number;
  /** The tokens the request needs as the server counted them (prompt plus any completion it reserved), when stated. */
  requestTokens?: number;
  /** Of those, the prompt's (the messages'), when the answer says. */
  promptTokens?: number;
  /** Of those, the completion tokens the request reserved (`max_tokens`), when the answer says. */
  completionTokens?: number;
}

/** How much of a message is read: the patterns sit at its start, and a provider's text is untrusted. */
const MAX_MESSAGE_CHARS = 2_000;
/** How many `cause` links are followed from the error handed in (a `SummarizerError` wraps the client's). */
const MAX_CAUSE_DEPTH = 4;
/** A count above this is not believed (no window is that large); the answer still counts as an overflow. */
const MAX_TOKEN_COUNT = 1_000_000_000;

/** What one error says, read without trusting its shape. */
interface ErrorFacts {
  /** The provider's error object (openai-node's `APIError.error`, or a body's `error`, or a top-level error body). */
  detail: Record<string, unknown> | undefined;
  /** The provider's message: the error object's, a string `error`, else the thrown error's own. */
  message: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A token count as sent (a non-negative safe integer, or its decimal digits), else undefined. */
function count(value: unknown): number | undefined {
  const parsed = typeof value === 'string' && /^\d{1,12}$/.test(value) ? Number(value) : value;
  return typeof parsed === 'number' && Number.isSafeInteger(parsed) && parsed >= 0 && parsed <= MAX_TOKEN_COUNT
    ? parsed
    : undefined;
}

/** A window is a count that is positive. */
function windowOf(value: unknown): number | undefined {
  const parsed = count(value);
  return parsed === undefined || parsed === 0 ? undefined : parsed;
}

function bounded(text: string): string {
  return text.length > MAX_MESSAGE_CHARS ? text.slice(0, MAX_MESSAGE_CHARS) : text;
}

/**
 * The facts of one error: openai-node's `APIError` (`status`, `error`, `message`), a caller's
 * `{ status, body }` with the parsed body, or anything with a string `message`.
 */
function factsOf(error: Record<string, unknown>): ErrorFacts {
  const body = isRecord(error['body']) ? error['body'] : undefined;
  const given = error['error'] ?? body?.['error'] ?? (body?.['object'] === 'error' ? body : undefined);
  const detail = isRecord(given) ? given : undefined;
  const message =
    typeof detail?.['message'] === 'string'
      ? detail['message']
      : typeof given === 'string'
        ? given
        : typeof error['message'] === 'string'
          ? error['message']
          : '';
  return { detail, message: bounded(message) };
}

/** Omits the counts a message did not state, so a result holds only what was said. */
function overflow(source: ContextOverflowSource, counts: Omit<ContextOverflow, 'source'>): ContextOverflow {
  const result: ContextOverflow = { source };
  if (counts.contextWindow !== undefined) result.contextWindow = counts.contextWindow;
  if (counts.requestTokens !== undefined) result.requestTokens = counts.requestTokens;
  if (counts.promptTokens !== undefined) result.promptTokens = counts.promptTokens;
  if (counts.completionTokens !== undefined) result.completionTokens = counts.completionTokens;
  return result;
}

function sum(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : count(a + b);
}

// llama.cpp
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
// Ollama
const OLLAMA_MESSAGE =
  /the prompt is longer than the context length currently available to the model|the input length exceeds the context length/i;
// Anthropic
const ANTHROPIC_MESSAGE = /prompt is too long: (\d{1,12}) tokens > (\d{1,12}) maximum/i;

/** Reads one error (no `cause`); undefined when it is not a context overflow. */
function recognize({ detail, message }: ErrorFacts): ContextOverflow | undefined {
  const type = detail?.['type'];
  const code = detail?.['code'];

  if (type === 'exceed_context_size_error' || LLAMA_CPP_MESSAGE.test(message)) {
    const match = LLAMA_CPP_MESSAGE.exec(message);
    const prompt = count(detail?.['n_prompt_tokens']) ?? count(match?.[1]);
    return overflow('llama.cpp', {
      contextWindow: windowOf(detail?.['n_ctx']) ?? windowOf(match?.[2]),
      requestTokens: prompt,
      promptTokens: prompt,
    });
  }

  const maxTokens = MAX_TOKENS_TOO_LARGE.exec(message);
  if (maxTokens !== null) {
    const completion = count(maxTokens[1]);
    const prompt = count(maxTokens[3]);
    return overflow('vllm', {
      contextWindow: windowOf(maxTokens[2]),
      requestTokens: sum(prompt, completion),
      promptTokens: prompt,
      completionTokens: completion,
    });
  }

  const decoder = DECODER_PROMPT.exec(message);
  if (decoder !== null) {
    const prompt = count(decoder[1]);
    return overflow('vllm', { contextWindow: windowOf(decoder[2]), requestTokens: prompt, promptTokens: prompt });
  }

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
    const prompt = count(resulted?.[1] ?? vllmInput?.[1]);
    return overflow(vllmInput === null ? source : 'vllm', {
      contextWindow,
      requestTokens: prompt,
      promptTokens: prompt,
    });
  }

  if (OLLAMA_MESSAGE.test(message)) return overflow('ollama', {});

  const anthropic = ANTHROPIC_MESSAGE.exec(message);
  if (anthropic !== null) {
    const prompt = count(anthropic[1]);
    return overflow('anthropic', {
      contextWindow: windowOf(anthropic[2]),
      requestTokens: prompt,
      promptTokens: prompt,
    });
  }
  return undefined;
}

/**
 * Says whether a failed request was refused because it does not fit the server's context window,
 * and what the answer states about it. `error` is what the OpenAI client threw (an `APIError`:
 * `status`, `error`, `message`), an error wrapping one as its `cause` (a `SummarizerError`), or a
 * caller's `{ status, body }` with the parsed response body. Never throws.
 *
 * @returns the overflow with the counts the answer states, or `undefined` when it is not one.
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
