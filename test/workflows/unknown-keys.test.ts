// Unknown keys in workflow input (issue 18 item 6, docs/design.md#unknown-keys): a new run with one
// ends at once in the non-retryable Compaction.InvalidInput naming the key and the closest known
// name — never a workflow task retried for ever — and records the patch that says so; a history
// recorded before the patch, with an unknown key in its input, still replays.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { FailureType } from '../../src/core/errors.js';
import { UNKNOWN_KEYS_PATCH_ID } from '../../src/workflows/compact.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { toolRounds } from '../support/messages.js';
import { bundleTestWorkflows, eventTypes, HISTORIES_DIR, uniqueId, withWorker } from './harness.js';

interface Payload {
  metadata?: Record<string, string>;
  data?: string;
}
interface JsonEvent {
  workflowExecutionStartedEventAttributes?: { input?: { payloads?: Payload[] } };
  markerRecordedEventAttributes?: { markerName?: string; details?: Record<string, { payloads?: Payload[] }> };
}
interface JsonHistory {
  events: JsonEvent[];
}

function decode(payload: Payload | undefined): unknown {
  return payload?.data === undefined ? undefined : JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8'));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A recorded history whose workflow input `edit` changed (a JSON payload, rewritten in place). */
function historyWithInput(file: string, edit: (input: Record<string, unknown>) => void): JsonHistory {
  const history: JsonHistory = JSON.parse(readFileSync(join(HISTORIES_DIR, file), 'utf8'));
  const payload = history.events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  const input = decode(payload);
  if (payload === undefined || !isRecord(input)) throw new Error(`${file}: no JSON workflow input`);
  edit(input);
  payload.data = Buffer.from(JSON.stringify(input)).toString('base64');
  return history;
}

function nested(input: Record<string, unknown>, key: string): Record<string, unknown> {
  const value = input[key];
  if (!isRecord(value)) throw new Error(`input.${key} is not an object`);
  return value;
}

async function replayErrors(
  bundle: WorkflowBundleWithSourceMap,
  histories: Array<{ workflowId: string; history: JsonHistory }>,
): Promise<Map<string, string | undefined>> {
  const outcomes = new Map<string, string | undefined>();
  for await (const result of Worker.runReplayHistories({ workflowBundle: bundle }, histories))
    outcomes.set(result.workflowId, result.error?.message);
  return outcomes;
}

/** The ids of the patches a history recorded (`core_patch` markers). */
async function patchIds(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((event) => {
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_patch') return [];
    const data = marker.details?.['patch-data']?.payloads?.[0]?.data;
    const payload: unknown =
      data === undefined || data === null ? undefined : JSON.parse(Buffer.from(data).toString('utf8'));
    return isRecord(payload) && typeof payload.id === 'string' ? [payload.id] : [];
  });
}

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

  describe('a new run', () => {
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
            FailureType.InvalidInput,
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

    it('records the patch: its replays refuse unknown keys too', async () => {
      await withWorker(bundle, { summarizer: createExtractiveSummarizer() }, async ({ client, taskQueue }) => {
        const handle = await client.workflow.start('compactConversation', {
          taskQueue,
          workflowId: uniqueId('unknown-key-patch'),
          args: [{ messages, options: { contextBudget: 100 } }],
        });
        await handle.result();
        expect(await patchIds(handle)).toContain(UNKNOWN_KEYS_PATCH_ID);
      });
    }, 60_000);
  });

  describe('a history recorded before the patch, with an unknown key in its input', () => {
    // Each one ran with the key ignored; refusing it on replay would fail the workflow where it
    // went on (a non-determinism error, its workflow task retried for ever).
    const edited: Array<[string, () => JsonHistory]> = [
      [
        'compactConversation: an option and a field of the input',
        () =>
          historyWithInput('compact-conversation-success.json', (input) => {
            nested(input, 'options').keepRecnt = 3;
            input.note = 'from a newer client';
          }),
      ],
      [
        'compact in a workflow: an option',
        () =>
          historyWithInput(
            'compact-in-workflow-cancel-during-backoff.json',
            (input) => void (nested(input, 'options').keepRecnt = 3),
          ),
      ],
      [
        'agentRun: a compaction setting',
        () => historyWithInput('agent-run-update.json', (input) => void (nested(input, 'compaction').keepRecnt = 3)),
      ],
    ];

    it('replays as it ran', async () => {
      const histories = edited.map(([workflowId, history]) => ({ workflowId, history: history() }));
      for (const { history } of histories)
        expect(
          JSON.stringify(decode(history.events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0])),
        ).toContain('keepRecnt');
      const outcomes = await replayErrors(bundle, histories);
      expect([...outcomes]).toEqual(edited.map(([workflowId]) => [workflowId, undefined]));
    }, 120_000);
  });
});
