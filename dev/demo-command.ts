// Node only, dev only (not published): `npm run demo` — a bundled real trajectory through agentRun on
// a local dev server. It runs as a command of our CLI's framework (help, flags, exit codes) but is
// not one of the published `temporal-compactor` commands: it needs the Temporal CLI that
// dev/temporal-cli.ts installs.
import { configFlagsFromArgs, loadConfig } from '../src/config.js';
import { installQuietRuntime, runDemo } from './demo.js';
import { noArguments, type CliCommand } from '../src/cli/command.js';
import { processIo, quietOnClosedStdout, runCommand } from '../src/cli/main.js';
import { isMain } from '../src/worker/is-main.js';

export const demo: CliCommand = {
  name: 'demo',
  usage: '[--keep-server]',
  summary: 'replay a bundled real trajectory through agentRun on a local dev server',
  description: [
    'Starts a local Temporal dev server (unless TEMPORAL_ADDRESS names one) and a worker, replays a bundled real agent trajectory through agentRun, and prints its compactions. Needs no model and no API key.',
  ],
  options: {
    'keep-server': {
      type: 'boolean',
      help: 'leave the dev server and the worker running afterwards, to look at the run in its UI',
    },
  },
  async run(context) {
    noArguments(context);
    installQuietRuntime(
      loadConfig({ env: context.io.env, flags: configFlagsFromArgs(context.values) }).prometheusAddress,
    );
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

if (isMain(import.meta.url)) {
  quietOnClosedStdout();
  runCommand(demo, process.argv.slice(2), processIo, 'npm run demo --').then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(
        `npm run demo: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 1;
    },
  );
}
