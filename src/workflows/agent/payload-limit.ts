// Sandbox-safe: what an agent run may send inline (docs/design.md#payload-limits) — anything that
// could exceed the server's payload limit is measured before it is sent, and fails the run with
// `RunFailed.PayloadTooLarge` unless the worker stores payloads externally.
import { payloadTooLargeFailure } from '../../shared/failures.js';

/** The run's payload limit, and whether it binds: it does not once the worker says it stores payloads externally. */
export class PayloadLimit {
  /** The worker's data converter stores large payloads externally (learnt from `describeWorker` at the run's start). */
  externalStorage = false;

  constructor(readonly maxPayloadBytes: number) {}

  /** Fails the run with `RunFailed.PayloadTooLarge` when `bytes` would be sent inline over the limit. */
  check(payload: string, bytes: number): void {
    if (bytes <= this.maxPayloadBytes || this.externalStorage) return;
    throw payloadTooLargeFailure({ payload, bytes, limit: this.maxPayloadBytes });
  }

  /** The most a batch (of transcript lines, of texts to count) may hold inline: ¾ of the limit, the rest for its envelope. */
  inlineBatchBytes(): number {
    return Math.floor(this.maxPayloadBytes * 0.75);
  }
}
