// Sandbox-safe: the workflow driver of the compaction engine (docs/design.md#workflow-compact). The engine decides
// everything in deterministic workflow code; only the summarizer call leaves the workflow, as
// the `summarize` activity under Temporal's retry policy. Each compaction is a `Compaction` span
// (recorded only when the worker traces) and adds to the workflow metrics.
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { ApplicationFailure, RetryState } from '@temporalio/common';
import {
  ActivityFailure,
  CancellationScope,
  inWorkflowContext,
  isCancellation,
  metricMeter,
  proxyActivities,
} from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import {
  compactionSteps,
  needsCompactionCore,
  compactionPlanCore,
  type CompactionHooks,
  type SummarizeOutcome,
  type SummarizeStep,
} from '../core/compaction/engine.js';
import { FailureType, InvalidInputError } from '../core/errors.js';
import {
  COMPACTION_OPTION_KEYS,
  MAX_RETRY_BACKOFF_MS,
  parseDuration,
  resolveOptions,
  type CallOverrides,
  type CompactionOptions,
  type Duration,
  type ResolvedOptions,
} from '../core/compaction/options.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import type { ChatMessage, CompactionPlan, CompactionResult, TokenCounter } from '../core/types.js';
import type { AnthropicConversation } from '../core/formats/anthropic-schema.js';
import type { AnthropicCompactionResult } from '../core/formats/anthropic.js';
import type { AiSdkMessage } from '../core/formats/ai-sdk-schema.js';
import type { AiSdkCompactionResult } from '../core/formats/ai-sdk.js';
import type { FormatView } from '../core/formats/view.js';
import {
  formatOption,
  formatView,
  type Conversation,
  type FormatCompactionResult,
  type FormatOption,
} from '../core/formats/format.js';
import { defaultCounter } from '../core/counting/tokens.js';
import { summarizerMessages } from '../core/compaction/transcript.js';
import type { CompactorActivities } from '../activities/index.js';
import { DEFAULT_PAYLOAD_LIMIT_BYTES, jsonPayloadBytes } from '../core/limits/payload-size.js';
import { addSummarizerRequest, type SummarizerUsage } from '../core/counting/summarizer-usage.js';
import {
  COMPACTION_SPAN_NAME,
  CompactionMetric,
  compactionResultKind,
  compactionSpanAttributes,
  type SummarizerTally,
} from '../core/compaction/telemetry.js';
import { describeWorker } from './describe-worker.js';
import { failOnInvalidInput } from '../shared/failures.js';
import { SUMMARIZE_ACTIVITY_SETTING_KEYS, type SummarizeActivitySettings } from '../shared/activity-options.js';

export type { SummarizeActivitySettings };

/** Options of the workflow `compact`: the compaction options, the per-call overrides and the activity settings. */
export interface CompactOptions extends CompactionOptions, SummarizeActivitySettings {
  /** Aim at this many tokens for this call (the hard trim, the proof and `exhausted` use it). */
  target?: number;
  /** Count with this counter (code in the workflow: it must be deterministic). @default the character estimator */
  counter?: TokenCounter;
}

/** The names of `compact`'s options: the compaction options, the activity settings, `target` and `counter`. */
export const COMPACT_OPTION_KEYS: readonly string[] = [
  ...COMPACTION_OPTION_KEYS,
  ...SUMMARIZE_ACTIVITY_SETTING_KEYS,
  ...keysOf<Omit<CompactOptions, keyof CompactionOptions | keyof SummarizeActivitySettings>>({
    target: true,
    counter: true,
  }),
  ...keysOf<FormatOption>({ format: true }),
];

/** @default '5m' */
export const DEFAULT_START_TO_CLOSE_TIMEOUT_MS = 5 * 60_000;
/** @default '10s': a crashed worker's call is retried within seconds, not at `startToCloseTimeout` (docs/design.md#summarize-activity). */
export const DEFAULT_HEARTBEAT_TIMEOUT_MS = 10_000;

/** What the driver does when the caller's scope is cancelled during a summarize call. */
type OnCancel = 'hard-trim' | 'rethrow';

/**
 * What every pass with one set of options runs with, checked once: the engine's options and how
 * the `summarize` activity is called. Plain data; an agent run builds it once per run.
 */
export interface CompactionSettings {
  options: ResolvedOptions;
  activity: ActivityOptions;
  summarizerModel: string | undefined;
  maxPayloadBytes: number;
  /** Whether the worker stores payloads externally; undefined: asked (`describeWorker`) when a request is over `maxPayloadBytes`. */
  payloadStore: boolean | undefined;
}

/** One pass: its settings, and the call's own target, counter and instructions. */
export interface CompactionCall {
  settings: CompactionSettings;
  overrides: CallOverrides;
}

function positiveDuration(value: Duration | undefined, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  const ms = parseDuration(value, field);
  if (ms <= 0) throw new InvalidInputError(field, `must be longer than zero, got ${JSON.stringify(value)}`);
  return ms;
}

function optionalString(value: unknown, field: string): string | undefined {
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
      DEFAULT_START_TO_CLOSE_TIMEOUT_MS,
    ),
    heartbeatTimeout: positiveDuration(heartbeatTimeout, `${field}.heartbeatTimeout`, DEFAULT_HEARTBEAT_TIMEOUT_MS),
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

/** Checks `compact`'s options (without `format`, which the view took): the settings, and `target` and `counter` as the call's overrides. */
function plan(options: unknown): CompactionCall {
  if (typeof options !== 'object' || options === null)
    throw new InvalidInputError('options', 'must be an object with at least contextBudget');
  assertKnownKeys(options, COMPACT_OPTION_KEYS, 'options');
  const {
    target,
    counter,
    startToCloseTimeout,
    heartbeatTimeout,
    taskQueue,
    summarizerModel,
    maxPayloadBytes,
    payloadStore,
    ...compaction
  } = options as CompactOptions;
  const resolved = resolveOptions(compaction, 'options');
  if (counter !== undefined && typeof counter?.count !== 'function')
    throw new InvalidInputError('options.counter', 'must have a count(messages) method');
  const activity = summarizeActivityOptions(resolved, { startToCloseTimeout, heartbeatTimeout, taskQueue }, 'options');
  if (maxPayloadBytes !== undefined && !(Number.isSafeInteger(maxPayloadBytes) && maxPayloadBytes >= 1024)) {
    throw new InvalidInputError(
      'options.maxPayloadBytes',
      `must be an integer of at least 1024, got ${JSON.stringify(maxPayloadBytes)}`,
    );
  }
  if (payloadStore !== undefined && typeof payloadStore !== 'boolean')
    throw new InvalidInputError('options.payloadStore', 'must be true or false');
  return {
    settings: {
      options: resolved,
      activity,
      summarizerModel: optionalString(summarizerModel, 'options.summarizerModel'),
      maxPayloadBytes: maxPayloadBytes ?? DEFAULT_PAYLOAD_LIMIT_BYTES,
      payloadStore,
    },
    overrides: { target, counter },
  };
}

/** `1234567` → `1,234,567` without `Intl` (a locale must not change what a workflow records). */
function grouped(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** The one-line activity summary the UI and CLI show, e.g. `summarize 247 messages (109,333 chars) · gpt-4o-mini`, `summarize 31 messages (24,012 chars), piece 2 of 9`. */
export function summarizeActivitySummary(step: SummarizeStep, summarizerModel?: string): string {
  const what = `summarize ${grouped(step.transcript.messages)} messages (${grouped(step.transcript.characters)} chars)`;
  const retry = step.purpose === 'tighter' ? ', tighter retry' : step.purpose === 'coverage' ? ', coverage retry' : '';
  // docs/design.md#summarizer-window A middle summarized in pieces says which one each request folds in.
  const piece = step.piece === undefined ? '' : `, piece ${step.piece.index} of ${step.piece.of}`;
  return `${what}${piece}${retry}${summarizerModel === undefined ? '' : ` · ${summarizerModel}`}`;
}

/** The attempt a summarize activity reported (in its output, or in its failure's details); 1 when it said none. */
function reportedAttempt(value: unknown): number {
  const attempt: unknown = typeof value === 'object' && value !== null ? Reflect.get(value, 'attempt') : undefined;
  return typeof attempt === 'number' && Number.isSafeInteger(attempt) && attempt > 0 ? attempt : 1;
}

/** Answers one step with the `summarize` activity; maps how it ended to the engine's outcome. */
async function summarizeStep(
  step: SummarizeStep,
  compaction: CompactionSettings,
  onCancel: OnCancel,
  tally: SummarizerTally,
): Promise<SummarizeOutcome> {
  const input = step.request;
  const bytes = jsonPayloadBytes(input);
  if (bytes > compaction.maxPayloadBytes) {
    compaction.payloadStore ??= (await describeWorker()).externalStorage;
    if (!compaction.payloadStore) {
      // Sent inline, the server would refuse it and the workflow task would fail without end: the
      // hard trim instead, as for a summarizer that refused the request.
      return {
        kind: 'failed',
        reason: 'rejected',
        message: `the summarize request is ${bytes} bytes, over maxPayloadBytes (${compaction.maxPayloadBytes}), and the worker stores no payloads externally`,
      };
    }
  }
  const { summarize } = proxyActivities<CompactorActivities>({
    ...compaction.activity,
    summary: summarizeActivitySummary(step, compaction.summarizerModel),
  });
  tally.requests += 1;
  try {
    // Its own scope, a child of the caller's: cancelling the caller cancels the attempt in flight
    // or the retry backoff at once (the server cancels a scheduled retry immediately).
    const output = await CancellationScope.cancellable(() => summarize(input));
    tally.attempts += reportedAttempt(output);
    const { text, usage, pieces } = output;
    // docs/design.md#summarizer-window A worker's window made the activity fold it: the record says in how many requests.
    const folded = typeof pieces === 'number' && Number.isSafeInteger(pieces) && pieces > 1 ? { pieces } : {};
    return usage === undefined ? { kind: 'summary', text, ...folded } : { kind: 'summary', text, usage, ...folded };
  } catch (error) {
    if (isCancellation(error)) {
      tally.attempts += 1;
      if (onCancel === 'rethrow') throw error;
      return { kind: 'cancelled' };
    }
    if (!(error instanceof ActivityFailure)) throw error;
    tally.attempts += error.cause instanceof ApplicationFailure ? reportedAttempt(error.cause.details?.[0]) : 1;
    const message = error.cause?.message ?? error.message;
    // Non-retryable: the abort bucket (Summarizer.Rejected), or a backend that chose to fail for good.
    if (error.retryState === RetryState.NON_RETRYABLE_FAILURE) return { kind: 'failed', reason: 'rejected', message };
    return { kind: 'failed', reason: 'exhausted', message };
  }
}

/** A compaction's result and what its summarizer requests cost (undefined when no summary came back). */
export interface CompactionWithUsage {
  result: CompactionResult;
  summarizerUsage: SummarizerUsage | undefined;
}

/** Adds one compaction to the workflow metrics. The SDK sends nothing while a workflow replays. */
function countCompaction({ result }: CompactionWithUsage): void {
  if (!inWorkflowContext()) return;
  metricMeter
    .createCounter(CompactionMetric.Compactions, 'compactions', 'Compactions, by result')
    .add(1, { result: compactionResultKind(result) });
  const reclaimed = result.tokensBefore - result.tokensAfter;
  if (reclaimed > 0)
    metricMeter
      .createCounter(CompactionMetric.TokensReclaimed, 'tokens', 'Tokens the compactions took out of the context')
      .add(reclaimed);
  if (result.fallback)
    metricMeter
      .createCounter(CompactionMetric.Fallbacks, 'compactions', 'Compactions that fell back to the hard trim')
      .add(1);
  if (result.exhausted)
    metricMeter
      .createCounter(
        CompactionMetric.Exhausted,
        'compactions',
        'Compactions still over their target after the hard trim',
      )
      .add(1);
}

/**
 * Drives the engine for the pass `call` gives (asked inside the span, so a pass refused for bad
 * options is counted as failed); `onCancel` says whether a cancelled caller gets the hard trim or
 * its cancellation back; `nameReplaced` is the engine's hook of an agent run with recall on. Also
 * adds up the summarizer's usage (the activity's reported numbers, else an estimate), which agent
 * runs account for and `compact`'s own result does not carry.
 *
 * The compaction is a `Compaction` span with its figures as attributes. With no tracing on the
 * worker the OpenTelemetry API answers with its no-op tracer: no span, no id drawn, nothing sent.
 */
export function driveCompaction(
  messages: unknown,
  call: () => CompactionCall,
  onCancel: OnCancel,
  nameReplaced?: CompactionHooks['nameReplaced'],
): Promise<CompactionWithUsage> {
  return trace.getTracer('temporal-compactor').startActiveSpan(COMPACTION_SPAN_NAME, async (span) => {
    const tally: SummarizerTally = { requests: 0, attempts: 0 };
    try {
      const compaction = await runCompaction(messages, call, onCancel, tally, nameReplaced);
      if (span.isRecording())
        span.setAttributes(compactionSpanAttributes(compaction.result, compaction.summarizerUsage, tally));
      countCompaction(compaction);
      return compaction;
    } catch (error) {
      if (!isCancellation(error)) {
        const type =
          error instanceof ApplicationFailure
            ? (error.type ?? 'ApplicationFailure')
            : error instanceof Error
              ? error.name
              : 'Error';
        if (inWorkflowContext())
          metricMeter
            .createCounter(
              CompactionMetric.CompactionFailures,
              'compactions',
              'Compactions that failed, by failure type',
            )
            .add(1, { type });
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      }
      throw error;
    } finally {
      span.end();
    }
  });
}

async function runCompaction(
  messages: unknown,
  call: () => CompactionCall,
  onCancel: OnCancel,
  tally: SummarizerTally,
  nameReplaced: CompactionHooks['nameReplaced'],
): Promise<CompactionWithUsage> {
  const steps = failOnInvalidInput(() => {
    const { settings, overrides } = call();
    const generator = compactionSteps(
      messages,
      settings.options,
      overrides,
      overrides.counter,
      nameReplaced === undefined ? {} : { nameReplaced },
    );
    // The engine validates the messages before its first step: run to it here so bad input fails now.
    // The settings are copied: what this pass learns of the worker (payloadStore) stays with it.
    return { compaction: { ...settings }, generator, first: generator.next() };
  });
  const { compaction, generator } = steps;
  let summarizerUsage: SummarizerUsage | undefined;
  let next = steps.first;
  while (next.done !== true) {
    const step = next.value;
    const outcome = await summarizeStep(step, compaction, onCancel, tally);
    if (outcome.kind === 'summary' && outcome.text.trim() !== '')
      summarizerUsage = addSummarizerRequest(
        summarizerUsage,
        () => summarizerMessages(step.request),
        outcome.text,
        outcome.usage,
      );
    // After a cancellation the rest is pure and synchronous (the engine trims and returns), so it
    // completes even though the caller's scope is cancelled; nothing here awaits again.
    next = generator.next(outcome);
  }
  return { result: next.value, summarizerUsage };
}

/**
 * Compacts a conversation inside any workflow (docs/design.md#pass, docs/design.md#workflow-compact): elision and the hard trim run as
 * workflow code, the summary as the `summarize` activity with `RetryPolicy { maximumAttempts:
 * maxAttempts, initialInterval: retryBackoff, backoffCoefficient: 2, maximumInterval: 30 s }`.
 * Never rejects for a summarizer failure: a rejected request (400-404), exhausted attempts or a
 * summary that does not fit end in the hard trim (`fallback: true`). Cancelling the calling
 * workflow cancels the request in flight or the backoff at once and `compact` resolves with the
 * hard trim; the caller's next activity or timer then rejects with `CancelledFailure`.
 *
 * @throws ApplicationFailure of type `Compaction.InvalidInput` (non-retryable) naming the index and field of bad input.
 * @example
 * import { compact, needsCompaction } from 'temporal-compactor/workflow';
 * if (needsCompaction(messages, { contextBudget: 128_000 })) {
 *   messages = (await compact(messages, { contextBudget: 128_000, summarizerModel: 'gpt-4o-mini' })).messages;
 * }
 */
export function compact(
  messages: readonly ChatMessage[],
  options: CompactOptions & { format?: 'openai' },
): Promise<CompactionResult>;
/** Compacts an Anthropic conversation (a message array or a request body); the result is in Anthropic messages. */
export function compact(
  conversation: AnthropicConversation,
  options: CompactOptions & { format: 'anthropic' },
): Promise<AnthropicCompactionResult>;
/** Compacts AI SDK messages (`ModelMessage[]`, or a middleware's prompt); the result is in AI SDK messages. */
export function compact(
  messages: readonly AiSdkMessage[],
  options: CompactOptions & { format: 'ai-sdk' },
): Promise<AiSdkCompactionResult>;
export async function compact(
  conversation: Conversation,
  options: CompactOptions & FormatOption,
): Promise<CompactionResult | FormatCompactionResult> {
  const { view, messages, call } = passOf(conversation, options);
  const { result } = await driveCompaction(messages, call, 'hard-trim');
  return view === undefined ? result : view.result(result);
}

/** A call's conversation as the engine reads it, and how its options are checked once the span is open. */
export interface Pass {
  /** The view of `options.format`; undefined for OpenAI chat, which the engine reads as it is. */
  view: FormatView<FormatCompactionResult> | undefined;
  /** What the engine compacts: the view's messages, or the conversation itself. */
  messages: unknown;
  /** The options checked (`format` aside) into the pass's settings, the view's counter around the caller's. */
  call: () => CompactionCall;
}

/**
 * The pass of a call: `options.format` checked (here, once) and the conversation mapped to the
 * engine's messages (in workflow code: the mapping is pure).
 * @throws ApplicationFailure of type `Compaction.InvalidInput` for a bad format or a malformed conversation.
 */
export function passOf(conversation: unknown, options: unknown): Pass {
  const isObject = typeof options === 'object' && options !== null;
  const format: unknown = isObject ? Reflect.get(options, 'format') : undefined;
  const view = failOnInvalidInput(() => formatView(formatOption(format, 'options.format'), conversation));
  const { format: _format, ...rest } = isObject ? (options as FormatOption) : {};
  const engineOptions: unknown = isObject ? rest : options;
  const call = (): CompactionCall => {
    const checked = plan(engineOptions);
    if (view === undefined) return checked;
    const counter = view.counter(checked.overrides.counter ?? defaultCounter);
    return { ...checked, overrides: { ...checked.overrides, counter } };
  };
  return { view, messages: view?.messages ?? conversation, call };
}

/**
 * True when the conversation is over `triggerRatio × contextBudget` (or the call's `target`), or,
 * with `ageObservations` or `keepImages`, holds an elision batch of at least `ageReclaimMin` characters.
 * @throws ApplicationFailure of type `Compaction.InvalidInput` for bad input.
 */
export function needsCompaction(conversation: Conversation, options: CompactOptions & FormatOption): boolean {
  const { messages, call } = passOf(conversation, options);
  return failOnInvalidInput(() => {
    const { settings, overrides } = call();
    return needsCompactionCore(messages, settings.options, overrides, overrides.counter);
  });
}

/**
 * {@link needsCompaction}, and with `summarizerContextWindow` how many pieces the summary of the
 * middle a compaction would replace now would take (`summaryPieces`, only when more than one
 * request; docs/design.md#summarizer-window). Same checks as `needsCompaction`.
 * @throws ApplicationFailure of type `Compaction.InvalidInput` for bad input.
 * @example
 * const { needed, summaryPieces } = planCompaction(messages, { contextBudget: 1_000_000, summarizerContextWindow: 128_000 });
 */
export function planCompaction(conversation: Conversation, options: CompactOptions & FormatOption): CompactionPlan {
  const { messages, call } = passOf(conversation, options);
  return failOnInvalidInput(() => {
    const { settings, overrides } = call();
    return compactionPlanCore(messages, settings.options, overrides, overrides.counter);
  });
}
