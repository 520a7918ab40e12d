// Node only: the one line every worker prints as it starts, saying what it uses; endpoints are
// shown with their userinfo and query values redacted.
import type { DataConverter } from '@temporalio/common';
import { DEFAULT_OPENAI_BASE_URL } from '../config.js';
import type { Summarizer } from '../core/types.js';
import { descriptionOf } from '../described.js';
import { redactUrls } from '../redact.js';

export interface WorkerStart {
  /** The task queues polled, with what each runs (`all`, `workflows`, `activities`). */
  queues: readonly { taskQueue: string; runs: 'all' | 'workflows' | 'activities' }[];
  /** The summarize activity's summarizer; undefined when no worker here runs our activities. */
  summarizer: Summarizer | undefined;
  /** Where the agent loop's `chat` activity sends requests; undefined when no worker here runs it. */
  chat: ChatServer | undefined;
  /** The data converter workers and clients share (an empty one: the SDK's defaults). */
  dataConverter: DataConverter;
  /** Further parts (tracing, metrics), each a phrase. */
  more?: readonly string[];
}

/** The chat activity's server: the base URL of a client of the caller's own, or the settings its client is built from. */
type ChatServer = { baseURL: string | undefined; apiKey: string | undefined };

function describeChat({ baseURL, apiKey }: ChatServer): string {
  if (baseURL !== undefined) return `chat: model server at ${redactUrls(baseURL)}`;
  if (apiKey !== undefined) return `chat: model server at ${DEFAULT_OPENAI_BASE_URL}`;
  return 'chat: no model server (set OPENAI_API_KEY or OPENAI_BASE_URL; agentRun with the replay provider needs none)';
}

/** The data converter in words: what payloadConverterFromConfig said of it, the SDK's defaults, or one of the caller's own. */
function describeDataConverter(dataConverter: DataConverter): string {
  const sdkDefaults = Object.values(dataConverter).every((part) => part === undefined);
  return descriptionOf(
    dataConverter,
    sdkDefaults
      ? 'payloads inline (no store, no codec)'
      : 'a data converter of your own (payload store and codec not ours to say)',
  );
}

/** The start line, e.g. `temporal-compactor worker: polling task queue "agents" (all); OpenAI-compatible summarizer: …`. */
export function workerStartLine({ queues, summarizer, chat, dataConverter, more = [] }: WorkerStart): string {
  const polled = queues.map(({ taskQueue, runs }) => `"${taskQueue}" (${runs})`).join(' and ');
  const parts = [
    `polling task queue ${polled}`,
    summarizer === undefined ? undefined : descriptionOf(summarizer, 'summarizer: one of your own'),
    chat === undefined ? undefined : describeChat(chat),
    describeDataConverter(dataConverter),
    ...more,
  ].filter((part) => part !== undefined);
  return `temporal-compactor worker: ${parts.join('; ')}`;
}
