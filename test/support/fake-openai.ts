// A fake OpenAI-compatible HTTP server for tests: real sockets on 127.0.0.1, a port chosen by the
// OS, and answers scripted per test. The real `openai` client talks to it through `baseURL`.
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Usage } from '../../src/core/types.js';

/** What happened to a recorded request. */
export type RequestOutcome =
  /** Still waiting for its answer (a `hang`, a `hold`, a `slow` in progress). */
  | 'pending'
  /** The server wrote a complete response (whatever its status). */
  | 'answered'
  /** The connection closed before the answer was complete: the client aborted or timed out, or `close()` ran. */
  | 'aborted'
  /** The server reset the connection on purpose (`{ kind: 'reset' }`). */
  | 'reset';

/** One request as the server received it. */
export interface RecordedRequest {
  /** Arrival order, from 0. */
  index: number;
  method: string;
  /** The request target as sent, e.g. `/v1/chat/completions`. */
  path: string;
  /** Lower-cased header names, as node:http reports them. */
  headers: IncomingHttpHeaders;
  /** The parsed JSON body; the raw text when it is not JSON; `undefined` when empty. */
  body: unknown;
  /** Updated in place as the request progresses. */
  outcome: RequestOutcome;
  /** When the whole request had arrived, in `performance.now()` milliseconds (for gaps between requests). */
  receivedAt: number;
  /** When its outcome stopped being `pending` (answered, aborted or reset), in `performance.now()` milliseconds. */
  settledAt?: number;
}

/** A 200 chat.completion whose `choices[0].message.content` is `text`. */
export interface SummaryResponse {
  kind: 'summary';
  text: string;
  /** Billed usage; @default estimated as characters / 4 of the request body and of `text`. */
  usage?: Usage;
}

/** Any status with a JSON (object) or text (string) body, e.g. 401, 429 with `retry-after`, or 200 with an odd body. */
export interface StatusResponse {
  kind: 'status';
  status: number;
  /** @default an OpenAI-style `{ error: { message, type, param, code } }` body */
  body?: unknown;
  headers?: Record<string, string>;
}

/** A 200 chat.completion with empty content. */
export interface EmptyResponse {
  kind: 'empty';
  /** @default '' */
  content?: string | null;
}

/** A 200 `application/json` response whose body is not valid JSON. */
export interface MalformedResponse {
  kind: 'malformed';
  /** @default a chat.completion cut off in the middle */
  body?: string;
}

/** Never answers: the request stays open until the client gives up or `close()` runs. */
export interface HangResponse {
  kind: 'hang';
}

/** Sends the status line, headers and half of a chat.completion body, then never finishes it. */
export interface StalledBodyResponse {
  kind: 'stalled-body';
}

/** Waits `delayMs`, then answers with `then` (unless the connection closed meanwhile). */
export interface SlowResponse {
  kind: 'slow';
  delayMs: number;
  then: ScriptedResponse;
}

/** Resets the TCP connection (RST) once the request body has arrived. */
export interface ResetResponse {
  kind: 'reset';
}

/** Holds the request until `release` settles, then answers with what it resolved to. */
export interface HoldResponse {
  kind: 'hold';
  release: Promise<ScriptedResponse>;
}

/** A dynamic answer computed from the request (e.g. a summary built from the messages sent). */
export type ResponseFunction = (request: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse>;

/** One scripted answer. */
export type ScriptedResponse =
  | SummaryResponse
  | StatusResponse
  | EmptyResponse
  | MalformedResponse
  | HangResponse
  | StalledBodyResponse
  | SlowResponse
  | ResetResponse
  | HoldResponse
  | ResponseFunction;

/** A running fake server. */
export interface FakeOpenAI {
  /** `http://127.0.0.1:<port>/v1`: pass it as the client's `baseURL`. */
  baseURL: string;
  /** Every request received, in arrival order. */
  requests: RecordedRequest[];
  /** Queues answers, consumed one per request in order. */
  script(...responses: ScriptedResponse[]): void;
  /**
   * The answer once the script is used up.
   * @default a 500 whose message says no response was scripted (see `unscriptedCount`)
   */
  setDefault(response: ScriptedResponse): void;
  /** How many requests found the script empty and no default set. */
  readonly unscriptedCount: number;
  /** Resolves with the requests once at least `count` arrived; rejects after `timeoutMs`. @default timeoutMs 5000 */
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  /** Resolves once `condition()` holds (checked at each request and each outcome change); rejects after `timeoutMs`. @default timeoutMs 5000 */
  waitUntil(condition: () => boolean, timeoutMs?: number, description?: string): Promise<void>;
  /** Stops listening and destroys every open connection (pending requests become `aborted`). Idempotent. */
  close(): Promise<void>;
}

/** A `hold` response with its release handle. */
export interface HeldResponse {
  /** Script this. */
  response: HoldResponse;
  /** Answers the held request(s) with `answer`. */
  release(answer: ScriptedResponse): void;
}

/**
 * A 200 chat.completion whose one choice is an assistant message with `message`'s fields (content,
 * tool_calls), billed `usage` (100 prompt + 5 completion tokens unless given).
 */
export function assistantReply(
  message: Record<string, unknown>,
  usage: Record<string, unknown> = { prompt_tokens: 100, completion_tokens: 5, total_tokens: 105 },
): ScriptedResponse {
  return {
    kind: 'status',
    status: 200,
    body: {
      id: 'c',
      object: 'chat.completion',
      created: 0,
      model: 'fake-agent',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', ...message } }],
      usage,
    },
  };
}

/** Creates a `{ kind: 'hold' }` response and the function that releases it. */
export function createHold(): HeldResponse {
  let release: (answer: ScriptedResponse) => void = () => undefined;
  const released = new Promise<ScriptedResponse>((resolve) => {
    release = resolve;
  });
  return { response: { kind: 'hold', release: released }, release: (answer) => release(answer) };
}

class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
}

const defaultWaitMs = 5000;

/** Starts a fake OpenAI-compatible server on 127.0.0.1 on a free port. */
export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const requests: RecordedRequest[] = [];
  const queue: ScriptedResponse[] = [];
  let fallback: ScriptedResponse | undefined;
  let unscriptedCount = 0;
  let closed = false;
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const listeners = new Set<() => void>();

  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };

  const delay = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const nextResponse = (): ScriptedResponse => {
    const scripted = queue.shift();
    if (scripted !== undefined) return scripted;
    if (fallback !== undefined) return fallback;
    unscriptedCount += 1;
    return {
      kind: 'status',
      status: 500,
      body: {
        error: {
          message: 'fake-openai: no response scripted for this request',
          type: 'fake_unscripted',
          param: null,
          code: null,
        },
      },
    };
  };

  const answer = async (
    scripted: ScriptedResponse,
    recorded: RecordedRequest,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> => {
    if (closed || res.destroyed) return;
    if (typeof scripted === 'function') {
      await answer(await scripted(recorded), recorded, req, res);
      return;
    }
    switch (scripted.kind) {
      case 'summary':
        sendJSON(res, 200, chatCompletion(recorded, scripted.text, scripted.usage));
        return;
      case 'empty':
        sendJSON(res, 200, chatCompletion(recorded, scripted.content === undefined ? '' : scripted.content, undefined));
        return;
      case 'status': {
        const body = scripted.body === undefined ? openAIErrorBody(scripted.status) : scripted.body;
        if (typeof body === 'string') {
          res.writeHead(scripted.status, { 'content-type': 'text/plain; charset=utf-8', ...scripted.headers });
          res.end(body);
        } else {
          sendJSON(res, scripted.status, body, scripted.headers);
        }
        return;
      }
      case 'malformed':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          scripted.body ??
            '{"id":"chatcmpl-fake","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis',
        );
        return;
      case 'stalled-body':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":"chatcmpl-fake","object":"chat.completion","choices":[');
        return;
      case 'hang':
        return;
      case 'slow':
        await delay(scripted.delayMs);
        await answer(scripted.then, recorded, req, res);
        return;
      case 'hold':
        await answer(await scripted.release, recorded, req, res);
        return;
      case 'reset':
        recorded.outcome = 'reset';
        recorded.settledAt = performance.now();
        req.socket.resetAndDestroy();
        notify();
        return;
    }
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded: RecordedRequest = {
        index: requests.length,
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: parseBody(Buffer.concat(chunks).toString('utf8')),
        outcome: 'pending',
        receivedAt: performance.now(),
      };
      requests.push(recorded);
      res.on('finish', () => {
        if (recorded.outcome === 'pending') recorded.outcome = 'answered';
        recorded.settledAt ??= performance.now();
        notify();
      });
      res.on('close', () => {
        if (recorded.outcome === 'pending') recorded.outcome = 'aborted';
        recorded.settledAt ??= performance.now();
        notify();
      });
      notify();
      answer(nextResponse(), recorded, req, res).catch((error: unknown) => {
        // A failing response function: answer 500 with its message so the test sees it.
        if (!res.headersSent && !res.destroyed) {
          const message = error instanceof Error ? error.message : String(error);
          sendJSON(res, 500, {
            error: {
              message: `fake-openai: response function threw: ${message}`,
              type: 'fake_error',
              param: null,
              code: null,
            },
          });
        }
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fake-openai: server has no TCP address');
  const { port }: AddressInfo = address;

  const waitUntil = (condition: () => boolean, timeoutMs = defaultWaitMs, description = 'condition'): Promise<void> => {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!condition()) return;
        cleanup();
        resolve();
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new WaitTimeoutError(`fake-openai: timed out after ${timeoutMs} ms waiting for ${description}`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
    });
  };

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...responses) => {
      queue.push(...responses);
    },
    setDefault: (response) => {
      fallback = response;
    },
    get unscriptedCount() {
      return unscriptedCount;
    },
    waitForRequests: async (count, timeoutMs = defaultWaitMs) => {
      await waitUntil(() => requests.length >= count, timeoutMs, `${count} request(s) (received ${requests.length})`);
      return requests.slice(0, count);
    },
    waitUntil,
    close: async () => {
      if (closed) return;
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await stopped;
    },
  };
}

function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed;
  } catch {
    return text;
  }
}

function sendJSON(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function modelOf(body: unknown): string {
  if (typeof body === 'object' && body !== null && 'model' in body && typeof body.model === 'string') return body.model;
  return 'fake-model';
}

function chatCompletion(request: RecordedRequest, content: string | null, usage: Usage | undefined): object {
  const promptTokens = usage?.promptTokens ?? estimateTokens(JSON.stringify(request.body ?? ''));
  const completionTokens = usage?.completionTokens ?? estimateTokens(content ?? '');
  return {
    id: `chatcmpl-fake-${request.index}`,
    object: 'chat.completion',
    created: 1_700_000_000 + request.index,
    model: modelOf(request.body),
    choices: [
      { index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' },
    ],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: usage?.totalTokens ?? promptTokens + completionTokens,
    },
  };
}

const errorTypes: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'insufficient_quota',
  403: 'permission_denied',
  404: 'not_found_error',
  429: 'rate_limit_exceeded',
};

function openAIErrorBody(status: number): object {
  return {
    error: {
      message: `fake-openai: scripted status ${status}`,
      type: errorTypes[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error'),
      param: null,
      code: null,
    },
  };
}
