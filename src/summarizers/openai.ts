// Node only: the OpenAI-compatible summarizer backend (OpenAI, Azure, vLLM, Ollama, ...).
import type OpenAI from 'openai';
import { DEFAULT_SUMMARIZER_TIMEOUT_MS, readSettings, workerSecrets } from '../config.js';
import { SummarizerError } from '../core/errors.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import { summarizerMessages } from '../core/compaction/transcript.js';
import { createOpenAIClient, describeProviderError, readCompletion, requestCompletion } from '../llm/openai-adapter.js';
import { describedAs } from '../described.js';
import { redactFailure, redactUrls } from '../redact.js';
import type { SummarizeRequest, SummarizeResponse, Summarizer } from '../core/types.js';

interface OpenAISummarizerCommonOptions {
  /** The model that writes summaries; a small cheap one is usually a fine summarizer. */
  model: string;
  /**
   * Deadline of one `summarize` call in ms, to the answer's last byte (then a transient
   * `SummarizerError`); keep it below the activity's `startToCloseTimeout`. @default 60_000
   */
  timeout?: number;
  /** Bound on the summary in tokens (docs/design.md#summary-length). @default the request's `maxTokens` */
  maxTokens?: number;
  /** The request field that carries `maxTokens`: `max_tokens` for older servers. @default 'max_completion_tokens' */
  maxTokensParameter?: 'max_completion_tokens' | 'max_tokens';
  /** @default not sent (the provider's default) */
  temperature?: number;
}

interface OpenAISummarizerOwnClientOptions extends OpenAISummarizerCommonOptions {
  /** The API's base URL, ending in `/v1` for most servers. @default OPENAI_BASE_URL, else https://api.openai.com/v1 */
  baseURL?: string;
  /** The API key. @default OPENAI_API_KEY; with neither but a base URL (vLLM, Ollama), `'unused'` */
  apiKey?: string;
  client?: undefined;
}

/** The caller brings a configured client (Azure, a proxy, custom fetch, ...). */
interface OpenAISummarizerGivenClientOptions extends OpenAISummarizerCommonOptions {
  /** A configured client; each call sets `maxRetries: 0` (retries are the compactor's and Temporal's) and `timeout`. */
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

function summaryFrom(responseBody: unknown): SummarizeResponse {
  const read = readCompletion(responseBody);
  if ('error' in read)
    throw new SummarizerError('summarizer: the response is not a chat completion', 'transient', undefined, undefined, {
      cause: read.error,
    });
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

/** HTTP 400-404 rejected, the rest transient. */
function toSummarizerError(error: unknown, endpoint: string): SummarizerError {
  if (error instanceof SummarizerError) return error;
  // Only an HTTP answer has a status and a Retry-After.
  const { message, rejected, status, retryAfterMs } = describeProviderError(error, endpoint);
  const kind = rejected ? 'rejected' : 'transient';
  return new SummarizerError(`summarizer: ${message}`, kind, status, retryAfterMs, { cause: error });
}

/** What the caller gave, else OPENAI_BASE_URL and OPENAI_API_KEY (read here, at the edge). */
function serverSettings(baseURL: string | undefined, apiKey: string | undefined) {
  const given = (value: string | undefined) => (value?.trim() ? value : undefined);
  if (given(baseURL) && given(apiKey)) return { baseURL, apiKey };
  const configured = readSettings(['openaiBaseUrl', 'openaiApiKey']);
  return { baseURL: given(baseURL) ?? configured.openaiBaseUrl, apiKey: given(apiKey) ?? configured.openaiApiKey };
}

/**
 * A {@link Summarizer} over an OpenAI-compatible chat-completions API: one request per call (the
 * compactor and Temporal own retries), no tools. Failures are `SummarizerError`s: HTTP 400-404
 * `rejected`; other statuses, connection errors, timeouts, malformed bodies `transient` (with
 * `retryAfterMs` from `Retry-After`); a blank summary `empty`. An aborted call rejects with the
 * signal's reason.
 * @throws NoModelServerError when no API key is found and no base URL is given.
 * @throws ConfigError when OPENAI_BASE_URL (read when `baseURL` or `apiKey` is not given) is not an http(s) URL.
 * @throws RangeError when `timeout` is not a positive integer.
 */
export function createOpenAISummarizer(options: OpenAISummarizerOptions): Summarizer {
  assertKnownKeys(options, OPENAI_SUMMARIZER_OPTION_KEYS, 'options');
  const timeout = options.timeout ?? DEFAULT_SUMMARIZER_TIMEOUT_MS;
  if (!Number.isInteger(timeout) || timeout <= 0)
    throw new RangeError(`createOpenAISummarizer: timeout must be a positive integer of milliseconds, got ${timeout}`);
  const client =
    options.client ?? createOpenAIClient({ ...serverSettings(options.baseURL, options.apiKey), timeoutMs: timeout });
  const { model, maxTokens, temperature } = options;
  const maxTokensParameter = options.maxTokensParameter ?? 'max_completion_tokens';

  const summarizer: Summarizer = {
    async summarize(request: SummarizeRequest, callOptions?: { signal?: AbortSignal }): Promise<SummarizeResponse> {
      const limit = maxTokens ?? request.maxTokens;
      const body = {
        model,
        messages: summarizerMessages(request),
        ...(limit === undefined ? {} : { [maxTokensParameter]: limit }),
        ...(temperature === undefined ? {} : { temperature }),
      };
      const signal = callOptions?.signal;
      try {
        return summaryFrom(await requestCompletion(client, body, { signal, timeoutMs: timeout }));
      } catch (error) {
        // A cancellation leaves as the caller's own reason, never as a failure.
        if (signal?.aborted) throw signal.reason;
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
