// Sandbox-safe: the workflow driver of the compaction engine (docs/design.md#drivers): each step the
// engine yields is answered by the `summarize` activity, inside the compaction's span.
import { compactionSteps, type CompactionHooks } from '../core/compaction/engine.js';
import { summarizerMessages } from '../core/compaction/transcript.js';
import { addSummarizerRequest, type SummarizerUsage } from '../core/counting/summarizer-usage.js';
import { failOnInvalidInput } from '../shared/failures.js';
import type { CompactionCall } from './compact-options.js';
import { withCompactionTelemetry, type Compacted } from './compaction-telemetry.js';
import { summarizeStep, type OnCancel } from './summarize-step.js';

/**
 * Drives the engine for the pass `call` gives (asked inside the span, so a pass refused for bad
 * options is counted as failed); `onCancel`: whether a cancelled caller gets the hard trim or its
 * cancellation back. Also adds up the summarizer's usage (reported, else estimated) for agent runs.
 */
export function driveCompaction(
  messages: unknown,
  call: () => CompactionCall,
  onCancel: OnCancel,
  hooks: CompactionHooks = {},
): Promise<Compacted> {
  return withCompactionTelemetry(async (tally) => {
    const { compaction, generator, first } = failOnInvalidInput(() => {
      const { settings, overrides } = call();
      const generator = compactionSteps(messages, settings.options, overrides, overrides.counter, hooks);
      // The engine validates the messages before its first step: run to it here so bad input fails now.
      // The settings are copied: what this pass learns of the worker (payloadStore) stays with it.
      return { compaction: { ...settings }, generator, first: generator.next() };
    });
    let summarizerUsage: SummarizerUsage | undefined;
    let next = first;
    while (next.done !== true) {
      const step = next.value;
      const outcome = await summarizeStep(step, compaction, onCancel, tally);
      if (outcome.kind === 'summary' && outcome.text.trim() !== '') {
        const { text, usage } = outcome;
        summarizerUsage = addSummarizerRequest(summarizerUsage, () => summarizerMessages(step.request), text, usage);
      }
      // After a cancellation the rest is pure and synchronous (the engine trims and returns), so it
      // completes even though the caller's scope is cancelled; nothing here awaits again.
      next = generator.next(outcome);
    }
    return { result: next.value, summarizerUsage };
  });
}
