// Sandbox-safe: one step of the engine answered by the `summarize` activity (docs/design.md#workflow-compact),
// and how the activity ended mapped to the engine's outcome.
import { ApplicationFailure, RetryState } from '@temporalio/common';
import { ActivityFailure, CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { CompactorActivities } from '../activities/index.js';
import { FailureType } from '../core/errors.js';
import { isRecord } from '../core/schema.js';
import type { SummarizeOutcome, SummarizeStep } from '../core/compaction/engine.js';
import type { SummarizerTally } from '../core/compaction/telemetry.js';
import { groupDigits } from '../core/counting/parts.js';
import { jsonPayloadBytes, payloadBound } from '../core/limits/payload-size.js';
import type { CompactionSettings } from './compact-options.js';
import { describeWorker } from './describe-worker.js';

/** What the driver does when the caller's scope is cancelled during a summarize call. */
export type OnCancel = 'hard-trim' | 'rethrow';

/** The longest activity summary written: the Timeline draws a label beside its bar, and clips a longer one at the chart's edge. */
export const ACTIVITY_SUMMARY_MAX_CHARS = 64;

/**
 * The activity summary the UI and CLI show: `summarize 31 messages (24,012 chars), piece 2 of 9 · gpt-4o-mini`; with
 * an agent run's `label`, `#2 trigger · coverage retry · 21 msgs (12,547 chars)`, cut to the maximum.
 */
export function summarizeActivitySummary(step: SummarizeStep, summarizerModel?: string, label?: string): string {
  const model = summarizerModel === undefined ? '' : ` · ${summarizerModel}`;
  const retry = step.purpose === 'tighter' ? 'tighter retry' : step.purpose === 'coverage' ? 'coverage retry' : '';
  // docs/design.md#summarizer-window A middle summarized in pieces says which one each request folds in.
  const piece = step.piece === undefined ? '' : `piece ${step.piece.index} of ${step.piece.of}`;
  if (label === undefined) {
    const what = `summarize ${groupDigits(step.transcript.messages)} messages (${groupDigits(step.transcript.characters)} chars)`;
    return `${what}${piece === '' ? '' : `, ${piece}`}${retry === '' ? '' : `, ${retry}`}${model}`;
  }
  // The UI shows the activity's type before its summary (`summarize • #2 trigger · …`): not said again.
  const size = `${groupDigits(step.transcript.messages)} msgs (${groupDigits(step.transcript.characters)} chars)`;
  const text = `${[label, piece, retry].filter((part) => part !== '').join(' · ')} · ${size}${model}`;
  return text.length > ACTIVITY_SUMMARY_MAX_CHARS ? `${text.slice(0, ACTIVITY_SUMMARY_MAX_CHARS - 1)}…` : text;
}

/** The attempt a summarize activity reported (in its output or its failure's details); 1 when it said none. */
function reportedAttempt(value: unknown): number {
  const attempt = isRecord(value) ? value.attempt : undefined;
  return positive(attempt) ? attempt : 1;
}

const positive = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0;

/** The window and prompt tokens a `Summarizer.ContextOverflow` failure's details state. */
function statedNumbers(details: unknown): { contextWindow?: number; promptTokens?: number } {
  if (!isRecord(details)) return {};
  const { contextWindow, promptTokens } = details;
  return { ...(positive(contextWindow) ? { contextWindow } : {}), ...(positive(promptTokens) ? { promptTokens } : {}) };
}

export async function summarizeStep(
  step: SummarizeStep,
  compaction: CompactionSettings,
  onCancel: OnCancel,
  tally: SummarizerTally,
): Promise<SummarizeOutcome> {
  const input = step.request;
  const bytes = jsonPayloadBytes(input);
  if (bytes > compaction.maxPayloadBytes) {
    compaction.payloadStore ??= (await describeWorker()).externalStorage;
    const limit = payloadBound(compaction.maxPayloadBytes, compaction.payloadStore);
    if (bytes > limit) {
      // Sent inline, the server would refuse it (stored, the store would): the workflow task would
      // fail without end. The hard trim instead, as for a summarizer that refused the request.
      return {
        kind: 'failed',
        reason: 'rejected',
        message: compaction.payloadStore
          ? `the summarize request is ${bytes} bytes, over the ${limit} bytes the payload store holds`
          : `the summarize request is ${bytes} bytes, over maxPayloadBytes (${limit}), and the worker stores no payloads externally`,
      };
    }
  }
  const { summarize } = proxyActivities<CompactorActivities>({
    ...compaction.activity,
    summary: summarizeActivitySummary(step, compaction.summarizerModel, compaction.label),
  });
  tally.requests += 1;
  try {
    // A child scope of the caller's: cancelling the caller cancels the attempt or the backoff at once.
    const output = await CancellationScope.cancellable(() => summarize(input));
    tally.attempts += reportedAttempt(output);
    const { text, usage } = output;
    return usage === undefined ? { kind: 'summary', text } : { kind: 'summary', text, usage };
  } catch (error) {
    if (isCancellation(error)) {
      tally.attempts += 1;
      if (onCancel === 'rethrow') throw error;
      return { kind: 'cancelled' };
    }
    if (!(error instanceof ActivityFailure)) throw error;
    const cause = error.cause instanceof ApplicationFailure ? error.cause : undefined;
    tally.attempts += reportedAttempt(cause?.details?.[0]);
    const message = error.cause?.message ?? error.message;
    // docs/design.md#summarizer-overflow Refused for its size, or past its deadline: the engine cuts smaller.
    if (cause?.type === FailureType.Summarizer.ContextOverflow)
      return { kind: 'overflow', message, ...statedNumbers(cause.details?.[0]) };
    if (cause?.type === FailureType.Summarizer.Deadline) return { kind: 'failed', reason: 'deadline', message };
    // Non-retryable: the abort bucket (Summarizer.Rejected), or a backend that chose to fail for good.
    if (error.retryState === RetryState.NON_RETRYABLE_FAILURE) return { kind: 'failed', reason: 'rejected', message };
    return { kind: 'failed', reason: 'exhausted', message };
  }
}
