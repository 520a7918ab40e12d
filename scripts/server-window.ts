// Node only, for the real-model tests and bench/llm.ts (the package never asks): the context window
// an OpenAI-compatible server states, before any request: llama.cpp `GET /props` (server-context.cpp
// `get_res_props`: `default_generation_settings.n_ctx`, one slot's context, what a request gets) and
// `GET /v1/models` (`data[].meta.n_ctx`); vLLM `GET /v1/models` (`ModelCard`: `data[].max_model_len`).
// OpenAI and Ollama state neither.
import { isRecord } from '../src/core/schema.js';

export type ServerContextWindowSource = 'llama.cpp /props' | 'llama.cpp /v1/models' | 'vLLM /v1/models';

/** The window a server states, in its own tokens. */
export interface ServerContextWindow {
  contextWindow: number;
  source: ServerContextWindowSource;
}

/** Larger windows are not believed. */
const MAX_CONTEXT_WINDOW = 1_000_000_000;
/** A larger body is not read (llama.cpp's `/props` carries the chat template: kilobytes). */
const MAX_BODY_BYTES = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;

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
 * The window in a `/v1/models` body for the entry whose `id` is `model`, else the only entry of a
 * server that lists one (a single-model server answers to any model name).
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

export interface FetchServerContextWindowOptions {
  /** The OpenAI base URL, e.g. `http://127.0.0.1:8080/v1`. */
  baseURL: string;
  /** Picks the `/v1/models` entry. */
  model?: string;
  /** Sent as `Authorization: Bearer` (a server started with an API key guards both endpoints). */
  apiKey?: string;
  /** Deadline for each of the two requests. @default 10_000 */
  timeoutMs?: number;
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
 * Asks a server for its context window: `/props` first, then `/v1/models`; `undefined` when neither
 * states one. @throws what `fetch` throws, a `TimeoutError`, or the signal's reason.
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
