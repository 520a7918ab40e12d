// Node only (activities): `describeWorker` tells a workflow what only workers know (a payload store,
// which of our search attributes the namespace has), recorded in history so a replay sees the same.
// Every worker of a task queue should share one payload-store configuration: a run asks one of them.
import { Context } from '@temporalio/activity';
import { COMPACTOR_SEARCH_ATTRIBUTES } from '../shared/search-attributes.js';
import { searchAttributeStatus } from '../client/namespace-search-attributes.js';
import type { WorkerDescription } from '../shared/worker-description.js';

const LIST_DEADLINE_MS = 5_000;
/** How long a namespace's search attributes are remembered. */
const CACHE_MS = 60_000;

/** Creates the `describeWorker` activity; register it on every worker of a queue that runs our workflows. */
export function createDescribeWorkerActivity() {
  const known = new Map<string, { at: number; names: string[] }>();
  const warned = new Set<string>();
  // Once per namespace: the activity runs at the start of every run.
  const warnOnce = (namespace: string, message: string): void => {
    if (warned.has(namespace)) return;
    warned.add(namespace);
    console.warn(`temporal-compactor: ${message}`);
  };
  return async function describeWorker(): Promise<WorkerDescription> {
    const context = Context.current();
    const namespace = context.info.namespace;
    let client;
    try {
      client = context.client;
    } catch {
      // A mock environment or a replay: no client, so nothing is known to be there.
      return { externalStorage: false, searchAttributes: [] };
    }
    const externalStorage = client.options.loadedDataConverter.externalStorage !== undefined;
    const cached = known.get(namespace);
    if (cached !== undefined && Date.now() - cached.at < CACHE_MS)
      return { externalStorage, searchAttributes: cached.names };
    let names: string[] = [];
    try {
      const status = await client.connection.withDeadline(Date.now() + LIST_DEADLINE_MS, () =>
        searchAttributeStatus(client.connection, namespace, COMPACTOR_SEARCH_ATTRIBUTES),
      );
      names = status.present;
      const absent = [...status.missing, ...status.conflicting];
      if (absent.length > 0)
        warnOnce(
          namespace,
          `namespace "${namespace}" lacks the search attributes ${absent.join(', ')}; agent runs there do not set them (the worker registers them at start where the operator API allows it)`,
        );
    } catch (error) {
      warnOnce(
        namespace,
        `could not list the search attributes of namespace "${namespace}" (${error instanceof Error ? error.message : String(error)}); agent runs do not set them`,
      );
    }
    known.set(namespace, { at: Date.now(), names });
    return { externalStorage, searchAttributes: names };
  };
}
