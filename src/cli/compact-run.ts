// Node only: one compaction of a conversation file for `temporal-compactor compact`, in this
// process or through the `compactConversation` workflow, and the report it prints (stderr).
import { randomUUID } from 'node:crypto';
import { basename } from 'node:path';
import { WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { optionalTsToMs } from '@temporalio/common/lib/time.js';
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
import { resolveOptions, type CompactionOptions } from '../core/compaction/options.js';
import { DEFAULT_PAYLOAD_LIMIT_BYTES, jsonPayloadBytes } from '../core/limits/payload-size.js';
import { defaultCounter } from '../core/counting/tokens.js';
import type { CompactionResult, Summarizer } from '../core/types.js';
import { validateAnthropic, type AnthropicConversation } from '../core/formats/anthropic-schema.js';
import { formatView, type AnyCompactionResult } from '../core/formats/format.js';
import { withRootCause } from '../llm/openai-adapter.js';
import { payloadConverterFromConfig } from '../payloads/index.js';
import { summarizerFromConfig } from '../worker/summarizer-from-config.js';
import { connectTemporal } from '../worker/temporal-connection.js';
import type { CompactConversationInput, compactConversation } from '../workflows/compact-conversation.js';
import { describeFileShape, type ConversationFile } from './conversation-file.js';

/** What one `compact` run did: the engine's result (in the file's message format) and what the report prints. */
type CompactReport = Awaited<ReturnType<typeof compactInProcess | typeof compactViaWorkflow>>;

/** The header line of the report's table (tests look for it). */
export const COMPACT_TABLE_HEADER =
  '| tokens before → after | reclaimed | messages before → after | dropped | elided | summary or trim | fallback | exhausted |';

/** What was compacted and how, then a one-row Markdown table like `history`'s. */
export function renderCompactReport(report: CompactReport): string {
  const { file, result, budget, options, target } = report;
  const budgetWhy = {
    flag: '--budget',
    config: 'COMPACTOR_CONTEXT_BUDGET / --context-budget',
    conversation: "the conversation's own size, as if it had just filled its window; --budget N sets it",
  }[report.budgetSource];
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
    ...(report.via.kind === 'workflow' ? [`Inspect it: ${report.via.link}`] : []),
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
  /** `--budget`; else the configuration's, else the conversation's own size. */
  budget: number | undefined;
  env: Readonly<Record<string, string | undefined>>;
  progress: (line: string) => void;
  /** From the flags. */
  options: Omit<CompactionOptions, 'contextBudget'>;
  /** The flags that set them, as written. */
  optionFlags: readonly string[];
  target: number | undefined;
}

/** `failure()`: the last request's error or empty summary; the hard trim follows exactly such a request. */
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
          last = withRootCause(error);
          throw error;
        }
      },
    },
    failure: () =>
      last === undefined ? undefined : `${last}${failedInARow > 1 ? ` (${failedInARow} attempts failed)` : ''}`,
  };
}

/** The file's conversation as the engine reads it (OpenAI chat as it is), and an Anthropic body's system prompt. */
function engineOf(file: ConversationFile) {
  const conversation = file.messageFormat === 'anthropic' ? anthropicConversationOf(file) : file.messages;
  return {
    messages: formatView(file.messageFormat, conversation)?.messages ?? file.messages,
    system: file.messageFormat === 'anthropic' ? validateAnthropic(conversation).system : undefined,
  };
}

/** An Anthropic file as the Compactor takes it: its messages, or its request body (`system` and all). */
function anthropicConversationOf(file: ConversationFile & { messageFormat: 'anthropic' }): AnthropicConversation {
  return file.container === undefined ? file.messages : { ...file.container, messages: file.messages };
}

/** The progress line of one summarize request, e.g. `summarize piece 2 of 9: 4,210 tokens (4,980 billed), 38.2 s`. */
function progressLine(progress: SummarizeProgress): string {
  const piece = progress.piece === undefined ? '' : ` piece ${progress.piece.index} of ${progress.piece.of}`;
  const retry = progress.purpose === 'piece' || progress.purpose === 'summary' ? '' : ` (${progress.purpose} retry)`;
  const billed = progress.promptTokens === undefined ? '' : ` (${groupDigits(progress.promptTokens)} billed)`;
  const how = {
    summary: '',
    overflow: ": over the summarizer's window, cut smaller",
    deadline: ': past its deadline, cut smaller',
    failed: ': failed',
    cancelled: ': cancelled',
  }[progress.outcome];
  return `summarize${piece}${retry}: ${groupDigits(progress.estimatedTokens)} tokens${billed}, ${(progress.elapsedMs / 1000).toFixed(1)} s${how}`;
}

/** What both modes know before compacting. */
function prepare(run: CompactRun) {
  const { messages, system } = engineOf(run.file);
  // The character estimator counts at least 4 tokens a message, so a non-empty file is never 0.
  const [budget, budgetSource]: [number, 'flag' | 'config' | 'conversation'] =
    run.budget !== undefined
      ? [run.budget, 'flag']
      : run.config.contextBudget !== undefined
        ? [run.config.contextBudget, 'config']
        : [defaultCounter.count(messages), 'conversation'];
  const options = resolveOptions({ ...run.options, contextBudget: budget });
  // Whether an agent loop would have compacted it now (`needsCompaction`); `compact` compacts either way.
  const needed = needsCompactionCore(messages, options, { target: run.target, counter: defaultCounter });
  const { file, target, optionFlags } = run;
  return { file, budget, budgetSource, needed, options, target, optionFlags, system };
}

/** Compacts in this process with the `Compactor` and the configured summarizer. */
export async function compactInProcess(run: CompactRun) {
  const prepared = prepare(run);
  const configured = summarizerFromConfig(run.config);
  const { summarizer, failure } = watched(configured.summarizer);
  const compactor = new Compactor({ ...run.options, summarizer, contextBudget: prepared.budget });
  const { file, target } = run;
  const onProgress = (step: SummarizeProgress): void => run.progress(progressLine(step));
  const result: AnyCompactionResult = await (file.messageFormat === 'openai'
    ? compactor.compact(file.messages, { target, onProgress })
    : file.messageFormat === 'anthropic'
      ? compactor.compact(anthropicConversationOf(file), { target, format: 'anthropic', onProgress })
      : compactor.compact(file.messages, { target, format: 'ai-sdk', onProgress }));
  // Why the summarizer failed, when that ended in the hard trim: its last request's error.
  const summarizerFailure = result.fallback ? failure() : undefined;
  const via = { kind: 'in-process' } as const;
  return { ...prepared, result, summarizer: configured.describe, summarizerFailure, via };
}

/** A live worker's poller: a long poll waits up to a minute; a stopped worker's stay listed for minutes. */
const LIVE_POLLER_MS = 75_000;

/** Identities of the workers that polled `taskQueue` for workflow tasks within LIVE_POLLER_MS. */
async function liveWorkflowPollers(client: Client, taskQueue: string): Promise<string[]> {
  const response = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue, kind: proto.temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const now = Date.now();
  return (response.pollers ?? []).flatMap(({ lastAccessTime, identity }) =>
    now - (optionalTsToMs(lastAccessTime) ?? 0) <= LIVE_POLLER_MS ? [identity ?? '?'] : [],
  );
}

/** A link to the run: Temporal Cloud's UI, or a dev server's on its default port; else the CLI command that shows it. */
function runLink(config: CompactorConfig, namespace: string, workflowId: string): string {
  const path = `namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
  const address = config.temporalAddress ?? 'localhost:7233';
  if (/\.tmprl\.cloud(:\d+)?$/.test(address)) return `https://cloud.temporal.io/${path}`;
  // `temporal server start-dev` serves its UI on 8233 beside the frontend's 7233.
  const local = /^(localhost|127\.0\.0\.1):7233$/.exec(address);
  if (local !== null) return `http://${local[1]}:8233/${path} (the dev server's UI on its default port)`;
  return `temporal workflow show --address ${address} --namespace ${namespace} --workflow-id ${workflowId}`;
}

/** `compact-<file name>-<time>-<random>`. */
function workflowIdFor(path: string): string {
  const name = basename(path)
    .replace(/\.[^.]*$/, '')
    .replace(/[^A-Za-z0-9_.-]+/g, '-')
    .slice(0, 60);
  return `compact-${name}-${Date.now().toString(36)}-${randomUUID().slice(0, 6)}`;
}

/**
 * Deadline of the whole run, so one no worker picks up does not wait forever: twice what the
 * summarize activity's defaults allow (3 attempts of at most 5 minutes plus backoff).
 */
const COMPACT_WORKFLOW_TIMEOUT = '30m';

async function awaitResult(
  handle: WorkflowHandle<typeof compactConversation>,
  progress: (line: string) => void,
): Promise<CompactionResult> {
  // The first Ctrl-C cancels the run rather than leaving it for a worker to pick up later.
  const cancel = (): void => {
    progress(`Cancelling workflow ${handle.workflowId}...`);
    handle.cancel().catch((error: unknown) => progress(`could not cancel: ${withRootCause(error)}`));
  };
  process.once('SIGINT', cancel);
  try {
    return await handle.result();
  } catch (error) {
    if (!(error instanceof WorkflowFailedError)) throw error;
    const { cause } = error;
    const type = cause instanceof ApplicationFailure && cause.type ? `${cause.type}: ` : '';
    const what =
      cause instanceof CancelledFailure ? 'was cancelled' : `failed: ${type}${cause?.message ?? error.message}`;
    throw new Error(`workflow ${handle.workflowId} ${what}`, { cause: error });
  } finally {
    process.off('SIGINT', cancel);
  }
}

/** A failure's message in history, with its root cause's when that says more (as {@link withRootCause}). */
function failureText(failure: proto.temporal.api.failure.v1.IFailure): string {
  let root = failure;
  for (let depth = 0; root.cause !== undefined && root.cause !== null && depth < 16; depth += 1) root = root.cause;
  const message = failure.message ?? '';
  const rootMessage = root.message ?? '';
  return message.includes(rootMessage) ? message || 'no message' : `${message} (${rootMessage})`;
}

/** Why the run's last summarize activity failed (its final attempt); undefined when it completed. */
async function summarizerFailureInHistory(handle: WorkflowHandle): Promise<string | undefined> {
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
 * Compacts through the `compactConversation` workflow. Workers that already poll the configured
 * task queue run it; otherwise a worker starts in this process, on a task queue of its own (never
 * picking up anyone else's tasks), with the configured summarizer, until the run is done.
 */
export async function compactViaWorkflow(run: CompactRun, client: Client) {
  const prepared = prepare(run);
  const { config, file, progress } = run;
  const namespace = client.options.namespace;
  const payloads = payloadConverterFromConfig(config);
  const input: CompactConversationInput = {
    messages: file.messages,
    ...(prepared.system === undefined ? {} : { system: prepared.system }),
    options: {
      ...run.options,
      contextBudget: prepared.budget,
      ...(run.target === undefined ? {} : { target: run.target }),
      ...(file.messageFormat === 'openai' ? {} : { format: file.messageFormat }),
    },
  };
  const inputBytes = jsonPayloadBytes(input);
  if (payloads.driver === undefined && inputBytes > DEFAULT_PAYLOAD_LIMIT_BYTES)
    throw new Error(
      `${file.path}: the workflow input would be ${groupDigits(inputBytes)} bytes, over the ${groupDigits(DEFAULT_PAYLOAD_LIMIT_BYTES)} a Temporal payload holds inline; set COMPACTOR_PAYLOAD_STORE (as your workers have it), or compact it without --via-workflow`,
    );
  const existing = await liveWorkflowPollers(client, config.taskQueue);
  // Summarize activities go where those workers expect them; a worker started here polls one queue for everything.
  if (existing.length > 0 && config.summarizerTaskQueue !== config.taskQueue)
    input.options.taskQueue = config.summarizerTaskQueue;
  const workflowId = workflowIdFor(file.path);
  const runOn = async (taskQueue: string, worker: 'in-process' | 'existing', summarizer: string) => {
    const handle = await client.workflow.start<typeof compactConversation>('compactConversation', {
      taskQueue,
      workflowId,
      args: [input],
      workflowExecutionTimeout: COMPACT_WORKFLOW_TIMEOUT,
      // Small enough to stay in history with the payload store on: readable without it.
      staticSummary: fitStaticMetadata(
        `compact · ${basename(file.path)} · budget ${groupDigits(prepared.budget)} tokens`,
      ),
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
          progress(`Could not read the run's history to say why it ended in the hard trim: ${withRootCause(error)}`);
          return undefined;
        })
      : undefined;
    const link = runLink(config, namespace, workflowId);
    const via = { kind: 'workflow', workflowId, runId: handle.firstExecutionRunId, taskQueue, worker, link } as const;
    return { ...prepared, result, summarizer, summarizerFailure, via };
  };

  if (existing.length > 0) {
    progress(
      `Workers poll task queue "${config.taskQueue}" (${existing.slice(0, 3).join(', ')}${existing.length > 3 ? ', ...' : ''}): they run the workflow.`,
    );
    return runOn(config.taskQueue, 'existing', "the workers' own (the one their configuration selects)");
  }

  const taskQueue = `${config.taskQueue}-cli-${randomUUID().slice(0, 8)}`;
  const { summarizer, describe } = summarizerFromConfig(config);
  // The worker package loads only here, for the worker this process starts (CLI start-up: see connectTemporal).
  const [{ createWorker, workflowCode }, { installQuietTelemetryRuntime }] = await Promise.all([
    import('../worker/create-worker.js'),
    import('../telemetry/metrics.js'),
  ]);
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
    return await worker.runUntil(() => runOn(taskQueue, 'in-process', describe));
  } finally {
    await connection?.close();
  }
}
