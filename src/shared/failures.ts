// Sandbox-safe (shared by workflows and activities): the `Compaction.InvalidInput` failure both sides of the Temporal layer raise for bad input.
import { ApplicationFailure } from '@temporalio/common';
import { FailureType, InvalidInputError } from '../core/errors.js';

/** What `details[0]` of a `Compaction.InvalidInput` failure holds. */
export interface InvalidInputDetails {
  /** The full path of the offending value, e.g. `messages[12].tool_call_id` or `options.keepRecent`. */
  field: string;
  reason: string;
  /** Index of the offending message, when the error is about one. */
  index?: number;
}

/** `Compaction.InvalidInput`, non-retryable, naming the field (and message index) in its message and details. */
export function invalidInputFailure(error: InvalidInputError): ApplicationFailure {
  const details: InvalidInputDetails = { field: error.field, reason: error.reason };
  if (error.index !== undefined) details.index = error.index;
  return ApplicationFailure.create({ type: FailureType.InvalidInput, message: error.message, nonRetryable: true, details: [details] });
}

/** Runs `fn`, turning an `InvalidInputError` into its non-retryable `ApplicationFailure`. */
export function failOnInvalidInput<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof InvalidInputError) throw invalidInputFailure(error);
    throw error;
  }
}
