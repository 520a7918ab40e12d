#!/usr/bin/env node
// Node only: the `temporal-compactor` command line. Subcommands live in `commands` (name → handler);
// add one by adding an entry. Connects like the worker: `loadConfig` (environment and flags) →
// `connectTemporal` (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS, envconfig's profiles).
import { isMain } from './is-main.js';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { Client, type WorkflowHandle } from '@temporalio/client';
import { ConfigError, configFlagsFromArgs, configParseArgsOptions, loadConfig, type CompactorConfig } from './config.js';
import { InvalidInputError } from './core/errors.js';
import { durationTextMs, parseDuration } from './core/compaction/options.js';
import { compactionRecordsFromSession, describeRunUsage, groupDigits, oneLine, renderCompactionTable, type CompactionHistory } from './core/agent/compaction-history.js';
import type { SessionLine } from './core/agent/session.js';
import { HISTORY_CHANNEL_ARGS, readSession } from './session-reader.js';
import { connectTemporal, TemporalConnectionError } from './temporal-connection.js';
import { contentText } from './core/counting/tokens.js';
import { installQuietRuntime, runDemo } from './demo.js';
import { startCodecServer } from './codec-server.js';
import { describePayloadStore, payloadConverterFromConfig } from './payloads/index.js';
import { collectGarbage, DEFAULT_GC_GRACE_MS, totalOf, type GarbageReport, type SweptKind, type Tally } from './payloads/gc.js';
import { collectRetainedClaims } from './payloads/retained-claims.js';
import { runWorker } from './worker.js';
import type { ChatMessage } from './core/types.js';
import { compactInProcess, compactViaWorkflow, conversationOutput, ConversationFileError, readConversationFile, renderCompactReport, writeFileWhole } from './compact-command.js';

/** Where a command writes, and the environment it reads (tests pass their own). */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
}

/** One subcommand: its usage line, a one-line summary, and its handler (returns the exit code). */
export interface CliCommand {
  usage: string;
  summary: string;
  /** Extra options besides the connection flags, for `parseArgs`. */
  options?: ParseArgsConfig['options'];
  run(context: CommandContext): Promise<number>;
}

/** What a handler gets: its positional arguments, its parsed options, and a client on demand. */
export interface CommandContext {
  positionals: string[];
  values: Record<string, string | boolean | Array<string | boolean> | undefined>;
  io: CliIo;
  /** Connects on first call (as the worker does) and returns the client; closed after the command. */
  client(): Promise<Client>;
}

/** A usage mistake: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Reads the compaction history of an agentRun: from its result when it completed, else by query (a worker must poll its task queue). */
async function readCompactionHistory(client: Client, handle: WorkflowHandle, queryTimeoutMs: number): Promise<{ value: CompactionHistory; status: string }> {
  const description = await describeAgentRun(handle);
  const status = description.status.name;
  if (status === 'COMPLETED') {
    const result: unknown = await handle.result();
    const value: unknown = typeof result === 'object' && result !== null ? Reflect.get(result, 'compactions') : undefined;
    if (isCompactionHistory(value)) return { value, status };
  }
  try {
    // A query waits for a worker; without a deadline a missing worker would hold the CLI for the server's own timeout.
    const value: unknown = await client.withDeadline(Date.now() + queryTimeoutMs, () => handle.query('compactions'));
    if (!isCompactionHistory(value)) throw new Error('the compactions query answered something else than expected');
    return { value, status };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`the run is ${status}; reading its compactions takes a query, which needs a worker polling task queue "${description.taskQueue}" (${reason})`, { cause: error });
  }
}

async function describeAgentRun(handle: WorkflowHandle) {
  const description = await handle.describe();
  if (description.type !== 'agentRun') throw new UsageError(`${handle.workflowId} is a ${description.type} workflow, not an agentRun`);
  return description;
}

const isCompactionHistory = (value: unknown): value is CompactionHistory =>
  typeof value === 'object' && value !== null && Array.isArray(Reflect.get(value, 'recent')) && typeof Reflect.get(value, 'totals') === 'object';

/** @default 15 s for a query to be answered */
export const DEFAULT_QUERY_TIMEOUT_MS = 15_000;

function queryTimeoutOf(context: CommandContext): number {
  const text = context.values['query-timeout'];
  if (text === undefined) return DEFAULT_QUERY_TIMEOUT_MS;
  if (typeof text !== 'string') throw new UsageError('--query-timeout takes a duration');
  try {
    const ms = parseDuration(/^\d+$/.test(text) ? Number(text) : text, '--query-timeout');
    if (ms <= 0) throw new UsageError('--query-timeout must be longer than zero');
    return ms;
  } catch (error) {
    if (error instanceof InvalidInputError) throw new UsageError(error.message);
    throw error;
  }
}

function workflowIdOf(context: CommandContext, command: string): string {
  const [workflowId, ...rest] = context.positionals;
  if (workflowId === undefined || workflowId === '') throw new UsageError(`${command}: the workflow id is required`);
  if (rest.length > 0) throw new UsageError(`${command}: unexpected argument ${JSON.stringify(rest[0])}`);
  return workflowId;
}

/** One transcript line for people: `m12  assistant  text [→ fs_read {...}]`. */
export function describeSessionLine(line: SessionLine): string {
  switch (line.type) {
    case 'message': {
      const message: ChatMessage = line.message;
      const text = contentText(message.content);
      const calls = (message.tool_calls ?? []).map((call) => `→ ${call.function.name} ${oneLine(call.function.arguments, 60)}`);
      const what = message.role === 'tool' ? `(${message.tool_call_id ?? '?'}) ${groupDigits(text.length)} chars: ${oneLine(text, 80)}` : [oneLine(text, 100), ...calls].filter((part) => part !== '').join(' ');
      return `${line.id.padEnd(6)} ${message.role.padEnd(9)} ${what}`;
    }
    case 'compaction': {
      const kind = line.summary !== null ? 'summary' : line.fallback ? 'hard trim' : 'no change';
      const through = line.replacesThroughId === null ? 'nothing removed' : `${line.dropped} messages through ${line.replacesThroughId} → ${kind}`;
      const flags = [line.fallback ? 'fallback' : '', line.exhausted ? 'EXHAUSTED' : ''].filter((flag) => flag !== '').join(', ');
      return `── compaction: ${through} (${groupDigits(line.tokensBefore)} → ${groupDigits(line.tokensAfter)} tokens)${flags === '' ? '' : ` [${flags}]`}`;
    }
    case 'elision':
      return `── elision ${line.id}: ${line.stub}`;
  }
}

const history: CliCommand = {
  usage: 'temporal-compactor history <workflowId> [--all] [--json] [--query-timeout 15s]',
  summary: 'print the compaction history of an agentRun as a Markdown table (--all: every compaction, from the transcript)',
  options: { all: { type: 'boolean' }, json: { type: 'boolean' }, 'query-timeout': { type: 'string' } },
  async run(context) {
    const workflowId = workflowIdOf(context, 'history');
    const client = await context.client();
    const handle = client.workflow.getHandle(workflowId);
    const queryTimeoutMs = queryTimeoutOf(context);
    if (context.values.all === true) {
      const { status } = await describeAgentRun(handle);
      const lines: SessionLine[] = [];
      for await (const line of readSession(client, workflowId, { queryTimeoutMs })) lines.push(line);
      const records = compactionRecordsFromSession(lines);
      if (context.values.json === true) context.io.stdout(`${JSON.stringify(records, null, 2)}\n`);
      else context.io.stdout(`agentRun ${workflowId} · ${status} · ${records.length} compaction${records.length === 1 ? '' : 's'}\n\n${renderCompactionTable(records)}\n`);
      return 0;
    }
    const { value: compactions, status } = await readCompactionHistory(client, handle, queryTimeoutMs);
    if (context.values.json === true) {
      context.io.stdout(`${JSON.stringify(compactions, null, 2)}\n`);
      return 0;
    }
    const { totals, recent } = compactions;
    const earlier = totals.compactions - recent.length;
    const heading = `agentRun ${workflowId} · ${status} · ${totals.compactions} compaction${totals.compactions === 1 ? '' : 's'} · ${groupDigits(totals.tokensReclaimed)} tokens reclaimed`;
    const note = earlier > 0 ? `\n(${earlier} earlier compaction${earlier === 1 ? '' : 's'} not shown: --all reads them from the transcript)\n` : '';
    context.io.stdout(`${heading}\n\n${renderCompactionTable(recent, earlier + 1)}\n${note}\nCost so far: ${describeRunUsage(compactions.usage)}.\n`);
    return 0;
  },
};

const session: CliCommand = {
  usage: 'temporal-compactor session <workflowId> [--jsonl] [--query-timeout 15s]',
  summary: "print an agentRun's session transcript, streamed from its history (--jsonl: the JSON lines replaySession reads)",
  options: { jsonl: { type: 'boolean' }, 'query-timeout': { type: 'string' } },
  async run(context) {
    const workflowId = workflowIdOf(context, 'session');
    const client = await context.client();
    await describeAgentRun(client.workflow.getHandle(workflowId));
    const jsonl = context.values.jsonl === true;
    for await (const line of readSession(client, workflowId, { queryTimeoutMs: queryTimeoutOf(context) })) {
      context.io.stdout(`${jsonl ? JSON.stringify(line) : describeSessionLine(line)}\n`);
    }
    return 0;
  },
};

const demo: CliCommand = {
  usage: 'temporal-compactor demo [--keep-server]',
  summary: 'replay a bundled real trajectory through agentRun on a local dev server and print its compactions',
  options: { 'keep-server': { type: 'boolean' } },
  async run(context) {
    installQuietRuntime(loadConfig({ env: context.io.env, flags: configFlagsFromArgs(context.values) }).prometheusAddress);
    const outcome = await runDemo({
      keepServer: context.values['keep-server'] === true,
      env: context.io.env,
      flags: configFlagsFromArgs(context.values),
      stdout: context.io.stdout,
      stderr: context.io.stderr,
    });
    return outcome.status === 'completed' ? 0 : 1;
  },
};

const worker: CliCommand = {
  usage: 'temporal-compactor worker',
  summary: 'run a compactor worker (workflows and activities) until SIGINT/SIGTERM',
  async run(context) {
    await runWorker(context.io.env, configFlagsFromArgs(context.values));
    return 0;
  },
};

/** Resolves on SIGINT or SIGTERM (long-running commands stop cleanly on either). */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

const codecServer: CliCommand = {
  usage: 'temporal-compactor codec-server [--codec-server-port 8081] [--codec-server-host 127.0.0.1] [--codec-server-origins URL,...]',
  summary: 'serve the Temporal UI and CLI a codec endpoint that resolves stored payloads, decompresses and decrypts them (until SIGINT/SIGTERM)',
  async run(context) {
    const config = loadConfig({ env: context.io.env, flags: configFlagsFromArgs(context.values) });
    const payloads = payloadConverterFromConfig(config);
    if (payloads.codec === undefined && payloads.driver === undefined) {
      throw new UsageError('nothing to decode: set COMPACTOR_PAYLOAD_STORE and/or COMPACTOR_CODEC_KEY as the workers have them');
    }
    const server = await startCodecServer({
      dataConverter: payloads.dataConverter,
      host: config.codecServerHost,
      port: config.codecServerPort,
      allowedOrigins: config.codecServerOrigins,
      token: config.codecServerToken,
      inlineLimit: config.codecServerInlineLimit,
      log: (line) => context.io.stderr(`codec-server: ${line}\n`),
    });
    try {
      const origins = config.codecServerOrigins.includes('*') ? 'any origin (*)' : config.codecServerOrigins.join(', ');
      context.io.stdout(
        [
          `Codec server at ${server.url} (${payloads.describe})`,
          `  browsers allowed from: ${origins}; ${config.codecServerToken === undefined ? 'no token required' : 'bearer token required (COMPACTOR_CODEC_SERVER_TOKEN)'}`,
          `  Temporal UI: its codec endpoint setting, or temporal server start-dev --ui-codec-endpoint ${server.url}`,
          `  temporal CLI: temporal workflow show --codec-endpoint ${server.url} ...${config.codecServerToken === undefined ? '' : ' --codec-auth "Bearer $COMPACTOR_CODEC_SERVER_TOKEN"'}`,
          '',
        ].join('\n'),
      );
      if (!LOOPBACK.test(server.host) && config.codecServerToken === undefined) {
        context.io.stderr(`codec-server: listening on ${server.host} without a token: anyone who reaches ${server.url} can read decrypted payloads${payloads.store.kind === 'off' ? '' : ` of ${describePayloadStore(payloads.store)}`}\n`);
      }
      const signal = await untilSignal();
      context.io.stdout(`Codec server stopped (${signal}).\n`);
    } finally {
      await server.close();
    }
    return 0;
  },
};

/** `--budget N`: a whole number of tokens, at least 1 (digits only: `128000`, not `128k`). */
function budgetOf(context: CommandContext): number | undefined {
  const text = context.values.budget;
  if (text === undefined) return undefined;
  const budget = typeof text === 'string' && /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(budget) || budget < 1) throw new UsageError(`--budget takes a positive whole number of tokens, got ${JSON.stringify(text)}`);
  return budget;
}

/** The command's client; a server that cannot be reached is named, with what to do about it. */
async function connectedClient(context: CommandContext, config: CompactorConfig): Promise<Client> {
  try {
    return await context.client();
  } catch (error) {
    const hint = '(start one with `temporal server start-dev`, point TEMPORAL_ADDRESS at yours, or compact without --via-workflow)';
    if (error instanceof TemporalConnectionError) throw new TemporalConnectionError(error.address, `${error.reason} ${hint}`, { cause: error.cause });
    const reason = error instanceof Error ? error.message : String(error);
    throw new TemporalConnectionError(config.temporalAddress ?? 'localhost:7233', `${reason} ${hint}`, { cause: error });
  }
}

const compact: CliCommand = {
  usage: 'temporal-compactor compact <conversation.json> [--budget N] [--via-workflow] [--out FILE]',
  summary: 'compact a conversation file once (in this process, or --via-workflow through compactConversation on Temporal): the table on stderr, the new conversation as JSON on stdout or in --out',
  options: { budget: { type: 'string' }, 'via-workflow': { type: 'boolean' }, out: { type: 'string' } },
  async run(context) {
    const [path, ...rest] = context.positionals;
    if (path === undefined || path === '') throw new UsageError('the conversation file is required');
    if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
    const out = context.values.out;
    if (out !== undefined && (typeof out !== 'string' || out === '')) throw new UsageError('--out takes a file name');
    // Checked before compacting: a result that cannot be written would be lost (a workflow run, a model's summary).
    if (typeof out === 'string' && !existsSync(dirname(resolve(out)))) throw new UsageError(`--out ${out}: the directory ${dirname(resolve(out))} does not exist`);
    const budget = budgetOf(context);
    const config = loadConfig({ env: context.io.env, flags: configFlagsFromArgs(context.values) });
    let file;
    try {
      file = readConversationFile(path);
    } catch (error) {
      if (error instanceof ConversationFileError && error.kind === 'missing') throw new UsageError(error.message);
      throw error;
    }
    const run = { file, config, budget, env: context.io.env, progress: (line: string) => context.io.stderr(`${line}\n`) };
    const report = context.values['via-workflow'] === true ? await compactViaWorkflow(run, await connectedClient(context, config)) : await compactInProcess(run);
    // The report goes to stderr so that stdout is the conversation alone, ready for a pipe.
    context.io.stderr(renderCompactReport(report));
    const json = conversationOutput(file, report.result.messages);
    if (typeof out === 'string') {
      writeFileWhole(out, json);
      context.io.stderr(`Wrote ${groupDigits(report.result.messages.length)} messages to ${out}.\n`);
    } else context.io.stdout(json);
    return 0;
  },
};

function graceOf(context: CommandContext): number {
  const text = context.values.grace;
  if (text === undefined) return DEFAULT_GC_GRACE_MS;
  const written = typeof text === 'string' ? durationTextMs(text) : undefined;
  if (written === undefined) throw new UsageError(`--grace takes a duration such as "48h", "3d" or "90m", got ${JSON.stringify(text)}`);
  const ms = Math.round(written);
  if (ms < DEFAULT_GC_GRACE_MS) {
    throw new UsageError(`--grace must be at least 48h: a store refreshes an object it reuses only once it is 24 h old, so anything younger may still be about to be claimed`);
  }
  return ms;
}

/** `1,234 (5.6 MB)`. */
function describeTally({ objects, bytes }: Tally): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let size = bytes;
  let unit = 0;
  while (size >= 1000 && unit < units.length - 1) {
    size /= 1000;
    unit += 1;
  }
  return `${groupDigits(objects)} (${unit === 0 ? size : size.toFixed(1)} ${units[unit]})`;
}

function describeGarbageReport(report: GarbageReport): string {
  const kinds: Array<[SweptKind, string]> = [
    ['manifest', 'manifests'],
    ['node', 'nodes'],
    ['chunk', 'chunks'],
    ['temporary', 'temporary files'],
  ];
  const hours = report.graceMs / 3_600_000;
  const grace = Number.isInteger(hours) ? `${hours}h` : `${Math.round(report.graceMs / 60_000)}m`;
  const removed = report.dryRun ? 'would be removed' : 'removed';
  const rows = kinds.map(([kind, label]) => `| ${label} | ${describeTally(report.reachable[kind])} | ${describeTally(report.young[kind])} | ${describeTally(report.deleted[kind])} | ${describeTally(report.renewed[kind])} |`);
  const total = `| total | ${describeTally(totalOf(report.reachable))} | ${describeTally(totalOf(report.young))} | ${describeTally(totalOf(report.deleted))} | ${describeTally(totalOf(report.renewed))} |`;
  return [
    `| objects | reachable (kept) | younger than ${grace} (kept) | ${removed} | renewed meanwhile (kept) |`,
    '|---|--:|--:|--:|--:|',
    ...rows,
    total,
  ].join('\n');
}

const gc: CliCommand = {
  usage: 'temporal-compactor gc [--dry-run] [--grace 48h] [--namespace NS]...',
  summary: 'remove payload store objects no retained workflow history claims and older than the grace period (--dry-run: only report)',
  options: { 'dry-run': { type: 'boolean' }, grace: { type: 'string' }, namespace: { type: 'string', multiple: true } },
  async run(context) {
    if (context.positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(context.positionals[0])}`);
    const graceMs = graceOf(context);
    const dryRun = context.values['dry-run'] === true;
    const config = loadConfig({ env: context.io.env, flags: configFlagsFromArgs(context.values) });
    const { driver, store } = payloadConverterFromConfig(config);
    if (driver === undefined) throw new UsageError('gc needs the payload store: set COMPACTOR_PAYLOAD_STORE (and the codec keys) as the workers have them');
    const listed = context.values.namespace;
    const namespaces = Array.isArray(listed) ? listed.filter((entry): entry is string => typeof entry === 'string') : [config.temporalNamespace];
    const client = await context.client();
    const clients = namespaces.map((namespace) => (namespace === client.options.namespace ? client : new Client({ connection: client.connection, namespace, dataConverter: client.options.dataConverter })));
    const progress = (line: string): void => context.io.stderr(`${line}\n`);
    context.io.stderr(`gc of ${describePayloadStore(store)}${dryRun ? ' (dry run)' : ''}: marking from the histories of namespace${namespaces.length === 1 ? '' : 's'} ${namespaces.join(', ')}\n`);
    const retained = await collectRetainedClaims({ clients, onProgress: progress });
    const report = await collectGarbage({ driver, claimedManifests: retained.manifests, graceMs, dryRun, onProgress: progress });
    const cutoff = new Date(report.cutoffMs).toISOString().replace(/\.\d+Z$/, 'Z');
    const lines = [
      `gc of ${report.store}${dryRun ? ' (dry run: nothing removed)' : ''}, objects last written before ${cutoff} were candidates`,
      `Marked from ${groupDigits(retained.runs)} run${retained.runs === 1 ? '' : 's'} in ${namespaces.join(', ')}${retained.gone > 0 ? ` (${groupDigits(retained.gone)} more deleted while reading)` : ''}: ${groupDigits(retained.claims)} claims to ${groupDigits(report.claimedManifests)} manifests, and ${groupDigits(report.youngManifests)} manifests and ${groupDigits(report.youngNodes)} nodes younger than the grace period.`,
      '',
      describeGarbageReport(report),
      '',
      `${dryRun ? 'Would remove' : 'Removed'} ${describeTally(totalOf(report.deleted))}.`,
    ];
    if (report.missingCount > 0) {
      lines.push(`Warning: ${groupDigits(report.missingCount)} objects that retained claims need are missing from the store (${report.missing.slice(0, 3).join(', ')}${report.missingCount > 3 ? ', ...' : ''}): those payloads cannot be read any more.`);
    }
    context.io.stdout(`${lines.join('\n')}\n`);
    return 0;
  },
};

/** The subcommands by name: add one by adding an entry. */
export const commands: Record<string, CliCommand> = { demo, compact, worker, history, session, 'codec-server': codecServer, gc };

function usageText(): string {
  const width = Math.max(...Object.values(commands).map((command) => command.usage.length));
  return [
    'usage: temporal-compactor <command> [options]',
    '',
    ...Object.values(commands).map((command) => `  ${command.usage.padEnd(width)}  ${command.summary}`),
    '',
    'Connection: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS* (or --temporal-address, --temporal-namespace).',
  ].join('\n');
}

/**
 * Opens a client the way the worker connects: the configuration (environment + flags) through
 * envconfig, with the worker's payload codec and store, so results and queries of runs whose
 * payloads were offloaded or encrypted read back as plain values.
 */
export async function connectClient(env: Readonly<Record<string, string | undefined>>, values: Readonly<Record<string, unknown>>): Promise<{ client: Client; close: () => Promise<void> }> {
  const config = loadConfig({ env, flags: configFlagsFromArgs(values) });
  const { dataConverter } = payloadConverterFromConfig(config);
  // Histories without a payload store can hold 2 MB events: read them with a larger receive limit.
  const { connection, namespace } = await connectTemporal(config, { kind: 'client', env, channelArgs: HISTORY_CHANNEL_ARGS });
  return { client: new Client({ connection, namespace, dataConverter }), close: () => connection.close() };
}

/**
 * Runs the command line `argv` (without `node` and the script) and returns the exit code:
 * 0 success, 1 failure, 2 usage error.
 */
export async function main(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? io.stderr : io.stdout)(`${usageText()}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (command === undefined) {
    io.stderr(`temporal-compactor: unknown command ${JSON.stringify(name)}\n\n${usageText()}\n`);
    return 2;
  }
  let opened: { client: Client; close: () => Promise<void> } | undefined;
  try {
    const { values, positionals } = parseArgs({ args: [...rest], allowPositionals: true, strict: true, options: { ...configParseArgsOptions(), ...command.options } });
    const context: CommandContext = {
      positionals,
      values,
      io,
      async client() {
        opened ??= await connectClient(io.env, values);
        return opened.client;
      },
    };
    return await command.run(context);
  } catch (error) {
    if (error instanceof UsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
      io.stderr(`temporal-compactor ${name}: ${error.message}\nusage: ${command.usage}\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      io.stderr(`temporal-compactor ${name}: configuration error: ${error.message}\n`);
      return 2;
    }
    io.stderr(`temporal-compactor ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await opened?.close();
  }
}

const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
};

if (isMain(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`temporal-compactor: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
