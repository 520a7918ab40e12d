// Node only (activities): the `summarize` activity — the one slow, flaky step of a compaction.
import { z } from 'zod';
import { Context } from '@temporalio/activity';
import { checkWith, validateMessages } from '../core/schema.js';
import { inputRoom } from '../core/compaction/pieces.js';
import { summarizerMessages } from '../core/compaction/transcript.js';
import { defaultCounter } from '../core/counting/tokens.js';
import { FailureType, InvalidInputError } from '../core/errors.js';
import type { SummarizeRequest, Summarizer, Usage } from '../core/types.js';
import { assertKnownKeys } from '../core/unknown-keys.js';
import { failOnInvalidInput, nonRetryableFailure } from '../shared/failures.js';
import type { ActivityDeps } from './deps.js';
import { whileHeartbeating } from './heartbeats.js';
import { emptySummaryFailure, toSummarizerFailure } from './to-failure.js';

export interface SummarizeActivityOutput {
  text: string;
  usage?: Usage;
  /** The attempt that wrote it, only when Temporal retried, for the compaction's span. */
  attempt?: number;
}

/**
 * The `summarize` activity: one request, failures mapped by `toSummarizerFailure`, a blank summary
 * `Summarizer.Empty`. The window is applied in one place, the engine's cut: a request over the input
 * room of `summarizerContextWindow` (× 0.75, by the default counter) or the server's own window fails
 * `Summarizer.ContextOverflow` with the numbers, and the workflow cuts smaller (docs/design.md#summarizer-window).
 */
export function createSummarizeActivity({
  summarizer,
  summarizerContextWindow: window,
}: Pick<ActivityDeps, 'summarizerContextWindow'> & { summarizer: Summarizer }) {
  return async function summarize(input: SummarizeRequest): Promise<SummarizeActivityOutput> {
    const request = failOnInvalidInput(() => checkedRequest(input));
    // A retried attempt says so in its output or failure details, for the compaction span's count.
    const { attempt } = Context.current().info;
    const retried = attempt > 1 ? { attempt } : {};
    const started = Date.now();
    const estimate = defaultCounter.count(summarizerMessages(request));
    if (window !== undefined && estimate > inputRoom(window))
      throw nonRetryableFailure(
        FailureType.Summarizer.ContextOverflow,
        `summarize: the request is ${estimate} tokens (estimated), over the ${inputRoom(window)} the worker's summarizer window of ${window} tokens leaves for it (summarizerContextWindow)`,
        { ...retried, contextWindow: window, promptTokens: estimate },
      );
    return whileHeartbeating(
      async (signal) => {
        const response = await summarizer.summarize(request, { signal });
        if (typeof response?.text !== 'string' || response.text.trim() === '') throw emptySummaryFailure(retried);
        return {
          text: response.text,
          ...(response.usage === undefined ? {} : { usage: response.usage }),
          ...retried,
        };
      },
      (error) => toSummarizerFailure(error, retried),
      [],
      // What the Temporal UI shows of the attempt in flight: its estimated size and how long it has waited.
      () => ({ estimatedTokens: estimate, elapsedMs: Date.now() - started }),
    );
  };
}

// `middle` is checked by validateMessages, which names a message's fault down to its part.
const requestSchema = z.object({
  instruction: z.string(),
  middle: z.unknown(),
  instructions: z.string().optional(),
  task: z.string().optional(),
  maxTokens: z.int().positive().optional(),
});

/** The input, checked as the request it must be; throws `InvalidInputError` naming the field. */
function checkedRequest(input: SummarizeRequest): SummarizeRequest {
  assertKnownKeys(input, Object.keys(requestSchema.shape), 'input', 'field');
  checkWith(requestSchema, input, 'input');
  try {
    validateMessages(input.middle, 'middle');
  } catch (error) {
    // The messages are named as what they are here: `middle[3].tool_call_id`.
    if (error instanceof InvalidInputError)
      throw new InvalidInputError(error.field.replace(/^messages(?=\[)/, 'middle'), error.reason, error.index);
    throw error;
  }
  return input;
}
