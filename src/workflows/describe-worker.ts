// Sandbox-safe: asks a worker of this task queue whether it stores payloads externally and which of our search
// attributes the namespace has; one that cannot answer has neither, which is always safe. A regular activity: a local
// one the worker lacks fails the workflow task again and again; a regular one fails and the run goes on.
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { CompactorActivities } from '../activities/index.js';
import { isRecord } from '../core/schema.js';
import { DESCRIBE_WORKER_ACTIVITY } from '../shared/activity-options.js';
import { UNDESCRIBED_WORKER, type WorkerDescription } from '../shared/worker-description.js';

const { describeWorker: describe } = proxyActivities<CompactorActivities>({
  ...DESCRIBE_WORKER_ACTIVITY,
  summary: 'describe the worker: payload store, search attributes',
});

function isDescription(value: unknown): value is WorkerDescription {
  if (!isRecord(value)) return false;
  const { externalStorage, searchAttributes: names } = value;
  return (
    typeof externalStorage === 'boolean' && Array.isArray(names) && names.every((name) => typeof name === 'string')
  );
}

/** What the workers of this task queue know; {@link UNDESCRIBED_WORKER} when none can say. */
export async function describeWorker(): Promise<WorkerDescription> {
  try {
    const answer: unknown = await describe();
    return isDescription(answer) ? answer : UNDESCRIBED_WORKER;
  } catch (error) {
    if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
    return UNDESCRIBED_WORKER;
  }
}
