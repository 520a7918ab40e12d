// Node only (activities): turns what a summarizer threw into the `ApplicationFailure` Temporal's
// retry policy acts on (docs/design.md#summarize-activity), and the failure of any activity's bad
// input. Never wraps a cancellation into a failure.
import { ApplicationFailure } from '@temporalio/common';
import {
  classifyError,
  FailureType,
  InvalidInputError,
  retryAfterOf,
  statusOf,
  SummarizerError,
} from '../core/errors.js';
import { pastDeadline, readContextOverflow } from '../llm/context-overflow.js';
import { invalidInputFailure } from '../shared/failures.js';

/**
 * What the workflow side and the UI can read from a summarizer failure's `details[0]`: the HTTP
 * status and `Retry-After` when the backend sent them, the attempt when it was a retry, and for
 * `Summarizer.ContextOverflow` the window and prompt tokens the server (or the worker) stated.
 */
interface SummarizerFailureDetails {
  status?: number;
  retryAfterMs?: number;
  attempt?: number;
  contextWindow?: number;
  promptTokens?: number;
}

/**
 * Maps a summarizer error to an `ApplicationFailure`:
 * - a context-overflow answer (`readContextOverflow`: OpenAI, llama.cpp, vLLM, Ollama, Anthropic) →
 *   `Summarizer.ContextOverflow`, non-retryable, with the window and prompt tokens it states;
 * - a request past its deadline (`pastDeadline`) → `Summarizer.Deadline`, non-retryable: the
 *   compaction sends it again smaller, never as it is (docs/design.md#summarizer-overflow);
 * - 400-404 (`SummarizerError` kind `rejected`, or any error with such a `status`) → `Summarizer.Rejected`, non-retryable;
 * - an empty summary → `Summarizer.Empty`, retryable;
 * - anything else → `Summarizer.Transient`, retryable, with `nextRetryDelay` from `Retry-After`;
 * - `InvalidInputError` → `Compaction.InvalidInput`, non-retryable;
 * - an `ApplicationFailure` is passed through unchanged (the backend chose its own type).
 *
 * Cancellation is not handled here: the caller rethrows the activity's cancellation reason first.
 */
export function toSummarizerFailure(
  error: unknown,
  known: Pick<SummarizerFailureDetails, 'attempt'> = {},
): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  if (error instanceof InvalidInputError) return invalidInputFailure(error);
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? error : undefined;
  const status = statusOf(error);
  const retryAfterMs = retryAfterOf(error);
  const details: SummarizerFailureDetails = {
    ...known,
    ...(status === undefined ? {} : { status }),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  };
  // A zero `Retry-After` means "now": leave the retry policy's own interval (Temporal reads 0 as unset anyway).
  const delay = retryAfterMs !== undefined && retryAfterMs > 0 ? { nextRetryDelay: retryAfterMs } : {};
  const fail = (type: string, nonRetryable: boolean): ApplicationFailure =>
    ApplicationFailure.create({
      type,
      message,
      nonRetryable,
      details: [details],
      cause,
      ...(nonRetryable ? {} : delay),
    });

  const overflow = readContextOverflow(error);
  if (overflow !== undefined) {
    if (overflow.contextWindow !== undefined) details.contextWindow = overflow.contextWindow;
    if (overflow.promptTokens !== undefined) details.promptTokens = overflow.promptTokens;
    return fail(FailureType.Summarizer.ContextOverflow, true);
  }
  if (pastDeadline(error)) return fail(FailureType.Summarizer.Deadline, true);
  if (classifyError(error) === 'abort') return fail(FailureType.Summarizer.Rejected, true);
  const empty = error instanceof SummarizerError && error.kind === 'empty';
  return fail(empty ? FailureType.Summarizer.Empty : FailureType.Summarizer.Transient, false);
}

/** The failure for a summary that is empty or only whitespace: never accepted, retried. */
export function emptySummaryFailure(known: Pick<SummarizerFailureDetails, 'attempt'> = {}): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.Summarizer.Empty,
    message: 'summarizer: the summary is empty',
    nonRetryable: false,
    details: [{ ...known }],
  });
}

/** The failure for an activity input that is not what it must be: never retried. */
export function invalidActivityInput(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FailureType.Compaction.InvalidInput, message, nonRetryable: true });
}
