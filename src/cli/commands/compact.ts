// Node only: `temporal-compactor compact <conversation.json | ->` — one compaction of a file: its
// flags and exit codes (docs/cli.md#exit-codes); the compaction itself is in ../compact-run.ts.
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import { configFlagsFromArgs, loadConfig, type CompactorConfig } from '../../config.js';
import { groupDigits } from '../../core/agent/compaction-history.js';
import { InvalidInputError } from '../../core/errors.js';
import { COMPACTION_DEFAULTS } from '../../core/compaction/defaults.js';
import { resolveOptions, type CompactionOptions } from '../../core/compaction/options.js';
import { TemporalConnectionError } from '../../worker/temporal-connection.js';
import {
  ExitCode,
  onlyArgument,
  UsageError,
  wholeNumber,
  type CliCommand,
  type CommandContext,
  type OptionSpec,
} from '../command.js';
import { compactInProcess, compactViaWorkflow, renderCompactReport } from '../compact-run.js';
import {
  conversationOutput,
  ConversationFileError,
  readConversationFile,
  unwritableReason,
  writeFileWhole,
  type FormatChoice,
} from '../conversation-file.js';
import { MESSAGE_FORMATS } from '../../core/formats/format.js';

const FORMAT_CHOICES: readonly FormatChoice[] = ['auto', ...MESSAGE_FORMATS];

function formatChoice(value: unknown = 'auto'): FormatChoice {
  const choice = FORMAT_CHOICES.find((candidate) => candidate === value);
  if (choice === undefined)
    throw new UsageError(`--format takes ${FORMAT_CHOICES.join(', ')}, got ${JSON.stringify(value)}`);
  return choice;
}

type FlagOptions = Omit<CompactionOptions, 'contextBudget'>;

/** The placeholder of a flag's value in the help, by how the value reads. */
const PLACEHOLDER = { count: 'N', ratio: 'R', duration: 'DURATION', text: 'TEXT' } as const;

/** The compaction options a flag sets: its option key, how its value reads, and its help. */
const COMPACTION_FLAGS = {
  'keep-recent': {
    key: 'keepRecent',
    kind: 'count',
    help: `messages at the end kept verbatim (default ${COMPACTION_DEFAULTS.keepRecent}; the task, the first user message, is kept too)`,
  },
  'age-observations': {
    key: 'ageObservations',
    kind: 'switch',
    help: `elide dead tool output before summarizing (default ${COMPACTION_DEFAULTS.ageObservations ? 'on' : 'off'})`,
  },
  'keep-images': {
    key: 'keepImages',
    kind: 'count',
    help: 'keep the last N images; older ones become a one-line stub (default: keep all)',
  },
  'trigger-ratio': {
    key: 'triggerRatio',
    kind: 'ratio',
    help: `compaction is due over R × the budget (default ${COMPACTION_DEFAULTS.triggerRatio}; the report says whether it was)`,
  },
  'target-ratio': {
    key: 'targetRatio',
    kind: 'ratio',
    help: `the low-water mark: the hard trim aims at R × the budget (default ${COMPACTION_DEFAULTS.targetRatio}, at most --trigger-ratio)`,
  },
  'tool-result-cap': {
    key: 'toolResultCap',
    kind: 'count',
    help: `tool results are cut to N characters in the summarizer's input (default ${COMPACTION_DEFAULTS.toolResultCap})`,
  },
  'max-attempts': {
    key: 'maxAttempts',
    kind: 'count',
    help: 'summarizer attempts per request, in all (default 3)',
  },
  'retry-backoff': {
    key: 'retryBackoff',
    kind: 'duration',
    help: 'wait before the second attempt, doubling after (default 2s)',
  },
  'keep-user-messages': {
    key: 'keepUserMessages',
    kind: 'switch',
    help: "keep the middle's user messages verbatim, the newest first within a share of the budget (default off)",
  },
  'keep-user-messages-share': {
    key: 'keepUserMessagesShare',
    kind: 'ratio',
    help: 'with --keep-user-messages: the share of the budget they may take together (default 0.15)',
  },
  instructions: {
    key: 'summaryInstructions',
    kind: 'text',
    help: "added to the summarizer's instruction: what the summary must focus on or keep (summaryInstructions)",
  },
} as const satisfies Record<
  string,
  { key: keyof FlagOptions; kind: keyof typeof PLACEHOLDER | 'switch'; help: string }
>;

/** The compaction options the flags set (validated as the engine validates them), and the flags as written. */
export function compactionOptionsOf(values: CommandContext['values']): { options: FlagOptions; flags: string[] } {
  // The command keeps the task as agentRun does (src/core/compaction/defaults.ts); its output is no transcript.
  const options: Record<string, number | string | boolean> = { keepTask: COMPACTION_DEFAULTS.keepTask };
  const flags: string[] = [];
  for (const [flag, spec] of Object.entries(COMPACTION_FLAGS)) {
    const text = values[flag];
    if (text === undefined) continue;
    if (spec.kind === 'switch') {
      options[spec.key] = true;
      flags.push(`--${flag}`);
      continue;
    }
    if (typeof text !== 'string') throw new UsageError(`--${flag} needs a value`);
    if (spec.kind === 'count') options[spec.key] = wholeNumber(flag, text, 0, 'a whole number');
    else if (spec.kind === 'ratio') {
      const ratio = /^\s*(\d+(\.\d*)?|\.\d+)\s*$/.test(text) ? Number(text) : Number.NaN;
      if (!(ratio > 0 && ratio <= 1))
        throw new UsageError(`--${flag} takes a ratio over 0 and at most 1, e.g. 0.5, got ${JSON.stringify(text)}`);
      options[spec.key] = ratio;
    } else options[spec.key] = text;
    const shown = spec.kind === 'text' ? JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text) : text;
    flags.push(`--${flag} ${shown}`);
  }
  try {
    // The engine checks ranges, targetRatio ≤ triggerRatio and durations; the budget takes no part.
    resolveOptions({ ...options, contextBudget: 1 });
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    const key = error.field.replace(/^options\./, '');
    const flag = Object.entries(COMPACTION_FLAGS).find(([, spec]) => spec.key === key)?.[0];
    // The reason names other options by key (`must not exceed triggerRatio`): name their flags.
    const reason = Object.entries(COMPACTION_FLAGS).reduce(
      (text, [flag, spec]) => text.replaceAll(spec.key, `--${flag}`),
      error.reason,
    );
    throw new UsageError(`--${flag ?? key}: ${reason}`);
  }
  return { options, flags };
}

/** The command's client; a server that cannot be reached is named, with what to do. */
async function connectedClient(context: CommandContext, config: CompactorConfig): Promise<Client> {
  try {
    return await context.client();
  } catch (error) {
    const hint =
      '(start one with `temporal server start-dev`, point TEMPORAL_ADDRESS at yours, or compact without --via-workflow)';
    const known = error instanceof TemporalConnectionError ? error : undefined;
    const reason = known?.reason ?? (error instanceof Error ? error.message : String(error));
    const address = known?.address ?? config.temporalAddress ?? 'localhost:7233';
    throw new TemporalConnectionError(address, `${reason} ${hint}`, { cause: known ? known.cause : error });
  }
}

const options: Record<string, OptionSpec> = {
  budget: {
    type: 'string',
    value: 'N',
    help: "the context budget in tokens (also --context-budget, COMPACTOR_CONTEXT_BUDGET); default: the conversation's own size",
  },
  target: {
    type: 'string',
    value: 'N',
    help: 'aim at N tokens for this call: the hard trim aims there, and the result is exhausted over it',
  },
  ...Object.fromEntries(
    Object.entries(COMPACTION_FLAGS).map(([flag, { kind, help }]): [string, OptionSpec] => [
      flag,
      kind === 'switch' ? { type: 'boolean', help } : { type: 'string', value: PLACEHOLDER[kind], help },
    ]),
  ),
  format: {
    type: 'string',
    value: 'FORMAT',
    help: `the messages' format, kept in the output: ${FORMAT_CHOICES.join('|')} (default auto: detected, refused when unclear)`,
  },
  'via-workflow': {
    type: 'boolean',
    help: 'run it as a compactConversation workflow on the configured Temporal server',
  },
  out: {
    type: 'string',
    value: 'FILE',
    help: 'write the compacted conversation to FILE (whole or not at all) instead of stdout',
  },
};

export const compact: CliCommand = {
  name: 'compact',
  usage: '<file.json | -> [--budget N] [--out FILE] [options]',
  summary: 'compact a conversation file once: the report on stderr, the result as JSON on stdout',
  description: [
    'Compacts a conversation once, with the summarizer the configuration selects (OPENAI_API_KEY or OPENAI_BASE_URL: a model; else the offline extractive one), in this process or --via-workflow. The file is a JSON array of messages, an object { "messages": [...] } such as a request body (its other fields are kept), or the JSON lines of `session --jsonl`; - reads standard input. The messages are OpenAI chat or Anthropic Messages (--format, detected by default).',
    'The report goes to stderr; the compacted conversation, in the shape it came in, to stdout or --out. When the summarizer fails (unreachable, 401, timeouts, ...) the hard trim is written all the same, stderr says why, and the exit code is 3.',
  ],
  options,
  async run(context) {
    const path = onlyArgument(context, 'the conversation file');
    const out = context.values.out;
    if (out !== undefined && (typeof out !== 'string' || out === '')) throw new UsageError('--out takes a file name');
    const toFile = typeof out === 'string' && out !== '-';
    // Checked before compacting: a result that cannot be written would be lost (a workflow run, a model's summary).
    if (toFile && !existsSync(dirname(resolve(out))))
      throw new UsageError(`--out ${out}: the directory ${dirname(resolve(out))} does not exist`);
    const unwritable = toFile ? unwritableReason(out) : undefined;
    if (unwritable !== undefined) throw new UsageError(`--out ${out}: ${unwritable}`);
    const [budget, target] = (['budget', 'target'] as const).map((flag) => {
      const text = context.values[flag];
      return text === undefined ? undefined : wholeNumber(flag, text, 1, 'a positive whole number of tokens');
    });
    const { options: compactionOptions, flags } = compactionOptionsOf(context.values);
    const format = formatChoice(context.values.format);
    const config = loadConfig({ env: context.io.env, flags: configFlagsFromArgs(context.values) });
    const file = await readConversationFile(path, context.io.readStdin, format).catch((error: unknown) => {
      throw error instanceof ConversationFileError && error.missing ? new UsageError(error.message) : error;
    });
    const run = {
      file,
      config,
      budget,
      target,
      // COMPACTOR_SUMMARIZER_CONTEXT_WINDOW / --summarizer-context-window (docs/design.md#summarizer-window).
      options: { ...compactionOptions, summarizerContextWindow: config.summarizerContextWindow },
      optionFlags: flags,
      env: context.io.env,
      progress: (line: string) => context.io.stderr(`${line}\n`),
    };
    const report =
      context.values['via-workflow'] === true
        ? await compactViaWorkflow(run, await connectedClient(context, config))
        : await compactInProcess(run);
    // stdout is the conversation alone, ready for a pipe.
    context.io.stderr(renderCompactReport(report));
    const json = conversationOutput(file, report.result.messages);
    if (toFile) {
      writeFileWhole(out, json);
      context.io.stderr(`Wrote ${groupDigits(report.result.messages.length)} messages to ${out}.\n`);
    } else context.io.stdout(json);
    if (report.summarizerFailure === undefined) return ExitCode.ok;
    context.io.stderr(
      'temporal-compactor compact: warning: the summarizer failed (why: above), so the output is the hard trim; exit code 3\n',
    );
    return ExitCode.summarizerFailed;
  },
};
