// Sandbox-safe: the failures workflows and activities both raise, and how a failed activity reads in a message.
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { groupDigits } from '../core/agent/compaction-history.js';
import { FailureType, InvalidInputError, UndoRefusedError } from '../core/errors.js';
import type { PayloadTooLargeDetails } from '../core/limits/payload-size.js';

/** What `details[0]` of a `Compaction.InvalidInput` failure holds. */
export interface InvalidInputDetails {
  /** The full path of the offending value, e.g. `messages[12].tool_call_id` or `options.keepRecent`. */
  field: string;
  reason: string;
  /** Index of the offending message, when the error is about one. */
  index?: number;
}

/** A failure Temporal never retries; `details` become its `details[0]`. */
export function nonRetryableFailure(
  type: string,
  message: string,
  details?: unknown,
  cause?: Error,
): ApplicationFailure {
  const detailList = details === undefined ? undefined : [details];
  return ApplicationFailure.create({ type, message, nonRetryable: true, details: detailList, cause });
}

export function invalidInputFailure({ field, reason, index, message }: InvalidInputError): ApplicationFailure {
  const details: InvalidInputDetails = index === undefined ? { field, reason } : { field, reason, index };
  return nonRetryableFailure(FailureType.Compaction.InvalidInput, message, details);
}

/** `Compaction.UndoRefused`, non-retryable: why the undo cannot apply, in its message and details (docs/design.md#undo). */
export function undoRefusedFailure(error: UndoRefusedError): ApplicationFailure {
  return nonRetryableFailure(FailureType.Compaction.UndoRefused, error.message, error.details);
}

/** Runs `fn`, turning an `InvalidInputError` or `UndoRefusedError` into its non-retryable `ApplicationFailure`. */
export function failOnInvalidInput<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof InvalidInputError) throw invalidInputFailure(error);
    if (error instanceof UndoRefusedError) throw undoRefusedFailure(error);
    throw error;
  }
}

/** What went wrong in a failed activity (its cause's message: the activity's own failure), or in any other error. */
export function failureMessage(error: unknown): string {
  if (error instanceof ActivityFailure) return error.cause?.message ?? error.message;
  return error instanceof Error ? error.message : String(error);
}

/** Something a run must send inline is over the payload limit, and the worker stores no payloads externally. */
export function payloadTooLargeFailure(details: PayloadTooLargeDetails): ApplicationFailure {
  return nonRetryableFailure(
    FailureType.RunFailed.PayloadTooLarge,
    `${details.payload} is ${groupDigits(details.bytes)} bytes, over the ${groupDigits(details.limit)}-byte payload limit, and the worker stores no payloads externally: set COMPACTOR_PAYLOAD_STORE (or lower the window)`,
    details,
  );
}
