// Node (test support): every payload of a raw event history (as the server holds it: claims not
// resolved, nothing decoded), and a decoder that turns one back into the bytes its producer wrote.
import type { Payload } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { CHUNK_STORE_DRIVER_NAME, type ChunkStoreDriver } from '../../src/payloads/chunk-store.js';
import { type CompactorCodec } from '../../src/payloads/codec.js';
import { StorageDriverClaim } from '@temporalio/common';

/** A payload found in a history, with where it was (`events[3].activityTaskScheduledEventAttributes.input.payloads[0]`). */
export interface HistoryPayload {
  path: string;
  payload: Payload;
  /** Its protobuf size as the server stores it. */
  size: number;
}

const text = new TextDecoder();

function isPayload(value: object): value is Payload {
  return 'data' in value && value.data instanceof Uint8Array && 'metadata' in value;
}

/**
 * Payloads the SDK writes itself, not through the data converter, so no codec or store sees them:
 * search attributes (indexed in the clear by design) and the markers of `patched()` (the patch id).
 */
export function isSdkMetadata(found: HistoryPayload): boolean {
  return /searchAttributes|markerRecordedEventAttributes\.details\.patch-data/i.test(found.path);
}

/** Every payload in `events`, search attributes included (their path says so). */
export function historyPayloads(
  events: readonly temporal.api.history.v1.IHistoryEvent[],
  size: (payload: Payload) => number,
): HistoryPayload[] {
  const found: HistoryPayload[] = [];
  const walk = (value: unknown, path: string): void => {
    if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return;
    if (isPayload(value)) {
      found.push({ path, payload: value, size: size(value) });
      return;
    }
    for (const [key, child] of Object.entries(value))
      walk(child, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`);
  };
  events.forEach((event, index) => walk(event, `events[${index}]`));
  return found;
}

export function metadataOf(payload: Payload, key: string): string | undefined {
  const value = payload.metadata?.[key];
  return value === undefined || value === null ? undefined : text.decode(value);
}

/** A claim of our store (an External Storage reference naming our driver), or undefined. */
export function claimOf(payload: Payload): StorageDriverClaim | undefined {
  if (metadataOf(payload, 'messageType') !== 'temporal.api.sdk.v1.ExternalStorageReference') return undefined;
  const reference: unknown = JSON.parse(text.decode(payload.data ?? new Uint8Array(0)));
  if (
    typeof reference !== 'object' ||
    reference === null ||
    !('driverName' in reference) ||
    !('claimData' in reference)
  )
    return undefined;
  const { driverName, claimData } = reference;
  if (driverName !== CHUNK_STORE_DRIVER_NAME || typeof claimData !== 'object' || claimData === null) return undefined;
  return new StorageDriverClaim(
    Object.fromEntries(Object.entries(claimData).map(([key, value]) => [key, String(value)])),
  );
}

/** The payload as its producer's converter wrote it: claims resolved through `driver`, then `codec` decoded. */
export async function decodeHistoryPayload(
  payload: Payload,
  { driver, codec }: { driver?: ChunkStoreDriver; codec?: CompactorCodec },
): Promise<Payload> {
  const claim = claimOf(payload);
  let resolved = payload;
  if (claim !== undefined) {
    if (driver === undefined) throw new Error('a claim, but no driver to resolve it');
    const [retrieved] = await driver.retrieve({}, [claim]);
    if (retrieved === undefined) throw new Error('no payload for a claim');
    resolved = retrieved;
  }
  if (codec === undefined) return resolved;
  const [decoded] = await codec.decode([resolved]);
  if (decoded === undefined) throw new Error('the codec returned nothing');
  return decoded;
}
