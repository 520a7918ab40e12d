// Sandbox-safe: a deterministic estimate of the bytes a value takes as a Temporal payload, so the
// workflow can refuse to send what the server would reject (a workflow task that fails on an
// oversized payload is retried forever: docs/design.md#never-wedge).

/**
 * The server's default `limit.blobSize.error`, 2 MiB, less room for the payload's metadata and the
 * command around it. Over this, a payload sent inline fails the workflow task with
 * `PAYLOADS_TOO_LARGE`, and the task is retried without end.
 * @default 2,000,000 bytes
 */
export const DEFAULT_PAYLOAD_LIMIT_BYTES = 2_000_000;

/**
 * The largest payload the payload store holds (its protobuf size; a manifest's `size` is at most
 * this): 64 MiB. History holds only the claim, so no Temporal limit applies; this is the bound a
 * reader can trust before allocating, about 30 times the largest chat request of a million-token
 * window (images as data URLs can still reach it). Storing a larger payload fails, and in workflow
 * code that would fail the workflow task on every retry: workflows check against it as against the
 * inline limit.
 */
export const MAX_STORED_PAYLOAD_BYTES = 64 * 1024 * 1024;

/** The most a payload may hold: {@link MAX_STORED_PAYLOAD_BYTES} when the worker stores payloads externally, else `maxPayloadBytes`. */
export function payloadBound(maxPayloadBytes: number, externalStorage: boolean): number {
  return externalStorage ? MAX_STORED_PAYLOAD_BYTES : maxPayloadBytes;
}

/** Bytes of the UTF-8 encoding of `text` (lone surrogates count as the 3 bytes of U+FFFD, as `TextEncoder` writes them). */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) bytes += 1;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // A surrogate pair: two UTF-16 units, four UTF-8 bytes.
      bytes += 2;
      i += 1;
    } else bytes += 2;
  }
  return bytes;
}

/**
 * Bytes of `value` as the default JSON payload converter writes it (`JSON.stringify`, UTF-8).
 * `undefined` takes no bytes (it travels as an empty binary payload).
 */
export function jsonPayloadBytes(value: unknown): number {
  const json = JSON.stringify(value);
  return json === undefined ? 0 : utf8Length(json);
}

/** What was too big, for `RunFailed.PayloadTooLarge` / `Compaction.PayloadTooLarge` details. */
export interface PayloadTooLargeDetails {
  /** What the payload was, e.g. `the input of the chat activity in round 12`. */
  payload: string;
  /** Its estimated size in bytes. */
  bytes: number;
  /** The limit it was checked against. */
  limit: number;
}
