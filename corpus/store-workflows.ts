// Sandbox-safe dev fixture (tests and bench:payloads): the workflows of the payload-store tests — the shipped ones, plus an echo that
// carries a large value through a workflow input, an activity input and result, and a workflow
// result (every kind of payload External Storage handles).
import { proxyActivities } from '@temporalio/workflow';

export * from '../src/workflows/index.js';

/** What `storeEcho` carries: a large text and a small note. */
export interface EchoValue {
  text: string;
  note: string;
}

/** The activities `storeEcho` calls (registered by the test). */
export interface StoreTestActivities {
  echo(value: EchoValue): Promise<EchoValue>;
  incompressible(bytes: number): Promise<Uint8Array>;
}

// The gc tests hold one run's echo open while they delete another run, wait for the server to
// remove it (up to two minutes on a busy machine) and collect: the timeout outlasts all of that.
const activities = proxyActivities<StoreTestActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { maximumAttempts: 1 },
});

/** Sends `value` through the echo activity and returns it with its length. */
export async function storeEcho(value: EchoValue): Promise<EchoValue & { length: number }> {
  const echoed = await activities.echo(value);
  return { ...echoed, length: echoed.text.length };
}

/** Returns what the `incompressible` activity produced (a payload that only crosses the threshold once encrypted). */
export async function storeIncompressible(bytes: number): Promise<Uint8Array> {
  return activities.incompressible(bytes);
}
