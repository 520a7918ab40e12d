// Node only: what every `temporal-compactor` command is made of: its options (parsed with
// util.parseArgs; the same table prints its --help), its context, and the usage mistake.
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { configParseArgsOptions, configTable } from '../config.js';
import { durationTextMs } from '../core/compaction/options.js';
import { closestName } from '../core/unknown-keys.js';

/** Tests pass their own. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
  /** The whole of standard input, for a file argument `-`. @default reads the process's fd 0 */
  readStdin?(): Promise<string>;
}

export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** The value's placeholder in the help, e.g. `N`, `FILE`, `48h`. */
  value?: string;
  help: string;
}

/** `run` returns the exit code. */
export interface CliCommand {
  name: string;
  /** E.g. `<workflowId> [--all] [--json]`. */
  usage: string;
  /** For the top-level help. */
  summary: string;
  description: readonly string[];
  /** Options besides the configuration flags and --help. */
  options?: Readonly<Record<string, OptionSpec>>;
  run(context: CommandContext): Promise<number>;
}

export type OptionValues = Record<string, string | boolean | Array<string | boolean> | undefined>;

export interface CommandContext {
  positionals: string[];
  values: OptionValues;
  io: CliIo;
  /** Connects on first call (as the worker does); closed after the command. */
  client(): Promise<Client>;
}

/** Printed with the usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Exit codes (docs/cli.md#exit-codes): 0 done, 1 failed, 2 usage or configuration mistake,
 * 3 done with something to look at: `compact` wrote a hard trim because the summarizer failed,
 * `gc` kept objects it could not read.
 */
export const ExitCode = { ok: 0, failure: 1, usage: 2, summarizerFailed: 3, keptUnreadable: 3 } as const;

const HELP_COLUMNS = 100;

const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h', help: 'print this help and exit' };

/** `; did you mean --budget?` when a known name starts `name` or is close to it. */
export function didYouMean(name: string, known: readonly string[], prefix = '--'): string {
  const meant =
    known.find((candidate) => candidate.length >= 3 && name.startsWith(candidate)) ?? closestName(name, known);
  return meant === undefined ? '' : `; did you mean ${prefix}${meant}?`;
}

/** Parses a command's arguments; a mistake is a UsageError naming the option as it was written. */
export function parseCommandArgs(
  command: CliCommand,
  args: readonly string[],
): { values: OptionValues; positionals: string[] } {
  // The configuration flags have no help line here: `temporal-compactor --help` lists them.
  const options: Record<string, Omit<OptionSpec, 'help'>> = {
    ...configParseArgsOptions(),
    ...command.options,
    help: HELP_OPTION,
  };
  // Not strict: our messages rather than the parser's.
  const { values, positionals, tokens } = parseArgs({
    args: [...args],
    options,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const spec = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (spec === undefined)
      throw new UsageError(`unknown option ${token.rawName}${didYouMean(token.name, Object.keys(options))}`);
    if (spec.type === 'string' && token.value === undefined)
      throw new UsageError(`${token.rawName} needs a value${spec.value === undefined ? '' : ` (${spec.value})`}`);
    if (spec.type === 'boolean' && token.inlineValue === true) throw new UsageError(`${token.rawName} takes no value`);
    const given = tokens.filter((other) => other.kind === 'option' && other.name === token.name).length;
    if (spec.multiple !== true && given > 1) throw new UsageError(`${token.rawName} is given more than once`);
  }
  return { values, positionals };
}

/** Lines of at most HELP_COLUMNS columns, each after `indent` (the first after `first`). */
function wrap(text: string, indent: string, first = indent): string[] {
  const lines = [first];
  for (const word of text.split(/\s+/).filter((part) => part !== '')) {
    const line = lines.pop() ?? first;
    // A line with no word yet takes the word, however long.
    if (line === (lines.length === 0 ? first : indent)) lines.push(`${line}${word}`);
    else if (line.length + 1 + word.length > HELP_COLUMNS) lines.push(line, `${indent}${word}`);
    else lines.push(`${line} ${word}`);
  }
  return lines;
}

function optionLines(options: Readonly<Record<string, OptionSpec>>): string[] {
  const heads = Object.entries(options).map(([name, spec]) => {
    const short = spec.short === undefined ? '' : `-${spec.short}, `;
    return `  ${short}--${name}${spec.value === undefined ? '' : ` ${spec.value}`}`;
  });
  const column = Math.min(Math.max(...heads.map((head) => head.length)) + 2, 30);
  return Object.values(options).flatMap((spec, index) => {
    const head = heads[index] ?? '';
    const text = `${spec.help ?? ''}${spec.multiple === true ? ' (repeatable)' : ''}`;
    if (head.length + 2 > column) return [head, ...wrap(text, ' '.repeat(column))];
    return wrap(text, ' '.repeat(column), head.padEnd(column));
  });
}

export function commandHelp(command: CliCommand, program = `temporal-compactor ${command.name}`): string {
  const flags = configTable().flatMap((row) => (row.flag === undefined ? [] : [row.flag]));
  const lines = [
    `usage: ${program} ${command.usage}`,
    '',
    ...command.description.flatMap((paragraph) => [...wrap(paragraph, ''), '']),
    'Options:',
    ...optionLines({ ...command.options, help: HELP_OPTION }),
    '',
    'Configuration flags (each also an environment variable; `temporal-compactor --help` lists them):',
    ...wrap(flags.join(', '), '  '),
  ];
  return `${lines.join('\n')}\n`;
}

export function topLevelHelp(commands: readonly CliCommand[]): string {
  const width = Math.max(...commands.map((command) => command.name.length)) + 4;
  const config = configTable().flatMap((row) => (row.flag === undefined ? [] : [[row.flag, row.env] as const]));
  const flagWidth = Math.max(...config.map(([flag]) => flag.length)) + 4;
  const lines = [
    'usage: temporal-compactor <command> [options]',
    '       temporal-compactor <command> --help',
    '',
    'Commands:',
    ...commands.flatMap((command) => wrap(command.summary, ' '.repeat(width), `  ${command.name}`.padEnd(width))),
    '',
    'Options:',
    '  -h, --help      print this help and exit',
    '  -v, --version   print the version and exit',
    '',
    'Configuration flags, and the environment variables they override (docs/cli.md#configuration):',
    ...config.map(([flag, env]) => `  ${flag.padEnd(flagWidth)}${env}`),
    '',
    'Exit codes: 0 done, 1 failed, 2 usage or configuration mistake, 3 done with something to look',
    'at: compact fell back to the hard trim because the summarizer failed (the output is written), gc',
    'kept objects it could not read. See docs/cli.md.',
  ];
  return `${lines.join('\n')}\n`;
}

export function onlyArgument(context: CommandContext, what: string): string {
  const [value, ...rest] = context.positionals;
  if (value === undefined || value === '') throw new UsageError(`${what} is required`);
  if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
  return value;
}

/** A duration flag in whole milliseconds (bare digits are milliseconds); `fallback` when it is not given. */
export function durationFlag(context: CommandContext, flag: string, fallback: number, examples: string): number {
  const text = context.values[flag];
  if (text === undefined) return fallback;
  const written = typeof text === 'string' ? durationTextMs(/^\d+$/.test(text) ? `${text}ms` : text) : undefined;
  if (written === undefined || !Number.isFinite(written))
    throw new UsageError(`--${flag} takes a duration such as ${examples}, got ${JSON.stringify(text)}`);
  return Math.round(written);
}

/** `N` for a whole number ≥ `min` (digits only: `128000`, not `128k`), else a usage error naming `flag`. */
export function wholeNumber(flag: string, text: OptionValues[string], min: number, what: string): number {
  const value = typeof text === 'string' && /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min)
    throw new UsageError(`--${flag} takes ${what}, got ${JSON.stringify(text)}`);
  return value;
}

export function noArguments(context: CommandContext): void {
  if (context.positionals.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(context.positionals[0])}`);
}

/** Resolves on SIGINT or SIGTERM (long-running commands stop cleanly on either). */
export function untilSignal(): Promise<NodeJS.Signals> {
  const signals = ['SIGINT', 'SIGTERM'] as const;
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      for (const each of signals) process.off(each, stop);
      resolve(signal);
    };
    for (const each of signals) process.on(each, stop);
  });
}
