// Node (test support): a local port nothing listens on, for tests of connection failures.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';

/**
 * The lowest port the kernel hands out for `listen(0)`. Every server of a test run binds port 0,
 * so no other test's server takes a port below this one while a test counts on it being refused;
 * a port a test's own server bound and released can be handed to the next server that asks.
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 2_048) return low;
  } catch {
    // Not Linux: IANA's dynamic range, which macOS and Windows use.
  }
  return 49_152;
}

/** Whether a connection to 127.0.0.1:`port` is refused now. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

/**
 * A 127.0.0.1 port nothing listens on, and which no server of the test run will bind: it lies
 * below the kernel's range for `listen(0)`, and a connection to it was refused.
 */
export async function closedPort(): Promise<number> {
  const low = ephemeralLow();
  const from = Math.max(1_025, low - 8_000);
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = from + Math.floor(Math.random() * (low - from));
    if (await refused(port)) return port;
  }
  throw new Error(`closedPort: no refused port found between ${from} and ${low - 1}`);
}
