// Node only: the client the commands use, connected the way the worker connects.
import { Client } from '@temporalio/client';
import { configFlagsFromArgs, loadConfig } from '../config.js';
import { payloadConverterFromConfig } from '../payloads/index.js';
import { HISTORY_CHANNEL_ARGS } from '../client/session-reader.js';
import { connectTemporal } from '../worker/temporal-connection.js';

/**
 * Opens a client the way the worker connects: the configuration (environment + flags) through
 * envconfig, with the worker's payload codec and store, so results and queries of runs whose
 * payloads were offloaded or encrypted read back as plain values.
 */
export async function connectClient(
  env: Readonly<Record<string, string | undefined>>,
  values: Readonly<Record<string, unknown>>,
): Promise<{ client: Client; close: () => Promise<void> }> {
  const config = loadConfig({ env, flags: configFlagsFromArgs(values) });
  const { dataConverter } = payloadConverterFromConfig(config);
  // Histories without a payload store can hold 2 MB events: read them with a larger receive limit.
  const { connection, namespace } = await connectTemporal(config, {
    kind: 'client',
    env,
    channelArgs: HISTORY_CHANNEL_ARGS,
  });
  return { client: new Client({ connection, namespace, dataConverter }), close: () => connection.close() };
}
