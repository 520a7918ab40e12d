// Node only: the activities a compactor worker registers (DESIGN §6).
import { createOpenAISummarizer } from '../summarizers/openai.js';
import type { Summarizer } from '../core/types.js';
import { createSummarizeActivity } from './summarize.js';

export type { SummarizeActivityInput, SummarizeActivityOutput, SummarizeActivityDeps } from './summarize.js';
export { createSummarizeActivity } from './summarize.js';
export { toSummarizerFailure, emptySummaryFailure, type SummarizerFailureDetails } from './to-failure.js';

/** What the activities need; built on the worker, so API keys never enter workflow history. */
export interface ActivityDeps {
  /** The backend that writes summaries. @default an OpenAI-compatible summarizer for `model`, configured from the environment */
  summarizer?: Summarizer;
  /** The summarizer model, when `summarizer` is not given (`OPENAI_BASE_URL` and `OPENAI_API_KEY` configure the client). */
  model?: string;
  /** Heartbeat interval while a request is in flight. @default a quarter of the heartbeatTimeout, at most 5 s */
  heartbeatIntervalMs?: number;
}

/**
 * Creates the activities to register on a worker. Workflows reach them through
 * `proxyActivities<CompactorActivities>()` and import this module as a type only.
 *
 * @example
 * const worker = await Worker.create({
 *   taskQueue: 'compactor',
 *   workflowsPath: require.resolve('temporal-compactor/workflows'),
 *   activities: createActivities({ summarizer: createOpenAISummarizer({ model: 'gpt-4o-mini' }) }),
 * });
 */
export function createActivities({ summarizer, model, heartbeatIntervalMs }: ActivityDeps) {
  const backend = summarizer ?? (model !== undefined && model !== '' ? createOpenAISummarizer({ model }) : undefined);
  if (backend === undefined) throw new TypeError('createActivities: pass a summarizer, or the summarizer model name as `model`');
  return {
    summarize: createSummarizeActivity({ summarizer: backend, heartbeatIntervalMs }),
    // The agent loop's activities (`chat`, tools) join here.
  };
}

/** The activities as workflows see them through `proxyActivities`. */
export type CompactorActivities = ReturnType<typeof createActivities>;
