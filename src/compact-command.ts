// Node only: `temporal-compactor compact <conversation.json>` — one compaction of a file, in this
// process or through the `compactConversation` workflow, reported as a table (stderr) and the new
// conversation as JSON (stdout or --out). The command's flags and exit codes are wired in cli.ts.
import { randomUUID } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { NativeConnection } from '@temporalio/worker';
import { Compactor } from './compactor.js';
import type { CompactorConfig } from './config.js';
import { compactionKind, compactionKindLabel, groupDigits } from './core/agent/compaction-history.js';
import { needsCompactionCore } from './core/compaction/engine.js';
import { InvalidInputError } from './core/errors.js';
import { resolveOptions } from './core/compaction/options.js';
import { DEFAULT_PAYLOAD_LIMIT_BYTES, jsonPayloadBytes } from './core/limits/payload-size.js';
import { validateMessages } from './core/schema.js';
import { parseSessionJsonl, replaySession } from './core/agent/session.js';
import { defaultCounter } from './core/counting/tokens.js';
import type { ChatMessage, CompactionResult } from './core/types.js';
import { installQuietRuntime } from './demo.js';
import { payloadConverterFromConfig } from './payloads/index.js';
import { summarizerFromConfig } from './summarizers/from-config.js';
import { connectTemporal } from './temporal-connection.js';
import { createWorker, workflowCode } from './worker.js';
import type { CompactConversationInput, compactConversation } from './workflows/compact-conversation.js';

/** How the conversation file was written; the output keeps the same shape (session lines come back as an array). */
export type ConversationFormat = 'array' | 'object' | 'session-jsonl';

/** A conversation read from a file, validated. */
export interface ConversationFile {
  path: string;
  format: ConversationFormat;
  messages: ChatMessage[];
  /** For `object`: the parsed object, so the output keeps its other fields. */
  container: Record<string, unknown> | undefined;
}

/**
 * The file cannot be used: not found (`missing`: a usage mistake), unreadable, not JSON, or not
 * a conversation. The message names the file and, for a bad message, its index and field.
 */
export class ConversationFileError extends Error {
  override readonly name = 'ConversationFileError';
  constructor(
    readonly path: string,
    readonly kind: 'missing' | 'unreadable' | 'syntax' | 'invalid',
    reason: string,
    /** For `invalid`: the field at fault, e.g. `messages[3].tool_call_id`. */
    readonly field?: string,
    /** For `invalid`: the index of the message at fault. */
    readonly index?: number,
  ) {
    super(`${path}: ${reason}`);
  }
}

const SESSION_LINE_TYPES: readonly unknown[] = ['message', 'compaction', 'elision'];

/** True when the first non-blank line is a session transcript line (`temporal-compactor session --jsonl`). */
function looksLikeSessionJsonl(text: string): boolean {
  const first = text.split('\n').find((line) => line.trim() !== '');
  if (first === undefined) return false;
  try {
    const value: unknown = JSON.parse(first);
    return typeof value === 'object' && value !== null && !Array.isArray(value) && SESSION_LINE_TYPES.includes(Reflect.get(value, 'type'));
  } catch {
    return false;
  }
}

/** `line 3, column 17` for a character offset. */
function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return `line ${line}, column ${offset - before.lastIndexOf('\n')}`;
}

/** Where `JSON.parse` stopped, in words (V8 says "at position N" for most errors, nothing for a cut-off file). */
function describeSyntaxError(text: string, error: SyntaxError): string {
  const position = /at position (\d+)/.exec(error.message)?.[1];
  const where = position !== undefined ? `at ${lineAndColumn(text, Number(position))}` : /end of JSON input/.test(error.message) ? 'at the end of the file (is it cut off?)' : '';
  return `not valid JSON${where === '' ? '' : ` ${where}`}: ${error.message}`;
}

function invalid(path: string, error: InvalidInputError): ConversationFileError {
  return new ConversationFileError(path, 'invalid', error.message, error.field, error.index);
}

/**
 * Parses a conversation: a JSON array of chat messages (the format of examples/trajectories and
 * the corpus), an object `{ "messages": [...] }` (other fields are kept for the output), or the
 * session JSON lines `temporal-compactor session --jsonl` prints (replayed to the live conversation).
 *
 * @throws ConversationFileError naming `path`, and the line and column of a JSON error or the
 * index and field of a bad message.
 */
export function parseConversation(text: string, path: string): ConversationFile {
  const body = text.replace(/^\uFEFF/, '');
  if (looksLikeSessionJsonl(body)) {
    try {
      return { path, format: 'session-jsonl', messages: validateMessages(replaySession(parseSessionJsonl(body))), container: undefined };
    } catch (error) {
      if (error instanceof InvalidInputError) throw invalid(path, error);
      throw error;
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    if (error instanceof SyntaxError) throw new ConversationFileError(path, 'syntax', describeSyntaxError(body, error));
    throw error;
  }
  const container: Record<string, unknown> | undefined = typeof value === 'object' && value !== null && !Array.isArray(value) ? { ...value } : undefined;
  if (!Array.isArray(value) && (container === undefined || !Object.hasOwn(container, 'messages'))) {
    throw new ConversationFileError(path, 'invalid', 'expected a JSON array of chat messages, an object { "messages": [...] }, or the JSON lines of `temporal-compactor session --jsonl`');
  }
  try {
    const messages = validateMessages(Array.isArray(value) ? value : container?.messages);
    if (messages.length === 0) throw new InvalidInputError('messages', 'is empty: there is nothing to compact');
    return { path, format: Array.isArray(value) ? 'array' : 'object', messages, container };
  } catch (error) {
    if (error instanceof InvalidInputError) throw invalid(path, error);
    throw error;
  }
}

/** Reads and parses a conversation file; see {@link parseConversation}. */
export function readConversationFile(path: string): ConversationFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = typeof error === 'object' && error !== null ? Reflect.get(error, 'code') : undefined;
    if (code === 'ENOENT') throw new ConversationFileError(path, 'missing', 'no such file');
    if (code === 'EISDIR') throw new ConversationFileError(path, 'missing', 'is a directory, not a conversation file');
    throw new ConversationFileError(path, 'unreadable', `cannot read it: ${error instanceof Error ? error.message : String(error)}`);
  }
  return parseConversation(text, path);
}

/** The compacted conversation in the input's shape, as the file `--out` writes (2-space JSON, final newline). */
export function conversationOutput(file: ConversationFile, messages: readonly ChatMessage[]): string {
  const value = file.format === 'object' && file.container !== undefined ? { ...file.container, messages } : messages;
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * Writes `text` to `path` through a temporary file beside it and a rename, so a failed write never
 * leaves half a conversation (not even when `--out` names the input file).
 */
export function writeFileWhole(path: string, text: string): void {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`);
  try {
    writeFileSync(temporary, text);
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw new Error(`cannot write ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** Where the budget came from, for the report. */
export type BudgetSource = 'flag' | 'config' | 'conversation';

/** What one `compact` run did: the engine's result and the context the report prints. */
export interface CompactReport {
  file: ConversationFile;
  result: CompactionResult;
  budget: number;
  budgetSource: BudgetSource;
  /** Whether an agent loop would have compacted it now (`needsCompaction`); `compact` compacts either way. */
  needed: boolean;
  summarizer: string;
  /** `in-process`, or the workflow that ran it. */
  via: { kind: 'in-process' } | { kind: 'workflow'; workflowId: string; runId: string; taskQueue: string; worker: 'in-process' | 'existing'; link: string | undefined };
}

/** The header line of the table {@link renderCompactReport} prints (tests look for it). */
export const COMPACT_TABLE_HEADER = '| tokens before → after | reclaimed | messages before → after | dropped | elided | summary or trim | fallback | exhausted |';

/** The report for people: what was compacted and how, then a one-row Markdown table like `history`'s. */
export function renderCompactReport(report: CompactReport): string {
  const { file, result, budget } = report;
  const options = resolveOptions({ contextBudget: budget });
  const budgetWhy =
    report.budgetSource === 'flag' ? '--budget' : report.budgetSource === 'config' ? 'COMPACTOR_CONTEXT_BUDGET / --context-budget' : "the conversation's own size, as if it had just filled its window; --budget N sets it";
  const what = compactionKindLabel(compactionKind(result), result.summary?.length ?? 0);
  const via =
    report.via.kind === 'in-process'
      ? 'in this process (no Temporal server)'
      : `workflow ${report.via.workflowId} (run ${report.via.runId}) on task queue "${report.via.taskQueue}", ${report.via.worker === 'in-process' ? 'run by a worker in this process' : 'run by the workers polling it'}`;
  const lines = [
    `compact ${file.path}: ${groupDigits(file.messages.length)} messages (${file.format === 'session-jsonl' ? 'session transcript' : file.format === 'object' ? '{ "messages": [...] }' : 'JSON array'}), ${groupDigits(result.tokensBefore)} tokens (character estimator)`,
    `Budget ${groupDigits(budget)} tokens (${budgetWhy}): trigger ${groupDigits(options.triggerRatio * budget)}, low-water mark ${groupDigits(options.targetRatio * budget)}.`,
    `Summarizer: ${report.summarizer}.`,
    `Ran ${via}.`,
    ...(report.via.kind === 'workflow' && report.via.link !== undefined ? [`Inspect it: ${report.via.link}`] : []),
    ...(report.needed ? [] : ['Under the trigger: an agent loop would not compact this conversation yet (needsCompaction is false); compacted anyway.']),
    '',
    COMPACT_TABLE_HEADER,
    '|--:|--:|--:|--:|--:|---|---|---|',
    `| ${groupDigits(result.tokensBefore)} → ${groupDigits(result.tokensAfter)} | ${groupDigits(result.tokensBefore - result.tokensAfter)} | ${groupDigits(file.messages.length)} → ${groupDigits(result.messages.length)} | ${result.dropped} | ${result.elisions.length} | ${what} | ${result.fallback ? 'yes' : 'no'} | ${result.exhausted ? 'yes' : 'no'} |`,
  ];
  if (result.aboveMark !== undefined) {
    const why = result.aboveMark.reason === 'recent-window' ? 'the sticky messages and the last complete turn alone leave no room for a summary under it' : 'the summary was longer than the room left for it';
    lines.push('', `Above the low-water mark (${groupDigits(result.aboveMark.mark)}): ${why}.`);
  }
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
}

function budgetOf({ budget, config, file }: CompactRun): { budget: number; budgetSource: BudgetSource } {
  if (budget !== undefined) return { budget, budgetSource: 'flag' };
  if (config.contextBudget !== undefined) return { budget: config.contextBudget, budgetSource: 'config' };
  // The character estimator counts at least 4 tokens a message, so a non-empty file is never 0.
  return { budget: defaultCounter.count(file.messages), budgetSource: 'conversation' };
}

/** Compacts in this process with the `Compactor`, the configured summarizer and the character estimator. */
export async function compactInProcess(run: CompactRun): Promise<CompactReport> {
  const { budget, budgetSource } = budgetOf(run);
  const { summarizer, describe } = summarizerFromConfig(run.config);
  const compactor = new Compactor({ summarizer, contextBudget: budget });
  const needed = compactor.needsCompaction(run.file.messages);
  const result = await compactor.compact(run.file.messages);
  return { file: run.file, result, budget, budgetSource, needed, summarizer: describe, via: { kind: 'in-process' } };
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
    const at = seconds === undefined || seconds === null ? 0 : Number(seconds) * 1000 + Math.round((poller.lastAccessTime?.nanos ?? 0) / 1e6);
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
  const name = basename(path).replace(/\.[^.]*$/, '').replace(/[^A-Za-z0-9_.-]+/g, '-').slice(0, 60);
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

async function awaitResult(handle: WorkflowHandle<typeof compactConversation>, progress: (line: string) => void): Promise<CompactionResult> {
  // Ctrl-C cancels the run rather than leaving it for a worker to pick up later.
  const stop = onInterrupt(() => {
    progress(`Cancelling workflow ${handle.workflowId}...`);
    handle.cancel().catch((error: unknown) => progress(`could not cancel: ${error instanceof Error ? error.message : String(error)}`));
  });
  try {
    return await handle.result();
  } catch (error) {
    if (error instanceof WorkflowFailedError) {
      const cause = error.cause;
      if (cause instanceof CancelledFailure) throw new Error(`workflow ${handle.workflowId} was cancelled`, { cause: error });
      const type = cause instanceof ApplicationFailure && cause.type !== undefined && cause.type !== null ? `${cause.type}: ` : '';
      throw new Error(`workflow ${handle.workflowId} failed: ${type}${cause?.message ?? error.message}`, { cause: error });
    }
    throw error;
  } finally {
    stop();
  }
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
  const input: CompactConversationInput = { messages: file.messages, options: { contextBudget: budget } };
  const inputBytes = jsonPayloadBytes(input);
  if (payloads.driver === undefined && inputBytes > DEFAULT_PAYLOAD_LIMIT_BYTES) {
    throw new Error(
      `${file.path}: the workflow input would be ${groupDigits(inputBytes)} bytes, over the ${groupDigits(DEFAULT_PAYLOAD_LIMIT_BYTES)} a Temporal payload holds inline; set COMPACTOR_PAYLOAD_STORE (as your workers have it), or compact it without --via-workflow`,
    );
  }
  const existing = await liveWorkflowPollers(client, config.taskQueue);
  // Summarize activities go where those workers expect them (their own queue when one is
  // configured); a worker started here polls one queue for everything.
  if (existing.length > 0 && config.summarizerTaskQueue !== config.taskQueue) input.options.taskQueue = config.summarizerTaskQueue;
  const workflowId = workflowIdFor(file.path);
  const needed = needsCompactionCore(file.messages, resolveOptions({ contextBudget: input.options.contextBudget }));
  const start = async (taskQueue: string, summarizer: string): Promise<{ result: CompactionResult; runId: string }> => {
    const handle = await client.workflow.start<typeof compactConversation>('compactConversation', {
      taskQueue,
      workflowId,
      args: [input],
      workflowExecutionTimeout: COMPACT_WORKFLOW_TIMEOUT,
      staticSummary: `compact · ${basename(file.path)} · budget ${groupDigits(budget)} tokens`,
      staticDetails: `Started by \`temporal-compactor compact ${file.path} --via-workflow\`; summarizer: ${summarizer}.`,
    });
    progress(`Started workflow ${workflowId} on task queue "${taskQueue}"; waiting for its result (Ctrl-C cancels it).`);
    return { result: await awaitResult(handle, progress), runId: handle.firstExecutionRunId };
  };
  const report = (outcome: { result: CompactionResult; runId: string }, taskQueue: string, worker: 'in-process' | 'existing', summarizer: string): CompactReport => ({
    file,
    result: outcome.result,
    budget,
    budgetSource,
    needed,
    summarizer,
    via: { kind: 'workflow', workflowId, runId: outcome.runId, taskQueue, worker, link: runLink(config, namespace, workflowId) },
  });

  if (existing.length > 0) {
    progress(`Workers poll task queue "${config.taskQueue}" (${existing.slice(0, 3).join(', ')}${existing.length > 3 ? ', ...' : ''}): they run the workflow.`);
    const summarizer = "the workers' own (the one their configuration selects)";
    return report(await start(config.taskQueue, summarizer), config.taskQueue, 'existing', summarizer);
  }

  const taskQueue = `${config.taskQueue}-cli-${randomUUID().slice(0, 8)}`;
  const { summarizer, describe } = summarizerFromConfig(config);
  // Run from source there is no prebuilt bundle: the worker bundles the workflows as it starts.
  const bundling = workflowCode({ workflowBundlePath: config.workflowBundle }).workflowsPath !== undefined;
  progress(`No worker polls task queue "${config.taskQueue}": starting one in this process on "${taskQueue}"${bundling ? ' (bundling the workflows first takes a few seconds)' : ''}...`);
  try {
    installQuietRuntime();
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
