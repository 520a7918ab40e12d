// Node only: the one adapter to OpenAI-compatible chat-completions servers, shared by the summarizer and
// the `chat` activity so the two never drift apart; each caller maps a fault to its own failure type.
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { z } from 'zod';
import { classifyStatus, statusOf } from '../core/errors.js';
import { redactUrls } from '../redact.js';

/** Sent to servers that need no key (vLLM, Ollama): the client refuses to construct without one. */
export const PLACEHOLDER_API_KEY = 'unused';

/** As the caller was handed them: this module reads no environment. */
export interface OpenAIClientSettings {
  /** @default the openai client's own (https://api.openai.com/v1) */
  baseURL?: string | undefined;
  /** @default {@link PLACEHOLDER_API_KEY} when a base URL is given, else the openai client's own */
  apiKey?: string | undefined;
  /** The client's deadline for one request (it covers the wait for headers only). */
  timeoutMs: number;
}

const given = (value: string | undefined): string | undefined => value?.trim() || undefined;

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
 * Builds a client with `maxRetries: 0`: retries belong to the compactor and to Temporal.
 * @throws NoModelServerError when no API key is given and no base URL is known.
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
 * Sends one chat-completions request and returns the parsed JSON body, unread, under the caller's
 * cancellation and a whole-call deadline (the client's `timeout` does not cover a body that stalls halfway).
 * @throws the caller's `signal.reason` when `signal` aborts, so a cancellation is never a failure.
 * @throws CompletionDeadlineError when `timeoutMs` passes first.
 */
export async function requestCompletion(
  client: OpenAI,
  body: Record<string, unknown>,
  { signal, timeoutMs }: { signal?: AbortSignal | undefined; timeoutMs: number },
): Promise<unknown> {
  if (signal?.aborted) throw signal.reason;
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    return await client.post<unknown>('/chat/completions', {
      body,
      signal: signal === undefined ? deadline : AbortSignal.any([signal, deadline]),
      maxRetries: 0,
      timeout: timeoutMs,
    });
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (deadline.aborted) throw new CompletionDeadlineError(timeoutMs, { cause: error });
    throw error;
  }
}

const optionalCount = z.number().int().nonnegative().nullish().catch(undefined);

/** The part of a chat.completion either caller reads; tool calls are left to the chat activity. */
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
type CompletionUsage = Partial<
  Record<'promptTokens' | 'cachedPromptTokens' | 'completionTokens' | 'totalTokens', number>
>;

/**
 * Reads a 200 body, or says why it is not a chat completion: the first choice (undefined without
 * one; `hasMessage` false when it has no `message` object; `content` its text parts joined), and usage.
 */
export function readCompletion(body: unknown) {
  const parsed = completionSchema.safeParse(body);
  if (!parsed.success) return { error: parsed.error };
  const first = parsed.data.choices[0];
  const content = first?.message?.content ?? null;
  const choice = first && {
    hasMessage: first.message !== null && first.message !== undefined,
    content:
      typeof content === 'string' || content === null
        ? content
        : content.map((part) => (part.type === 'text' && part.text !== undefined ? part.text : '')).join(''),
    toolCalls: first.message?.tool_calls,
    finishReason: first.finish_reason ?? undefined,
  };
  const usage = parsed.data.usage ?? undefined;
  const counts = usage && {
    promptTokens: usage.prompt_tokens,
    cachedPromptTokens: usage.prompt_tokens_details?.cached_tokens,
    completionTokens: usage.completion_tokens,
    totalTokens: usage.total_tokens,
  };
  const stated = counts && Object.entries(counts).filter(([, value]) => typeof value === 'number');
  return { completion: { choice, usage: stated && (Object.fromEntries(stated) as CompletionUsage) } };
}

/** Header bags as openai 6 (`Headers`) and older clients or plain objects (records) carry them. */
export type HeaderBag = Headers | Readonly<Record<string, string | readonly string[] | null | undefined>>;

/**
 * A retry hint in milliseconds: `retry-after-ms` first, then `retry-after` as delta-seconds or an
 * HTTP date (one in the past gives 0); `undefined` without a usable hint.
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
  const named = Object.entries(headers).flatMap(([key, value]) => (key.toLowerCase() === name ? [value].flat() : []));
  return named.find((value) => typeof value === 'string');
}

function parseNonNegativeNumber(text: string | undefined): number | undefined {
  if (text === undefined || !/^\s*\d+(\.\d+)?\s*$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/** What a failed request ran into, in the words both callers put after their own prefix. */
export interface ProviderFault {
  /** `deadline`: the whole call's; `timeout`: the client's wait for headers. */
  kind: 'deadline' | 'timeout' | 'connection' | 'http' | 'invalid-json' | 'other';
  /** E.g. `HTTP 429 Too many requests`. */
  message: string;
  status: number | undefined;
  /** HTTP 400-404 (docs/design.md#failures): asking again cannot help. */
  rejected: boolean;
  retryAfterMs: number | undefined;
}

/** An error's message, and its deepest cause's when that says more ("connect ECONNREFUSED …"). */
export function withRootCause(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  let root = error;
  const seen = new Set([error]);
  while (root.cause instanceof Error && !seen.has(root.cause)) {
    root = root.cause;
    seen.add(root);
  }
  return root !== error && !error.message.includes(root.message) ? `${error.message} (${root.message})` : error.message;
}

/** Says what a request to `endpoint` (the client's base URL; redacted here) ran into. */
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
  if (error instanceof APIConnectionError) {
    const to = endpoint === undefined ? '' : ` to ${redactUrls(endpoint)}`;
    return fault('connection', `connection${to} failed: ${withRootCause(error)}`);
  }
  const status = statusOf(error);
  const message = error instanceof Error ? error.message : String(error);
  if (status !== undefined) return fault('http', `HTTP ${message}`, status);
  if (error instanceof SyntaxError) return fault('invalid-json', 'the response body is not valid JSON');
  return fault('other', message);
}
