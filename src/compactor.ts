// Node (also runs in any JS runtime with timers): the in-process driver of the compaction engine.
import { newCalibration, type SummarizerCalibration } from './core/compaction/calibration.js';
import { compactionSteps, type SummarizeOutcome, type SummarizeStep } from './core/compaction/engine.js';
import { compactionPlanCore, needsCompactionCore } from './core/compaction/needs-compaction.js';
import { classifyError, InvalidInputError, retryAfterOf } from './core/errors.js';
import {
  backoffDelayMs,
  callOverridesSchema,
  COMPACTION_OPTION_KEYS,
  resolveOptions,
  type CallOverrides,
  type CompactionOptions,
  type ResolvedOptions,
} from './core/compaction/options.js';
import { checkWith } from './core/schema.js';
import { assertKnownKeys, keysOf } from './core/unknown-keys.js';
import { defaultCounter } from './core/counting/tokens.js';
import { summarizerMessages } from './core/compaction/transcript.js';
import type { ChatMessage, CompactionPlan, CompactionResult, Summarizer, TokenCounter } from './core/types.js';
import type { AnthropicConversation } from './core/formats/anthropic-schema.js';
import type { AnthropicCompactionResult } from './core/formats/anthropic.js';
import type { AiSdkMessage } from './core/formats/ai-sdk-schema.js';
import type { AiSdkCompactionResult } from './core/formats/ai-sdk.js';
import {
  formatOption,
  formatView,
  type AnyCompactionResult,
  type Conversation,
  type FormatOption,
} from './core/formats/format.js';
import { pastDeadline, readContextOverflow } from './llm/context-overflow.js';
import { SUMMARIZE_ACTIVITY_SETTING_KEYS } from './shared/activity-options.js';
import type { SessionLine } from './core/agent/session.js';
import { checkCompactionId, undoTranscript, type TranscriptUndo } from './core/agent/undo.js';

export interface CompactorOptions extends CompactionOptions {
  /** The backend that writes summaries; a small cheap model does it well. */
  summarizer: Summarizer;
  /** Counts tokens; share the instance the agent loop calibrates. @default the character estimator */
  counter?: TokenCounter;
}

/** This call's target, counter and instructions (instead of the constructor's), and how to follow or cancel it. */
export interface CompactCallOptions extends CallOverrides {
  /** Cancels the in-flight request and any backoff wait; `compact` then resolves with the hard trim. */
  signal?: AbortSignal;
  /** Called as each summarize request ends. */
  onProgress?: (progress: SummarizeProgress) => void;
}

/** One summarize request of a compaction, as it ended (`CompactCallOptions.onProgress`). */
export interface SummarizeProgress {
  purpose: SummarizeStep['purpose'];
  /** Which piece of how many as planned then (docs/design.md#summarizer-window). */
  piece?: { index: number; of: number };
  /** The request's size as the compaction's counter estimates it. */
  estimatedTokens: number;
  /** The prompt tokens the summarizer billed, when it reported them. */
  promptTokens?: number;
  /** Retries and their waits included. */
  elapsedMs: number;
  /** `overflow` and `deadline` are cut smaller next. */
  outcome: 'summary' | 'overflow' | 'deadline' | 'failed' | 'cancelled';
}

/** The options of {@link Compactor.undo}. */
export interface UndoCallOptions {
  /** The `#` of the compaction to undo. @default the last compaction in effect */
  compactionId?: number;
  /** @default the compactor's counter */
  counter?: TokenCounter;
}

const UNDO_CALL_OPTION_KEYS = keysOf<UndoCallOptions>({ compactionId: true, counter: true });

// The workflow `compact`'s activity settings are accepted too, so one options object serves both drivers.
const COMPACTOR_OPTION_KEYS: readonly string[] = [
  ...COMPACTION_OPTION_KEYS,
  ...keysOf<Omit<CompactorOptions, keyof CompactionOptions>>({ summarizer: true, counter: true }),
  ...SUMMARIZE_ACTIVITY_SETTING_KEYS,
];
const FORMAT_OPTION_KEYS = keysOf<FormatOption>({ format: true });
const CALL_OPTION_KEYS = keysOf<CompactCallOptions & FormatOption>({
  target: true,
  counter: true,
  signal: true,
  summaryInstructions: true,
  summaryPrompt: true,
  keepUserMessages: true,
  onProgress: true,
  format: true,
});

/**
 * Compacts conversations in-process: the same engine as the workflow `compact`, with the
 * summarizer called directly and retried per docs/design.md#failures.
 * @example
 * const compactor = new Compactor({ summarizer: createOpenAISummarizer({ model: 'gpt-4o-mini' }), contextBudget: 128_000 });
 * if (compactor.needsCompaction(messages)) {
 *   const result = await compactor.compact(messages);
 *   messages = result.messages;
 * }
 */
export class Compactor {
  readonly options: ResolvedOptions;
  readonly counter: TokenCounter;
  private readonly summarizer: Summarizer;
  /** What the summarizer taught of its tokens and window (docs/design.md#summarizer-overflow). */
  private readonly calibration: SummarizerCalibration = newCalibration();

  constructor(compactorOptions: CompactorOptions) {
    // First, so a misspelt summarizer or counter is named as such.
    assertKnownKeys(compactorOptions, COMPACTOR_OPTION_KEYS, 'options');
    const { summarizer, counter = defaultCounter, ...options } = compactorOptions;
    if (typeof summarizer?.summarize !== 'function')
      throw new InvalidInputError('summarizer', 'must have a summarize(request, options) method');
    if (typeof counter?.count !== 'function')
      throw new InvalidInputError('counter', 'must have a count(messages) method');
    // Every key is known by now; the activity settings among them change nothing in-process.
    const compaction = Object.entries(options).filter(([key]) => COMPACTION_OPTION_KEYS.includes(key));
    this.options = resolveOptions(Object.fromEntries(compaction), 'options');
    this.summarizer = summarizer;
    this.counter = counter;
  }

  /** True when the conversation is over the trigger, or (with `ageObservations` or `keepImages`) holds a full elision batch. */
  needsCompaction(conversation: Conversation, callOptions: FormatOption = {}): boolean {
    return needsCompactionCore(this.messagesOf(conversation, callOptions), this.options, {}, this.counter);
  }

  /** {@link needsCompaction}, and how many pieces the summary would take (docs/design.md#summarizer-window). */
  planCompaction(conversation: Conversation, callOptions: FormatOption = {}): CompactionPlan {
    const messages = this.messagesOf(conversation, callOptions);
    return compactionPlanCore(messages, this.options, {}, this.counter, this.calibration);
  }

  /** The conversation as the engine reads it: the view of `callOptions.format`, or as given for OpenAI chat. */
  private messagesOf(conversation: Conversation, callOptions: FormatOption): unknown {
    assertKnownKeys(callOptions, FORMAT_OPTION_KEYS, 'callOptions');
    return formatView(formatOption(callOptions.format, 'callOptions.format'), conversation)?.messages ?? conversation;
  }

  /** Compacts once. Never rejects for a summarizer failure or a cancellation: those end in the hard trim. */
  compact(
    messages: readonly ChatMessage[],
    callOptions?: CompactCallOptions & { format?: 'openai' },
  ): Promise<CompactionResult>;
  /** Compacts an Anthropic conversation (a message array or a request body); the result is in Anthropic messages. */
  compact(
    conversation: AnthropicConversation,
    callOptions: CompactCallOptions & { format: 'anthropic' },
  ): Promise<AnthropicCompactionResult>;
  /** Compacts AI SDK messages (`ModelMessage[]`, or a middleware's prompt); the result is in AI SDK messages. */
  compact(
    messages: readonly AiSdkMessage[],
    callOptions: CompactCallOptions & { format: 'ai-sdk' },
  ): Promise<AiSdkCompactionResult>;
  async compact(
    conversation: Conversation,
    callOptions: CompactCallOptions & FormatOption = {},
  ): Promise<AnyCompactionResult> {
    // A compaction option here (`keepRecent`) belongs in the constructor's options: refuse it rather than ignore it.
    assertKnownKeys(callOptions, CALL_OPTION_KEYS, 'callOptions');
    const overrides: CallOverrides = {
      target: callOptions.target,
      counter: callOptions.counter,
      ...checkWith(callOverridesSchema, callOptions, 'callOptions'),
    };
    const view = formatView(formatOption(callOptions.format, 'callOptions.format'), conversation);
    if (view === undefined) return this.run(conversation, overrides, callOptions);
    return view.result(await this.run(view.messages, overrides, callOptions));
  }

  /**
   * Undoes a compaction of a transcript you keep (docs/design.md#undo): the conversation restored byte
   * for byte, the undo line to append, and its record.
   * @throws UndoRefusedError (`Compaction.UndoRefused`) when the undo cannot be applied.
   * @throws InvalidInputError naming `callOptions.compactionId` or the line that does not replay.
   */
  undo(lines: readonly SessionLine[], callOptions: UndoCallOptions = {}): TranscriptUndo {
    assertKnownKeys(callOptions, UNDO_CALL_OPTION_KEYS, 'callOptions');
    return undoTranscript(lines, {
      compactionId: checkCompactionId(callOptions.compactionId, 'callOptions.compactionId'),
      counter: callOptions.counter ?? this.counter,
      room: this.options.contextBudget,
      field: 'callOptions.compactionId',
    });
  }

  private async run(
    messages: unknown,
    overrides: CallOverrides,
    { signal, onProgress }: CompactCallOptions,
  ): Promise<CompactionResult> {
    const steps = compactionSteps(messages, this.options, overrides, this.counter, { calibration: this.calibration });
    const counter = overrides.counter ?? this.counter;
    let next = steps.next();
    while (next.done !== true) {
      const step = next.value;
      const started = Date.now();
      const outcome = await this.summarize(step, signal);
      const promptTokens = outcome.kind === 'summary' ? outcome.usage?.promptTokens : undefined;
      onProgress?.({
        purpose: step.purpose,
        ...(step.piece === undefined ? {} : { piece: step.piece }),
        estimatedTokens: counter.count(summarizerMessages(step.request)),
        ...(promptTokens === undefined ? {} : { promptTokens }),
        elapsedMs: Date.now() - started,
        outcome: outcome.kind === 'failed' ? (outcome.reason === 'deadline' ? 'deadline' : 'failed') : outcome.kind,
      });
      next = steps.next(outcome);
    }
    return next.value;
  }

  private async summarize(step: SummarizeStep, signal: AbortSignal | undefined): Promise<SummarizeOutcome> {
    const { maxAttempts, retryBackoffMs } = this.options;
    // A function, not a narrowed property: the signal flips while we await.
    const cancelled = (): boolean => signal?.aborted === true;
    let lastFailure = 'no attempt was made';
    for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
      if (cancelled()) return { kind: 'cancelled' };
      let retryAfterMs: number | undefined;
      try {
        const response = await untilAborted(this.summarizer.summarize(step.request, signal ? { signal } : {}), signal);
        if (typeof response?.text === 'string' && response.text.trim() !== '') {
          const { text, usage } = response;
          return usage === undefined ? { kind: 'summary', text } : { kind: 'summary', text, usage };
        }
        lastFailure = 'the summarizer returned an empty summary';
      } catch (error) {
        if (cancelled()) return { kind: 'cancelled' };
        const message = error instanceof Error ? error.message : String(error);
        // docs/design.md#summarizer-overflow Refused for its size or past its deadline: the engine cuts it smaller.
        const overflow = readContextOverflow(error);
        if (overflow !== undefined) {
          const { contextWindow, promptTokens } = overflow;
          return { kind: 'overflow', message, contextWindow, promptTokens };
        }
        if (pastDeadline(error)) return { kind: 'failed', reason: 'deadline', message };
        if (classifyError(error) === 'abort') return { kind: 'failed', reason: 'rejected', message };
        lastFailure = message;
        retryAfterMs = retryAfterOf(error);
      }
      if (attempt < maxAttempts && !(await sleep(retryAfterMs ?? backoffDelayMs(attempt, retryBackoffMs), signal)))
        return { kind: 'cancelled' };
    }
    return { kind: 'failed', reason: 'exhausted', message: lastFailure };
  }
}

const aborted = Symbol('aborted');

/** Settles with the promise, or rejects as soon as `signal` aborts even if the backend ignores it. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(aborted);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Waits `ms`; resolves false at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve(false);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
