// A namespace of a test's own on the dev server: gc reads every history (and schedule) of the
// namespaces it is given, so its tests must not see other tests' runs.
import { msToTs } from '@temporalio/common/lib/time.js';
import type { Connection } from '@temporalio/client';
import { uniqueId } from './temporal.js';

/** Registers a fresh namespace (one day of retention) and waits until the server serves it. */
export async function ownNamespace(connection: Connection, prefix = 'ns-test'): Promise<string> {
  const namespace = uniqueId(prefix);
  await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  for (let attempt = 0; ; attempt += 1) {
    try {
      await connection.workflowService.describeNamespace({ namespace });
      return namespace;
    } catch (error) {
      if (attempt > 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
