// Node only (activities): what a summarizer threw, or an activity's bad input, as the
// `ApplicationFailure` the retry policy acts on (docs/design.md#summarize-activity).
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

/** A summarizer failure's `details[0]`, as the workflow and the UI read it. */
interface SummarizerFailureDetails {
  status?: number;
  retryAfterMs?: number;
  attempt?: number;
  contextWindow?: number;
  promptTokens?: number;
}

/**
 * A summarizer error as an `ApplicationFailure`: a context overflow → `Summarizer.ContextOverflow`
 * and past its deadline → `Summarizer.Deadline`, both non-retryable as the compaction sends it again
 * smaller (docs/design.md#summarizer-overflow); 400-404 → `Summarizer.Rejected`; empty →
 * `Summarizer.Empty`; else `Summarizer.Transient` (`Retry-After` as `nextRetryDelay`). The caller
 * rethrows a cancellation first.
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

/** A summary that is empty or only whitespace: never accepted, retried. */
export function emptySummaryFailure(known: Pick<SummarizerFailureDetails, 'attempt'> = {}): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.Summarizer.Empty,
    message: 'summarizer: the summary is empty',
    nonRetryable: false,
    details: [{ ...known }],
  });
}
