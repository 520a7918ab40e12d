// connectTemporal: the one way the worker, the CLI and the demo open a connection (a client
// `Connection` or a worker `NativeConnection`), against the suite's dev server.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { connectTemporal, TemporalConnectionError } from '../../src/worker/temporal-connection.js';
import { temporalTarget } from '../support/temporal.js';
import { closedPort } from '../support/closed-port.js';

describe('connectTemporal', () => {
  it.each(['client', 'worker'] as const)(
    'opens a %s connection to the configured address and namespace',
    async (kind) => {
      const { address, namespace } = temporalTarget();
      const config = loadConfig({ env: { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace } });
      const opened =
        kind === 'client'
          ? await connectTemporal(config, { kind, env: {} })
          : await connectTemporal(config, { kind, env: {} });
      try {
        expect([opened.address, opened.namespace]).toEqual([address, namespace]);
        // A round trip through the server proves the connection is open and points where it says.
        const system = await opened.connection.workflowService.getSystemInfo({});
        expect(system.serverVersion).toMatch(/\d/);
      } finally {
        await opened.connection.close();
      }
    },
  );

  it('lets an explicit address and namespace win over the configuration (the demo on its own dev server)', async () => {
    const { address, namespace } = temporalTarget();
    const config = loadConfig({
      env: { TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`, TEMPORAL_NAMESPACE: 'elsewhere' },
    });
    const opened = await connectTemporal(config, { kind: 'client', env: {}, address, namespace });
    try {
      expect([opened.address, opened.namespace]).toEqual([address, namespace]);
    } finally {
      await opened.connection.close();
    }
  });

  it.each(['client', 'worker'] as const)(
    'a %s connection to a server that is not there fails with TemporalConnectionError naming the address',
    async (kind) => {
      const address = `127.0.0.1:${await closedPort()}`;
      const config = loadConfig({ env: { TEMPORAL_ADDRESS: address } });
      const attempt =
        kind === 'client' ? connectTemporal(config, { kind, env: {} }) : connectTemporal(config, { kind, env: {} });
      const error = await attempt.then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(TemporalConnectionError);
      expect(error).toMatchObject({
        address,
        message: expect.stringContaining(`cannot connect to the Temporal server at ${address} (TEMPORAL_ADDRESS)`),
      });
    },
  );
});
