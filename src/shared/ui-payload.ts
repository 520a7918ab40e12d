// Sandbox-safe: payloads the Temporal UI shows as they are, with no codec server (the compaction table
// in a run's memo; docs/design.md#ui-payloads). A codec is not told which field a payload fills, so
// such a payload carries a mark in its metadata: our codec leaves it uncompressed (encrypted only with
// a key) and our store leaves it in history, up to UI_PAYLOAD_MAX_BYTES.
import { defaultPayloadConverter, RawValue } from '@temporalio/common';

/** The metadata entry that marks a payload for the UI (value `1`). */
export const UI_PAYLOAD_METADATA_KEY = 'compactor-ui';

/** The largest marked payload (bytes as a protobuf) kept as written; over it the mark is ignored. */
export const UI_PAYLOAD_MAX_BYTES = 4096;

/** `value` as a JSON payload marked for the UI, for `upsertMemo` (a `RawValue` passes the converter as it is). */
export function uiPayload(value: string): RawValue {
  const payload = defaultPayloadConverter.toPayload(value);
  return RawValue.fromPayload({
    ...payload,
    metadata: { ...payload.metadata, [UI_PAYLOAD_METADATA_KEY]: new TextEncoder().encode('1') },
  });
}
