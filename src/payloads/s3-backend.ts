// Node only: objects in an S3 bucket under a prefix (`COMPACTOR_PAYLOAD_STORE=s3://BUCKET/PREFIX`),
// through `@aws-sdk/client-s3` (an optional peer, loaded on first use: its import takes a quarter of a
// second every CLI command would pay). Credentials come from the SDK's chain; `COMPACTOR_S3_ENDPOINT`
// points at an S3-compatible server, path-style. A single PUT is atomic, so no temporary names.
//
// gc's removals wait in `quarantine/<key>` for one more grace period, and reads find them there: S3
// has no delete conditional on time, and a renewal leaves the bytes and ETag as they were, so gc
// cannot tell a store renewed an object between its check and its delete. The next gc puts back
// what a history claims; what no claim needed by then goes for good.
import type * as S3 from '@aws-sdk/client-s3';
import { isRecord } from '../core/schema.js';
import { assertPeersInstalled } from '../peer-packages.js';
import { redactUrls } from '../redact.js';
import {
  addTo,
  noTally,
  orMissing,
  tooLarge,
  type ListedObject,
  type ObjectStat,
  type QuarantineSettled,
  type SweepableBackend,
} from './object-backend.js';

/** Where gc's removals wait, under the prefix: the object's own key after it. */
const QUARANTINE = 'quarantine/';
const OCTET_STREAM = 'application/octet-stream';

function statusOf(error: unknown): number | undefined {
  const metadata = isRecord(error) ? error.$metadata : undefined;
  const status = isRecord(metadata) ? metadata.httpStatusCode : undefined;
  return typeof status === 'number' ? status : undefined;
}

function isMissing(error: unknown): boolean {
  const name = error instanceof Error ? error.name : undefined;
  return name === 'NoSuchKey' || name === 'NotFound' || statusOf(error) === 404;
}

export interface S3BackendOptions {
  bucket: string;
  /** Key prefix without a trailing slash; '' for the bucket's root. @default '' */
  prefix?: string;
  /** An S3-compatible server's URL (COMPACTOR_S3_ENDPOINT). @default AWS S3 */
  endpoint?: string;
  /** A client to use as is (tests, custom credentials); `endpoint` is then ignored. */
  client?: S3.S3Client;
  /** Extra client settings (credentials, region, retries). */
  clientConfig?: S3.S3ClientConfig;
}

export class S3Backend implements SweepableBackend {
  readonly bucket: string;
  readonly prefix: string;
  readonly description: string;
  private loaded: Promise<{ sdk: typeof S3; client: S3.S3Client }> | undefined;

  constructor(private readonly options: S3BackendOptions) {
    this.bucket = options.bucket;
    this.prefix = (options.prefix ?? '').replace(/^\/+|\/+$/g, '');
    this.description = `s3://${this.bucket}/${this.prefix}`;
    if (options.client === undefined)
      assertPeersInstalled(['@aws-sdk/client-s3'], `COMPACTOR_PAYLOAD_STORE=${this.description}`);
  }

  private load(): Promise<{ sdk: typeof S3; client: S3.S3Client }> {
    this.loaded ??= import('@aws-sdk/client-s3').then((sdk) => {
      const client = this.options.client ?? this.newClient(sdk);
      // A request that reached no server (refused, unresolved, reset) says which endpoint it tried.
      const where = redactUrls(this.options.endpoint ?? 'AWS S3');
      client.middlewareStack.add(
        (next) => async (args) => {
          try {
            return await next(args);
          } catch (error) {
            if (error instanceof Error && statusOf(error) === undefined && error.name !== 'AbortError') {
              const message = `S3 at ${where} (bucket ${this.bucket}): ${error.message}`;
              if (!error.message.startsWith('S3 at ')) error.message = message;
            }
            throw error;
          }
        },
        { step: 'initialize', name: 'compactorEndpointInErrors' },
      );
      return { sdk, client };
    });
    return this.loaded;
  }

  private newClient(sdk: typeof S3): S3.S3Client {
    const { endpoint, clientConfig = {} } = this.options;
    return new sdk.S3Client({
      ...(endpoint === undefined
        ? {}
        : {
            endpoint,
            forcePathStyle: true,
            // S3-compatible servers differ in which of the newer integrity headers they accept; every
            // object is verified end to end against its content address anyway.
            requestChecksumCalculation: 'WHEN_REQUIRED' as const,
            responseChecksumValidation: 'WHEN_REQUIRED' as const,
            // Such servers ignore the region, but the request signer needs one.
            region: process.env.AWS_REGION ?? 'us-east-1',
          }),
      ...clientConfig,
    });
  }

  private keyOf(key: string): string {
    return this.prefix === '' ? key : `${this.prefix}/${key}`;
  }

  /** A command's bucket and key for object `key`. */
  private at(key: string): { Bucket: string; Key: string } {
    return { Bucket: this.bucket, Key: this.keyOf(key) };
  }

  async get(key: string, signal?: AbortSignal, maxBytes = Number.MAX_SAFE_INTEGER): Promise<Uint8Array | undefined> {
    // An object gc removed a moment after a store renewed it is still in the quarantine.
    return (
      (await this.getExact(key, signal, maxBytes)) ??
      (key.startsWith('v1/') ? await this.getExact(`${QUARANTINE}${key}`, signal, maxBytes) : undefined)
    );
  }

  private async getExact(
    key: string,
    signal: AbortSignal | undefined,
    maxBytes: number,
  ): Promise<Uint8Array | undefined> {
    const { sdk, client } = await this.load();
    const command = new sdk.GetObjectCommand(this.at(key));
    const response = await orMissing(client.send(command, { abortSignal: signal }), isMissing);
    if (response === undefined) return undefined;
    const body = response.Body;
    if (body === undefined) return new Uint8Array(0);
    // Sized from the response's headers before the body is read, and counted as it is read (a
    // server that sends no length, or more than it said, is cut off at the bound).
    const declared = response.ContentLength;
    const over = (size: number): Error => {
      if ('destroy' in body && typeof body.destroy === 'function') body.destroy();
      return tooLarge(key, size, maxBytes);
    };
    if (declared !== undefined && declared > maxBytes) throw over(declared);
    // On Node the SDK's body is a stream.
    if (!(Symbol.asyncIterator in body)) throw new TypeError(`${key}: the S3 response body is not a stream`);
    const parts: Uint8Array[] = [];
    let size = 0;
    for await (const part of body) {
      if (!(part instanceof Uint8Array)) throw new TypeError(`${key}: the S3 response body is not bytes`);
      size += part.length;
      if (size > maxBytes) throw over(size);
      parts.push(part);
    }
    return Buffer.concat(parts, size);
  }

  async put(key: string, body: Uint8Array, signal?: AbortSignal): Promise<void> {
    const { sdk, client } = await this.load();
    await client.send(new sdk.PutObjectCommand({ ...this.at(key), Body: body, ContentType: OCTET_STREAM }), {
      abortSignal: signal,
    });
  }

  async stat(key: string, signal?: AbortSignal): Promise<ObjectStat | undefined> {
    const { sdk, client } = await this.load();
    const command = new sdk.HeadObjectCommand(this.at(key));
    const response = await orMissing(client.send(command, { abortSignal: signal }), isMissing);
    return response === undefined ? undefined : { modifiedMs: response.LastModified?.getTime() ?? 0 };
  }

  async touch(key: string, signal?: AbortSignal): Promise<void> {
    // A copy onto itself is the one way S3 has to renew LastModified without sending the bytes again.
    await this.copy(key, key, signal);
  }

  /** Copies object `from` to `to` (both relative to the prefix), with a new LastModified. */
  private async copy(from: string, to: string, signal?: AbortSignal): Promise<void> {
    const source = `${this.bucket}/${this.keyOf(from).split('/').map(encodeURIComponent).join('/')}`;
    const { sdk, client } = await this.load();
    await client.send(
      new sdk.CopyObjectCommand({
        ...this.at(to),
        CopySource: source,
        MetadataDirective: 'REPLACE',
        ContentType: OCTET_STREAM,
      }),
      { abortSignal: signal },
    );
  }

  private async remove(key: string, signal?: AbortSignal): Promise<void> {
    const { sdk, client } = await this.load();
    await client.send(new sdk.DeleteObjectCommand(this.at(key)), { abortSignal: signal });
  }

  async *list(prefix: string, signal?: AbortSignal): AsyncIterable<ListedObject> {
    const { sdk, client } = await this.load();
    const strip = this.prefix === '' ? 0 : this.prefix.length + 1;
    let continuationToken: string | undefined;
    do {
      const page = await client.send(
        new sdk.ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: this.keyOf(prefix),
          ContinuationToken: continuationToken,
        }),
        { abortSignal: signal },
      );
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue;
        yield {
          key: object.Key.slice(strip),
          modifiedMs: object.LastModified?.getTime() ?? 0,
          bytes: object.Size ?? 0,
        };
      }
      continuationToken = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (continuationToken !== undefined);
  }

  async removeIfOlder(key: string, cutoffMs: number, signal?: AbortSignal): Promise<boolean> {
    const found = await this.stat(key, signal);
    if (found === undefined) return true;
    if (found.modifiedMs >= cutoffMs) return false;
    // Into the quarantine first: a store may renew the object between the check above and the
    // delete below, and nothing S3 offers would refuse the delete then (see the module comment).
    await this.copy(key, `${QUARANTINE}${key}`, signal);
    await this.remove(key, signal);
    return true;
  }

  async settleQuarantine(
    isNeeded: (key: string) => boolean,
    cutoffMs: number,
    dryRun: boolean,
    signal?: AbortSignal,
  ): Promise<QuarantineSettled> {
    const settled: QuarantineSettled = { restored: noTally(), purged: noTally() };
    const needed: Array<{ key: string; bytes: number }> = [];
    for await (const { key: quarantined, modifiedMs, bytes } of this.list(QUARANTINE, signal)) {
      const key = quarantined.slice(QUARANTINE.length);
      if (isNeeded(key)) needed.push({ key, bytes });
      else if (modifiedMs < cutoffMs) {
        // Quarantined longer than the grace period and claimed by nothing: any claim a store
        // handed out before the removal has reached a history by now, and was marked.
        if (!dryRun) await this.remove(quarantined, signal);
        addTo(settled.purged, bytes);
      }
    }
    // Children before the objects that list them: chunks, then nodes, then manifests.
    const rank = (key: string): number => (key.startsWith('v1/chunks/') ? 0 : key.startsWith('v1/nodes/') ? 1 : 2);
    needed.sort((a, b) => rank(a.key) - rank(b.key));
    for (const { key, bytes } of needed) {
      if (!dryRun) {
        await this.copy(`${QUARANTINE}${key}`, key, signal);
        await this.remove(`${QUARANTINE}${key}`, signal);
      }
      addTo(settled.restored, bytes);
    }
    return settled;
  }
}
