// Node only: one compaction of a conversation file for `temporal-compactor compact`, in this
// process or through the `compactConversation` workflow, and the report it prints (stderr). The
// command's flags and exit codes are in commands/compact.ts.
import { randomUUID } from 'node:crypto';
import { basename } from 'node:path';
import { WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { NativeConnection } from '@temporalio/worker';
import { Compactor, type SummarizeProgress } from '../compactor.js';
import type { CompactorConfig } from '../config.js';
import {
  compactionKind,
  compactionKindLabel,
  coverageLabel,
  fitStaticMetadata,
  groupDigits,
} from '../core/agent/compaction-history.js';
import { needsCompactionCore } from '../core/compaction/needs-compaction.js';
import { resolveOptions, type CompactionOptions, type ResolvedOptions } from '../core/compaction/options.js';
import { DEFAULT_PAYLOAD_LIMIT_BYTES, jsonPayloadBytes } from '../core/limits/payload-size.js';
import { defaultCounter } from '../core/counting/tokens.js';
import type { ChatMessage, CompactionResult, Summarizer, TokenCounter } from '../core/types.js';
import {
  validateAnthropic,
  type AnthropicConversation,
  type AnthropicTextBlock,
} from '../core/formats/anthropic-schema.js';
import { formatView, type AnyCompactionResult } from '../core/formats/format.js';
import { installQuietTelemetryRuntime } from '../telemetry/metrics.js';
import { payloadConverterFromConfig } from '../payloads/index.js';
import { summarizerFromConfig } from '../worker/summarizer-from-config.js';
import { connectTemporal } from '../worker/temporal-connection.js';
import { createWorker, workflowCode } from '../worker/create-worker.js';
import type { CompactConversationInput, compactConversation } from '../workflows/compact-conversation.js';
import { describeFileShape, type ConversationFile } from './conversation-file.js';

/** Where the budget came from, for the report. */
export type BudgetSource = 'flag' | 'config' | 'conversation';

/** What one `compact` run did: the engine's result and the context the report prints. */
export interface CompactReport {
  file: ConversationFile;
  /** In the file's message format. */
  result: AnyCompactionResult;
  budget: number;
  budgetSource: BudgetSource;
  /** Whether an agent loop would have compacted it now (`needsCompaction`); `compact` compacts either way. */
  needed: boolean;
  summarizer: string;
  /** The options the compaction ran with (defaults applied), and the call's `--target`. */
  options: ResolvedOptions;
  target: number | undefined;
  /** The flags that set compaction options, for the report (empty with the defaults). */
  optionFlags: readonly string[];
  /**
   * Why the summarizer failed, when its failure is what ended the compaction in the hard trim:
   * the last error of the last request (connection refused, 401, a timeout, an empty summary).
   */
  summarizerFailure: string | undefined;
  /** `in-process`, or the workflow that ran it. */
  via:
    | { kind: 'in-process' }
    | {
        kind: 'workflow';
        workflowId: string;
        runId: string;
        taskQueue: string;
        worker: 'in-process' | 'existing';
        link: string | undefined;
      };
}

/** The header line of the table {@link renderCompactReport} prints (tests look for it). */
export const COMPACT_TABLE_HEADER =
  '| tokens before → after | reclaimed | messages before → after | dropped | elided | summary or trim | fallback | exhausted |';

/** The report for people: what was compacted and how, then a one-row Markdown table like `history`'s. */
export function renderCompactReport(report: CompactReport): string {
  const { file, result, budget } = report;
  const { options, target } = report;
  const budgetWhy =
    report.budgetSource === 'flag'
      ? '--budget'
      : report.budgetSource === 'config'
        ? 'COMPACTOR_CONTEXT_BUDGET / --context-budget'
        : "the conversation's own size, as if it had just filled its window; --budget N sets it";
  const what = compactionKindLabel(compactionKind(result), result.summary?.length ?? 0);
  const via =
    report.via.kind === 'in-process'
      ? 'in this process (no Temporal server)'
      : `workflow ${report.via.workflowId} (run ${report.via.runId}) on task queue "${report.via.taskQueue}", ${report.via.worker === 'in-process' ? 'run by a worker in this process' : 'run by the workers polling it'}`;
  const lines = [
    `compact ${file.path}: ${groupDigits(file.messages.length)} messages (${describeFileShape(file)}), ${groupDigits(result.tokensBefore)} tokens (character estimator)`,
    `Budget ${groupDigits(budget)} tokens (${budgetWhy}): trigger ${groupDigits(options.triggerRatio * budget)}, low-water mark ${groupDigits(Math.min(options.targetRatio * budget, target ?? Number.POSITIVE_INFINITY))}${target === undefined ? '' : ` (--target ${groupDigits(target)})`}.`,
    ...(report.optionFlags.length === 0 ? [] : [`Options: ${report.optionFlags.join(' ')}.`]),
    `Summarizer: ${report.summarizer}.`,
    `Ran ${via}.`,
    ...(report.via.kind === 'workflow' && report.via.link !== undefined ? [`Inspect it: ${report.via.link}`] : []),
    ...(report.needed
      ? []
      : [
          'Under the trigger: an agent loop would not compact this conversation yet (needsCompaction is false); compacted anyway.',
        ]),
    '',
    COMPACT_TABLE_HEADER,
    '|--:|--:|--:|--:|--:|---|---|---|',
    `| ${groupDigits(result.tokensBefore)} → ${groupDigits(result.tokensAfter)} | ${groupDigits(result.tokensBefore - result.tokensAfter)} | ${groupDigits(file.messages.length)} → ${groupDigits(result.messages.length)} | ${result.dropped} | ${result.elisions.length} | ${what} | ${result.fallback ? 'yes' : 'no'} | ${result.exhausted ? 'yes' : 'no'} |`,
  ];
  for (const { index, chars, kept } of result.truncations ?? [])
    lines.push(
      `Truncated message ${index} middle-out to fit: ${groupDigits(kept)} of its ${groupDigits(chars)} characters kept (head and tail).`,
    );
  if (result.userMessages !== undefined)
    lines.push(
      `User messages: ${result.userMessages.kept} kept verbatim, ${result.userMessages.summarized} summarized (--keep-user-messages).`,
    );
  if (result.coverage !== undefined && result.coverage.required > 0)
    lines.push(
      `Coverage: ${coverageLabel(result.coverage)} — identifiers of the summarized part that the kept messages still use.`,
    );
  if (result.aboveMark !== undefined) {
    const why =
      result.aboveMark.reason === 'recent-window'
        ? 'the sticky messages and the last complete turn alone leave no room for a summary under it'
        : 'the summary was longer than the room left for it';
    lines.push('', `Above the low-water mark (${groupDigits(result.aboveMark.mark)}): ${why}.`);
  }
  if (report.summarizerFailure !== undefined)
    lines.push('', `Hard trim because the summarizer failed: ${report.summarizerFailure}`);
  else if (result.fallback)
    lines.push(
      '',
      'Hard trim because no summary fitted: the summarizer answered, but the conversation with its summary was not under the budget (or --target).',
    );
  return `${lines.join('\n')}\n`;
}

/** The settings one `compact` run uses, the same in both modes. */
export interface CompactRun {
  file: ConversationFile;
  config: CompactorConfig;
  /** From `--budget`; otherwise the configuration's context budget, else the conversation's own size. */
  budget: number | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** Progress lines (stderr). */
  progress: (line: string) => void;
  /** Compaction options from the flags (`keepRecent`, `ageObservations`, ...); the engine's defaults for the rest. */
  options: Omit<CompactionOptions, 'contextBudget'>;
  /** The flags that set them, as written, for the report. */
  optionFlags: readonly string[];
  /** `--target`: aim at this many tokens for this call (the hard trim, the proof and `exhausted` use it). */
  target: number | undefined;
}

/** What the report needs of the run besides the result. */
function reported(run: CompactRun, budget: number): Pick<CompactReport, 'options' | 'target' | 'optionFlags'> {
  return {
    options: resolveOptions({ ...run.options, contextBudget: budget }),
    target: run.target,
    optionFlags: run.optionFlags,
  };
}

/**
 * An error's message, with its root cause's when that says more: the OpenAI client's "Connection
 * error." comes from `fetch failed` from `connect ECONNREFUSED 127.0.0.1:8080`, which is what a
 * user can act on. (Summarizer errors are redacted down their cause chain.)
 */
export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  let root: Error = error;
  const seen = new Set<unknown>([error]);
  while (root.cause instanceof Error && !seen.has(root.cause)) {
    seen.add(root.cause);
    root = root.cause;
  }
  return root === error || error.message.includes(root.message) ? error.message : `${error.message} (${root.message})`;
}

/**
 * The summarizer, watched: `failure()` is the error of its last request when that request failed
 * (or answered an empty summary), else undefined. The engine falls back to the hard trim exactly
 * after a request that failed its last attempt, so this names why.
 */
function watched(summarizer: Summarizer): { summarizer: Summarizer; failure: () => string | undefined } {
  let last: string | undefined;
  let failedInARow = 0;
  return {
    summarizer: {
      async summarize(request, options) {
        try {
          const response = await summarizer.summarize(request, options);
          const empty = typeof response?.text !== 'string' || response.text.trim() === '';
          failedInARow = empty ? failedInARow + 1 : 0;
          last = empty ? 'the summarizer returned an empty summary' : undefined;
          return response;
        } catch (error) {
          failedInARow += 1;
          last = errorText(error);
          throw error;
        }
      },
    },
    failure: () =>
      last === undefined ? undefined : `${last}${failedInARow > 1 ? ` (${failedInARow} attempts failed)` : ''}`,
  };
}

/** The file's conversation as the engine reads it — other formats through their view — and how it counts them. */
interface EngineConversation {
  messages: readonly ChatMessage[];
  counter: TokenCounter;
  /** An Anthropic request body's system prompt. */
  system: string | AnthropicTextBlock[] | undefined;
}

function engineOf(file: ConversationFile): EngineConversation {
  if (file.messageFormat === 'openai') return { messages: file.messages, counter: defaultCounter, system: undefined };
  const conversation = file.messageFormat === 'anthropic' ? anthropicConversationOf(file) : file.messages;
  const view = formatView(file.messageFormat, conversation);
  if (view === undefined) throw new Error(`no view of the ${file.messageFormat} format`);
  return {
    messages: view.messages,
    counter: defaultCounter,
    system: file.messageFormat === 'anthropic' ? validateAnthropic(conversation).system : undefined,
  };
}

/** An Anthropic file as the Compactor takes it: its messages, or its request body (`system` and all). */
function anthropicConversationOf(file: ConversationFile & { messageFormat: 'anthropic' }): AnthropicConversation {
  return file.container === undefined ? file.messages : { ...file.container, messages: file.messages };
}

/**
 * The progress line of one summarize request (stderr), e.g. `summarize piece 2 of 9: 4,210 tokens
 * (4,980 billed), 38.2 s` or `summarize: 51,300 tokens, 0.4 s: over the summarizer's window, cut smaller`.
 */
export function progressLine(progress: SummarizeProgress): string {
  const which =
    progress.piece === undefined
      ? progress.purpose === 'summary'
        ? 'summarize'
        : `summarize (${progress.purpose} retry)`
      : `summarize piece ${progress.piece.index} of ${progress.piece.of}${progress.purpose === 'piece' || progress.purpose === 'summary' ? '' : ` (${progress.purpose} retry)`}`;
  const billed = progress.promptTokens === undefined ? '' : ` (${groupDigits(progress.promptTokens)} billed)`;
  const how = {
    summary: '',
    overflow: ": over the summarizer's window, cut smaller",
    deadline: ': past its deadline, cut smaller',
    failed: ': failed',
    cancelled: ': cancelled',
  }[progress.outcome];
  return `${which}: ${groupDigits(progress.estimatedTokens)} tokens${billed}, ${(progress.elapsedMs / 1000).toFixed(1)} s${how}`;
}

/** Compacts the file in its format with `compactor`, a progress line per summarize request. */
function compactFile(
  compactor: Compactor,
  file: ConversationFile,
  target: number | undefined,
  progress: (line: string) => void,
): Promise<AnyCompactionResult> {
  const onProgress = (step: SummarizeProgress): void => progress(progressLine(step));
  switch (file.messageFormat) {
    case 'openai':
      return compactor.compact(file.messages, { target, onProgress });
    case 'anthropic':
      return compactor.compact(anthropicConversationOf(file), { target, format: 'anthropic', onProgress });
    case 'ai-sdk':
      return compactor.compact(file.messages, { target, format: 'ai-sdk', onProgress });
  }
}

function budgetOf({ budget, config, file }: CompactRun): { budget: number; budgetSource: BudgetSource } {
  if (budget !== undefined) return { budget, budgetSource: 'flag' };
  if (config.contextBudget !== undefined) return { budget: config.contextBudget, budgetSource: 'config' };
  // The character estimator counts at least 4 tokens a message, so a non-empty file is never 0.
  const { messages, counter } = engineOf(file);
  return { budget: counter.count(messages), budgetSource: 'conversation' };
}

/** Compacts in this process with the `Compactor`, the configured summarizer and the character estimator. */
export async function compactInProcess(run: CompactRun): Promise<CompactReport> {
  const { budget, budgetSource } = budgetOf(run);
  const configured = summarizerFromConfig(run.config);
  const { summarizer, failure } = watched(configured.summarizer);
  const compactor = new Compactor({ ...run.options, summarizer, contextBudget: budget });
  const engine = engineOf(run.file);
  const needed = needsCompactionCore(engine.messages, compactor.options, {
    target: run.target,
    counter: engine.counter,
  });
  const result = await compactFile(compactor, run.file, run.target, run.progress);
  const summarizerFailure = result.fallback ? failure() : undefined;
  return {
    file: run.file,
    result,
    budget,
    budgetSource,
    needed,
    summarizer: configured.describe,
    ...reported(run, budget),
    summarizerFailure,
    via: { kind: 'in-process' },
  };
}

/**
 * A poller seen this recently is taken as a live worker. Workers long-poll: each poll waits up to
 * a minute on the server, then the next one starts, so a live worker's last poll is under a
 * minute old; the server lists a stopped worker's pollers for minutes more.
 * @default 75 s
 */
export const LIVE_POLLER_MS = 75_000;

/** Identities of the workers that polled `taskQueue` for workflow tasks within {@link LIVE_POLLER_MS}. */
export async function liveWorkflowPollers(client: Client, taskQueue: string, now = Date.now()): Promise<string[]> {
  const response = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue, kind: proto.temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return (response.pollers ?? []).flatMap((poller) => {
    const seconds = poller.lastAccessTime?.seconds;
    const at =
      seconds === undefined || seconds === null
        ? 0
        : Number(seconds) * 1000 + Math.round((poller.lastAccessTime?.nanos ?? 0) / 1e6);
    return now - at <= LIVE_POLLER_MS ? [poller.identity ?? '?'] : [];
  });
}

/** A link to the run: Temporal Cloud's UI, or a dev server's on its default port; else the CLI command that shows it. */
function runLink(config: CompactorConfig, namespace: string, workflowId: string): string {
  const path = `namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
  const address = config.temporalAddress ?? 'localhost:7233';
  if (/\.tmprl\.cloud(:\d+)?$/.test(address)) return `https://cloud.temporal.io/${path}`;
  // `temporal server start-dev` serves its UI on 8233 beside the frontend's 7233; any other port says nothing about the UI.
  const local = /^(localhost|127\.0\.0\.1):7233$/.exec(address);
  if (local !== null) return `http://${local[1]}:8233/${path} (the dev server's UI on its default port)`;
  return `temporal workflow show --address ${address} --namespace ${namespace} --workflow-id ${workflowId}`;
}

/** A workflow id that says what ran: `compact-<file name>-<time>-<random>`. */
function workflowIdFor(path: string): string {
  const name = basename(path)
    .replace(/\.[^.]*$/, '')
    .replace(/[^A-Za-z0-9_.-]+/g, '-')
    .slice(0, 60);
  return `compact-${name}-${Date.now().toString(36)}-${randomUUID().slice(0, 6)}`;
}

/**
 * Deadline of the whole workflow run, so a run no worker picks up does not wait forever: the
 * summarize activity's defaults allow 3 attempts of at most 5 minutes each plus backoff, about 16
 * minutes, so twice that never cuts a compaction that would finish.
 * @default 30 min
 */
export const COMPACT_WORKFLOW_TIMEOUT = '30m';

/** Calls `handler` on the first Ctrl-C (SIGINT; a second one ends the process as usual); returns what removes it. */
function onInterrupt(handler: () => void): () => void {
  process.once('SIGINT', handler);
  return () => process.off('SIGINT', handler);
}

async function awaitResult(
  handle: WorkflowHandle<typeof compactConversation>,
  progress: (line: string) => void,
): Promise<CompactionResult> {
  // Ctrl-C cancels the run rather than leaving it for a worker to pick up later.
  const stop = onInterrupt(() => {
    progress(`Cancelling workflow ${handle.workflowId}...`);
    handle
      .cancel()
      .catch((error: unknown) =>
        progress(`could not cancel: ${error instanceof Error ? error.message : String(error)}`),
      );
  });
  try {
    return await handle.result();
  } catch (error) {
    if (error instanceof WorkflowFailedError) {
      const cause = error.cause;
      if (cause instanceof CancelledFailure)
        throw new Error(`workflow ${handle.workflowId} was cancelled`, { cause: error });
      const type =
        cause instanceof ApplicationFailure && cause.type !== undefined && cause.type !== null ? `${cause.type}: ` : '';
      throw new Error(`workflow ${handle.workflowId} failed: ${type}${cause?.message ?? error.message}`, {
        cause: error,
      });
    }
    throw error;
  } finally {
    stop();
  }
}

/** A failure's message in history, with its root cause's when that says more (as {@link errorText}). */
function failureText(failure: proto.temporal.api.failure.v1.IFailure): string {
  let root = failure;
  for (let depth = 0; root.cause !== undefined && root.cause !== null && depth < 16; depth += 1) root = root.cause;
  const message = failure.message ?? '';
  const rootMessage = root.message ?? '';
  return rootMessage === '' || message.includes(rootMessage) ? message || 'no message' : `${message} (${rootMessage})`;
}

/**
 * Why the run's last summarize activity failed, when it did (its final attempt's failure, as the
 * history keeps it); undefined when the last one completed.
 */
export async function summarizerFailureInHistory(handle: WorkflowHandle): Promise<string | undefined> {
  const history = await handle.fetchHistory();
  let failure: string | undefined;
  let attempt = 1;
  for (const event of history.events ?? []) {
    if (event.activityTaskStartedEventAttributes) attempt = event.activityTaskStartedEventAttributes.attempt ?? 1;
    if (event.activityTaskCompletedEventAttributes) failure = undefined;
    const failed =
      event.activityTaskFailedEventAttributes?.failure ?? event.activityTaskTimedOutEventAttributes?.failure;
    if (failed) failure = `${failureText(failed)}${attempt > 1 ? ` (${attempt} attempts failed)` : ''}`;
  }
  return failure;
}

/**
 * Compacts through the `compactConversation` workflow on the configured Temporal. When workers
 * already poll the configured task queue (`COMPACTOR_TASK_QUEUE`), they run it; otherwise a
 * worker starts in this process, on a task queue of its own (so it never picks up anyone else's
 * tasks), with the configured summarizer, and stops when the run is done.
 */
export async function compactViaWorkflow(run: CompactRun, client: Client): Promise<CompactReport> {
  const { budget, budgetSource } = budgetOf(run);
  const { config, file, progress } = run;
  const namespace = client.options.namespace;
  const payloads = payloadConverterFromConfig(config);
  const engine = engineOf(file);
  const input: CompactConversationInput = {
    messages: file.messages,
    ...(engine.system === undefined ? {} : { system: engine.system }),
    options: {
      ...run.options,
      contextBudget: budget,
      ...(run.target === undefined ? {} : { target: run.target }),
      ...(file.messageFormat === 'openai' ? {} : { format: file.messageFormat }),
    },
  };
  const inputBytes = jsonPayloadBytes(input);
  if (payloads.driver === undefined && inputBytes > DEFAULT_PAYLOAD_LIMIT_BYTES) {
    throw new Error(
      `${file.path}: the workflow input would be ${groupDigits(inputBytes)} bytes, over the ${groupDigits(DEFAULT_PAYLOAD_LIMIT_BYTES)} a Temporal payload holds inline; set COMPACTOR_PAYLOAD_STORE (as your workers have it), or compact it without --via-workflow`,
    );
  }
  const existing = await liveWorkflowPollers(client, config.taskQueue);
  // Summarize activities go where those workers expect them (their own queue when one is
  // configured); a worker started here polls one queue for everything.
  if (existing.length > 0 && config.summarizerTaskQueue !== config.taskQueue)
    input.options.taskQueue = config.summarizerTaskQueue;
  const workflowId = workflowIdFor(file.path);
  const details = reported(run, budget);
  const needed = needsCompactionCore(engine.messages, details.options, { target: run.target, counter: engine.counter });
  type Outcome = {
    result: AnyCompactionResult;
    runId: string;
    summarizerFailure: string | undefined;
  };
  const start = async (taskQueue: string, summarizer: string): Promise<Outcome> => {
    const handle = await client.workflow.start<typeof compactConversation>('compactConversation', {
      taskQueue,
      workflowId,
      args: [input],
      workflowExecutionTimeout: COMPACT_WORKFLOW_TIMEOUT,
      // Small enough to stay in history with the payload store on: readable without it.
      staticSummary: fitStaticMetadata(`compact · ${basename(file.path)} · budget ${groupDigits(budget)} tokens`),
      staticDetails: fitStaticMetadata(
        `Started by \`temporal-compactor compact ${file.path} --via-workflow\`; summarizer: ${summarizer}.`,
      ),
    });
    progress(
      `Started workflow ${workflowId} on task queue "${taskQueue}"; waiting for its result (Ctrl-C cancels it).`,
    );
    const result = await awaitResult(handle, progress);
    // The result is in hand: not being allowed to read the history only leaves the reason unsaid.
    const summarizerFailure = result.fallback
      ? await summarizerFailureInHistory(handle).catch((error: unknown) => {
          progress(`Could not read the run's history to say why it ended in the hard trim: ${errorText(error)}`);
          return undefined;
        })
      : undefined;
    return { result, runId: handle.firstExecutionRunId, summarizerFailure };
  };
  const report = (
    outcome: Outcome,
    taskQueue: string,
    worker: 'in-process' | 'existing',
    summarizer: string,
  ): CompactReport => ({
    file,
    result: outcome.result,
    budget,
    budgetSource,
    needed,
    summarizer,
    ...details,
    summarizerFailure: outcome.summarizerFailure,
    via: {
      kind: 'workflow',
      workflowId,
      runId: outcome.runId,
      taskQueue,
      worker,
      link: runLink(config, namespace, workflowId),
    },
  });

  if (existing.length > 0) {
    progress(
      `Workers poll task queue "${config.taskQueue}" (${existing.slice(0, 3).join(', ')}${existing.length > 3 ? ', ...' : ''}): they run the workflow.`,
    );
    const summarizer = "the workers' own (the one their configuration selects)";
    return report(await start(config.taskQueue, summarizer), config.taskQueue, 'existing', summarizer);
  }

  const taskQueue = `${config.taskQueue}-cli-${randomUUID().slice(0, 8)}`;
  const { summarizer, describe } = summarizerFromConfig(config);
  // Without a prebuilt bundle (COMPACTOR_WORKFLOW_BUNDLE) the worker bundles the workflows as it starts.
  const bundling = workflowCode({ workflowBundlePath: config.workflowBundle }).workflowsPath !== undefined;
  progress(
    `No worker polls task queue "${config.taskQueue}": starting one in this process on "${taskQueue}"${bundling ? ' (bundling the workflows first takes a few seconds)' : ''}...`,
  );
  try {
    installQuietTelemetryRuntime(undefined);
  } catch {
    // A Runtime is already installed in this process (an embedding program, a test): keep it.
  }
  let connection: NativeConnection | undefined;
  try {
    ({ connection } = await connectTemporal(config, { kind: 'worker', env: run.env }));
    const created = await createWorker({
      connection,
      namespace,
      taskQueue,
      summarizerTaskQueue: taskQueue,
      mode: 'all',
      summarizer,
      dataConverter: payloads.dataConverter,
      ...(config.workflowBundle === undefined ? {} : { workflowBundlePath: config.workflowBundle }),
      // A one-off run does not change the namespace, and says nothing of search attributes that
      // are missing: only agentRun sets them, and this worker runs one compactConversation.
      registerSearchAttributes: false,
      warn: () => undefined,
      tracing: config.tracing,
    });
    const [worker] = created.workers;
    if (worker === undefined) throw new Error('the in-process worker was not created');
    return report(await worker.runUntil(() => start(taskQueue, describe)), taskQueue, 'in-process', describe);
  } finally {
    await connection?.close();
  }
}
