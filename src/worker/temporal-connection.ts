// Node only: the one way the worker, the CLI and the demo reach Temporal: the TEMPORAL_* settings go
// through `@temporalio/envconfig`, which adds what only it reads (TLS files, gRPC metadata, profiles).
import { Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { NativeConnection } from '@temporalio/worker';
import { temporalEnvVars, type TemporalSettings } from '../config.js';

/** Where envconfig sends a client when no address is configured. */
const SDK_DEFAULT_ADDRESS = 'localhost:7233';

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

interface ConnectTemporalOptions<Kind extends 'client' | 'worker'> {
  /** `client`: a `Connection` for a `Client`; `worker`: a `NativeConnection` for `Worker.create`. */
  kind: Kind;
  /** The environment envconfig reads besides the settings (certificates, metadata, profiles). @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
  /** Wins over the configured one (the demo's own dev server). */
  address?: string;
  namespace?: string;
  /** gRPC channel arguments of a `client` connection, e.g. `HISTORY_CHANNEL_ARGS` to read large histories. @default none */
  channelArgs?: Record<string, number | string>;
}

interface TemporalConnection<C> {
  connection: C;
  namespace: string;
  /** `host:port`, as error messages and logs show it. */
  address: string;
}

/** A connection from the configuration; a TemporalConnectionError names the address it could not reach. */
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
    // The worker package (and its bundler) loads only for a worker: the commands that only need a
    // client start about a second of CPU sooner without it.
    const connection =
      kind === 'worker'
        ? await (await import('@temporalio/worker')).NativeConnection.connect(connectionOptions)
        : await Connection.connect({ ...connectionOptions, ...(channelArgs === undefined ? {} : { channelArgs }) });
    return { connection, namespace: resolvedNamespace ?? settings.temporalNamespace, address: target };
  } catch (error) {
    throw new TemporalConnectionError(target, error instanceof Error ? error.message : String(error), { cause: error });
  }
}
