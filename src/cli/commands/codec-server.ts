// Node only: `temporal-compactor codec-server` — a codec endpoint for the Temporal UI and CLI.
import { startCodecServer } from '../../payloads/codec-server.js';
import { configFlagsFromArgs, loadConfig } from '../../config.js';
import { describePayloadStore } from '../../payloads/store-location.js';
import { payloadConverterFromConfig } from '../../payloads/index.js';
import { noArguments, untilSignal, UsageError, type CliCommand } from '../command.js';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

export const codecServer: CliCommand = {
  name: 'codec-server',
  usage: '[--codec-server-port N] [--codec-server-host HOST] [options]',
  summary: 'serve the Temporal UI and CLI a codec endpoint that shows stored payloads decoded',
  description: [
    'Serves a codec endpoint that resolves stored payloads, decompresses and decrypts them, for the Temporal UI and the temporal CLI, until SIGINT or SIGTERM. Every request needs its token, which the endpoint URL it prints holds (a new one at every start unless COMPACTOR_CODEC_SERVER_TOKEN sets it). Configure it as the workers are (COMPACTOR_PAYLOAD_STORE, COMPACTOR_CODEC_KEY); its own settings are the --codec-server-* flags below and COMPACTOR_CODEC_SERVER_TOKEN.',
  ],
  async run(context) {
    noArguments(context);
    const config = loadConfig({ env: context.io.env, flags: configFlagsFromArgs(context.values) });
    const payloads = payloadConverterFromConfig(config);
    if (payloads.codec === undefined && payloads.driver === undefined)
      throw new UsageError(
        'nothing to decode: set COMPACTOR_PAYLOAD_STORE and/or COMPACTOR_CODEC_KEY as the workers have them',
      );
    const server = await startCodecServer({
      dataConverter: payloads.dataConverter,
      host: config.codecServerHost,
      port: config.codecServerPort,
      allowedOrigins: config.codecServerOrigins,
      token: config.codecServerToken,
      encodeToStore: config.codecServerEncodeStore,
      inlineLimit: config.codecServerInlineLimit,
      log: (line) => context.io.stderr(`codec-server: ${line}\n`),
    });
    try {
      const origins = config.codecServerOrigins.includes('*') ? 'any origin (*)' : config.codecServerOrigins.join(', ');
      // The one place the endpoint (with its token) is written down.
      context.io.stdout(
        [
          `Codec server at ${server.url} (${payloads.describe})`,
          `  the URL holds its token (${config.codecServerToken === undefined ? 'new at every start; COMPACTOR_CODEC_SERVER_TOKEN keeps one' : 'COMPACTOR_CODEC_SERVER_TOKEN'}): keep it as you would a password`,
          `  browsers allowed from: ${origins}; /encode ${config.codecServerEncodeStore ? 'stores large payloads (COMPACTOR_CODEC_SERVER_ENCODE_STORE)' : 'encodes inline, writing nothing to the store'}`,
          `  Temporal UI: its codec endpoint setting, or temporal server start-dev --ui-codec-endpoint ${server.url}`,
          `  temporal CLI: temporal workflow show --codec-endpoint ${server.url} ...`,
          '',
        ].join('\n'),
      );
      if (!LOOPBACK.test(server.host))
        context.io.stderr(
          `codec-server: listening on ${server.host}: requests carry the token and answers decrypted payloads${payloads.store.kind === 'off' ? '' : ` of ${describePayloadStore(payloads.store)}`} in the clear; put TLS in front\n`,
        );
      const signal = await untilSignal();
      context.io.stdout(`Codec server stopped (${signal}).\n`);
    } finally {
      await server.close();
    }
    return 0;
  },
};
