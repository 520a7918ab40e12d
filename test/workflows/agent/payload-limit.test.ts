// What an agent run may send: the server's inline limit without a payload store, the store's own
// bound with one. A payload over either fails the workflow task on every retry if it is sent, so
// the run must end with RunFailed.PayloadTooLarge before it is.
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { MAX_STORED_PAYLOAD_BYTES, payloadBound } from '../../../src/core/limits/payload-size.js';
import { FailureType } from '../../../src/core/errors.js';
import { PayloadLimit } from '../../../src/workflows/agent/payload-limit.js';

function refusal(limit: PayloadLimit, bytes: number): ApplicationFailure | undefined {
  try {
    limit.check('the chat request of round 3', bytes);
    return undefined;
  } catch (error) {
    if (error instanceof ApplicationFailure) return error;
    throw error;
  }
}

describe('PayloadLimit', () => {
  it('without a store, refuses what is over the inline limit', () => {
    const limit = new PayloadLimit(2_000_000);
    expect(refusal(limit, 2_000_000)).toBeUndefined();
    const failure = refusal(limit, 2_000_001);
    expect(failure?.type).toBe(FailureType.RunFailed.PayloadTooLarge);
    expect(failure?.nonRetryable).toBe(true);
    expect(failure?.details?.[0]).toMatchObject({ bytes: 2_000_001, limit: 2_000_000 });
  });

  it('with a store, lets a payload over the inline limit go as a claim, and refuses one over what the store holds (regression)', () => {
    const limit = new PayloadLimit(2_000_000);
    limit.externalStorage = true;
    expect(refusal(limit, 3_000_000)).toBeUndefined();
    expect(refusal(limit, MAX_STORED_PAYLOAD_BYTES)).toBeUndefined();
    const failure = refusal(limit, MAX_STORED_PAYLOAD_BYTES + 1);
    expect(failure?.type).toBe(FailureType.RunFailed.PayloadTooLarge);
    expect(failure?.details?.[0]).toMatchObject({ limit: MAX_STORED_PAYLOAD_BYTES });
  });

  it('bounds a batch by three quarters of the limit that applies', () => {
    const limit = new PayloadLimit(2_000_000);
    expect(limit.batchBytes()).toBe(1_500_000);
    limit.externalStorage = true;
    expect(limit.batchBytes()).toBe(Math.floor(MAX_STORED_PAYLOAD_BYTES * 0.75));
    expect(payloadBound(2_000_000, false)).toBe(2_000_000);
  });
});
