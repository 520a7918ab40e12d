// Node only: `temporal-compactor demo` — a bundled real trajectory through agentRun on a local dev server.
import { configFlagsFromArgs, loadConfig } from '../../config.js';
import { installQuietRuntime, runDemo } from '../../demo.js';
import { noArguments, type CliCommand } from '../command.js';

export const demo: CliCommand = {
  name: 'demo',
  usage: '[--keep-server]',
  summary: 'replay a bundled real trajectory through agentRun on a local dev server',
  description: [
    'Starts a local Temporal dev server (unless TEMPORAL_ADDRESS names one) and a worker, replays a bundled real agent trajectory through agentRun, and prints its compactions. Needs no model and no API key.',
  ],
  options: { 'keep-server': { type: 'boolean', help: 'leave the dev server running afterwards, to look at the run in its UI' } },
  async run(context) {
    noArguments(context);
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
