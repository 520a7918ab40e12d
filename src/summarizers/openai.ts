// The OpenAI-compatible summarizer backend (OpenAI, Azure, vLLM, Ollama, ...). Node only: it runs
// in activities and in the in-process driver, never in the workflow sandbox.
import type OpenAI from 'openai';
import { DEFAULT_SUMMARIZER_TIMEOUT_MS, readSettings, workerSecrets } from '../config.js';
import { SummarizerError } from '../core/errors.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import { summarizerMessages } from '../core/compaction/transcript.js';
import {
  abortReason,
  createOpenAIClient,
  describeProviderError,
  readCompletion,
  requestCompletion,
} from '../llm/openai-adapter.js';
import { describedAs } from '../described.js';
import { redactFailure, redactUrls } from '../redact.js';
import type { SummarizeRequest, SummarizeResponse, Summarizer } from '../core/types.js';

export { DEFAULT_SUMMARIZER_TIMEOUT_MS };

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
   * Upper bound on the summary's length in tokens, sent as `maxTokensParameter` with every request,
   * instead of the request's own `maxTokens` (docs/design.md#summary-length).
   * @default the request's `maxTokens`, which the engine derives from the summary's room
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
   * @default OPENAI_BASE_URL (src/config.ts), else https://api.openai.com/v1
   */
  baseURL?: string;
  /**
   * The API key.
   * @default OPENAI_API_KEY (src/config.ts); when that is unset too but a base URL is given
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

const OPENAI_SUMMARIZER_OPTION_KEYS = keysOf<OpenAISummarizerOptions>({
  model: true,
  timeout: true,
  maxTokens: true,
  maxTokensParameter: true,
  temperature: true,
  baseURL: true,
  apiKey: true,
  client: true,
});

/** Reads the summary out of a 200 response body, or throws the matching `SummarizerError`. */
function summaryFrom(responseBody: unknown): SummarizeResponse {
  const read = readCompletion(responseBody);
  if ('error' in read) {
    throw new SummarizerError('summarizer: the response is not a chat completion', 'transient', undefined, undefined, {
      cause: read.error,
    });
  }
  const { choice, usage } = read.completion;
  const text = choice?.content?.trim() ?? '';
  if (text === '') {
    const detail = choice === undefined ? 'no choices' : `finish_reason ${choice.finishReason ?? 'unknown'}`;
    throw new SummarizerError(`summarizer: the response has an empty summary (${detail})`, 'empty');
  }
  if (usage === undefined) return { text };
  // The summarizer reports what every provider sends; the cache share is the chat activity's concern.
  const { cachedPromptTokens: _cached, ...billed } = usage;
  return { text, usage: billed };
}

/** Maps what the request threw to a classified `SummarizerError` (400-404 rejected, the rest transient). */
function toSummarizerError(error: unknown, endpoint: string): SummarizerError {
  if (error instanceof SummarizerError) return error;
  const fault = describeProviderError(error, endpoint);
  const http = fault.kind === 'http';
  return new SummarizerError(
    `summarizer: ${fault.message}`,
    fault.rejected ? 'rejected' : 'transient',
    http ? fault.status : undefined,
    http ? fault.retryAfterMs : undefined,
    {
      cause: error,
    },
  );
}

/**
 * The server the summarizer's own client talks to: what the caller gave, the rest from the
 * configuration (OPENAI_BASE_URL, OPENAI_API_KEY). Read here, where an application builds its
 * summarizer, so the adapter it is handed to reads no environment.
 */
function serverSettings(
  baseURL: string | undefined,
  apiKey: string | undefined,
): { baseURL: string | undefined; apiKey: string | undefined } {
  const isGiven = (value: string | undefined): value is string => value !== undefined && value.trim() !== '';
  if (isGiven(baseURL) && isGiven(apiKey)) return { baseURL, apiKey };
  const configured = readSettings(['openaiBaseUrl', 'openaiApiKey']);
  return {
    baseURL: isGiven(baseURL) ? baseURL : configured.openaiBaseUrl,
    apiKey: isGiven(apiKey) ? apiKey : configured.openaiApiKey,
  };
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
 * @throws ConfigError at creation when OPENAI_BASE_URL (read only when `baseURL` or `apiKey` is not given) is not an http(s) URL.
 * @throws RangeError at creation when `timeout` is not a positive integer.
 */
export function createOpenAISummarizer(options: OpenAISummarizerOptions): Summarizer {
  assertKnownKeys(options, OPENAI_SUMMARIZER_OPTION_KEYS, 'options');
  const timeout = options.timeout ?? DEFAULT_SUMMARIZER_TIMEOUT_MS;
  if (!Number.isInteger(timeout) || timeout <= 0) {
    throw new RangeError(`createOpenAISummarizer: timeout must be a positive integer of milliseconds, got ${timeout}`);
  }
  const client =
    options.client ?? createOpenAIClient({ ...serverSettings(options.baseURL, options.apiKey), timeoutMs: timeout });
  const { model, maxTokens, temperature } = options;
  const maxTokensParameter = options.maxTokensParameter ?? 'max_completion_tokens';

  const summarizer: Summarizer = {
    async summarize(request: SummarizeRequest, callOptions?: { signal?: AbortSignal }): Promise<SummarizeResponse> {
      const body = {
        model,
        messages: summarizerMessages(request),
        // docs/design.md#summary-length The option overrides what the engine derived from the summary's room.
        ...((maxTokens ?? request.maxTokens) === undefined
          ? {}
          : { [maxTokensParameter]: maxTokens ?? request.maxTokens }),
        ...(temperature === undefined ? {} : { temperature }),
      };
      const signal = callOptions?.signal;
      try {
        return summaryFrom(await requestCompletion(client, body, { signal, timeoutMs: timeout }));
      } catch (error) {
        // A cancellation leaves as the caller's own reason, never as a failure.
        if (signal?.aborted) throw abortReason(signal);
        // A provider may quote the key it was sent; the error goes to history and logs.
        throw redactFailure(toSummarizerError(error, client.baseURL), workerSecrets([client.apiKey]));
      }
    },
  };
  // For a worker's start line: never with a password or a key the URL might carry.
  return describedAs(
    summarizer,
    `OpenAI-compatible summarizer: model ${model} at ${redactUrls(client.baseURL)}, timeout ${timeout} ms`,
  );
}
