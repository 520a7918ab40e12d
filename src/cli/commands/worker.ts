// Node only: `temporal-compactor worker` — a compactor worker until SIGINT/SIGTERM.
import { configFlagsFromArgs } from '../../config.js';
import { noArguments, type CliCommand } from '../command.js';

export const worker: CliCommand = {
  name: 'worker',
  usage: '[configuration flags]',
  summary: 'run a compactor worker (workflows and activities) until SIGINT/SIGTERM',
  description: [
    'Runs a worker for the compactor workflows and activities on COMPACTOR_TASK_QUEUE, configured by the environment and the configuration flags below, until SIGINT or SIGTERM; then it drains within --shutdown-grace-time.',
  ],
  async run(context) {
    noArguments(context);
    // The worker package loads only for this command, not for every start of the CLI.
    const { runWorker } = await import('../../worker/create-worker.js');
    await runWorker(context.io.env, configFlagsFromArgs(context.values));
    return 0;
  },
};
