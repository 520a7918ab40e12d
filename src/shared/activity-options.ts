// Sandbox-safe: the options of the activities `compact` and the agent loop schedule, with their
// defaults. A change here changes the commands new runs record; recorded histories still replay.
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

/** Chat and our tools heartbeat every few seconds, so a killed worker costs a run this long, not a whole attempt. */
const AGENT_HEARTBEAT_TIMEOUT_MS = 10_000;

/** Timeouts in ms of one kind of agent activity when its settings leave them out (no heartbeat: undefined). */
interface AgentActivityDefaults {
  startToClose: number;
  heartbeat: number | undefined;
}

export const CHAT_ACTIVITY_DEFAULTS: AgentActivityDefaults = {
  startToClose: 300_000,
  heartbeat: AGENT_HEARTBEAT_TIMEOUT_MS,
};
export const OUR_TOOL_DEFAULTS: AgentActivityDefaults = { startToClose: 60_000, heartbeat: AGENT_HEARTBEAT_TIMEOUT_MS };
/** Your own tool activities may not heartbeat. */
export const USER_TOOL_DEFAULTS: AgentActivityDefaults = { startToClose: 60_000, heartbeat: undefined };

/** The loop's own bookkeeping activities (`recordSession`, `countTokens`). */
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

/** Answered from the worker's memory; bounded even when no worker has it (the run goes on undescribed). */
export const DESCRIBE_WORKER_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: 10_000,
  scheduleToCloseTimeout: 60_000,
  retry: { maximumAttempts: 2, initialInterval: 500 },
};

/**
 * A chat or tool activity's options (`field` names its settings in errors). No `nonRetryableErrorTypes`:
 * our failures are raised `nonRetryable`, and the list would be written into every scheduled event.
 */
export function agentActivityOptions(
  settings: AgentActivitySettings,
  field: string,
  defaults: AgentActivityDefaults,
): ActivityOptions {
  const ms = (key: 'heartbeatTimeout' | 'startToCloseTimeout' | 'initialInterval', fallback: number): number => {
    const value = settings[key];
    return value === undefined ? fallback : parseDuration(value, `${field}.${key}`);
  };
  const heartbeat = ms('heartbeatTimeout', defaults.heartbeat ?? 0);
  return {
    startToCloseTimeout: Math.max(1, ms('startToCloseTimeout', defaults.startToClose)),
    ...(heartbeat > 0 ? { heartbeatTimeout: heartbeat } : {}),
    retry: {
      maximumAttempts: settings.maximumAttempts ?? 3,
      initialInterval: Math.max(1, ms('initialInterval', 1_000)),
      backoffCoefficient: 2,
      maximumInterval: AGENT_MAXIMUM_RETRY_INTERVAL_MS,
    },
    ...(settings.taskQueue === undefined ? {} : { taskQueue: settings.taskQueue }),
  };
}

/** Settings of the `summarize` activity `compact` schedules. All JSON. */
export interface SummarizeActivitySettings {
  /** Deadline of one summarize attempt; keep it above the summarizer's own request timeout. @default '5m' */
  startToCloseTimeout?: Duration;
  /** A worker silent this long is presumed dead; the activity heartbeats at a quarter of it. @default '10s' */
  heartbeatTimeout?: Duration;
  /** Run summarize activities on their own task queue. @default the workflow's task queue */
  taskQueue?: string;
  /** A label shown in the activity summary in the UI; the worker decides which model runs. */
  summarizerModel?: string;
  /** A larger request is not sent inline: without a payload store, the hard trim (the server would refuse it). @default 2,000,000 */
  maxPayloadBytes?: number;
  /** Whether the worker stores large payloads externally; unset, `compact` asks it when a request is over `maxPayloadBytes`. */
  payloadStore?: boolean;
}

export const SUMMARIZE_ACTIVITY_SETTING_KEYS = keysOf<SummarizeActivitySettings>({
  startToCloseTimeout: true,
  heartbeatTimeout: true,
  taskQueue: true,
  summarizerModel: true,
  maxPayloadBytes: true,
  payloadStore: true,
});

const SUMMARIZE_START_TO_CLOSE_MS = 5 * 60_000;
/** A crashed worker's call is retried within seconds (docs/design.md#summarize-activity). */
const SUMMARIZE_HEARTBEAT_MS = 10_000;

/** A setting that, when set, is a non-empty string. */
export function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw new InvalidInputError(field, 'must be a non-empty string');
  return value;
}

/** The `summarize` activity's options from resolved compaction options and its own settings. */
export function summarizeActivityOptions(
  resolved: Pick<ResolvedOptions, 'maxAttempts' | 'retryBackoffMs'>,
  { startToCloseTimeout, heartbeatTimeout, taskQueue }: Omit<SummarizeActivitySettings, 'summarizerModel'>,
  field: string,
): ActivityOptions {
  const queue = optionalString(taskQueue, `${field}.taskQueue`);
  const positive = (value: Duration | undefined, key: string, fallback: number): number => {
    const ms = value === undefined ? fallback : parseDuration(value, `${field}.${key}`);
    if (ms > 0) return ms;
    throw new InvalidInputError(`${field}.${key}`, `must be longer than zero, got ${JSON.stringify(value)}`);
  };
  // Temporal reads a zero interval as "unset" (1 s): keep a zero backoff at the smallest real one.
  const initialInterval = Math.min(Math.max(1, resolved.retryBackoffMs), MAX_RETRY_BACKOFF_MS);
  return {
    startToCloseTimeout: positive(startToCloseTimeout, 'startToCloseTimeout', SUMMARIZE_START_TO_CLOSE_MS),
    heartbeatTimeout: positive(heartbeatTimeout, 'heartbeatTimeout', SUMMARIZE_HEARTBEAT_MS),
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
