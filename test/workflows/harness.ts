// Node (test support) for the workflow tests: the test workflows (bundled once per run), a worker
// per test on its own task queue (test/support/temporal.ts), and history helpers.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { expect } from 'vitest';
import { createActivities, type ActivityDeps } from '../../src/index.js';
import type { CompactionResult } from '../../src/core/types.js';
import { uniqueId } from '../support/temporal.js';
import type { compactInWorkflow, CompactInWorkflowInput } from './test-workflows.js';
import { TEST_WORKFLOWS_PATH } from '../support/bundle-cache.js';
import {
  bundleWorkflows,
  testConnection,
  withWorker as withTestWorker,
  type TestConnection,
} from '../support/temporal.js';

export { uniqueId } from '../support/temporal.js';
export const HISTORIES_DIR = fileURLToPath(new URL('../histories/', import.meta.url));

/** The test workflows (the shipped ones plus `compactInWorkflow`): the run's bundle (test/support/bundle-cache.ts). */
export function bundleTestWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflows(TEST_WORKFLOWS_PATH);
}

/** Runs `fn` while a worker with these activities polls a fresh task queue (`t.taskQueue`). */
export async function withWorker<T>(
  bundle: WorkflowBundleWithSourceMap,
  deps: ActivityDeps,
  fn: (t: TestConnection) => Promise<T>,
): Promise<T> {
  const t = await testConnection();
  return withTestWorker(t, { workflowBundle: bundle, activities: createActivities(deps) }, () => fn(t));
}

/**
 * Runs `compactInWorkflow` once on a worker whose summarizer must not be called (a scenario that
 * only elides or truncates), then hands `inspect` the run's handle and its compaction result.
 */
export async function compactInWorkflowOnce(
  bundle: WorkflowBundleWithSourceMap,
  input: CompactInWorkflowInput,
  idPrefix: string,
  inspect: (handle: WorkflowHandle, result: CompactionResult) => Promise<void>,
): Promise<void> {
  await withWorker(
    bundle,
    { summarizer: { summarize: () => Promise.reject(new Error('nothing to summarize in this scenario')) } },
    async ({ client, taskQueue }) => {
      const handle = await client.workflow.start<typeof compactInWorkflow>('compactInWorkflow', {
        taskQueue,
        workflowId: uniqueId(idPrefix),
        args: [input],
      });
      await inspect(handle, (await handle.result()).result);
    },
  );
}

/** The compaction result a recorded `compactInWorkflow` completed with. */
export function compactInWorkflowResult(history: JsonHistory): CompactionResult {
  const completed = history.events.find((event) => event.workflowExecutionCompletedEventAttributes);
  const data = completed?.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0]?.data;
  const output = data === undefined ? undefined : JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
  return (output as { result: CompactionResult }).result;
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
  markerRecordedEventAttributes?: {
    markerName?: string;
    details?: Record<string, { payloads?: Array<{ data?: string }> }>;
  };
  workflowExecutionCompletedEventAttributes?: { result?: { payloads?: Array<{ data?: string }> } };
}

/** A history as `maybeRecordHistory` writes it (or `handle.fetchHistory()` once through JSON). */
export interface JsonHistory {
  events: JsonEvent[];
}

/** A history recorded under test/histories/. */
export function loadHistory(file: string): JsonHistory {
  return JSON.parse(readFileSync(join(HISTORIES_DIR, file), 'utf8')) as JsonHistory;
}

/** A run's history so far, in the JSON shape of a recorded one. */
export async function jsonHistoryOf(handle: WorkflowHandle): Promise<JsonHistory> {
  return JSON.parse(historyToJSON(await handle.fetchHistory())) as JsonHistory;
}

/** The ids of the patches a history recorded (`patched()` writes a `core_patch` marker whose payload is `{ id, deprecated }`). */
export function patchIdsOf(history: JsonHistory): string[] {
  return history.events.flatMap((event) => {
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_patch') return [];
    const data = marker.details?.['patch-data']?.payloads?.[0]?.data;
    const payload: unknown = data === undefined ? undefined : JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
    const id: unknown = typeof payload === 'object' && payload !== null ? Reflect.get(payload, 'id') : undefined;
    return typeof id === 'string' ? [id] : [];
  });
}

/** Replays each history against `bundle`: its name → the replay error's message, undefined when it replayed. */
export async function replayErrors(
  bundle: WorkflowBundleWithSourceMap,
  histories: Record<string, JsonHistory>,
): Promise<Record<string, string | undefined>> {
  const errors: Record<string, string | undefined> = {};
  const named = Object.entries(histories).map(([workflowId, history]) => ({ workflowId, history }));
  for await (const outcome of Worker.runReplayHistories({ workflowBundle: bundle }, named))
    errors[outcome.workflowId] = outcome.error?.message;
  return errors;
}
