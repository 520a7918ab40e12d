// Node only: reads the context window an OpenAI-compatible server says it has, before any request
// is sent, from the endpoints that state it:
//
// - llama.cpp `llama-server` `GET /props` (tools/server/server-context.cpp `get_res_props`):
//   `default_generation_settings.n_ctx`, the context of one slot, which is what a request gets;
// - llama.cpp `GET /v1/models` (`get_res_model_info`): `data[].meta.n_ctx`, the same number;
// - vLLM `GET /v1/models` (`ModelCard` in vllm/entrypoints/openai/protocol.py): `data[].max_model_len`.
//
// The parsers are pure; `fetchServerContextWindow` asks the server. Servers that state neither
// (OpenAI, Ollama's OpenAI layer) give `undefined`.

/** Where a window was read. */
export type ServerContextWindowSource = 'llama.cpp /props' | 'llama.cpp /v1/models' | 'vLLM /v1/models';

/** The window a server states, in its own tokens. */
export interface ServerContextWindow {
  contextWindow: number;
  source: ServerContextWindowSource;
}

/** Larger windows are not believed. */
const MAX_CONTEXT_WINDOW = 1_000_000_000;
/** A `/props` or `/v1/models` body larger than this is not read (llama.cpp's `/props` carries the chat template: kilobytes). */
const MAX_BODY_BYTES = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function windowOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 && value <= MAX_CONTEXT_WINDOW
    ? value
    : undefined;
}

/** The window in a llama.cpp `/props` body, or undefined when it states none. */
export function contextWindowFromProps(body: unknown): ServerContextWindow | undefined {
  if (!isRecord(body)) return undefined;
  const settings = body['default_generation_settings'];
  const contextWindow = isRecord(settings) ? windowOf(settings['n_ctx']) : undefined;
  return contextWindow === undefined ? undefined : { contextWindow, source: 'llama.cpp /props' };
}

/**
 * The window in a `/v1/models` body (vLLM's `max_model_len`, llama.cpp's `meta.n_ctx`), for the
 * entry whose `id` is `model`; without `model`, or when no entry has that id, the only entry of a
 * server that lists one (a single-model server answers to any model name). Undefined otherwise.
 */
export function contextWindowFromModels(body: unknown, model?: string): ServerContextWindow | undefined {
  if (!isRecord(body) || !Array.isArray(body['data'])) return undefined;
  const entries: unknown[] = body['data'];
  const named = model === undefined ? undefined : entries.find((entry) => isRecord(entry) && entry['id'] === model);
  const entry = named ?? (entries.length === 1 ? entries[0] : undefined);
  if (!isRecord(entry)) return undefined;
  const vllm = windowOf(entry['max_model_len']);
  if (vllm !== undefined) return { contextWindow: vllm, source: 'vLLM /v1/models' };
  const meta = entry['meta'];
  const llamaCpp = isRecord(meta) ? windowOf(meta['n_ctx']) : undefined;
  return llamaCpp === undefined ? undefined : { contextWindow: llamaCpp, source: 'llama.cpp /v1/models' };
}

/** Options of {@link fetchServerContextWindow}. */
export interface FetchServerContextWindowOptions {
  /** The OpenAI base URL the summarizer or chat uses, e.g. `http://127.0.0.1:8080/v1`. */
  baseURL: string;
  /** The model the requests name; picks the `/v1/models` entry. */
  model?: string;
  /** Sent as `Authorization: Bearer` when given (a server started with an API key guards both endpoints). */
  apiKey?: string;
  /**
   * Deadline for each of the two requests in milliseconds.
   * @default 10_000
   */
  timeoutMs?: number;
  /** Cancels the requests. */
  signal?: AbortSignal;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

/** The server's root: the base URL without its trailing `/v1` (llama.cpp serves `/props` there). */
function serverRoot(baseURL: string): string {
  return baseURL.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** The JSON body of a 2xx answer of at most MAX_BODY_BYTES, else undefined. */
async function readJson(response: Response): Promise<unknown> {
  if (!response.ok || response.body === null) {
    await response.body?.cancel();
    return undefined;
  }
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
    await response.body.cancel();
    return undefined;
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Asks a server for its context window: llama.cpp's `/props` first, then `/v1/models` (vLLM,
 * llama.cpp). Resolves to `undefined` when neither states one (a non-2xx answer, a body that is not
 * JSON or is larger than 1 MiB, no window field).
 *
 * @throws what `fetch` throws when the server cannot be reached, a `TimeoutError` when a request
 * passes `timeoutMs`, and the signal's reason when `signal` aborts.
 */
export async function fetchServerContextWindow({
  baseURL,
  model,
  apiKey,
  timeoutMs = DEFAULT_TIMEOUT_MS,
  signal,
  fetch: fetchImpl = globalThis.fetch,
}: FetchServerContextWindowOptions): Promise<ServerContextWindow | undefined> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (apiKey !== undefined && apiKey !== '') headers['authorization'] = `Bearer ${apiKey}`;
  const get = async (url: string): Promise<unknown> => {
    const timeout = AbortSignal.timeout(timeoutMs);
    const response = await fetchImpl(url, {
      headers,
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
    return readJson(response);
  };
  const props = contextWindowFromProps(await get(`${serverRoot(baseURL)}/props`));
  if (props !== undefined) return props;
  return contextWindowFromModels(await get(`${baseURL.replace(/\/+$/, '')}/models`), model);
}
