#!/usr/bin/env node
// Node only: the `temporal-compactor` command line, one file per command under commands/. Commands
// connect like the worker: `loadConfig` (environment and flags), then `connectTemporal`.
import { readFileSync } from 'node:fs';
import { Client } from '@temporalio/client';
import { z } from 'zod';
import { ConfigError, configFlagsFromArgs, loadConfig } from '../config.js';
import { HISTORY_CHANNEL_ARGS } from '../client/session-reader.js';
import { payloadConverterFromConfig } from '../payloads/index.js';
import { connectTemporal } from '../worker/temporal-connection.js';
import { payloadStoreMissing } from '../shared/payload-store-missing.js';
import { InstallError } from '../peer-packages.js';
import { isMain } from '../worker/is-main.js';
import { checkWith } from '../core/schema.js';
import {
  commandHelp,
  didYouMean,
  ExitCode,
  parseCommandArgs,
  topLevelHelp,
  UsageError,
  type CliCommand,
  type CliIo,
  type CommandContext,
} from './command.js';
import { bundle } from './commands/bundle.js';
import { codecServer } from './commands/codec-server.js';
import { compact } from './commands/compact.js';
import { gc } from './commands/gc.js';
import { history } from './commands/history.js';
import { review } from './commands/review.js';
import { session } from './commands/session.js';
import { undo } from './commands/undo.js';
import { worker } from './commands/worker.js';

export type { CliCommand, CliIo, CommandContext } from './command.js';

/**
 * A client connected the way the worker connects, with the worker's payload codec and store, so
 * results and queries of runs whose payloads were offloaded or encrypted read back as plain values.
 */
export async function connectClient(
  env: Readonly<Record<string, string | undefined>>,
  values: Readonly<Record<string, unknown>>,
): Promise<{ client: Client; close: () => Promise<void> }> {
  const config = loadConfig({ env, flags: configFlagsFromArgs(values) });
  const { dataConverter } = payloadConverterFromConfig(config);
  // Histories without a payload store can hold 2 MB events: read them with a larger receive limit.
  const channelArgs = HISTORY_CHANNEL_ARGS;
  const { connection, namespace } = await connectTemporal(config, { kind: 'client', env, channelArgs });
  return { client: new Client({ connection, namespace, dataConverter }), close: () => connection.close() };
}

/** In the order the help lists them. */
export const commands: Readonly<Record<string, CliCommand>> = Object.fromEntries(
  [compact, worker, bundle, history, session, review, undo, codecServer, gc].map((command) => [command.name, command]),
);

/** The package.json two folders up, from src/cli and dist/cli alike. */
function packageVersion(): string {
  const manifest: unknown = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  return checkWith(z.object({ version: z.string() }), manifest, 'package.json').version;
}

const SHORT_USAGE = 'usage: temporal-compactor <command> [options]   (temporal-compactor --help lists the commands)';

/** Runs the command line `argv` (without `node` and the script) and returns the exit code (`ExitCode`). */
export async function main(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    io.stderr(`${SHORT_USAGE}\n`);
    return ExitCode.usage;
  }
  if (name === '--version' || name === '-v') {
    io.stdout(`${packageVersion()}\n`);
    return ExitCode.ok;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? rest[0] : undefined;
    const about = topic === undefined ? undefined : Object.hasOwn(commands, topic) ? commands[topic] : undefined;
    if (topic !== undefined && about === undefined) return unknownCommand(topic, io);
    io.stdout(about === undefined ? topLevelHelp(Object.values(commands)) : commandHelp(about));
    return ExitCode.ok;
  }
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (command !== undefined) return runCommand(command, rest, io);
  if (!name.startsWith('-')) return unknownCommand(name, io);
  io.stderr(`temporal-compactor: unknown option ${name}: options come after the command\n${SHORT_USAGE}\n`);
  return ExitCode.usage;
}

/** Runs one command; its messages and help name it as `program` (the demo runs as `npm run demo --`). */
export async function runCommand(
  command: CliCommand,
  rest: readonly string[],
  io: CliIo = processIo,
  program = `temporal-compactor ${command.name}`,
): Promise<number> {
  let opened: { client: Client; close: () => Promise<void> } | undefined;
  try {
    const { values, positionals } = parseCommandArgs(command, rest);
    if (values.help === true) {
      io.stdout(commandHelp(command, program));
      return ExitCode.ok;
    }
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
    if (error instanceof UsageError) {
      io.stderr(`${program}: ${error.message}\nusage: ${program} ${command.usage}\n(${program} --help for more)\n`);
      return ExitCode.usage;
    }
    // Payloads in a store this command was not given: the SDK's words are a transport error.
    const configuration =
      error instanceof ConfigError || error instanceof InstallError
        ? error
        : payloadStoreMissing(error, 'this command');
    if (configuration !== undefined) {
      io.stderr(`${program}: configuration error: ${configuration.message}\n`);
      return ExitCode.usage;
    }
    io.stderr(`${program}: ${error instanceof Error ? error.message : String(error)}\n`);
    return ExitCode.failure;
  } finally {
    await opened?.close();
  }
}

function unknownCommand(name: string, io: CliIo): number {
  io.stderr(
    `temporal-compactor: unknown command ${JSON.stringify(name)}${didYouMean(name, Object.keys(commands), '')}\n${SHORT_USAGE}\n`,
  );
  return ExitCode.usage;
}

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
};

/** A reader that went away (`| head -1`) is no failure, as for shell tools; a full disk is. */
export function quietOnClosedStdout(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(ExitCode.ok);
    process.stderr.write(`temporal-compactor: cannot write to standard output: ${error.message}\n`);
    process.exit(ExitCode.failure);
  });
}

if (isMain(import.meta.url)) {
  quietOnClosedStdout();
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(
        `temporal-compactor: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = ExitCode.failure;
    },
  );
}
