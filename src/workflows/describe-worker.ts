// Sandbox-safe: asks a worker of this task queue whether it stores payloads externally and which of our search
// attributes the namespace has; one that cannot answer has neither, which is always safe. A regular activity: a local
// one the worker lacks fails the workflow task again and again; a regular one fails and the run goes on.
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import { z } from 'zod';
import type { CompactorActivities } from '../activities/index.js';
import { DESCRIBE_WORKER_ACTIVITY } from '../shared/activity-options.js';
import { UNDESCRIBED_WORKER, type WorkerDescription } from '../shared/worker-description.js';

const { describeWorker: describe } = proxyActivities<CompactorActivities>({
  ...DESCRIBE_WORKER_ACTIVITY,
  summary: 'describe the worker: payload store, search attributes',
});

const descriptionSchema = z.looseObject({ externalStorage: z.boolean(), searchAttributes: z.array(z.string()) });

/** What the workers of this task queue know; {@link UNDESCRIBED_WORKER} when none can say. */
export async function describeWorker(): Promise<WorkerDescription> {
  try {
    const answer = descriptionSchema.safeParse(await describe());
    return answer.success ? answer.data : UNDESCRIBED_WORKER;
  } catch (error) {
    if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
    return UNDESCRIBED_WORKER;
  }
}
