// Sandbox-safe: compaction inside any workflow (docs/design.md#workflow-compact): `compact`,
// `needsCompaction` and `planCompaction`. Options: ./compact-options.ts.
import type { CompactionResult, CompactionPlan, ChatMessage } from '../core/types.js';
import { compactionPlanCore, needsCompactionCore } from '../core/compaction/needs-compaction.js';
import type { AnthropicConversation } from '../core/formats/anthropic-schema.js';
import type { AnthropicCompactionResult } from '../core/formats/anthropic.js';
import type { AiSdkMessage } from '../core/formats/ai-sdk-schema.js';
import type { AiSdkCompactionResult } from '../core/formats/ai-sdk.js';
import type { Conversation, FormatCompactionResult, FormatOption } from '../core/formats/format.js';
import { failOnInvalidInput } from '../shared/failures.js';
import { passOf, type CompactOptions } from './compact-options.js';
import { driveCompaction } from './drive-compaction.js';

/**
 * Compacts a conversation inside any workflow (docs/design.md#workflow-compact): elision and the hard trim run as
 * workflow code, the summary as the `summarize` activity (`maxAttempts`, `retryBackoff` ×2, at most 30 s apart).
 * Never rejects for a summarizer failure: a rejected request, exhausted attempts or a summary that does not fit end
 * in the hard trim (`fallback: true`). Cancelling the calling workflow cancels the request or the backoff at once and
 * `compact` resolves with the hard trim; the caller's next activity or timer then rejects with `CancelledFailure`.
 *
 * @throws ApplicationFailure of type `Compaction.InvalidInput` (non-retryable) naming the index and field of bad input.
 * @example
 * import { compact, needsCompaction } from 'temporal-compactor/workflow';
 * if (needsCompaction(messages, { contextBudget: 128_000 })) {
 *   messages = (await compact(messages, { contextBudget: 128_000, summarizerModel: 'gpt-4o-mini' })).messages;
 * }
 */
export function compact(
  messages: readonly ChatMessage[],
  options: CompactOptions & { format?: 'openai' },
): Promise<CompactionResult>;
/** Compacts an Anthropic conversation (a message array or a request body); the result is in Anthropic messages. */
export function compact(
  conversation: AnthropicConversation,
  options: CompactOptions & { format: 'anthropic' },
): Promise<AnthropicCompactionResult>;
/** Compacts AI SDK messages (`ModelMessage[]`, or a middleware's prompt); the result is in AI SDK messages. */
export function compact(
  messages: readonly AiSdkMessage[],
  options: CompactOptions & { format: 'ai-sdk' },
): Promise<AiSdkCompactionResult>;
export async function compact(
  conversation: Conversation,
  options: CompactOptions & FormatOption,
): Promise<CompactionResult | FormatCompactionResult> {
  const { view, messages, call } = passOf(conversation, options);
  const { result } = await driveCompaction(messages, call, 'hard-trim');
  return view === undefined ? result : view.result(result);
}

/**
 * True when the conversation is over `triggerRatio × contextBudget` (or the call's `target`), or,
 * with `ageObservations` or `keepImages`, holds an elision batch of at least `ageReclaimMin` characters.
 * @throws ApplicationFailure of type `Compaction.InvalidInput` for bad input.
 */
export function needsCompaction(conversation: Conversation, options: CompactOptions & FormatOption): boolean {
  const { messages, call } = passOf(conversation, options);
  return failOnInvalidInput(() => {
    const { settings, overrides } = call();
    return needsCompactionCore(messages, settings.options, overrides, overrides.counter);
  });
}

/**
 * {@link needsCompaction}, and with `summarizerContextWindow` how many pieces the summary of the middle would take
 * now (`summaryPieces`, only when more than one; docs/design.md#summarizer-window).
 * @throws ApplicationFailure of type `Compaction.InvalidInput` for bad input.
 * @example
 * const { needed, summaryPieces } = planCompaction(messages, { contextBudget: 1_000_000, summarizerContextWindow: 128_000 });
 */
export function planCompaction(conversation: Conversation, options: CompactOptions & FormatOption): CompactionPlan {
  const { messages, call } = passOf(conversation, options);
  return failOnInvalidInput(() => {
    const { settings, overrides } = call();
    return compactionPlanCore(messages, settings.options, overrides, overrides.counter);
  });
}
