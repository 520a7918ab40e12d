// Sandbox-safe: workflows the workflow tests run — the shipped ones plus a caller of `compact`
// that shows what a user's workflow sees (docs/design.md#cancellation: `compact` resolves with the hard trim,
// the caller's next timer rejects with `CancelledFailure`).
import { isCancellation, sleep } from '@temporalio/workflow';
import { bpeEncoder } from '../../src/core/counting/bpe-encoders.js';
import { createCharCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage, CompactionResult } from '../../src/core/types.js';
import { compactionMiddleware } from '../../src/workflows/ai-sdk-middleware.js';
import { compact } from '../../src/workflows/compact.js';
import type { CompactConversationOptions } from '../../src/workflows/compact-conversation.js';

export * from '../../src/workflows/index.js';

export interface CompactInWorkflowInput {
  messages: ChatMessage[];
  options: Omit<CompactConversationOptions, 'format'>;
  /** Counts with `createCharCounter({ charsPerToken })` passed as the call's counter (code in the workflow). */
  charsPerToken?: number;
}

export interface CompactInWorkflowOutput {
  result: CompactionResult;
  /** How the caller's next step (a timer) ended. */
  nextStep: 'ran' | 'cancelled';
}

export async function compactInWorkflow({
  messages,
  options,
  charsPerToken,
}: CompactInWorkflowInput): Promise<CompactInWorkflowOutput> {
  const counter = charsPerToken === undefined ? undefined : createCharCounter({ charsPerToken });
  const result = await compact(messages, { ...options, counter });
  try {
    await sleep(1);
    return { result, nextStep: 'ran' };
  } catch (error) {
    if (isCancellation(error)) return { result, nextStep: 'cancelled' };
    throw error;
  }
}

/**
 * What `generateText` does with a middleware in a workflow, without the `ai` package in the
 * bundle: the same prompt grows by a step twice more; the middleware compacts once and puts its
 * compaction back at the next calls. Returns the prompt each call would have sent.
 */
export async function middlewareInWorkflow({
  prompt,
  steps,
  contextBudget,
}: {
  prompt: unknown[];
  steps: unknown[][];
  contextBudget: number;
}): Promise<unknown[][]> {
  const middleware = compactionMiddleware({ contextBudget, keepRecent: 2 });
  const sent: unknown[][] = [];
  let conversation = prompt;
  for (const step of [[], ...steps]) {
    conversation = [...conversation, ...step];
    const { prompt: compacted } = await middleware.transformParams({
      type: 'generate',
      params: { prompt: conversation },
      model: {},
    });
    sent.push([...compacted]);
  }
  return sent;
}

/** The mark `encoderUses` leaves on the encoder it counted with. */
const ENCODER_USES = Symbol.for('temporal-compactor.test.encoderUses');

/**
 * How many workflows have counted with this worker thread's `o200k_base` encoder, this one
 * included. The encoder module is preloaded into the reusable V8 context
 * (src/worker/workflow-bundling.ts), so every workflow on the thread counts with one encoder; a
 * module loaded per workflow would give each run an encoder of its own, and 1 every time.
 */
export async function encoderUses(): Promise<number> {
  const encoder = bpeEncoder('o200k_base') as unknown as Record<symbol, number | undefined>;
  encoder[ENCODER_USES] = (encoder[ENCODER_USES] ?? 0) + 1;
  return Promise.resolve(encoder[ENCODER_USES]);
}
