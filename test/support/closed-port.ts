// Node (test support): a local port nothing listens on, for tests of connection failures.
import { createServer } from 'node:net';

/** A 127.0.0.1 port nothing listens on: bound once, read, then released. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
