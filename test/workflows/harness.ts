// Node (test support) for the workflow tests: the test workflows (bundled once per run), a worker
// kept for the test file on its own task queue (withFileWorker, test/support/temporal.ts), and
// history helpers.
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { expect } from 'vitest';
import { createActivities, type ActivityDeps } from '../../src/activities/index.js';
import { TEST_WORKFLOWS_PATH } from '../support/bundle-cache.js';
import { bundleWorkflows, testConnection, withFileWorker, type TestConnection } from '../support/temporal.js';

export { uniqueId } from '../support/temporal.js';
export const HISTORIES_DIR = fileURLToPath(new URL('../histories/', import.meta.url));

/** The test workflows (the shipped ones plus `compactInWorkflow`): the run's bundle (test/support/bundle-cache.ts). */
export function bundleTestWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflows(TEST_WORKFLOWS_PATH);
}

/**
 * Runs `fn` while a worker with these activities polls `t.taskQueue`: the test file's worker for
 * `bundle` (withFileWorker), its runs left open terminated when `fn` ends.
 */
export async function withWorker<T>(
  bundle: WorkflowBundleWithSourceMap,
  deps: ActivityDeps,
  fn: (t: TestConnection) => Promise<T>,
): Promise<T> {
  const t = await testConnection();
  return withFileWorker(t, { workflowBundle: bundle, activities: createActivities(deps) }, fn);
}

/** The event types of a workflow's history, in order, e.g. `ActivityTaskScheduled`. */
export async function eventTypes(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).map((event) => EVENT_TYPE_NAMES[event.eventType ?? 0] ?? `EventType${event.eventType}`);
}

/**
 * Cancels a run and waits for its end, which must be a cancellation: a `WorkflowFailedError` caused
 * by a `CancelledFailure`, and `WorkflowExecutionCanceled` the last event. Returns the event types.
 */
export async function cancelledEventTypes(handle: WorkflowHandle): Promise<string[]> {
  await handle.cancel();
  const error = await handle.result().then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(WorkflowFailedError);
  expect(error instanceof WorkflowFailedError ? error.cause : undefined).toBeInstanceOf(CancelledFailure);
  const events = await eventTypes(handle);
  expect(events.at(-1)).toBe('WorkflowExecutionCanceled');
  return events;
}

// The numbers of temporal.api.enums.v1.EventType this suite looks at.
const EVENT_TYPE_NAMES: Record<number, string> = {
  1: 'WorkflowExecutionStarted',
  2: 'WorkflowExecutionCompleted',
  3: 'WorkflowExecutionFailed',
  4: 'WorkflowExecutionTimedOut',
  5: 'WorkflowTaskScheduled',
  6: 'WorkflowTaskStarted',
  7: 'WorkflowTaskCompleted',
  8: 'WorkflowTaskTimedOut',
  9: 'WorkflowTaskFailed',
  10: 'ActivityTaskScheduled',
  11: 'ActivityTaskStarted',
  12: 'ActivityTaskCompleted',
  13: 'ActivityTaskFailed',
  14: 'ActivityTaskTimedOut',
  15: 'ActivityTaskCancelRequested',
  16: 'ActivityTaskCanceled',
  17: 'TimerStarted',
  18: 'TimerFired',
  19: 'TimerCanceled',
  20: 'WorkflowExecutionCancelRequested',
  21: 'WorkflowExecutionCanceled',
};

/**
 * With RECORD_HISTORIES=1, writes the workflow's history to test/histories/<name>.json for the
 * replay test. Record only synthetic or MIT-licensed conversations: a history holds its input.
 */
export async function maybeRecordHistory(handle: WorkflowHandle, name: string): Promise<void> {
  if (process.env.RECORD_HISTORIES !== '1') return;
  const history = await handle.fetchHistory();
  mkdirSync(HISTORIES_DIR, { recursive: true });
  writeFileSync(resolve(HISTORIES_DIR, `${name}.json`), `${historyToJSON(history)}\n`);
}

/** One event of a history as its JSON file holds it: only the fields these tests read. */
export interface JsonEvent {
  eventType?: string;
  workflowExecutionUpdateAcceptedEventAttributes?: { acceptedRequest?: { input?: { name?: string } } };
  activityTaskScheduledEventAttributes?: {
    activityType?: { name?: string };
    input?: { payloads?: Array<{ data?: string }> };
  };
  upsertWorkflowSearchAttributesEventAttributes?: { searchAttributes?: { indexedFields?: Record<string, unknown> } };
}
