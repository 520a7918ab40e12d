// Sandbox-safe: a deterministic estimate of the bytes a value takes as a Temporal payload (docs/design.md#never-wedge).
/** The server's default `limit.blobSize.error` (2 MiB) less room for metadata: over it, a workflow task fails without end. */
export const DEFAULT_PAYLOAD_LIMIT_BYTES = 2_000_000;

/** The largest payload the store holds (the bound a reader trusts before allocating); larger ones fail on every retry. */
export const MAX_STORED_PAYLOAD_BYTES = 64 * 1024 * 1024;

export function payloadBound(maxPayloadBytes: number, externalStorage: boolean): number {
  return externalStorage ? MAX_STORED_PAYLOAD_BYTES : maxPayloadBytes;
}

/** Bytes of the UTF-8 encoding of `text` (lone surrogates count as the 3 bytes of U+FFFD, as `TextEncoder` writes them). */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    bytes += code < 0x800 ? 1 : 2;
    // A surrogate pair takes 4 bytes: 2 for its high unit, none for its low one (past the end, NaN & 0xfc00 is 0).
    if (code >= 0xd800 && code <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i += 1;
  }
  return bytes;
}

/** Bytes of `value` as the default JSON payload converter writes it; `undefined` takes none. */
export function jsonPayloadBytes(value: unknown): number {
  const json = JSON.stringify(value);
  return json === undefined ? 0 : utf8Length(json);
}

/** What was too big, for `RunFailed.PayloadTooLarge` / `Compaction.PayloadTooLarge` details. */
export interface PayloadTooLargeDetails {
  /** e.g. `the input of the chat activity in round 12`. */
  payload: string;
  bytes: number;
  limit: number;
}
