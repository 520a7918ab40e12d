// Sandbox-safe: what an agent run may send (docs/design.md#payload-limits): anything that could exceed the server's
// payload limit (or the store's) is measured before it is sent.
import { payloadBound } from '../../core/limits/payload-size.js';
import { payloadTooLargeFailure } from '../../shared/failures.js';

/** The run's payload limit: the server's inline limit, or the store's once the worker says it stores payloads externally. */
export class PayloadLimit {
  /** The worker's data converter stores large payloads externally (learnt from `describeWorker` at the run's start). */
  externalStorage = false;

  constructor(readonly maxPayloadBytes: number) {}

  bound(): number {
    return payloadBound(this.maxPayloadBytes, this.externalStorage);
  }

  /** `RunFailed.PayloadTooLarge` over the limit (the store's too: the workflow task would fail at every retry). */
  check(payload: string, bytes: number): void {
    const limit = this.bound();
    if (bytes > limit) throw payloadTooLargeFailure({ payload, bytes, limit });
  }

  /** The most a batch (of transcript lines, of texts to count) may hold: ¾ of the limit, the rest for its envelope. */
  batchBytes(): number {
    return Math.floor(this.bound() * 0.75);
  }
}
