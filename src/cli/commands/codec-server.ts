// Node only: `temporal-compactor codec-server` — a codec endpoint for the Temporal UI and CLI.
import { startCodecServer } from '../../payloads/codec-server.js';
import { configFlagsFromArgs, loadConfig } from '../../config.js';
import { describePayloadStore, payloadConverterFromConfig } from '../../payloads/index.js';
import { noArguments, untilSignal, UsageError, type CliCommand } from '../command.js';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

export const codecServer: CliCommand = {
  name: 'codec-server',
  usage: '[--codec-server-port N] [--codec-server-host HOST] [options]',
  summary: 'serve the Temporal UI and CLI a codec endpoint that shows stored payloads decoded',
  description: [
    'Serves a codec endpoint that resolves stored payloads, decompresses and decrypts them, for the Temporal UI and the temporal CLI, until SIGINT or SIGTERM. Configure it as the workers are (COMPACTOR_PAYLOAD_STORE, COMPACTOR_CODEC_KEY); its own settings are the --codec-server-* flags below and COMPACTOR_CODEC_SERVER_TOKEN.',
  ],
  async run(context) {
    noArguments(context);
    const config = loadConfig({ env: context.io.env, flags: configFlagsFromArgs(context.values) });
    const payloads = payloadConverterFromConfig(config);
    if (payloads.codec === undefined && payloads.driver === undefined) {
      throw new UsageError(
        'nothing to decode: set COMPACTOR_PAYLOAD_STORE and/or COMPACTOR_CODEC_KEY as the workers have them',
      );
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
        context.io.stderr(
          `codec-server: listening on ${server.host} without a token: anyone who reaches ${server.url} can read decrypted payloads${payloads.store.kind === 'off' ? '' : ` of ${describePayloadStore(payloads.store)}`}\n`,
        );
      }
      const signal = await untilSignal();
      context.io.stdout(`Codec server stopped (${signal}).\n`);
    } finally {
      await server.close();
    }
    return 0;
  },
};
