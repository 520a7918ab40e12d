// Node only: the one way the worker, the CLI and the demo reach Temporal. The configuration
// (src/config.ts: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS, flags
// included) goes through `@temporalio/envconfig`, which adds what only it reads: the
// `TEMPORAL_TLS_*` certificates, gRPC metadata and the profiles of its config file.
import { Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection } from '@temporalio/worker';
import { temporalEnvVars, type TemporalSettings } from '../config.js';

/** Where envconfig sends a client when no address is configured. */
const SDK_DEFAULT_ADDRESS = 'localhost:7233';

/** The Temporal server could not be reached. */
export class TemporalConnectionError extends Error {
  override readonly name = 'TemporalConnectionError';
  constructor(
    readonly address: string,
    /** What the SDK said, without the address. */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot connect to the Temporal server at ${address} (TEMPORAL_ADDRESS): ${reason}`, options);
  }
}

/** Options of {@link connectTemporal}. */
export interface ConnectTemporalOptions<Kind extends 'client' | 'worker'> {
  /**
   * `client`: a `Connection` for a `Client` (the CLI, the demo's client); `worker`: a
   * `NativeConnection` for `Worker.create` (the worker, the demo's worker).
   */
  kind: Kind;
  /** The environment envconfig reads besides the settings (certificates, metadata, profiles). @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
  /** An address that wins over the configured one (the demo's own dev server). @default the configuration's */
  address?: string;
  /** A namespace that wins over the configured one (the demo's own dev server). @default the configuration's */
  namespace?: string;
  /** gRPC channel arguments of a `client` connection, e.g. `HISTORY_CHANNEL_ARGS` to read large histories. @default none */
  channelArgs?: Record<string, number | string>;
}

/** An open connection, with the namespace and address it was opened for. */
export interface TemporalConnection<C> {
  connection: C;
  namespace: string;
  /** `host:port`, as error messages and logs show it. */
  address: string;
}

/**
 * Opens a connection to Temporal from the configuration: a `Connection` for clients or a
 * `NativeConnection` for workers, both through envconfig with the same settings, so the worker,
 * the CLI and the demo always reach the same server the same way.
 *
 * @throws TemporalConnectionError naming the address when the server cannot be reached.
 *
 * @example
 * const { connection, namespace } = await connectTemporal(loadConfig(), { kind: 'client' });
 * const client = new Client({ connection, namespace });
 */
export async function connectTemporal(
  config: TemporalSettings,
  options: ConnectTemporalOptions<'client'>,
): Promise<TemporalConnection<Connection>>;
export async function connectTemporal(
  config: TemporalSettings,
  options: ConnectTemporalOptions<'worker'>,
): Promise<TemporalConnection<NativeConnection>>;
export async function connectTemporal(
  config: TemporalSettings,
  { kind, env = process.env, address, namespace, channelArgs }: ConnectTemporalOptions<'client' | 'worker'>,
): Promise<TemporalConnection<Connection | NativeConnection>> {
  const settings: TemporalSettings = {
    ...config,
    ...(address === undefined ? {} : { temporalAddress: address }),
    ...(namespace === undefined ? {} : { temporalNamespace: namespace }),
  };
  const { connectionOptions, namespace: resolvedNamespace } = loadClientConnectConfig({
    overrideEnvVars: temporalEnvVars(settings, env),
  });
  const target = connectionOptions.address ?? SDK_DEFAULT_ADDRESS;
  try {
    const connection =
      kind === 'worker'
        ? await NativeConnection.connect(connectionOptions)
        : await Connection.connect({ ...connectionOptions, ...(channelArgs === undefined ? {} : { channelArgs }) });
    return { connection, namespace: resolvedNamespace ?? settings.temporalNamespace, address: target };
  } catch (error) {
    throw new TemporalConnectionError(target, error instanceof Error ? error.message : String(error), { cause: error });
  }
}
