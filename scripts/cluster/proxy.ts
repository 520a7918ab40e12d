// Node only: the cluster's one frontend address, a TCP balancer on 127.0.0.1 in front of the
// nodes' frontends — what a load balancer does for a production cluster. The SDK's clients and
// workers take a single address; through this one they keep working when any node dies: the dead
// node's connections close, the client reconnects, and the new connection goes to a live frontend.
// gRPC runs over long-lived HTTP/2 connections, so balancing per connection is enough.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface FrontendBackend {
  /** "127.0.0.1" */
  host: string;
  port: number;
  /** False while the node is known to be down (killed or stopped): skipped without trying. */
  up: () => boolean;
}

export interface FrontendProxy {
  address: string;
  port: number;
  /** Connections accepted so far, per backend index (for reports and tests). */
  connectionsPerBackend: number[];
  close(): Promise<void>;
}

/** Listen on 127.0.0.1:`port` and forward each connection to the next live backend, round robin. */
export async function startFrontendProxy(port: number, backends: readonly FrontendBackend[]): Promise<FrontendProxy> {
  const sockets = new Set<Socket>();
  const connectionsPerBackend = backends.map(() => 0);
  let next = 0;

  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };

  /** Try the live backends in turn, starting after the last one used; undefined when none answers. */
  const dial = async (): Promise<{ upstream: Socket; index: number } | undefined> => {
    for (let attempt = 0; attempt < backends.length; attempt++) {
      const index = (next + attempt) % backends.length;
      const backend = backends[index];
      if (!backend?.up()) continue;
      const upstream = await new Promise<Socket | undefined>((resolve) => {
        const socket = connect({ host: backend.host, port: backend.port });
        socket.once('connect', () => resolve(socket));
        socket.once('error', () => {
          socket.destroy();
          resolve(undefined);
        });
      });
      if (upstream) {
        next = index + 1;
        return { upstream, index };
      }
    }
    return undefined;
  };

  const server: Server = createServer((client) => {
    track(client);
    client.pause();
    client.on('error', () => client.destroy());
    void dial().then((found) => {
      if (!found || client.destroyed) {
        found?.upstream.destroy();
        client.destroy();
        return;
      }
      const { upstream, index } = found;
      track(upstream);
      connectionsPerBackend[index] = (connectionsPerBackend[index] ?? 0) + 1;
      upstream.on('error', () => upstream.destroy());
      // Either side closing or failing ends both: the client then reconnects through us.
      upstream.once('close', () => client.destroy());
      client.once('close', () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;

  return {
    address: `127.0.0.1:${boundPort}`,
    port: boundPort,
    connectionsPerBackend,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
