// The test run's Temporal dev server (test/support/global-setup.ts): it answers, it has the
// project's search attributes, and a worker can run a workflow on it.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { COMPACTOR_SEARCH_ATTRIBUTES, searchAttributeTypeName } from '../../dev/dev-server.js';
import type { echo } from '../fixtures/workflows/echo.js';
import { bundleWorkflows, testConnection, uniqueId, withWorker, type TestConnection } from '../support/temporal.js';

describe('Temporal dev server', () => {
  let t: TestConnection;
  let workflowBundle: WorkflowBundleWithSourceMap;

  beforeAll(async () => {
    [t, workflowBundle] = await Promise.all([
      testConnection(),
      bundleWorkflows(new URL('../fixtures/workflows/echo.ts', import.meta.url)),
    ]);
  });

  it('answers getSystemInfo and is exposed to tests and child processes', async () => {
    const info = await t.connection.workflowService.getSystemInfo({});
    expect(info.serverVersion).toMatch(/^\d+\.\d+/);
    expect(t.address).toBe(inject('temporalAddress'));
    expect(process.env.TEMPORAL_TEST_ADDRESS).toBe(t.address);
  });

  it('has the four compactor search attributes with the right types', async () => {
    const { customAttributes } = await t.connection.operatorService.listSearchAttributes({ namespace: t.namespace });
    const types = Object.fromEntries(
      Object.keys(COMPACTOR_SEARCH_ATTRIBUTES).map((name) => {
        const type = customAttributes?.[name];
        return [name, type === undefined || type === null ? undefined : searchAttributeTypeName(type)];
      }),
    );
    expect(types).toEqual({
      CompactionCount: 'INT',
      ContextTokens: 'INT',
      CompactionFallbacks: 'INT',
      ContextExhausted: 'BOOL',
      CompactionPending: 'BOOL',
    });
  });

  it('runs a workflow on a worker with a unique task queue', async () => {
    const other = await testConnection();
    expect(other.taskQueue).not.toBe(t.taskQueue);
    const input = { hello: 'world', n: 42, list: [1, 2, 3] };
    const result = await withWorker(t, { workflowBundle }, () =>
      t.client.workflow.execute<typeof echo<typeof input>>('echo', {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('echo'),
        args: [input],
      }),
    );
    expect(result).toEqual(input);
  });
});
