// Sandbox-safe: asks the worker running this workflow what only it knows (the `describeWorker`
// local activity): whether it stores payloads externally, and which of our search attributes the
// namespace has. A worker that cannot answer (the activity is not registered, or fails) is taken
// to have neither, which is always safe: payloads are size-checked, and nothing is upserted.
import { ActivityFailure, isCancellation, proxyLocalActivities } from '@temporalio/workflow';
import { UNDESCRIBED_WORKER, type WorkerDescription } from '../shared/worker-description.js';

const { describeWorker: describe } = proxyLocalActivities<{ describeWorker(): Promise<WorkerDescription> }>({
  startToCloseTimeout: 10_000,
  retry: { maximumAttempts: 2, initialInterval: 500 },
  summary: 'describe the worker: payload store, search attributes',
});

function isDescription(value: unknown): value is WorkerDescription {
  if (typeof value !== 'object' || value === null) return false;
  const names: unknown = Reflect.get(value, 'searchAttributes');
  return typeof Reflect.get(value, 'externalStorage') === 'boolean' && Array.isArray(names) && names.every((name) => typeof name === 'string');
}

/** What the worker running this workflow knows; {@link UNDESCRIBED_WORKER} when it cannot say. */
export async function describeWorker(): Promise<WorkerDescription> {
  try {
    const answer: unknown = await describe();
    return isDescription(answer) ? answer : UNDESCRIBED_WORKER;
  } catch (error) {
    if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
    return UNDESCRIBED_WORKER;
  }
}
