// Unknown keys in workflow input (docs/design.md#unknown-keys): a run with one ends at once in the
// non-retryable Compaction.InvalidInput naming the key and the closest known name — never a
// workflow task retried for ever.
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { FailureType } from '../../src/core/errors.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { toolRounds } from '../support/messages.js';
import { bundleTestWorkflows, eventTypes, uniqueId, withWorker } from './harness.js';

/** The failure a workflow ended with: its cause must be an ApplicationFailure. */
async function failureOf(handle: WorkflowHandle): Promise<ApplicationFailure> {
  const error: unknown = await handle.result().then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof WorkflowFailedError) || !(error.cause instanceof ApplicationFailure))
    throw new Error(`expected a failed workflow, got ${String(error)}`);
  return error.cause;
}

const messages = toolRounds(3);

describe('unknown keys in workflow input', () => {
  let bundle: WorkflowBundleWithSourceMap;

  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  describe('a run', () => {
    const cases: Array<[string, string, Record<string, unknown>, string]> = [
      [
        'compactConversation, an option',
        'compactConversation',
        { messages, options: { contextBudget: 1000, keepRecnt: 3 } },
        'options.keepRecnt: unknown option; did you mean keepRecent?',
      ],
      [
        'compactConversation, a field of its input',
        'compactConversation',
        { messages, option: { contextBudget: 1000 } },
        'input.option: unknown field; did you mean options?',
      ],
      [
        'compact in a workflow, an activity setting',
        'compactInWorkflow',
        { messages, options: { contextBudget: 1000, taskQeue: 'summaries' } },
        'options.taskQeue: unknown option; did you mean taskQueue?',
      ],
      [
        'agentRun, its compaction settings',
        'agentRun',
        {
          messages,
          model: { provider: 'replay', trajectory: 'none', contextWindow: 16_000, maxOutputTokens: 500 },
          compaction: { ageObservation: true },
        },
        'input.compaction.ageObservation: unknown option; did you mean ageObservations?',
      ],
    ];
    it.each(cases)(
      '%s: fails at once with Compaction.InvalidInput naming it, no workflow task retried',
      async (_name, workflowType, input, message) => {
        await withWorker(bundle, { summarizer: createExtractiveSummarizer() }, async ({ client, taskQueue }) => {
          const handle = await client.workflow.start(workflowType, {
            taskQueue,
            workflowId: uniqueId('unknown-key'),
            args: [input],
          });
          const failure = await failureOf(handle);
          expect([failure.type, failure.nonRetryable, failure.message]).toEqual([
            FailureType.Compaction.InvalidInput,
            true,
            message,
          ]);
          expect(failure.details?.[0]).toEqual({
            field: message.slice(0, message.indexOf(':')),
            reason: message.slice(message.indexOf(':') + 2),
          });
          const events = await eventTypes(handle);
          expect(events).not.toContain('WorkflowTaskFailed');
          expect(events.at(-1)).toBe('WorkflowExecutionFailed');
        });
      },
      60_000,
    );
  });
});
