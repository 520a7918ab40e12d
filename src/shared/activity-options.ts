// Sandbox-safe (shared by workflows and the code that configures them): the options of the
// activities `compact`, the agent loop and `describeWorker` schedule, with their defaults named. Changing a
// value here changes the commands a new run records (a recorded history still replays: the server
// has the options it was given).
import type { ActivityOptions } from '@temporalio/common';
import { AGENT_MAXIMUM_RETRY_INTERVAL_MS, type AgentActivitySettings } from '../core/agent/agent-input.js';
import {
  MAX_RETRY_BACKOFF_MS,
  parseDuration,
  type Duration,
  type ResolvedOptions,
} from '../core/compaction/options.js';
import { FailureType, InvalidInputError } from '../core/errors.js';
import { keysOf } from '../core/unknown-keys.js';

/**
 * A worker that stops heartbeating for this long is presumed dead and its attempt is retried
 * elsewhere: the chat activity and our own tools heartbeat every few seconds, so a killed worker
 * costs a run about this long, not a whole start-to-close timeout.
 * @default 10 s
 */
export const AGENT_HEARTBEAT_TIMEOUT_MS = 10_000;

/** Attempts of a chat or tool activity when `maximumAttempts` is not set. @default 3 */
export const DEFAULT_AGENT_ACTIVITY_ATTEMPTS = 3;

/** Wait before the second attempt of a chat or tool activity when `initialInterval` is not set; doubled per attempt. @default '1s' */
export const DEFAULT_AGENT_RETRY_INTERVAL_MS = 1_000;

/** The timeouts of one kind of agent activity when its settings leave them out. */
export interface AgentActivityDefaults {
  /** Deadline of one attempt, in ms. */
  startToClose: number;
  /** Heartbeat timeout in ms; undefined: the activity is not expected to heartbeat. */
  heartbeat: number | undefined;
}

/** @default '5m' per chat attempt, heartbeats within 10 s (it heartbeats while waiting). */
export const CHAT_ACTIVITY_DEFAULTS: AgentActivityDefaults = {
  startToClose: 300_000,
  heartbeat: AGENT_HEARTBEAT_TIMEOUT_MS,
};
/** @default '1m' per attempt of the built-in and replayed tools, which heartbeat within 10 s. */
export const OUR_TOOL_DEFAULTS: AgentActivityDefaults = { startToClose: 60_000, heartbeat: AGENT_HEARTBEAT_TIMEOUT_MS };
/** @default '1m' per attempt of your own tool activities, no heartbeat unless `toolActivity.heartbeatTimeout` says so (they may not heartbeat). */
export const USER_TOOL_DEFAULTS: AgentActivityDefaults = { startToClose: 60_000, heartbeat: undefined };

/**
 * Timeouts of the loop's own bookkeeping activities (`recordSession`, `countTokens`).
 * @default '1m' per attempt, 5 attempts from 1 s, doubling up to 30 s; bad input is not retried
 */
export const BOOKKEEPING_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: 60_000,
  retry: {
    maximumAttempts: 5,
    initialInterval: 1_000,
    backoffCoefficient: 2,
    maximumInterval: 30_000,
    nonRetryableErrorTypes: [FailureType.Compaction.InvalidInput],
  },
};

/**
 * The `describeWorker` activity: answered from the worker's memory, so quick; bounded even when no
 * worker of the task queue has it (the run then goes on as if undescribed).
 * @default '10s' per attempt, 2 attempts 500 ms apart, '1m' in all
 */
export const DESCRIBE_WORKER_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: 10_000,
  scheduleToCloseTimeout: 60_000,
  retry: { maximumAttempts: 2, initialInterval: 500 },
};

function ms(value: Duration | undefined, field: string, fallback: number): number {
  return value === undefined ? fallback : parseDuration(value, field);
}

/**
 * The options of a chat or tool activity the loop schedules, from its settings (`field` names them
 * in errors) and the defaults of its kind. No `nonRetryableErrorTypes`: every failure of ours
 * that must not be retried (Chat.Rejected, Replay.*, Tool.*, Compaction.InvalidInput) is raised
 * with `nonRetryable: true`, and the list would be written into every scheduled event of every
 * round (~150 bytes of history each).
 */
export function agentActivityOptions(
  settings: AgentActivitySettings,
  field: string,
  defaults: AgentActivityDefaults,
): ActivityOptions {
  const heartbeat = ms(settings.heartbeatTimeout, `${field}.heartbeatTimeout`, defaults.heartbeat ?? 0);
  return {
    startToCloseTimeout: Math.max(
      1,
      ms(settings.startToCloseTimeout, `${field}.startToCloseTimeout`, defaults.startToClose),
    ),
    ...(heartbeat > 0 ? { heartbeatTimeout: heartbeat } : {}),
    retry: {
      maximumAttempts: settings.maximumAttempts ?? DEFAULT_AGENT_ACTIVITY_ATTEMPTS,
      initialInterval: Math.max(
        1,
        ms(settings.initialInterval, `${field}.initialInterval`, DEFAULT_AGENT_RETRY_INTERVAL_MS),
      ),
      backoffCoefficient: 2,
      maximumInterval: AGENT_MAXIMUM_RETRY_INTERVAL_MS,
    },
    ...(settings.taskQueue === undefined ? {} : { taskQueue: settings.taskQueue }),
  };
}

/** Settings of the `summarize` activity a workflow `compact` schedules. All JSON. */
export interface SummarizeActivitySettings {
  /** Deadline of one summarize attempt; keep it above the summarizer's own request timeout. @default '5m' */
  startToCloseTimeout?: Duration;
  /**
   * A worker that stops heartbeating for this long is presumed dead and the attempt is retried
   * elsewhere. The activity heartbeats at a quarter of it.
   * @default '10s'
   */
  heartbeatTimeout?: Duration;
  /** Run summarize activities on their own task queue (summarizer capacity and rate limits scale apart). @default the workflow's task queue */
  taskQueue?: string;
  /** The summarizer model's name, shown in the activity summary in the UI. Only a label: the worker decides which model runs. */
  summarizerModel?: string;
  /**
   * A summarize request larger than this many bytes is not sent inline: unless the worker stores
   * payloads externally, the compaction falls back to the hard trim instead (the server would
   * refuse the payload, and the workflow task would fail again and again).
   * @default 2,000,000
   */
  maxPayloadBytes?: number;
  /**
   * Whether the worker stores large payloads externally. Unset, `compact` asks the worker (the
   * `describeWorker` local activity) the first time a request is over `maxPayloadBytes`.
   */
  payloadStore?: boolean;
}

/** The names of the summarize activity's settings (the compiler keeps the list complete). */
export const SUMMARIZE_ACTIVITY_SETTING_KEYS = keysOf<SummarizeActivitySettings>({
  startToCloseTimeout: true,
  heartbeatTimeout: true,
  taskQueue: true,
  summarizerModel: true,
  maxPayloadBytes: true,
  payloadStore: true,
});

/** Deadline of one summarize attempt. @default '5m' */
export const SUMMARIZE_START_TO_CLOSE_MS = 5 * 60_000;
/** The summarize activity's heartbeat timeout. @default '10s': a crashed worker's call is retried within seconds, not at `startToCloseTimeout` (docs/design.md#summarize-activity). */
export const SUMMARIZE_HEARTBEAT_MS = 10_000;

function positiveDuration(value: Duration | undefined, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  const ms = parseDuration(value, field);
  if (ms <= 0) throw new InvalidInputError(field, `must be longer than zero, got ${JSON.stringify(value)}`);
  return ms;
}

/** A setting that, when set, is a non-empty string (a task queue, the summarizer model's label); throws `InvalidInputError` naming `field`. */
export function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw new InvalidInputError(field, 'must be a non-empty string');
  return value;
}

/**
 * The `summarize` activity's options for compaction options already resolved (their attempts and
 * backoff) and its own settings; throws `InvalidInputError` naming `${field}.<setting>`.
 */
export function summarizeActivityOptions(
  resolved: Pick<ResolvedOptions, 'maxAttempts' | 'retryBackoffMs'>,
  { startToCloseTimeout, heartbeatTimeout, taskQueue }: Omit<SummarizeActivitySettings, 'summarizerModel'>,
  field: string,
): ActivityOptions {
  const queue = optionalString(taskQueue, `${field}.taskQueue`);
  // Temporal reads a zero interval as "unset" (1 s): keep a zero backoff at the smallest real one.
  const initialInterval = Math.min(Math.max(1, resolved.retryBackoffMs), MAX_RETRY_BACKOFF_MS);
  return {
    startToCloseTimeout: positiveDuration(
      startToCloseTimeout,
      `${field}.startToCloseTimeout`,
      SUMMARIZE_START_TO_CLOSE_MS,
    ),
    heartbeatTimeout: positiveDuration(heartbeatTimeout, `${field}.heartbeatTimeout`, SUMMARIZE_HEARTBEAT_MS),
    retry: {
      maximumAttempts: resolved.maxAttempts,
      initialInterval,
      backoffCoefficient: 2,
      maximumInterval: MAX_RETRY_BACKOFF_MS,
      nonRetryableErrorTypes: [FailureType.Summarizer.Rejected, FailureType.Compaction.InvalidInput],
    },
    ...(queue === undefined ? {} : { taskQueue: queue }),
  };
}
