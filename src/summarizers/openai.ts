// The OpenAI-compatible summarizer backend (OpenAI, Azure, vLLM, Ollama, ...). Node only: it runs
// in activities and in the in-process driver, never in the workflow sandbox.
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { z } from 'zod';
import { classifyStatus, SummarizerError } from '../core/errors.js';
import { toProviderMessages } from '../core/schema.js';
import { redactFailure, workerSecrets } from '../redact.js';
import type { SummarizeRequest, SummarizeResponse, Summarizer, Usage } from '../core/types.js';

/** Options shared by both ways of giving the summarizer a client. */
interface OpenAISummarizerCommonOptions {
  /** The model that writes summaries; a small cheap one is usually a fine summarizer. */
  model: string;
  /**
   * Deadline for one `summarize` call in milliseconds, from sending the request to the last byte
   * of the answer; a call past it fails as a transient `SummarizerError`. Keep it below the
   * activity's `startToCloseTimeout`. Must be a positive integer.
   * @default 60_000
   */
  timeout?: number;
  /**
   * Upper bound on the summary's length in tokens, sent as `maxTokensParameter`.
   * @default undefined (no limit sent; the provider's default applies)
   */
  maxTokens?: number;
  /**
   * The request field that carries `maxTokens`: `max_completion_tokens` (current OpenAI; required
   * by reasoning models) or `max_tokens` (older OpenAI-compatible servers).
   * @default 'max_completion_tokens'
   */
  maxTokensParameter?: 'max_completion_tokens' | 'max_tokens';
  /**
   * Sampling temperature.
   * @default undefined (not sent; the provider's default applies)
   */
  temperature?: number;
}

/** The summarizer builds its own client (with `maxRetries: 0` and `timeout`). */
interface OpenAISummarizerOwnClientOptions extends OpenAISummarizerCommonOptions {
  /**
   * The API's base URL, ending in `/v1` for most servers.
   * @default process.env.OPENAI_BASE_URL, else https://api.openai.com/v1
   */
  baseURL?: string;
  /**
   * The API key.
   * @default process.env.OPENAI_API_KEY; when that is unset too but a base URL is given
   * (a local vLLM or Ollama), the placeholder `'unused'`
   */
  apiKey?: string;
  client?: undefined;
}

/** The caller brings a configured client (Azure, a proxy, custom fetch, ...). */
interface OpenAISummarizerGivenClientOptions extends OpenAISummarizerCommonOptions {
  /**
   * A configured client. Each call still overrides its retries (`maxRetries: 0`: retries belong
   * to the compactor and to Temporal) and its timeout (`timeout` above).
   */
  client: OpenAI;
  baseURL?: undefined;
  apiKey?: undefined;
}

/** Options of {@link createOpenAISummarizer}: `model` plus either `baseURL`/`apiKey` or a ready `client`. */
export type OpenAISummarizerOptions = OpenAISummarizerOwnClientOptions | OpenAISummarizerGivenClientOptions;

/** @default 60_000 ms for one summarize call */
export const DEFAULT_SUMMARIZER_TIMEOUT_MS = 60_000;

/** The key sent to servers that need none (vLLM, Ollama): the client refuses to construct without one. */
const PLACEHOLDER_API_KEY = 'unused';

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

const optionalCount = z.number().int().nonnegative().nullish().catch(undefined);

/** The part of a chat.completion the summarizer reads; anything else passes. */
const chatCompletionSchema = z.looseObject({
  choices: z.array(
    z.looseObject({
      finish_reason: z.string().nullish().catch(undefined),
      message: z
        .looseObject({
          content: z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))]).nullish(),
        })
        .nullish(),
    }),
  ),
  usage: z
    .looseObject({ prompt_tokens: optionalCount, completion_tokens: optionalCount, total_tokens: optionalCount })
    .nullish()
    .catch(undefined),
});

type ChatCompletionBody = z.infer<typeof chatCompletionSchema>;

function contentText(content: NonNullable<NonNullable<ChatCompletionBody['choices'][number]['message']>['content']>): string {
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' && part.text !== undefined ? part.text : '')).join('');
}

function usageOf(body: ChatCompletionBody): Usage | undefined {
  if (body.usage === null || body.usage === undefined) return undefined;
  const usage: Usage = {};
  if (typeof body.usage.prompt_tokens === 'number') usage.promptTokens = body.usage.prompt_tokens;
  if (typeof body.usage.completion_tokens === 'number') usage.completionTokens = body.usage.completion_tokens;
  if (typeof body.usage.total_tokens === 'number') usage.totalTokens = body.usage.total_tokens;
  return usage;
}

/** Reads the summary out of a 200 response body, or throws the matching `SummarizerError`. */
function summaryFrom(responseBody: unknown): SummarizeResponse {
  const parsed = chatCompletionSchema.safeParse(responseBody);
  if (!parsed.success) {
    throw new SummarizerError('summarizer: the response is not a chat completion', 'transient', undefined, undefined, {
      cause: parsed.error,
    });
  }
  const choice = parsed.data.choices[0];
  const content = choice?.message?.content;
  const text = content === null || content === undefined ? '' : contentText(content).trim();
  if (text === '') {
    const finishReason = choice?.finish_reason;
    const detail = choice === undefined ? 'no choices' : `finish_reason ${finishReason ?? 'unknown'}`;
    throw new SummarizerError(`summarizer: the response has an empty summary (${detail})`, 'empty');
  }
  const usage = usageOf(parsed.data);
  return usage === undefined ? { text } : { text, usage };
}

/** Maps what the openai client threw to a classified `SummarizerError`. */
function toSummarizerError(error: unknown): SummarizerError {
  if (error instanceof SummarizerError) return error;
  if (error instanceof APIConnectionTimeoutError) {
    return new SummarizerError('summarizer: the request timed out', 'transient', undefined, undefined, { cause: error });
  }
  if (error instanceof APIConnectionError) {
    return new SummarizerError(`summarizer: connection failed: ${error.message}`, 'transient', undefined, undefined, {
      cause: error,
    });
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    const kind = classifyStatus(error.status) === 'abort' ? 'rejected' : 'transient';
    return new SummarizerError(`summarizer: HTTP ${error.message}`, kind, error.status, parseRetryAfter(error.headers), {
      cause: error,
    });
  }
  if (error instanceof SyntaxError) {
    return new SummarizerError('summarizer: the response body is not valid JSON', 'transient', undefined, undefined, {
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SummarizerError(`summarizer: ${message}`, 'transient', undefined, undefined, { cause: error });
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function buildClient(options: OpenAISummarizerOwnClientOptions, timeout: number): OpenAI {
  const baseURL = nonEmpty(options.baseURL);
  const apiKey =
    nonEmpty(options.apiKey) ??
    nonEmpty(process.env.OPENAI_API_KEY) ??
    (baseURL !== undefined || nonEmpty(process.env.OPENAI_BASE_URL) !== undefined ? PLACEHOLDER_API_KEY : undefined);
  return new OpenAI({ apiKey, baseURL, timeout, maxRetries: 0 });
}

/**
 * A {@link Summarizer} over an OpenAI-compatible chat-completions API. Each `summarize` call sends
 * exactly one request (no client retries: the compactor and Temporal own retries) with the
 * request's messages minus the harness flags, and no tools.
 *
 * Failures are `SummarizerError`s: HTTP 400-404 → `rejected`; any other status, connection
 * errors, timeouts and malformed bodies → `transient` (with `retryAfterMs` from `Retry-After`);
 * a blank summary → `empty`. A call aborted through `signal` rejects with the signal's reason.
 *
 * @throws OpenAIError at creation when no API key is found and no base URL is given.
 * @throws RangeError at creation when `timeout` is not a positive integer.
 */
export function createOpenAISummarizer(options: OpenAISummarizerOptions): Summarizer {
  const timeout = options.timeout ?? DEFAULT_SUMMARIZER_TIMEOUT_MS;
  if (!Number.isInteger(timeout) || timeout <= 0) {
    throw new RangeError(`createOpenAISummarizer: timeout must be a positive integer of milliseconds, got ${timeout}`);
  }
  const client = options.client ?? buildClient(options, timeout);
  const { model, maxTokens, temperature } = options;
  const maxTokensParameter = options.maxTokensParameter ?? 'max_completion_tokens';

  return {
    async summarize(request: SummarizeRequest, callOptions?: { signal?: AbortSignal }): Promise<SummarizeResponse> {
      const callerSignal = callOptions?.signal;
      if (callerSignal?.aborted) throw abortReason(callerSignal);

      // One controller carries both the caller's cancellation and the whole-call deadline: the
      // client's own `timeout` only covers the wait for response headers, not a stalled body.
      const controller = new AbortController();
      const onCallerAbort = (): void => controller.abort(callerSignal?.reason);
      callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
      let timedOut = false;
      const deadline = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, timeout);

      const body = {
        model,
        messages: toProviderMessages(request.messages),
        ...(maxTokens === undefined ? {} : { [maxTokensParameter]: maxTokens }),
        ...(temperature === undefined ? {} : { temperature }),
      };
      try {
        const responseBody = await client.post<unknown>('/chat/completions', {
          body,
          signal: controller.signal,
          maxRetries: 0,
          timeout,
        });
        return summaryFrom(responseBody);
      } catch (error) {
        if (callerSignal?.aborted) throw abortReason(callerSignal);
        if (timedOut) {
          throw new SummarizerError(`summarizer: no complete answer within ${timeout} ms`, 'transient', undefined, undefined, {
            cause: error,
          });
        }
        // A provider may quote the key it was sent; the error goes to history and logs.
        throw redactFailure(toSummarizerError(error), workerSecrets([client.apiKey]));
      } finally {
        clearTimeout(deadline);
        callerSignal?.removeEventListener('abort', onCallerAbort);
      }
    },
  };
}

function abortReason(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason;
  return reason;
}
