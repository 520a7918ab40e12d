// Node only: the codec server (`temporal-compactor codec-server`), so the Temporal UI and the
// `temporal` CLI show what the compactor's payloads hold. Temporal's remote codec protocol: `POST
// …/decode`, `…/encode` and `…/download` (only the last path segment counts, so it can be mounted
// under `/{namespace}/`), each taking and answering `{ "payloads": [Payload, …] }` in protobuf's JSON.
// decode resolves claims through the store, then undoes the codec; asked to keep claims
// (`?preserveStorageRefs=true`: the UI, which offers a download button) it keeps only those of payloads
// over `inlineLimit` (Temporal's 2 MiB), so history reads as it would without a store. download
// resolves and decodes claims only; encode runs the codec, then the store with `encodeToStore`.
//
// It hands out decrypted payloads, so every request needs its token: in the path (the UI's codec
// endpoint is a URL, never a header) or as `Authorization: Bearer TOKEN`. A request's cost is bounded
// before the work: body, payload count, decoded bytes (a claim's size read from its manifest first),
// requests at work or waiting. Refusals carry their type in `X-Compactor-Refusal` and one line of text,
// never a store path or raw error (the log has those). Only configured origins pass CORS.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { StorageDriverClaim, type DataConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import {
  decodeReferencePayload,
  ExternalStorageRunner,
  isReferencePayload,
} from '@temporalio/common/lib/internal-non-workflow/index.js';
import proto from '@temporalio/proto';
import { CHUNK_STORE_DRIVER_NAME, ChunkStoreDriver } from './chunk-store.js';
import { CompactorCodec, payloadProtoSize } from './codec.js';
import { drain, Limiter } from './limiter.js';
import {
  ChunkIntegrityError,
  ChunkMissingError,
  PayloadDecodeError,
  PayloadKeyMissingError,
  PayloadTooLargeError,
} from './errors.js';
import { PayloadStoreNotConfiguredError } from '../shared/payload-store-missing.js';
import { isRecord } from '../core/schema.js';
import { MAX_STORED_PAYLOAD_BYTES } from './object-format.js';

const PayloadProto = proto.temporal.api.common.v1.Payload;

/** Temporal refuses payloads over 2 MiB, so a larger store threshold would only let such payloads fail. */
export const MAX_PAYLOAD_THRESHOLD = 2 * 1024 * 1024;
export const DEFAULT_CODEC_SERVER_PORT = 8081;
export const DEFAULT_CODEC_SERVER_HOST = '127.0.0.1';
const PAYLOADS_AT_ONCE = 4;
/** A request must arrive whole within this: a slow body would hold its turn. */
const REQUEST_TIMEOUT_MS = 30_000;
/** The headers the UI sends with its codec requests (CORS must allow each by name). */
const ALLOWED_HEADERS = 'Content-Type, X-Namespace, Authorization, Authorization-Extras';

type Operation = 'decode' | 'encode' | 'download';
const isOperation = (value: string | undefined): value is Operation =>
  value === 'decode' || value === 'encode' || value === 'download';

export interface CodecServerOptions {
  /** The codecs and External Storage to undo and apply: a client's data converter, so the server agrees with workers. */
  dataConverter: Pick<DataConverter, 'payloadCodecs' | 'externalStorage'>;
  host?: string;
  /** 0: any free port (read it from `port`). @default 8081 */
  port?: number;
  /** Browser origins answered (CORS), e.g. `http://localhost:8233`; `'*'` answers any. @default none */
  allowedOrigins?: readonly string[];
  /** Required on every request, in the path (`/TOKEN/decode`) or as a bearer token. @default random (`url` carries it) */
  token?: string;
  /** Let `/encode` store large payloads (claims), as a worker does. @default false */
  encodeToStore?: boolean;
  maxPayloads?: number;
  /** Bytes the payloads of one request may decode to. @default 64 MiB, the largest payload the store holds */
  maxDecodedBytes?: number;
  /** Requests at work at once. @default 2 */
  concurrency?: number;
  /** Requests waiting for their turn; more are answered 503. @default 32 */
  queue?: number;
  /** Claims of payloads up to this size are resolved even when a decode asks to keep claims. @default 2 MiB */
  inlineLimit?: number;
  /** @default 8 MiB: one payload at the codec's 4 MiB bound in base64, with room to spare */
  maxBodyBytes?: number;
  /** Where refused and failed requests are reported, one line each. @default nowhere */
  log?: (line: string) => void;
}

export interface CodecServer {
  /** `http://HOST:PORT/TOKEN`: the UI's and the CLI's codec endpoint (it carries the token: a secret). */
  url: string;
  /** `http://HOST:PORT`, without the token. */
  origin: string;
  host: string;
  port: number;
  /** Answers browser requests from one more origin (e.g. a UI known only once it started). */
  allowOrigin(origin: string): void;
  /** Stops listening and closes open connections. Idempotent. */
  close(): Promise<void>;
}

/** A refused request: `status`, `type` in `X-Compactor-Refusal`, `message` as text; `detail` for the log only. */
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
const internalError = (error: unknown): Refusal =>
  new Refusal(500, 'InternalError', "internal error: the codec server's log has the detail", {}, detailOf(error));

const MEANINGS: ReadonlyArray<readonly [new (...args: never[]) => Error, string]> = [
  [ChunkMissingError, 'a stored object it needs is not in the payload store'],
  [ChunkIntegrityError, 'a stored object it needs does not hold what its name promises'],
  [PayloadDecodeError, 'it is tampered, truncated, too large, or encrypted with another key'],
  [PayloadTooLargeError, 'it is larger than the codec or the store may hold'],
];

/**
 * An error's type and meaning for the answer, never its message (which names store paths and object
 * keys: for the log). A key id is no secret, and what an operator needs to act on a missing key.
 */
function failureAnswer(error: unknown): string {
  const meaning =
    error instanceof PayloadKeyMissingError
      ? `it is encrypted with key id ${JSON.stringify(error.keyId)}, which this server does not hold`
      : (MEANINGS.find(([type]) => error instanceof type)?.[1] ?? 'an error of the codec server');
  return `(${error instanceof Error ? error.name : typeof error}): ${meaning}; the codec server's log has the detail`;
}

const detailOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function base64Field(value: unknown, path: string): void {
  if (typeof value !== 'string' || !BASE64.test(value) || value.replace(/=+$/, '').length % 4 === 1)
    throw badRequest(`${path}: expected a base64 string`);
}

/** One payload of a request body in protobuf's JSON form, checked field by field. */
function payloadFromJson(value: unknown, path: string): Payload {
  if (!isRecord(value)) throw badRequest(`${path}: expected a payload object`);
  const metadata = value.metadata ?? {};
  if (!isRecord(metadata)) throw badRequest(`${path}.metadata: expected an object of base64 strings`);
  for (const [name, entry] of Object.entries(metadata)) base64Field(entry, `${path}.metadata.${name}`);
  if (value.data != null) base64Field(value.data, `${path}.data`);
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
  const payloads = isRecord(body) ? body.payloads : undefined;
  // Protobuf's JSON form leaves an empty list out altogether.
  if (payloads === undefined && isRecord(body)) return [];
  if (!Array.isArray(payloads)) throw badRequest('payloads: expected an array of payloads');
  if (payloads.length > maxPayloads)
    throw new Refusal(
      413,
      'TooManyPayloads',
      `the body holds ${payloads.length} payloads; at most ${maxPayloads} are taken a request`,
    );
  return payloads.map((payload, index) => payloadFromJson(payload, `payloads[${index}]`));
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

function readBody(request: IncomingMessage, limit: number): Promise<string> {
  const tooLarge = (what: string): Refusal => new Refusal(413, 'BodyTooLarge', what, { Connection: 'close' });
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit)
    return Promise.reject(tooLarge(`the body is ${declared} bytes; at most ${limit} are accepted`));
  // Events rather than async iteration: leaving an iteration early destroys the socket, and the
  // client would see a reset instead of the 413. Past the limit the rest is read and dropped.
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    request.on('data', (part: Buffer) => {
      size += part.length;
      if (size <= limit) parts.push(part);
      else if (size - part.length <= limit) {
        parts.length = 0;
        reject(tooLarge(`the body is over ${limit} bytes`));
      }
    });
    request.on('end', () => {
      if (size <= limit) resolve(Buffer.concat(parts).toString('utf8'));
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

/** Starts a codec server for the compactor's payloads (the module comment describes the protocol). */
export async function startCodecServer({
  dataConverter,
  host = DEFAULT_CODEC_SERVER_HOST,
  port = DEFAULT_CODEC_SERVER_PORT,
  allowedOrigins = [],
  token = randomBytes(24).toString('base64url'),
  encodeToStore = false,
  inlineLimit = MAX_PAYLOAD_THRESHOLD,
  maxBodyBytes = 8 * 1024 * 1024,
  maxPayloads = 1_000,
  maxDecodedBytes = MAX_STORED_PAYLOAD_BYTES,
  concurrency = 2,
  queue = 32,
  log = () => undefined,
}: CodecServerOptions): Promise<CodecServer> {
  if (token.length < 16) throw new RangeError('a codec server token has at least 16 characters');
  const codecs = dataConverter.payloadCodecs ?? [];
  // Without the store, /encode leaves no payload to it: ours encodes every one inline.
  const encodeCodecs: PayloadCodec[] = encodeToStore
    ? codecs
    : codecs.map((codec) => (codec instanceof CompactorCodec ? codec.inlineOnly() : codec));
  const decodeCodecs = [...codecs].reverse();
  const runner =
    dataConverter.externalStorage === undefined ? undefined : new ExternalStorageRunner(dataConverter.externalStorage);
  // Our driver states a claim's size before its payload is read; another driver's claims are counted after.
  const chunkStore = dataConverter.externalStorage?.drivers.find(
    (driver): driver is ChunkStoreDriver => driver instanceof ChunkStoreDriver,
  );
  const requests = new Limiter(concurrency);
  const origins = new Set<string>();

  const allowOrigin = (origin: string): void => {
    const normalized = normalizeOrigin(origin.trim());
    if (normalized === undefined) throw new RangeError(`not an http(s) origin: ${JSON.stringify(origin)}`);
    origins.add(normalized);
  };
  allowedOrigins.forEach(allowOrigin);
  const expectedToken = digest(token);
  // Compared as digests: equal lengths for timingSafeEqual, and no timing hint about the token.
  const isToken = (text: string): boolean => timingSafeEqual(digest(text), expectedToken);
  const authorized = (segments: readonly string[], authorization: string | undefined): boolean =>
    [...segments, ...(authorization?.startsWith('Bearer ') === true ? [authorization.slice(7)] : [])].some(isToken);
  /** A request's URL as the log and the answers show it: the token is never written down. */
  const shown = (url: string): string =>
    url
      .split(/([/?])/)
      .map((part) => (isToken(decodeSegment(part)) ? '<token>' : part))
      .join('');

  /** The payload size a claim of our store names, as its manifest states it; undefined for anything else. */
  const claimedSize = async (payload: Payload): Promise<number | undefined> => {
    if (chunkStore === undefined || !isReferencePayload(payload)) return undefined;
    const { driverName, claimData } = decodeReferencePayload(payload);
    if (driverName !== CHUNK_STORE_DRIVER_NAME) return undefined;
    return chunkStore.payloadSize(new StorageDriverClaim(claimData));
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

  /** A payload as `/decode` and `/download` answer it, its decoded bytes counted by `budget`. */
  const decodeOne = async (payload: Payload, keepLargeClaims: boolean, budget: (bytes: number) => void) => {
    // A claim of ours is sized by its manifest: what the reference says is its writer's word.
    const stated = await claimedSize(payload);
    const size = stated ?? (isReferencePayload(payload) ? decodeReferencePayload(payload).sizeBytes : 0);
    if (keepLargeClaims && isReferencePayload(payload) && size > inlineLimit) return payload;
    // As a configured client: the store resolves claims, then the codecs are undone last-first; a
    // claim of ours counts against the budget before its payload is read, anything else after.
    budget(stated ?? 0);
    let current = runner === undefined ? payload : single(await runner.retrieve([payload]), 'the payload store');
    for (const codec of decodeCodecs) current = single(await codec.decode([current]), 'a payload codec');
    budget(Math.max(0, payloadProtoSize(current) - (stated ?? 0)));
    return current;
  };
  const encodeOne = async (payload: Payload): Promise<Payload> => {
    let current = payload;
    for (const codec of encodeCodecs) current = single(await codec.encode([current]), 'a payload codec');
    return runner === undefined || !encodeToStore
      ? current
      : single(await runner.store([current]), 'the payload store');
  };

  /** The payloads a request asks for, in order, at most {@link PAYLOADS_AT_ONCE} at work at once. */
  const answer = async (operation: Operation, payloads: Payload[], keepLargeClaims: boolean): Promise<Payload[]> => {
    let decoded = 0;
    const budget = (bytes: number): void => {
      decoded += bytes;
      if (decoded > maxDecodedBytes)
        throw new Refusal(
          413,
          'DecodedTooLarge',
          `the payloads of this request decode to more than ${maxDecodedBytes} bytes: ask for fewer at a time`,
        );
    };
    const results: Payload[] = [];
    // Taken from the end: reversed, the payloads start in order.
    const work = payloads.map((payload, index) => ({ payload, index })).reverse();
    await drain(work, PAYLOADS_AT_ONCE, async ({ payload, index }) => {
      // A claim with no store to read it from: say which setting this server lacks, rather than
      // answer the claim as if it were the payload (or, asked to keep claims, leave it a claim).
      if (operation !== 'encode' && runner === undefined && isReferencePayload(payload) && !keepLargeClaims)
        throw new Refusal(
          400,
          'PayloadStoreNotConfigured',
          `payloads[${index}]: cannot ${operation}: ${new PayloadStoreNotConfiguredError('this codec server', decodeReferencePayload(payload).driverName).message}`,
        );
      try {
        results[index] = await (operation === 'encode'
          ? encodeOne(payload)
          : decodeOne(payload, keepLargeClaims, budget));
      } catch (error) {
        if (error instanceof Refusal) throw error;
        // The protocol answers codec errors with 400; the log has the raw error.
        throw new Refusal(
          400,
          error instanceof Error ? error.name : 'Error',
          `payloads[${index}]: cannot ${operation} ${failureAnswer(error)}`,
          {},
          detailOf(error),
        );
      }
    });
    return results;
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const cors = corsHeaders(request);
    const url = new URL(request.url ?? '/', 'http://codec-server');
    const segments = url.pathname
      .split('/')
      .filter((segment) => segment !== '')
      .map(decodeSegment);
    const operation = segments.at(-1);
    if (!isOperation(operation))
      throw new Refusal(404, 'NotFound', `no such endpoint ${shown(url.pathname)}: POST /decode, /encode or /download`);
    if (cors === undefined)
      throw new Refusal(
        403,
        'OriginNotAllowed',
        `origin ${request.headers.origin ?? ''} is not allowed: add it to COMPACTOR_CODEC_SERVER_ORIGINS`,
      );
    // A preflight carries no credentials: it is answered for allowed origins alone. Chrome asks
    // whether a public page (e.g. Temporal Cloud's UI) may call a server on this machine.
    if (request.method === 'OPTIONS') {
      const privateNetwork = request.headers['access-control-request-private-network'] === 'true';
      response
        .writeHead(204, {
          ...cors,
          'Access-Control-Allow-Methods': 'POST, OPTIONS',
          'Access-Control-Allow-Headers': ALLOWED_HEADERS,
          'Access-Control-Max-Age': '600',
          ...(privateNetwork ? { 'Access-Control-Allow-Private-Network': 'true' } : {}),
        })
        .end();
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
    if (requests.full(queue))
      throw new Refusal(503, 'Busy', `busy: ${concurrency} requests at work and ${queue} waiting; try again`, {
        'Retry-After': '1',
      });
    await requests.run(async () => {
      const payloads = payloadsFromBody(await readBody(request, maxBodyBytes), maxPayloads);
      if (operation === 'download') {
        const index = payloads.findIndex((payload) => !isReferencePayload(payload));
        if (index >= 0) throw badRequest(`payloads[${index}]: not a storage reference: /download takes claims only`);
      }
      const keepLargeClaims = operation === 'decode' && url.searchParams.get('preserveStorageRefs') === 'true';
      const json = (await answer(operation, payloads, keepLargeClaims)).map((result) =>
        PayloadProto.toObject(PayloadProto.fromObject(result), { bytes: String, longs: String }),
      );
      response
        .writeHead(200, { ...cors, 'Content-Type': 'application/json', 'Cache-Control': 'no-store' })
        .end(JSON.stringify({ payloads: json }));
    });
  };

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      const refusal = error instanceof Refusal ? error : internalError(error);
      const namespace = request.headers['x-namespace'];
      log(
        `${request.method ?? '?'} ${shown(request.url ?? '?')}${typeof namespace === 'string' ? ` (namespace ${namespace})` : ''}: ${refusal.status} ${refusal.message}${refusal.detail === undefined ? '' : ` — ${refusal.detail}`}`,
      );
      // One line of plain text, with the CORS headers, for the network tab; the UI and the CLI show
      // the payloads undecoded on any 4xx.
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
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  // `once` rejects on an 'error' event (a port in use) instead.
  await once(server.listen(port, host), 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string')
    throw new Error('the codec server is not listening on a TCP port');
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
