// Sandbox-safe: the `Compaction` span's attributes and the metric names a compaction reports.
import type { SummarizerUsage } from '../counting/summarizer-usage.js';
import type { CompactionResult } from '../types.js';
import { compactionKind } from './kind.js';

/** The span every workflow compaction records: a child of the workflow's span, parent of its summarize activities. */
export const COMPACTION_SPAN_NAME = 'Compaction';

export const CompactionSpanAttribute = {
  TokensBefore: 'compaction.tokens_before',
  TokensAfter: 'compaction.tokens_after',
  Dropped: 'compaction.dropped',
  /** How many tool results were replaced by a stub. */
  Elided: 'compaction.elided',
  Fallback: 'compaction.fallback',
  Exhausted: 'compaction.exhausted',
  /** A `CompactionKind`. */
  Result: 'compaction.result',
  /** Summarize activities scheduled: one per piece, and the retry when there was one. */
  SummarizerRequests: 'compaction.summarizer.requests',
  /** Their activity attempts, Temporal's retries included. */
  SummarizerAttempts: 'compaction.summarizer.attempts',
  /** Billed (an estimate of characters / 4 when the backend did not say); only when a summary came back. */
  SummarizerPromptTokens: 'compaction.summarizer.prompt_tokens',
  SummarizerCompletionTokens: 'compaction.summarizer.completion_tokens',
  SummarizerUsageEstimated: 'compaction.summarizer.usage_estimated',
  /** docs/design.md#coverage: identifiers the summary had to keep, kept, only carried, missing; only when checked. */
  CoverageRequired: 'compaction.coverage.required',
  CoverageKept: 'compaction.coverage.kept',
  CoverageCarried: 'compaction.coverage.carried',
  CoverageMissing: 'compaction.coverage.missing',
  /** docs/design.md#summarizer-window: how many pieces a kept summary took; only when more than one. */
  SummaryPieces: 'compaction.summary.pieces',
} as const;

/** Workflow code reports the first five through the workflow metric meter; the activity interceptor the last two. */
export const CompactionMetric = {
  /** Counter, tag `result` (a `CompactionKind`). */
  Compactions: 'compactor_compactions',
  TokensReclaimed: 'compactor_tokens_reclaimed',
  Fallbacks: 'compactor_fallbacks',
  Exhausted: 'compactor_exhausted',
  /** Counter, tag `type`: compactions that failed (e.g. `Compaction.InvalidInput`). */
  CompactionFailures: 'compactor_compaction_failures',
  /** Histogram in milliseconds, one value per summarize attempt, tag `outcome`: `ok` or the failure type. */
  SummarizerLatency: 'compactor_summarizer_latency',
  /** Counter, tag `type` (e.g. `Summarizer.Transient`, `Chat.Rejected`): failed attempts of our activities. */
  ActivityFailures: 'compactor_activity_failures',
} as const;

export interface SummarizerTally {
  requests: number;
  attempts: number;
}

export function compactionSpanAttributes(
  result: CompactionResult,
  usage: SummarizerUsage | undefined,
  tally: SummarizerTally,
): Record<string, string | number | boolean> {
  return {
    [CompactionSpanAttribute.TokensBefore]: result.tokensBefore,
    [CompactionSpanAttribute.TokensAfter]: result.tokensAfter,
    [CompactionSpanAttribute.Dropped]: result.dropped,
    [CompactionSpanAttribute.Elided]: result.elisions.length,
    [CompactionSpanAttribute.Fallback]: result.fallback,
    [CompactionSpanAttribute.Exhausted]: result.exhausted,
    [CompactionSpanAttribute.Result]: compactionKind(result),
    [CompactionSpanAttribute.SummarizerRequests]: tally.requests,
    [CompactionSpanAttribute.SummarizerAttempts]: tally.attempts,
    ...(usage === undefined
      ? {}
      : {
          [CompactionSpanAttribute.SummarizerPromptTokens]: usage.promptTokens,
          [CompactionSpanAttribute.SummarizerCompletionTokens]: usage.completionTokens,
          [CompactionSpanAttribute.SummarizerUsageEstimated]: usage.estimated,
        }),
    ...(result.coverage === undefined
      ? {}
      : {
          [CompactionSpanAttribute.CoverageRequired]: result.coverage.required,
          [CompactionSpanAttribute.CoverageKept]: result.coverage.kept,
          [CompactionSpanAttribute.CoverageCarried]: result.coverage.carried,
          [CompactionSpanAttribute.CoverageMissing]: result.coverage.missing.length,
        }),
    ...(result.summaryPieces === undefined ? {} : { [CompactionSpanAttribute.SummaryPieces]: result.summaryPieces }),
  };
}
