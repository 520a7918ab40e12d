// Sandbox-safe: a compaction's `Compaction` span and workflow metrics (docs/design.md#workflow-compact).
// Without tracing the OpenTelemetry API is a no-op; the SDK sends no metric while a workflow replays.
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { ApplicationFailure } from '@temporalio/common';
import { inWorkflowContext, isCancellation, metricMeter } from '@temporalio/workflow';
import {
  COMPACTION_SPAN_NAME,
  CompactionMetric,
  compactionSpanAttributes,
  type SummarizerTally,
} from '../core/compaction/telemetry.js';
import { compactionKind } from '../core/compaction/kind.js';
import type { SummarizerUsage } from '../core/counting/summarizer-usage.js';
import type { CompactionResult } from '../core/types.js';

/** A compaction's result and what its summarizer requests cost (undefined when no summary came back). */
export interface Compacted {
  result: CompactionResult;
  summarizerUsage: SummarizerUsage | undefined;
}

function addTo(name: string, unit: string, description: string, value = 1, tags: Record<string, string> = {}): void {
  if (inWorkflowContext()) metricMeter.createCounter(name, unit, description).add(value, tags);
}

function countCompaction({ result }: Compacted): void {
  addTo(CompactionMetric.Compactions, 'compactions', 'Compactions, by result', 1, {
    result: compactionKind(result),
  });
  const reclaimed = result.tokensBefore - result.tokensAfter;
  if (reclaimed > 0)
    addTo(CompactionMetric.TokensReclaimed, 'tokens', 'Tokens the compactions took out of the context', reclaimed);
  if (result.fallback) addTo(CompactionMetric.Fallbacks, 'compactions', 'Compactions that fell back to the hard trim');
  if (result.exhausted)
    addTo(CompactionMetric.Exhausted, 'compactions', 'Compactions still over their target after the hard trim');
}

/**
 * Runs one compaction inside its `Compaction` span, handing `run` the tally of the summarizer's requests and attempts.
 * One that ends is counted by result; one that fails (not by cancellation) by failure type, marking the span an error.
 */
export function withCompactionTelemetry(run: (tally: SummarizerTally) => Promise<Compacted>): Promise<Compacted> {
  return trace.getTracer('temporal-compactor').startActiveSpan(COMPACTION_SPAN_NAME, async (span) => {
    const tally: SummarizerTally = { requests: 0, attempts: 0 };
    try {
      const compaction = await run(tally);
      if (span.isRecording())
        span.setAttributes(compactionSpanAttributes(compaction.result, compaction.summarizerUsage, tally));
      countCompaction(compaction);
      return compaction;
    } catch (error) {
      if (!isCancellation(error)) {
        const name = error instanceof Error ? error.name : 'Error';
        const type = error instanceof ApplicationFailure ? (error.type ?? name) : name;
        addTo(CompactionMetric.CompactionFailures, 'compactions', 'Compactions that failed, by failure type', 1, {
          type,
        });
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      }
      throw error;
    } finally {
      span.end();
    }
  });
}
