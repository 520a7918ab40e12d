// Node only: the codec server (`temporal-compactor codec-server`), so the Temporal UI and the
// `temporal` CLI show what the compactor's payloads hold. It speaks Temporal's remote codec
// protocol: `POST …/decode`, `…/encode` and `…/download` (only the last path segment counts, so it
// can be mounted under `/{namespace}/`), each taking and answering `{ "payloads": [Payload, …] }`
// in protobuf's JSON form (metadata values and data in base64).
//
// - decode does what a configured client does: resolve External Storage claims through the store,
//   then undo the codec (decompress, decrypt), so a chat activity's input shows as the
//   conversation, not as a claim. The UI (2.54) asks every decode to keep claims
//   (`?preserveStorageRefs=true`) and offers a download button for them instead; a claim is
//   resolved anyway unless its payload is over `inlineLimit` (default 2 MiB: what history itself
//   would have held inline without a store), so the event history reads as it would without one.
// - download resolves and decodes claims only (the UI's download button).
// - encode (payloads the UI or CLI sends, e.g. a signal's input) runs the codec, then the store.
//
// Browsers call it from the UI's origin with `Content-Type: application/json`, `X-Namespace` and
// sometimes `Authorization`, so every call is preceded by a CORS preflight; only configured origins
// get an answer. Requests without an Origin (the CLI, scripts) are not browser requests and need
// no CORS; a configured bearer token guards both.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DataConverter, Payload } from '@temporalio/common';
import {
  decodeReferencePayload,
  ExternalStorageRunner,
  isReferencePayload,
} from '@temporalio/common/lib/internal-non-workflow/index.js';
import proto from '@temporalio/proto';
import { ChunkIntegrityError, ChunkMissingError, PayloadDecodeError, PayloadKeyMissingError } from './errors.js';

const PayloadProto = proto.temporal.api.common.v1.Payload;

/** @default 64 MiB: without a store one payload may reach Temporal's 2 MB limit, and a request carries many. */
/** Temporal refuses payloads over 2 MiB, so a larger store threshold would only let such payloads fail. */
export const MAX_PAYLOAD_THRESHOLD = 2 * 1024 * 1024;
/** @default 8081 — the codec server's port (`temporal-compactor codec-server`). */
export const DEFAULT_CODEC_SERVER_PORT = 8081;
/** @default '127.0.0.1' — the codec server answers this machine only unless told otherwise. */
export const DEFAULT_CODEC_SERVER_HOST = '127.0.0.1';
export const DEFAULT_CODEC_SERVER_MAX_BODY_BYTES = 64 * 1024 * 1024;

/** @default 2 MiB, Temporal's own payload limit: a claim to anything larger stays a claim when the caller asks to keep claims. */
export const DEFAULT_CODEC_SERVER_INLINE_LIMIT = MAX_PAYLOAD_THRESHOLD;

/** The headers the UI sends with its codec requests (CORS must allow each by name). */
const ALLOWED_HEADERS = 'Content-Type, X-Namespace, Authorization, Authorization-Extras';

const OPERATIONS = ['decode', 'encode', 'download'] as const;
type Operation = (typeof OPERATIONS)[number];
const isOperation = (value: string | undefined): value is Operation =>
  OPERATIONS.some((operation) => operation === value);

export interface CodecServerOptions {
  /**
   * The payload codecs and External Storage to undo and apply — a client's data converter, e.g.
   * `payloadConverterFromConfig(config).dataConverter`, so the server agrees with workers and clients.
   */
  dataConverter: Pick<DataConverter, 'payloadCodecs' | 'externalStorage'>;
  /** @default '127.0.0.1' */
  host?: string;
  /** 0: any free port (read the chosen one from `port`). @default 8081 */
  port?: number;
  /** Browser origins answered (CORS), e.g. `http://localhost:8233`; `'*'` answers any. More can be added with `allowOrigin`. @default none */
  allowedOrigins?: readonly string[];
  /** Required as `Authorization: Bearer <token>` on every encode and decode. @default undefined — no authentication */
  token?: string;
  /**
   * When a decode asks to keep claims (`?preserveStorageRefs=true`, as the Temporal UI does), claims
   * of payloads up to this many bytes are resolved anyway; larger ones are left for `/download`.
   * @default DEFAULT_CODEC_SERVER_INLINE_LIMIT
   */
  inlineLimit?: number;
  /** @default DEFAULT_CODEC_SERVER_MAX_BODY_BYTES */
  maxBodyBytes?: number;
  /** Where refused and failed requests are reported, one line each. @default nowhere */
  log?: (line: string) => void;
}

/** A running codec server. */
export interface CodecServer {
  /** `http://HOST:PORT`: what the UI's and the CLI's codec endpoint is set to. */
  url: string;
  host: string;
  port: number;
  /** Answers browser requests from one more origin (e.g. a dev server's UI, known only once it started). */
  allowOrigin(origin: string): void;
  /** Stops listening and closes open connections. Idempotent. */
  close(): Promise<void>;
}

/**
 * A request the server refuses: answered with `status` and `message` as plain text; `detail` (a
 * raw error, which may name store paths and object keys) goes to the log only.
 */
class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly detail?: string,
  ) {
    super(message);
  }
}

/**
 * What the answer says of an error while a payload was decoded or encoded: its type and what that
 * type means, never its message, which names store paths, object keys and other errors' text (for
 * the log). A key id is no secret, and the one thing an operator needs to act on a missing key.
 */
function failureAnswer(error: unknown): string {
  const type = error instanceof Error ? error.name : typeof error;
  const meaning =
    error instanceof ChunkMissingError
      ? 'a stored object it needs is not in the payload store'
      : error instanceof ChunkIntegrityError
        ? 'a stored object it needs does not hold what its name promises'
        : error instanceof PayloadKeyMissingError
          ? `it is encrypted with key id ${JSON.stringify(error.keyId)}, which this server does not hold`
          : error instanceof PayloadDecodeError
            ? 'it is tampered, truncated, or encrypted with another key'
            : 'an error of the codec server';
  return `(${type}): ${meaning}; the codec server's log has the detail`;
}

/** The log's account of an error: its message, or what it is. */
const detailOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function base64Field(value: unknown, path: string): void {
  if (typeof value !== 'string' || !BASE64.test(value) || value.replace(/=+$/, '').length % 4 === 1)
    throw new Refusal(400, `${path}: expected a base64 string`);
}

/** One payload of a request body, checked field by field (the error names the field), as protobuf's JSON form reads. */
function payloadFromJson(value: unknown, path: string): Payload {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Refusal(400, `${path}: expected a payload object`);
  const metadata: unknown = Reflect.get(value, 'metadata');
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata !== 'object' || Array.isArray(metadata))
      throw new Refusal(400, `${path}.metadata: expected an object of base64 strings`);
    for (const [name, entry] of Object.entries(metadata)) base64Field(entry, `${path}.metadata.${name}`);
  }
  const data: unknown = Reflect.get(value, 'data');
  if (data !== undefined && data !== null) base64Field(data, `${path}.data`);
  try {
    return PayloadProto.fromObject(value);
  } catch (error) {
    throw new Refusal(400, `${path}: not a payload in protobuf's JSON form`, {}, detailOf(error));
  }
}

function payloadsFromBody(text: string): Payload[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Refusal(400, 'the body is not JSON: expected {"payloads": [...]}');
  }
  const payloads: unknown = typeof body === 'object' && body !== null ? Reflect.get(body, 'payloads') : undefined;
  // Protobuf's JSON form leaves an empty list out altogether.
  if (payloads === undefined && typeof body === 'object' && body !== null && !Array.isArray(body)) return [];
  if (!Array.isArray(payloads)) throw new Refusal(400, 'payloads: expected an array of payloads');
  return payloads.map((payload, index) => payloadFromJson(payload, `payloads[${index}]`));
}

function payloadToJson(payload: Payload): Record<string, unknown> {
  return PayloadProto.toObject(PayloadProto.fromObject(payload), { bytes: String, longs: String });
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function readBody(request: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit)
    return Promise.reject(
      new Refusal(413, `the body is ${declared} bytes; at most ${limit} are accepted`, { Connection: 'close' }),
    );
  // Events rather than async iteration: leaving an iteration early destroys the socket, and the
  // client would see a reset instead of the 413. Past the limit the rest is read and dropped.
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let over = false;
    request.on('data', (part: Buffer) => {
      if (over) return;
      size += part.length;
      if (size <= limit) {
        parts.push(part);
        return;
      }
      over = true;
      parts.length = 0;
      reject(new Refusal(413, `the body is over ${limit} bytes`, { Connection: 'close' }));
    });
    request.on('end', () => {
      if (!over) resolve(Buffer.concat(parts).toString('utf8'));
    });
    request.on('error', reject);
  });
}

function isAddressInfo(value: unknown): value is AddressInfo {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof Reflect.get(value, 'port') === 'number' &&
    typeof Reflect.get(value, 'address') === 'string'
  );
}

/** The one result of a list operation on one payload. */
function single(results: Payload[], what: string): Payload {
  const [result] = results;
  if (result === undefined || results.length !== 1)
    throw new Error(`${what} returned ${results.length} payloads for one`);
  return result;
}

/** The origin as browsers send it (`http://host:port`), or undefined when `text` is not an http(s) origin. */
function normalizeOrigin(text: string): string | undefined {
  if (text === '*') return text;
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts a codec server for the compactor's payloads (see the module comment for the protocol).
 *
 * @example
 * const config = loadConfig();
 * const server = await startCodecServer({ dataConverter: payloadConverterFromConfig(config).dataConverter, allowedOrigins: config.codecServerOrigins });
 * console.log(`temporal server start-dev --ui-codec-endpoint ${server.url}`);
 */
export async function startCodecServer({
  dataConverter,
  host = DEFAULT_CODEC_SERVER_HOST,
  port = DEFAULT_CODEC_SERVER_PORT,
  allowedOrigins = [],
  token,
  inlineLimit = DEFAULT_CODEC_SERVER_INLINE_LIMIT,
  maxBodyBytes = DEFAULT_CODEC_SERVER_MAX_BODY_BYTES,
  log = () => undefined,
}: CodecServerOptions): Promise<CodecServer> {
  const codecs = dataConverter.payloadCodecs ?? [];
  const runner =
    dataConverter.externalStorage === undefined ? undefined : new ExternalStorageRunner(dataConverter.externalStorage);
  const origins = new Set<string>();
  const allowOrigin = (origin: string): void => {
    const normalized = normalizeOrigin(origin.trim());
    if (normalized === undefined) throw new RangeError(`not an http(s) origin: ${JSON.stringify(origin)}`);
    origins.add(normalized);
  };
  allowedOrigins.forEach(allowOrigin);
  const expectedToken = token === undefined ? undefined : digest(`Bearer ${token}`);

  // As a configured client does: on the way in, the store gives back what claims name, then the
  // codecs are undone last-first; on the way out, the codecs run first-first, then the store.
  const decodeOne = async (payload: Payload): Promise<Payload> => {
    let current = runner === undefined ? payload : single(await runner.retrieve([payload]), 'the payload store');
    for (const codec of [...codecs].reverse()) current = single(await codec.decode([current]), 'a payload codec');
    return current;
  };
  const encodeOne = async (payload: Payload): Promise<Payload> => {
    let current = payload;
    for (const codec of codecs) current = single(await codec.encode([current]), 'a payload codec');
    return runner === undefined ? current : single(await runner.store([current]), 'the payload store');
  };

  const corsHeaders = (request: IncomingMessage): Record<string, string> | undefined => {
    const origin = request.headers.origin;
    if (origin === undefined) return {};
    if (!origins.has('*') && !origins.has(origin)) return undefined;
    // The UI may send cookies (`includeCredentials`): that needs the origin by name, never `*`.
    return { 'Access-Control-Allow-Origin': origin, 'Access-Control-Allow-Credentials': 'true', Vary: 'Origin' };
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const cors = corsHeaders(request);
    const path = new URL(request.url ?? '/', 'http://codec-server').pathname;
    const operation = path
      .split('/')
      .filter((segment) => segment !== '')
      .at(-1);
    if (!isOperation(operation)) throw new Refusal(404, `no such endpoint ${path}: POST /decode, /encode or /download`);
    if (cors === undefined) {
      throw new Refusal(
        403,
        `origin ${request.headers.origin ?? ''} is not allowed: add it to COMPACTOR_CODEC_SERVER_ORIGINS`,
      );
    }
    if (request.method === 'OPTIONS') {
      // A preflight carries no credentials: it is answered for allowed origins alone.
      const headers: Record<string, string> = {
        ...cors,
        'Access-Control-Allow-Methods': 'POST, OPTIONS',
        'Access-Control-Allow-Headers': ALLOWED_HEADERS,
        'Access-Control-Max-Age': '600',
      };
      // Chrome asks before a public page (e.g. Temporal Cloud's UI) may call a server on this machine.
      if (request.headers['access-control-request-private-network'] === 'true')
        headers['Access-Control-Allow-Private-Network'] = 'true';
      response.writeHead(204, headers).end();
      return;
    }
    if (request.method !== 'POST')
      throw new Refusal(405, `${request.method ?? 'this method'} is not allowed: POST /${operation}`, {
        Allow: 'POST, OPTIONS',
      });
    if (expectedToken !== undefined) {
      // Compared as digests: equal lengths for timingSafeEqual, and no timing hint about the token.
      const given = digest(request.headers.authorization ?? '');
      if (!timingSafeEqual(given, expectedToken))
        throw new Refusal(401, 'a valid "Authorization: Bearer <token>" header is required', {
          'WWW-Authenticate': 'Bearer',
        });
    }
    const payloads = payloadsFromBody(await readBody(request, maxBodyBytes));
    const keepLargeClaims =
      new URL(request.url ?? '/', 'http://codec-server').searchParams.get('preserveStorageRefs') === 'true';
    if (operation === 'download') {
      const index = payloads.findIndex((payload) => !isReferencePayload(payload));
      if (index >= 0)
        throw new Refusal(400, `payloads[${index}]: not a storage reference: /download takes claims only`);
    }
    const transform = (payload: Payload): Promise<Payload> => {
      if (operation === 'encode') return encodeOne(payload);
      if (
        operation === 'decode' &&
        keepLargeClaims &&
        isReferencePayload(payload) &&
        decodeReferencePayload(payload).sizeBytes > inlineLimit
      )
        return Promise.resolve(payload);
      return decodeOne(payload);
    };
    const results = await Promise.all(
      payloads.map(async (payload, index) => {
        try {
          return await transform(payload);
        } catch (error) {
          // The protocol answers codec errors with 400; the text names the payload and the kind of
          // failure, the log what it was.
          throw new Refusal(
            400,
            `payloads[${index}]: cannot ${operation} ${failureAnswer(error)}`,
            {},
            detailOf(error),
          );
        }
      }),
    );
    const body = JSON.stringify({ payloads: results.map(payloadToJson) });
    response.writeHead(200, { ...cors, 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }).end(body);
  };

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      const refusal =
        error instanceof Refusal
          ? error
          : new Refusal(500, "internal error: the codec server's log has the detail", {}, detailOf(error));
      const namespace = request.headers['x-namespace'];
      log(
        `${request.method ?? '?'} ${request.url ?? '?'}${typeof namespace === 'string' ? ` (namespace ${namespace})` : ''}: ${refusal.status} ${refusal.message}${refusal.detail === undefined ? '' : ` — ${refusal.detail}`}`,
      );
      // Plain text, one line: the UI (and the CLI) show the payloads undecoded on any 4xx and flag
      // the codec server as failing; the line is for the person reading logs or the network tab,
      // which is why it carries the CORS headers too.
      if (!response.headersSent)
        response.writeHead(refusal.status, {
          ...corsHeaders(request),
          ...refusal.headers,
          'Content-Type': 'text/plain; charset=utf-8',
        });
      response.end(`${refusal.message}\n`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (!isAddressInfo(address)) throw new Error('the codec server is not listening on a TCP port');
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${address.port}`,
    host: address.address,
    port: address.port,
    allowOrigin,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
