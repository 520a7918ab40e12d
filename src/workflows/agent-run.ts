// Sandbox-safe: the reference agent loop `agentRun` as a workflow (docs/design.md#agent-run): its
// queries and updates wired to the loop (./agent/loop.ts). Its definitions are in src/shared/agent-run.ts.
import { ApplicationFailure } from '@temporalio/common';
import { isCancellation, setHandler } from '@temporalio/workflow';
import { planAgentRun } from '../core/agent/agent-input.js';
import { parseCompactInput, parsePinInput } from '../core/agent/steering.js';
import { parseUndoInput } from '../core/agent/undo.js';
import { FailureType, InvalidInputError } from '../core/errors.js';
import { validateMessages } from '../core/schema.js';
import type { ChatMessage } from '../core/types.js';
import {
  agentRunUpdates as updates,
  agentRunQueries as queries,
  type AddUserMessageInput,
  type AgentRunResult,
  type AgentRunWorkflowInput,
} from '../shared/agent-run.js';
import { failOnInvalidInput, nonRetryableFailure } from '../shared/failures.js';
import { AgentLoop } from './agent/loop.js';

export * from '../shared/agent-run.js';

/** An update's validator: refuses a finished run (`AgentRun.Finished`), then runs `check` ({@link failOnInvalidInput}). */
function validate(loop: AgentLoop, check: () => unknown, finished = 'the run has finished'): void {
  if (loop.isFinished) throw nonRetryableFailure(FailureType.AgentRun.Finished, finished);
  failOnInvalidInput(check);
}

/**
 * The steering updates (docs/design.md#steering). Each handler only queues the request and waits for the loop to
 * apply it before its next chat request, so registering them adds no command.
 */
function steer(loop: AgentLoop): void {
  const { steering, review, undo } = loop;
  setHandler(queries.conversationEntries, () => loop.conversation.liveEntries);
  setHandler(updates.compact, (input?: unknown) => steering.requestCompaction(parseCompactInput(input).instructions), {
    validator: (input?: unknown) => validate(loop, () => parseCompactInput(input)),
  });
  for (const [definition, kind] of [
    [updates.pin, 'pin'],
    [updates.unpin, 'unpin'],
  ] as const) {
    setHandler(definition, (input) => steering.requestPins(kind, parsePinInput(input, kind)), {
      validator: (input) => validate(loop, () => steering.checkPins(kind, parsePinInput(input, kind))),
    });
  }
  // docs/design.md#undo: refused at once when it names no compaction it can undo; the loop serves it.
  const undoTarget = (input: unknown): number => undo.target(parseUndoInput(input));
  setHandler(updates.undoCompaction, (input?: unknown) => undo.request(failOnInvalidInput(() => undoTarget(input))), {
    validator: (input?: unknown) => validate(loop, () => undoTarget(input)),
  });
  // docs/design.md#review: the handler records the decision; the loop, waiting on it, goes on.
  setHandler(queries.pendingCompaction, () => review.proposal ?? null);
  setHandler(updates.reviewCompaction, (input) => review.decide(review.check(input)), {
    validator: (input) => validate(loop, () => review.check(input)),
  });
}

function userMessageFrom(input: AddUserMessageInput): ChatMessage {
  const content = typeof input === 'string' ? input : input?.content;
  try {
    const [message] = validateMessages([{ role: 'user', content }]);
    if (message === undefined) throw new InvalidInputError('message', 'required');
    return message;
  } catch (error) {
    // Name the update's argument, not the one-message conversation it was checked as.
    if (error instanceof InvalidInputError)
      throw new InvalidInputError(error.field.replace(/^messages\[0\]/, 'message'), error.reason);
    throw error;
  }
}

/**
 * The reference agent loop (docs/design.md#agent-run): keeps the live conversation, writes its transcript as it goes
 * (`recordSession`), compacts with `compact`, calls `chat` and the tools as activities, and continues as new when
 * Temporal suggests it (or every `continueAsNewAfterRounds`), carrying the live conversation, never the transcript.
 *
 * Ends when the model answers without tool calls (and no user message waits), when a replayed recording ends, after
 * `maxRounds`, or after the `stop` update. Cancelled, it writes its transcript, then ends Cancelled.
 *
 * @throws ApplicationFailure `Compaction.InvalidInput` (non-retryable) naming the field of bad input.
 * @throws ApplicationFailure `RunFailed.ContextExhausted` (non-retryable) when even a hard trim cannot make the conversation fit; the transcript is written first.
 * @throws ApplicationFailure `RunFailed.BackendsFailed` (non-retryable) when every backend of the chain failed in one round.
 * @throws ApplicationFailure `RunFailed.PayloadTooLarge` (non-retryable) when something the run must send is over `maxPayloadBytes` and the worker has no payload store.
 * @example
 * const result = await client.workflow.execute(agentRun, {
 *   taskQueue: 'compactor', workflowId: `agent-${id}`,
 *   args: [{ messages, model: { provider: 'openai', model: 'gpt-4o', contextWindow: 128_000, maxOutputTokens: 4_096 },
 *            tools: ['fs_read', 'fs_list', 'grep'], compaction: { summarizerModel: 'gpt-4o-mini' } }],
 * });
 */
export async function agentRun(input: AgentRunWorkflowInput): Promise<AgentRunResult> {
  const plan = failOnInvalidInput(() => planAgentRun(input));
  const loop = failOnInvalidInput(() => new AgentLoop(input, plan));
  setHandler(queries.session, () => loop.sessionSnapshot());
  setHandler(queries.compactions, () => loop.ledger.compactions);
  setHandler(queries.conversation, () => loop.messages);
  setHandler(updates.addUserMessage, (message) => ({ pending: loop.queueUserMessage(userMessageFrom(message)) }), {
    validator: (message) => validate(loop, () => userMessageFrom(message), 'the run has finished; start a new one'),
  });
  steer(loop);
  setHandler(updates.stop, () => loop.requestStop(), { validator: () => validate(loop, () => undefined) });
  try {
    return await loop.run();
  } catch (error) {
    if (isCancellation(error)) {
      // Cancelled, the run ends Cancelled, as Temporal users expect; its transcript is written first.
      await loop.recordSessionBeforeFailing('cancelled');
      throw error;
    }
    // A failure ends the run with its transcript written; a bug (any other error) fails the task, retried from history.
    if (error instanceof ApplicationFailure) await loop.recordSessionBeforeFailing('failed');
    throw error;
  }
}
