// Node only: the `COMPACTOR_PAYLOAD_STORE` setting — `off`, `file:DIR` or `s3://BUCKET/PREFIX`.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where payloads over the threshold go; `off` keeps every payload inline in history. */
export type PayloadStoreLocation =
  { kind: 'off' } | { kind: 'file'; directory: string } | { kind: 's3'; bucket: string; prefix: string };

// S3's bucket naming rules (lower case, digits, dots, hyphens; 3-63 characters).
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Parses the setting; relative directories resolve against `cwd`. Undefined when malformed. */
export function parsePayloadStore(text: string, cwd: string = process.cwd()): PayloadStoreLocation | undefined {
  const value = text.trim();
  if (value === 'off') return { kind: 'off' };
  if (value.startsWith('file:')) {
    const rest = value.slice('file:'.length);
    if (rest === '') return undefined;
    try {
      return { kind: 'file', directory: rest.startsWith('//') ? fileURLToPath(value) : resolve(cwd, rest) };
    } catch {
      return undefined;
    }
  }
  const s3 = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(value);
  if (s3 !== null) {
    const [, bucket = '', rawPrefix = ''] = s3;
    const prefix = rawPrefix.replace(/^\/+|\/+$/g, '');
    if (!BUCKET.test(bucket) || prefix.split('/').some((part) => part === '.' || part === '..')) return undefined;
    return { kind: 's3', bucket, prefix };
  }
  return undefined;
}

/** The setting's text for a location (`file:/abs/dir`, `s3://bucket/prefix`, `off`). */
export function describePayloadStore(location: PayloadStoreLocation): string {
  if (location.kind === 'off') return 'off';
  return location.kind === 'file' ? `file:${location.directory}` : `s3://${location.bucket}/${location.prefix}`;
}
