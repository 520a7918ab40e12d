// Node only: the codec server (`temporal-compactor codec-server`), so the Temporal UI and the
// `temporal` CLI show what the compactor's payloads hold. It speaks Temporal's remote codec
// protocol: `POST …/decode`, `…/encode` and `…/download` (only the last path segment counts, so it
// can be mounted under `/{namespace}/`), each taking and answering `{ "payloads": [Payload, …] }`
// in protobuf's JSON form (metadata values and data in base64).
//
// - decode does what a configured client does: resolve External Storage claims through the store,
//   then undo the codec (decompress, decrypt), so a chat activity's input shows as the conversation,
//   not as a claim. The UI (2.54) asks every decode to keep claims (`?preserveStorageRefs=true`) and
//   offers a download button for them instead; a claim is resolved anyway unless its payload (as
//   its manifest states it) is over `inlineLimit` (default 2 MiB: what history itself would have
//   held inline without a store), so the event history reads as it would without one.
// - download resolves and decodes claims only (the UI's download button).
// - encode (payloads the UI or CLI sends, e.g. a signal's input) runs the codec, every payload
//   inline; with `encodeToStore`, then the store, as a worker does.
//
// It hands decrypted payloads to whoever reaches it, so every request needs its token: in the
// path (`http://HOST:PORT/TOKEN/decode`: the UI's codec endpoint setting holds a URL, never a
// header) or as `Authorization: Bearer TOKEN` (the CLI's `--codec-auth`). Without a configured
// token it makes one at start, and `url` carries it. What one request may cost is bounded before
// the work: its body, its number of payloads, the bytes it decodes (a claim's size is read from
// its manifest and counted before its payload is read), and how many requests are at work or wait.
// Refusals say their type in `X-Compactor-Refusal` and one line of text, never a store path or a
// raw error (the log has those). Browsers call it from the UI's origin with
// `Content-Type: application/json`, `X-Namespace` and sometimes `Authorization`, so every call is
// preceded by a CORS preflight; only configured origins get an answer.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StorageDriverClaim, type DataConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import {
  decodeReferencePayload,
  ExternalStorageRunner,
  isReferencePayload,
} from '@temporalio/common/lib/internal-non-workflow/index.js';
import proto from '@temporalio/proto';
import { CHUNK_STORE_DRIVER_NAME, ChunkStoreDriver } from './chunk-store.js';
import { CompactorCodec, payloadProtoSize } from './codec.js';
import {
  ChunkIntegrityError,
  ChunkMissingError,
  PayloadDecodeError,
  PayloadKeyMissingError,
  PayloadTooLargeError,
} from './errors.js';
import { PayloadStoreNotConfiguredError } from '../shared/payload-store-missing.js';
import { MAX_STORED_PAYLOAD_BYTES } from './object-format.js';

const PayloadProto = proto.temporal.api.common.v1.Payload;

/** Temporal refuses payloads over 2 MiB, so a larger store threshold would only let such payloads fail. */
export const MAX_PAYLOAD_THRESHOLD = 2 * 1024 * 1024;
/** @default 8081 — the codec server's port (`temporal-compactor codec-server`). */
export const DEFAULT_CODEC_SERVER_PORT = 8081;
/** @default '127.0.0.1' — the codec server answers this machine only unless told otherwise. */
export const DEFAULT_CODEC_SERVER_HOST = '127.0.0.1';
/**
 * @default 8 MiB: one payload at the codec's bound (4 MiB) in base64 with room to spare; the UI
 * sends the payloads of one event at a time, which Temporal's 4 MiB messages carried.
 */
export const DEFAULT_CODEC_SERVER_MAX_BODY_BYTES = 8 * 1024 * 1024;
/** @default 1,000 payloads a request. */
export const DEFAULT_CODEC_SERVER_MAX_PAYLOADS = 1_000;
/** @default 64 MiB decoded a request: the largest payload the store holds, so any one can be downloaded. */
export const DEFAULT_CODEC_SERVER_MAX_DECODED_BYTES = MAX_STORED_PAYLOAD_BYTES;
/** @default 2 requests at work at once; @see DEFAULT_CODEC_SERVER_QUEUE */
export const DEFAULT_CODEC_SERVER_CONCURRENCY = 2;
/** @default 32 requests waiting for their turn; more are answered 503 at once. */
export const DEFAULT_CODEC_SERVER_QUEUE = 32;
/** Payloads of one request decoded or encoded at once. */
const PAYLOADS_AT_ONCE = 4;
/** A request must arrive whole within this (a slow body would hold its turn). */
const REQUEST_TIMEOUT_MS = 30_000;

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
  /**
   * Required on every request, in the path (`/TOKEN/decode`) or as `Authorization: Bearer TOKEN`.
   * @default a new random token (`url` carries it)
   */
  token?: string;
  /** Let `/encode` store large payloads (claims), as a worker does; otherwise every payload is encoded inline. @default false */
  encodeToStore?: boolean;
  /** @default DEFAULT_CODEC_SERVER_MAX_PAYLOADS */
  maxPayloads?: number;
  /** Bytes the payloads of one request may decode to. @default DEFAULT_CODEC_SERVER_MAX_DECODED_BYTES */
  maxDecodedBytes?: number;
  /** Requests at work at once. @default DEFAULT_CODEC_SERVER_CONCURRENCY */
  concurrency?: number;
  /** Requests waiting for their turn; more are answered 503. @default DEFAULT_CODEC_SERVER_QUEUE */
  queue?: number;
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
  /** `http://HOST:PORT/TOKEN`: what the UI's and the CLI's codec endpoint is set to (it carries the token: a secret). */
  url: string;
  /** `http://HOST:PORT`, without the token. */
  origin: string;
  host: string;
  port: number;
  /** Answers browser requests from one more origin (e.g. a dev server's UI, known only once it started). */
  allowOrigin(origin: string): void;
  /** Stops listening and closes open connections. Idempotent. */
  close(): Promise<void>;
}

/**
 * A request the server refuses: answered with `status`, its `type` in `X-Compactor-Refusal` and
 * `message` as plain text; `detail` (a raw error, which may name store paths and object keys) goes
 * to the log only.
 */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly detail?: string,
  ) {
    super(message);
  }
}

const badRequest = (message: string, detail?: string): Refusal => new Refusal(400, 'BadRequest', message, {}, detail);

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
            ? 'it is tampered, truncated, too large, or encrypted with another key'
            : error instanceof PayloadTooLargeError
              ? 'it is larger than the codec or the store may hold'
              : 'an error of the codec server';
  return `(${type}): ${meaning}; the codec server's log has the detail`;
}

/** The log's account of an error: its message, or what it is. */
const detailOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function base64Field(value: unknown, path: string): void {
  if (typeof value !== 'string' || !BASE64.test(value) || value.replace(/=+$/, '').length % 4 === 1)
    throw badRequest(`${path}: expected a base64 string`);
}

/** One payload of a request body, checked field by field (the error names the field), as protobuf's JSON form reads. */
function payloadFromJson(value: unknown, path: string): Payload {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw badRequest(`${path}: expected a payload object`);
  const metadata: unknown = Reflect.get(value, 'metadata');
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata !== 'object' || Array.isArray(metadata))
      throw badRequest(`${path}.metadata: expected an object of base64 strings`);
    for (const [name, entry] of Object.entries(metadata)) base64Field(entry, `${path}.metadata.${name}`);
  }
  const data: unknown = Reflect.get(value, 'data');
  if (data !== undefined && data !== null) base64Field(data, `${path}.data`);
  try {
    return PayloadProto.fromObject(value);
  } catch (error) {
    throw badRequest(`${path}: not a payload in protobuf's JSON form`, detailOf(error));
  }
}

function payloadsFromBody(text: string, maxPayloads: number): Payload[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw badRequest('the body is not JSON: expected {"payloads": [...]}');
  }
  const payloads: unknown = typeof body === 'object' && body !== null ? Reflect.get(body, 'payloads') : undefined;
  // Protobuf's JSON form leaves an empty list out altogether.
  if (payloads === undefined && typeof body === 'object' && body !== null && !Array.isArray(body)) return [];
  if (!Array.isArray(payloads)) throw badRequest('payloads: expected an array of payloads');
  if (payloads.length > maxPayloads)
    throw new Refusal(
      413,
      'TooManyPayloads',
      `the body holds ${payloads.length} payloads; at most ${maxPayloads} are taken a request`,
    );
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
      new Refusal(413, 'BodyTooLarge', `the body is ${declared} bytes; at most ${limit} are accepted`, {
        Connection: 'close',
      }),
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
      reject(new Refusal(413, 'BodyTooLarge', `the body is over ${limit} bytes`, { Connection: 'close' }));
    });
    request.on('end', () => {
      if (!over) resolve(Buffer.concat(parts).toString('utf8'));
    });
    request.on('error', reject);
  });
}

/** A path segment as the client meant it (a malformed escape stays as it is). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
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

/** What the payloads of one request have decoded to so far, against the bound. */
class DecodeBudget {
  private used = 0;
  constructor(private readonly limit: number) {}

  /** Counts `bytes` more; refuses the request when that passes the bound. */
  take(bytes: number): void {
    this.used += bytes;
    if (this.used > this.limit)
      throw new Refusal(
        413,
        'DecodedTooLarge',
        `the payloads of this request decode to more than ${this.limit} bytes: ask for fewer at a time`,
      );
  }
}

/** Runs `work` over `items`, at most `width` at once, in order of start; the first failure stops the rest. */
async function eachAtMost<T, R>(
  items: readonly T[],
  width: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  let failed = false;
  const lane = async (): Promise<void> => {
    for (let index = next; !failed && index < items.length; index = next) {
      next += 1;
      const item = items[index];
      if (item === undefined) continue;
      try {
        results[index] = await work(item, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return results;
}

/** Turns for requests: `concurrency` at work, `queue` waiting, the rest refused at once. */
function turns(concurrency: number, queue: number): { take(): Promise<void>; give(): void } {
  let active = 0;
  const waiting: Array<() => void> = [];
  return {
    async take() {
      if (active < concurrency) {
        active += 1;
        return;
      }
      if (waiting.length >= queue)
        throw new Refusal(503, 'Busy', `busy: ${concurrency} requests at work and ${queue} waiting; try again`, {
          'Retry-After': '1',
        });
      // `give` hands its turn over, keeping `active` as it is.
      await new Promise<void>((resolve) => waiting.push(resolve));
    },
    give() {
      const next = waiting.shift();
      if (next === undefined) active -= 1;
      else next();
    },
  };
}

/**
 * Starts a codec server for the compactor's payloads (see the module comment for the protocol).
 *
 * @example
 * const config = loadConfig();
 * const server = await startCodecServer({ dataConverter: payloadConverterFromConfig(config).dataConverter, allowedOrigins: config.codecServerOrigins });
 * console.log(`temporal server start-dev --ui-codec-endpoint ${server.url}`); // the URL carries the token
 */
export async function startCodecServer({
  dataConverter,
  host = DEFAULT_CODEC_SERVER_HOST,
  port = DEFAULT_CODEC_SERVER_PORT,
  allowedOrigins = [],
  token = randomBytes(24).toString('base64url'),
  encodeToStore = false,
  inlineLimit = DEFAULT_CODEC_SERVER_INLINE_LIMIT,
  maxBodyBytes = DEFAULT_CODEC_SERVER_MAX_BODY_BYTES,
  maxPayloads = DEFAULT_CODEC_SERVER_MAX_PAYLOADS,
  maxDecodedBytes = DEFAULT_CODEC_SERVER_MAX_DECODED_BYTES,
  concurrency = DEFAULT_CODEC_SERVER_CONCURRENCY,
  queue = DEFAULT_CODEC_SERVER_QUEUE,
  log = () => undefined,
}: CodecServerOptions): Promise<CodecServer> {
  if (token.length < 16) throw new RangeError('a codec server token has at least 16 characters');
  const codecs = dataConverter.payloadCodecs ?? [];
  // Without the store, /encode leaves no payload to it: ours encodes every one inline.
  const encodeCodecs: PayloadCodec[] = encodeToStore
    ? codecs
    : codecs.map((codec) => (codec instanceof CompactorCodec ? codec.inlineOnly() : codec));
  const runner =
    dataConverter.externalStorage === undefined ? undefined : new ExternalStorageRunner(dataConverter.externalStorage);
  // Our driver states a claim's size before its payload is read; another driver's claims are counted after.
  const chunkStore = dataConverter.externalStorage?.drivers.find(
    (driver): driver is ChunkStoreDriver => driver instanceof ChunkStoreDriver,
  );
  const requestTurns = turns(concurrency, queue);
  const origins = new Set<string>();

  const allowOrigin = (origin: string): void => {
    const normalized = normalizeOrigin(origin.trim());
    if (normalized === undefined) throw new RangeError(`not an http(s) origin: ${JSON.stringify(origin)}`);
    origins.add(normalized);
  };
  allowedOrigins.forEach(allowOrigin);
  const expectedToken = digest(token);
  /** Whether a request carries the token: as a path segment, or as a bearer token. */
  const authorized = (segments: readonly string[], authorization: string | undefined): boolean => {
    const offered = [...segments, ...(authorization?.startsWith('Bearer ') === true ? [authorization.slice(7)] : [])];
    // Compared as digests: equal lengths for timingSafeEqual, and no timing hint about the token.
    return offered.some((candidate) => timingSafeEqual(digest(candidate), expectedToken));
  };
  /** A request's URL as the log and the answers show it: the token is never written down. */
  const shown = (url: string): string =>
    url
      .split(/([/?])/)
      .map((part) => (timingSafeEqual(digest(decodeSegment(part)), expectedToken) ? '<token>' : part))
      .join('');

  /** The size of the payload a claim of our store names, as its manifest states it; undefined for anything else. */
  const claimedSize = async (payload: Payload): Promise<number | undefined> => {
    if (chunkStore === undefined || !isReferencePayload(payload)) return undefined;
    const { driverName, claimData } = decodeReferencePayload(payload);
    if (driverName !== CHUNK_STORE_DRIVER_NAME) return undefined;
    return chunkStore.payloadSize(new StorageDriverClaim(claimData));
  };

  // As a configured client does: on the way in, the store gives back what claims name, then the
  // codecs are undone last-first; on the way out, the codecs run first-first, then the store.
  // Decoding counts against the request's budget: a claim of ours by the size its manifest
  // states, before its payload is read; anything else by what it decoded to.
  const decodeOne = async (payload: Payload, budget: DecodeBudget, stated: number | undefined): Promise<Payload> => {
    if (stated !== undefined) budget.take(stated);
    let current = runner === undefined ? payload : single(await runner.retrieve([payload]), 'the payload store');
    for (const codec of [...codecs].reverse()) current = single(await codec.decode([current]), 'a payload codec');
    budget.take(Math.max(0, payloadProtoSize(current) - (stated ?? 0)));
    return current;
  };
  const encodeOne = async (payload: Payload): Promise<Payload> => {
    let current = payload;
    for (const codec of encodeCodecs) current = single(await codec.encode([current]), 'a payload codec');
    return runner === undefined || !encodeToStore
      ? current
      : single(await runner.store([current]), 'the payload store');
  };

  const corsHeaders = (request: IncomingMessage): Record<string, string> | undefined => {
    const origin = request.headers.origin;
    if (origin === undefined) return {};
    if (!origins.has('*') && !origins.has(origin)) return undefined;
    // The UI may send cookies (`includeCredentials`): that needs the origin by name, never `*`.
    return {
      'Access-Control-Allow-Origin': origin,
      'Access-Control-Allow-Credentials': 'true',
      'Access-Control-Expose-Headers': 'X-Compactor-Refusal',
      Vary: 'Origin',
    };
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const cors = corsHeaders(request);
    const path = new URL(request.url ?? '/', 'http://codec-server').pathname;
    const segments = path
      .split('/')
      .filter((segment) => segment !== '')
      .map(decodeSegment);
    const operation = segments.at(-1);
    if (!isOperation(operation))
      throw new Refusal(404, 'NotFound', `no such endpoint ${shown(path)}: POST /decode, /encode or /download`);
    if (cors === undefined) {
      throw new Refusal(
        403,
        'OriginNotAllowed',
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
      throw new Refusal(
        405,
        'MethodNotAllowed',
        `${request.method ?? 'this method'} is not allowed: POST /${operation}`,
        { Allow: 'POST, OPTIONS' },
      );
    if (!authorized(segments, request.headers.authorization))
      throw new Refusal(
        401,
        'Unauthorized',
        'the codec server\'s token is required: in the path (its endpoint URL, printed at start) or as "Authorization: Bearer <token>"',
        { 'WWW-Authenticate': 'Bearer' },
      );
    await requestTurns.take();
    try {
      await answer(request, response, operation, cors);
    } finally {
      requestTurns.give();
    }
  };

  /** Answers an authorized request, in its turn. */
  const answer = async (
    request: IncomingMessage,
    response: ServerResponse,
    operation: Operation,
    cors: Record<string, string>,
  ): Promise<void> => {
    const payloads = payloadsFromBody(await readBody(request, maxBodyBytes), maxPayloads);
    const keepLargeClaims =
      new URL(request.url ?? '/', 'http://codec-server').searchParams.get('preserveStorageRefs') === 'true';
    if (operation === 'download') {
      const index = payloads.findIndex((payload) => !isReferencePayload(payload));
      if (index >= 0) throw badRequest(`payloads[${index}]: not a storage reference: /download takes claims only`);
    }
    const budget = new DecodeBudget(maxDecodedBytes);
    const transform = async (payload: Payload): Promise<Payload> => {
      if (operation === 'encode') return encodeOne(payload);
      // A claim of ours is sized by its manifest: what the reference says is its writer's word.
      const stated = await claimedSize(payload);
      const size = stated ?? (isReferencePayload(payload) ? decodeReferencePayload(payload).sizeBytes : 0);
      if (operation === 'decode' && keepLargeClaims && isReferencePayload(payload) && size > inlineLimit)
        return payload;
      return decodeOne(payload, budget, stated);
    };
    const results = await eachAtMost(payloads, PAYLOADS_AT_ONCE, async (payload, index) => {
      // A claim with no store to read it from: say which setting this server lacks, rather than
      // answer the claim as if it were the payload (or, asked to keep claims, leave it a claim).
      const keptAsClaim = operation === 'decode' && keepLargeClaims;
      if (operation !== 'encode' && runner === undefined && isReferencePayload(payload) && !keptAsClaim)
        throw new Refusal(
          400,
          'PayloadStoreNotConfigured',
          `payloads[${index}]: cannot ${operation}: ${new PayloadStoreNotConfiguredError('this codec server', decodeReferencePayload(payload).driverName).message}`,
        );
      try {
        return await transform(payload);
      } catch (error) {
        if (error instanceof Refusal) throw error;
        // The protocol answers codec errors with 400; the text names the payload and the kind of
        // failure, the log what it was.
        throw new Refusal(
          400,
          error instanceof Error ? error.name : 'Error',
          `payloads[${index}]: cannot ${operation} ${failureAnswer(error)}`,
          {},
          detailOf(error),
        );
      }
    });
    const body = JSON.stringify({ payloads: results.map(payloadToJson) });
    response.writeHead(200, { ...cors, 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }).end(body);
  };

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      const refusal =
        error instanceof Refusal
          ? error
          : new Refusal(
              500,
              'InternalError',
              "internal error: the codec server's log has the detail",
              {},
              detailOf(error),
            );
      const namespace = request.headers['x-namespace'];
      log(
        `${request.method ?? '?'} ${shown(request.url ?? '?')}${typeof namespace === 'string' ? ` (namespace ${namespace})` : ''}: ${refusal.status} ${refusal.message}${refusal.detail === undefined ? '' : ` — ${refusal.detail}`}`,
      );
      // Plain text, one line: the UI (and the CLI) show the payloads undecoded on any 4xx and flag
      // the codec server as failing; the line is for the person reading logs or the network tab,
      // which is why it carries the CORS headers too.
      if (!response.headersSent)
        response.writeHead(refusal.status, {
          ...corsHeaders(request),
          ...refusal.headers,
          'X-Compactor-Refusal': refusal.type,
          'Content-Type': 'text/plain; charset=utf-8',
        });
      response.end(`${refusal.message}\n`);
    });
  });
  // A request must arrive whole in time: a slow body would hold its turn.
  server.requestTimeout = REQUEST_TIMEOUT_MS;
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
  const origin = `http://${urlHost}:${address.port}`;
  let closing: Promise<void> | undefined;
  return {
    url: `${origin}/${encodeURIComponent(token)}`,
    origin,
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
