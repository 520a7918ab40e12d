// Node only: the one adapter to OpenAI-compatible chat-completions servers (OpenAI, Azure, vLLM,
// Ollama, ...), shared by the summarizer (src/summarizers/openai.ts) and the agent loop's `chat`
// activity (src/activities/chat.ts). It builds the client, sends one request under one deadline,
// reads the answer through one schema and says what went wrong in one vocabulary; each caller turns
// that into its own failure type (`Summarizer.*` or `Chat.*`), so the two never drift apart.
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { z } from 'zod';
import { classifyStatus, statusOf } from '../core/errors.js';
import { redactUrls } from '../redact.js';

// ---------------------------------------------------------------------------------------------
// The client

/** The key sent to servers that need none (vLLM, Ollama): the client refuses to construct without one. */
export const PLACEHOLDER_API_KEY = 'unused';

/**
 * Where the server is and how to authenticate, as the caller was handed them (the configuration's
 * OPENAI_BASE_URL and OPENAI_API_KEY are read at the edge: the worker, the plugin, the summarizer's
 * factory). This module reads no environment of its own.
 */
export interface OpenAIClientSettings {
  /**
   * The API's base URL, ending in `/v1` for most servers.
   * @default the openai client's own (https://api.openai.com/v1)
   */
  baseURL?: string | undefined;
  /**
   * The API key.
   * @default {@link PLACEHOLDER_API_KEY} when a base URL is given (a local vLLM or Ollama needs
   * none), else the openai client's own
   */
  apiKey?: string | undefined;
  /** Deadline the client applies to one request in milliseconds (it covers the wait for headers only). */
  timeoutMs: number;
}

function given(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

/** No model server is configured: neither an API key nor a base URL was given or found. */
export class NoModelServerError extends Error {
  override readonly name = 'NoModelServerError';
  constructor(options?: { cause?: unknown }) {
    super(
      'no model server configured: set OPENAI_API_KEY (the OpenAI API) or OPENAI_BASE_URL (any OpenAI-compatible server; a local one such as vLLM or Ollama needs no key)',
      options,
    );
  }
}

/**
 * Builds a client with `maxRetries: 0`: retries belong to the compactor and to Temporal, which
 * know the run, not to the client.
 *
 * @throws NoModelServerError when no API key is given and no base URL is known (the openai client
 * looks for OPENAI_API_KEY itself; its own error names only that setting).
 */
export function createOpenAIClient({ baseURL, apiKey, timeoutMs }: OpenAIClientSettings): OpenAI {
  const resolvedBaseURL = given(baseURL);
  const key = given(apiKey) ?? (resolvedBaseURL === undefined ? undefined : PLACEHOLDER_API_KEY);
  try {
    return new OpenAI({ apiKey: key, baseURL: resolvedBaseURL, timeout: timeoutMs, maxRetries: 0 });
  } catch (error) {
    if (key === undefined) throw new NoModelServerError({ cause: error });
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// One request

/** The whole-call deadline passed before the last byte of the answer arrived. */
export class CompletionDeadlineError extends Error {
  override readonly name = 'CompletionDeadlineError';
  constructor(
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(`no complete answer within ${timeoutMs} ms`, options);
  }
}

/**
 * Sends one chat-completions request and returns the parsed JSON body, unread.
 *
 * One controller carries both the caller's cancellation and a whole-call deadline: the client's own
 * `timeout` only covers the wait for response headers, not a body that stalls halfway.
 *
 * @throws the caller's `signal.reason` when `signal` aborts (never the client's abort error, so a
 * cancellation is never mistaken for a failure).
 * @throws CompletionDeadlineError when `timeoutMs` passes first.
 * @throws what the client threw otherwise (read it with {@link describeProviderError}).
 */
export async function requestCompletion(
  client: OpenAI,
  body: Record<string, unknown>,
  { signal, timeoutMs }: { signal?: AbortSignal | undefined; timeoutMs: number },
): Promise<unknown> {
  if (signal?.aborted) throw abortReason(signal);
  const controller = new AbortController();
  const onCallerAbort = (): void => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onCallerAbort, { once: true });
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  try {
    return await client.post<unknown>('/chat/completions', {
      body,
      signal: controller.signal,
      maxRetries: 0,
      timeout: timeoutMs,
    });
  } catch (error) {
    if (signal?.aborted) throw abortReason(signal);
    if (timedOut) throw new CompletionDeadlineError(timeoutMs, { cause: error });
    throw error;
  } finally {
    clearTimeout(deadline);
    signal?.removeEventListener('abort', onCallerAbort);
  }
}

/** What an aborted signal was aborted with (an activity's `CancelledFailure`, a caller's reason). */
export function abortReason(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason;
  return reason;
}

// ---------------------------------------------------------------------------------------------
// The answer

const optionalCount = z.number().int().nonnegative().nullish().catch(undefined);

/**
 * The part of a chat.completion either caller reads; anything else passes. Tool calls are left
 * unread here: only the chat activity reads them, with its own rules.
 */
const completionSchema = z.looseObject({
  choices: z.array(
    z.looseObject({
      finish_reason: z.string().nullish().catch(undefined),
      message: z
        .looseObject({
          content: z
            .union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))])
            .nullish(),
          tool_calls: z.unknown().optional(),
        })
        .nullish(),
    }),
  ),
  usage: z
    .looseObject({
      prompt_tokens: optionalCount,
      completion_tokens: optionalCount,
      total_tokens: optionalCount,
      prompt_tokens_details: z.looseObject({ cached_tokens: optionalCount }).nullish().catch(undefined),
    })
    .nullish()
    .catch(undefined),
});

/** What the provider billed, each count only when it said. */
export interface CompletionUsage {
  promptTokens?: number;
  /** Prompt tokens served from the provider's prompt cache (`prompt_tokens_details.cached_tokens`). */
  cachedPromptTokens?: number;
  completionTokens?: number;
  totalTokens?: number;
}

/** The first choice of a completion. */
export interface CompletionChoice {
  /** `false` when the choice carries no `message` object at all. */
  hasMessage: boolean;
  /** The message's text (text parts joined), or `null` when it has none. */
  content: string | null;
  /** The message's `tool_calls` as sent, unread. */
  toolCalls: unknown;
  finishReason: string | undefined;
}

/** A 200 body read as a chat completion. */
export interface Completion {
  /** `undefined` when the body has no choices. */
  choice: CompletionChoice | undefined;
  usage: CompletionUsage | undefined;
}

/** Reads a 200 body, or says why it is not a chat completion (the schema's error, for a `cause`). */
export function readCompletion(body: unknown): { completion: Completion } | { error: z.ZodError } {
  const parsed = completionSchema.safeParse(body);
  if (!parsed.success) return { error: parsed.error };
  const first = parsed.data.choices[0];
  const content = first?.message?.content;
  const choice: CompletionChoice | undefined =
    first === undefined
      ? undefined
      : {
          hasMessage: first.message !== null && first.message !== undefined,
          content:
            content === null || content === undefined
              ? null
              : typeof content === 'string'
                ? content
                : content.map((part) => (part.type === 'text' && part.text !== undefined ? part.text : '')).join(''),
          toolCalls: first.message?.tool_calls,
          finishReason: first.finish_reason ?? undefined,
        };
  const usage = parsed.data.usage;
  if (usage === null || usage === undefined) return { completion: { choice, usage: undefined } };
  const counts: CompletionUsage = {};
  if (typeof usage.prompt_tokens === 'number') counts.promptTokens = usage.prompt_tokens;
  const cached = usage.prompt_tokens_details?.cached_tokens;
  if (typeof cached === 'number') counts.cachedPromptTokens = cached;
  if (typeof usage.completion_tokens === 'number') counts.completionTokens = usage.completion_tokens;
  if (typeof usage.total_tokens === 'number') counts.totalTokens = usage.total_tokens;
  return { completion: { choice, usage: counts } };
}

// ---------------------------------------------------------------------------------------------
// What went wrong

/** Header bags as openai 6 (`Headers`) and older clients or plain objects (records) carry them. */
export type HeaderBag = Headers | Readonly<Record<string, string | readonly string[] | null | undefined>>;

/**
 * Reads a retry hint in milliseconds from response headers: `retry-after-ms` (milliseconds) first,
 * then `retry-after` as delta-seconds (`3`, `1.5`) or an HTTP date (a date in the past gives 0).
 * Returns `undefined` when there is no usable hint. Header names are case-insensitive.
 * @param now - the current time for HTTP dates in epoch milliseconds. @default Date.now()
 */
export function parseRetryAfter(headers: HeaderBag | null | undefined, now: number = Date.now()): number | undefined {
  if (headers === null || headers === undefined) return undefined;
  const milliseconds = parseNonNegativeNumber(headerValue(headers, 'retry-after-ms'));
  if (milliseconds !== undefined) return Math.ceil(milliseconds);
  const retryAfter = headerValue(headers, 'retry-after')?.trim();
  if (retryAfter === undefined || retryAfter === '') return undefined;
  const seconds = parseNonNegativeNumber(retryAfter);
  if (seconds !== undefined) return Math.ceil(seconds * 1000);
  // An HTTP date starts with the day name (`Wed, 21 Oct 2015 07:28:00 GMT`); the guard keeps
  // Date.parse's leniency (it reads `-1` as a year) out.
  if (!/^[A-Za-z]{3,9},?\s/.test(retryAfter)) return undefined;
  const date = Date.parse(retryAfter);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function headerValue(headers: HeaderBag, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    if (typeof value === 'string') return value;
    if (Array.isArray(value)) return value.find((item): item is string => typeof item === 'string');
  }
  return undefined;
}

function parseNonNegativeNumber(text: string | undefined): number | undefined {
  if (text === undefined || !/^\s*\d+(\.\d+)?\s*$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/** What a failed request ran into, in the words both callers put after their own prefix. */
export interface ProviderFault {
  /**
   * `deadline`: the whole-call deadline passed; `timeout`: the client's wait for headers passed;
   * `connection`: no answer from the server; `http`: an error status; `invalid-json`: a 200 whose
   * body does not parse; `other`: anything else.
   */
  kind: 'deadline' | 'timeout' | 'connection' | 'http' | 'invalid-json' | 'other';
  /** E.g. `HTTP 429 Too many requests`, `connection failed: ...`, `the request timed out`. */
  message: string;
  /** The HTTP status, when the error carries one. */
  status: number | undefined;
  /** HTTP 400-404 (docs/design.md#failures): asking again cannot help. */
  rejected: boolean;
  /** The server's `Retry-After` hint, when it sent one. */
  retryAfterMs: number | undefined;
}

/** The deepest cause's message when it says more than the error's own ("Connection error." ← "connect ECONNREFUSED 127.0.0.1:9"). */
export function withRootCause(error: Error): string {
  let root: unknown = error;
  const seen = new Set<unknown>();
  while (root instanceof Error && root.cause instanceof Error && !seen.has(root.cause)) {
    seen.add(root);
    root = root.cause;
  }
  return root instanceof Error && root !== error && !error.message.includes(root.message)
    ? `${error.message} (${root.message})`
    : error.message;
}

/**
 * Says what a request to `endpoint` (the client's base URL; redacted here) ran into. Statuses
 * 400-404 are `rejected` (never retried); every other status, connection failures, timeouts and
 * unparsable bodies are worth another attempt. A failure to reach the server names it.
 */
export function describeProviderError(error: unknown, endpoint?: string): ProviderFault {
  const at = endpoint === undefined ? '' : ` (${redactUrls(endpoint)})`;
  const fault = (kind: ProviderFault['kind'], message: string, status?: number): ProviderFault => ({
    kind,
    message,
    status,
    rejected: status !== undefined && classifyStatus(status) === 'abort',
    retryAfterMs: error instanceof APIError ? parseRetryAfter(error.headers) : undefined,
  });
  if (error instanceof CompletionDeadlineError) return fault('deadline', `${error.message}${at}`);
  if (error instanceof APIConnectionTimeoutError) return fault('timeout', `the request timed out${at}`);
  if (error instanceof APIConnectionError)
    return fault(
      'connection',
      endpoint === undefined
        ? `connection failed: ${withRootCause(error)}`
        : `connection to ${redactUrls(endpoint)} failed: ${withRootCause(error)}`,
    );
  const status = statusOf(error);
  const message = error instanceof Error ? error.message : String(error);
  if (status !== undefined) return fault('http', `HTTP ${message}`, status);
  if (error instanceof SyntaxError) return fault('invalid-json', 'the response body is not valid JSON');
  return fault('other', message);
}
