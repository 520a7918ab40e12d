// A namespace without our search attributes must never stop a run (issue: on a real cluster the
// demo wedged on BadSearchAttributes, every workflow task failing forever). Each test makes its own
// namespace on the dev server, with none of them registered, and runs agentRun there.
import { Client } from '@temporalio/client';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { agentRun, createExtractiveSummarizer, createWorker, type CompactorWorkerConfig } from '../../src/index.js';
import { createActivities } from '../../src/activities/index.js';
import type { AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import type { CompactorWorker } from '../../src/worker/create-worker.js';
import { COMPACTOR_SEARCH_ATTRIBUTES } from '../../src/shared/search-attributes.js';
import { searchAttributeStatus } from '../../src/client/namespace-search-attributes.js';
import { openingOf, trajectoryDir } from '../support/agent.js';
import { ownNamespace } from '../support/namespace.js';
import { bundleWorkflows, testConnection, uniqueId, withWorker, type TestConnection } from '../support/temporal.js';

const TAU = 'taubench_gpt4o_airline_task2_trial1';
const input: AgentRunWorkflowInput = {
  messages: openingOf(TAU),
  model: { provider: 'replay', trajectory: TAU, contextWindow: 6_300, maxOutputTokens: 1000 },
  compaction: { keepRecent: 4 },
  maxRounds: 1000,
};

/** A fresh namespace with no custom search attributes at all. */
async function bareNamespace(t: TestConnection): Promise<{ namespace: string; client: Client }> {
  const namespace = await ownNamespace(t.connection, 'ns-bare');
  const status = await searchAttributeStatus(t.connection, namespace);
  expect(status.present).toEqual([]);
  return { namespace, client: new Client({ connection: t.connection, namespace }) };
}

/** Our search attributes on a run, as its description shows them. */
async function attributesOf(client: Client, workflowId: string): Promise<string[]> {
  const description = await client.workflow.getHandle(workflowId).describe();
  return Object.keys(COMPACTOR_SEARCH_ATTRIBUTES).filter((name) => description.searchAttributes[name] !== undefined);
}

describe('a namespace without our search attributes', { timeout: 180_000 }, () => {
  let t: TestConnection;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    t = await testConnection();
    bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
  });

  /** A worker on `namespace` that runs agentRun on the replay model, and the warnings it gives. */
  async function workerOn(
    namespace: string,
    options: Pick<CompactorWorkerConfig, 'registerSearchAttributes'> = {},
  ): Promise<{ worker: CompactorWorker; warnings: string[] }> {
    const warnings: string[] = [];
    const worker = await createWorker({
      connection: t.nativeConnection,
      namespace,
      taskQueue: t.taskQueue,
      summarizer: createExtractiveSummarizer(),
      trajectoryDir: trajectoryDir(),
      workflowBundle: bundle,
      ...options,
      warn: (message) => warnings.push(message),
    });
    return { worker, warnings };
  }

  it('where they cannot be registered (as on Temporal Cloud): the run completes without them, and the worker says so once', async () => {
    const { namespace, client } = await bareNamespace(t);
    const { worker, warnings } = await workerOn(namespace, { registerSearchAttributes: false });
    expect(worker.searchAttributes).toMatchObject({ present: [], registered: [] });
    expect(worker.searchAttributes?.missing.sort()).toEqual(Object.keys(COMPACTOR_SEARCH_ATTRIBUTES).sort());
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`WARNING: namespace "${namespace}" search attributes missing`);
    expect(warnings[0]).toContain(
      `temporal operator search-attribute create --namespace ${namespace} --name CompactionCount --type Int`,
    );
    const workflowId = uniqueId('agent-bare');
    const result = await worker.workers[0]!.runUntil(
      client.workflow.execute(agentRun, { taskQueue: t.taskQueue, workflowId, args: [input] }),
    );
    expect(result.stopReason).toBe('completed');
    expect(result.compactions.totals.compactions).toBeGreaterThan(0);
    expect(await attributesOf(client, workflowId)).toEqual([]);
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    expect(history.events?.filter((event) => event.workflowTaskFailedEventAttributes)).toEqual([]);
    expect(await searchAttributeStatus(t.connection, namespace)).toMatchObject({ present: [] });
  });

  it('where the operator API allows it: the worker registers them at start and the run sets them', async () => {
    const { namespace, client } = await bareNamespace(t);
    const { worker, warnings } = await workerOn(namespace);
    expect(worker.searchAttributes?.registered.sort()).toEqual(Object.keys(COMPACTOR_SEARCH_ATTRIBUTES).sort());
    expect(warnings).toEqual([]);
    const workflowId = uniqueId('agent-registered');
    const result = await worker.workers[0]!.runUntil(
      client.workflow.execute(agentRun, { taskQueue: t.taskQueue, workflowId, args: [input] }),
    );
    const description = await client.workflow.getHandle(workflowId).describe();
    expect(description.searchAttributes.CompactionCount).toEqual([result.compactions.totals.compactions]);
    expect(description.searchAttributes.ContextExhausted).toEqual([false]);
  });

  it('a worker that cannot describe itself (no describeWorker registered): the run completes without them', async () => {
    const { namespace, client } = await bareNamespace(t);
    const { describeWorker: _left, ...activities } = createActivities({
      summarizer: createExtractiveSummarizer(),
      trajectoryDir: trajectoryDir(),
    });
    const workflowId = uniqueId('agent-undescribed');
    const result = await withWorker({ ...t, namespace }, { workflowBundle: bundle, activities }, () =>
      client.workflow.execute(agentRun, { taskQueue: t.taskQueue, workflowId, args: [input] }),
    );
    expect(result.stopReason).toBe('completed');
    expect(await attributesOf(client, workflowId)).toEqual([]);
  });
});
