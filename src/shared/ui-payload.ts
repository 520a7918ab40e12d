// Sandbox-safe: payloads written for the Temporal UI to show as they are, with no worker and no codec
// server (docs/design.md#ui-payloads) — the compaction table in a run's memo. The SDK hands a payload
// codec and External Storage's driver selector each payload without saying which field it fills (a
// memo, an argument, a result), so such a payload carries a mark in its metadata: our codec leaves it
// uncompressed (encrypting it only with a key) and our store leaves it in history, up to
// UI_PAYLOAD_MAX_BYTES. The UI and every data converter read it as the JSON payload it is.
import { defaultPayloadConverter, RawValue } from '@temporalio/common';

/** The metadata entry that marks a payload for the UI (value `1`). */
export const UI_PAYLOAD_METADATA_KEY = 'compactor-ui';

/**
 * The largest marked payload, in bytes as a protobuf, that the codec and the store keep in history
 * as written: over it the mark is ignored and the payload is treated as any other.
 */
export const UI_PAYLOAD_MAX_BYTES = 4096;

/**
 * `value` as a JSON payload marked for the UI, for `upsertMemo`: the payload converter passes a
 * `RawValue` through as it is.
 */
export function uiPayload(value: string): RawValue {
  const payload = defaultPayloadConverter.toPayload(value);
  return RawValue.fromPayload({
    ...payload,
    metadata: { ...payload.metadata, [UI_PAYLOAD_METADATA_KEY]: new TextEncoder().encode('1') },
  });
}
