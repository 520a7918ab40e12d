// Sandbox-safe: typed errors, failure type strings and the status classification (docs/design.md#failures).

/** Failure types as they appear on Temporal `ApplicationFailure`s. List them in `nonRetryableErrorTypes`. */
export const FailureType = {
  /** Structurally invalid input: a message or an option. Never retried. */
  InvalidInput: 'Compaction.InvalidInput',
  /** The summarizer answered 400-404: a configuration or account problem. Never retried. */
  Rejected: 'Summarizer.Rejected',
  /** The summarizer answered with an empty summary. Retried. */
  Empty: 'Summarizer.Empty',
  /** Anything else that may heal: 408, 409, 422, 429, 5xx, network errors, timeouts, malformed bodies. Retried. */
  Transient: 'Summarizer.Transient',
  /** An agent run could not fit its context even after compaction. */
  ContextExhausted: 'RunFailed.ContextExhausted',
  /**
   * `compactConversation`: its result would be larger than a payload the server accepts inline and
   * the worker stores no payloads externally (COMPACTOR_PAYLOAD_STORE). Never retried.
   */
  PayloadTooLarge: 'Compaction.PayloadTooLarge',
} as const;
export type FailureType = (typeof FailureType)[keyof typeof FailureType];

/** The abort bucket: statuses that will not heal by retrying. */
export const ABORT_STATUSES: readonly number[] = [400, 401, 402, 403, 404];

export type FailureClass = 'abort' | 'retry';

/** 400-404 abort; any other status, or none, retries (docs/design.md#failures). */
export function classifyStatus(status: number | undefined): FailureClass {
  return status !== undefined && ABORT_STATUSES.includes(status) ? 'abort' : 'retry';
}

/** Reads the numeric `status` an error carries (as openai's `APIError` does), if any. */
export function statusOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null || !('status' in error)) return undefined;
  const { status } = error;
  return typeof status === 'number' && Number.isInteger(status) ? status : undefined;
}

/** Reads a `retryAfterMs` hint an error carries (set by our OpenAI summarizer from `Retry-After`). */
export function retryAfterOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null || !('retryAfterMs' in error)) return undefined;
  const { retryAfterMs } = error;
  return typeof retryAfterMs === 'number' && Number.isFinite(retryAfterMs) && retryAfterMs >= 0
    ? retryAfterMs
    : undefined;
}

/** Structurally invalid input. `field` is the full path, e.g. `messages[12].tool_call_id`. */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
  readonly type = FailureType.InvalidInput;
  constructor(
    readonly field: string,
    readonly reason: string,
    /** Index of the offending message, when the error is about one. */
    readonly index?: number,
  ) {
    super(`${field}: ${reason}`);
  }
}

export type SummarizerFailureKind = 'rejected' | 'empty' | 'transient';

/**
 * A summarizer failure with its classification. Backends may throw any error with a numeric
 * `status`; this one also carries the kind and a `Retry-After` hint.
 */
export class SummarizerError extends Error {
  override readonly name = 'SummarizerError';
  constructor(
    message: string,
    readonly kind: SummarizerFailureKind,
    readonly status?: number,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  get type(): FailureType {
    return this.kind === 'rejected'
      ? FailureType.Rejected
      : this.kind === 'empty'
        ? FailureType.Empty
        : FailureType.Transient;
  }
}

/** Classifies any thrown value from a summarizer: typed errors by kind, others by `status`. */
export function classifyError(error: unknown): FailureClass {
  if (error instanceof SummarizerError) return error.kind === 'rejected' ? 'abort' : 'retry';
  return classifyStatus(statusOf(error));
}
