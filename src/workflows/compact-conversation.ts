// Sandbox-safe: the standalone workflow `compactConversation` — one compaction by name, from any client or SDK.
import { FailureType, InvalidInputError } from '../core/errors.js';
import {
  DEFAULT_PAYLOAD_LIMIT_BYTES,
  jsonPayloadBytes,
  payloadBound,
  type PayloadTooLargeDetails,
} from '../core/limits/payload-size.js';
import { describeWorker } from './describe-worker.js';
import type { ChatMessage } from '../core/types.js';
import { passOf, type CompactOptions } from './compact-options.js';
import { driveCompaction } from './drive-compaction.js';
import type { AnthropicMessage, AnthropicTextBlock } from '../core/formats/anthropic-schema.js';
import type { AiSdkMessage } from '../core/formats/ai-sdk-schema.js';
import type { AnyCompactionResult, FormatCompactionResult, FormatOption } from '../core/formats/format.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';
import { assertTaskQueueName } from '../core/limits/task-queue.js';
import { failOnInvalidInput, invalidInputFailure, nonRetryableFailure } from '../shared/failures.js';

/** Options of `compactConversation`: those of `compact` without a counter (workflow input is JSON; the character estimator counts). */
export type CompactConversationOptions = Omit<CompactOptions, 'counter'> & FormatOption;

export interface CompactConversationInput {
  /** The conversation, in `options.format` (OpenAI chat messages by default). */
  messages: ChatMessage[] | AnthropicMessage[] | AiSdkMessage[];
  /** With `options.format: 'anthropic'`: the request's system prompt (sticky; not returned). */
  system?: string | AnthropicTextBlock[];
  options: CompactConversationOptions;
}

const INPUT_KEYS = keysOf<CompactConversationInput>({ messages: true, system: true, options: true });

/**
 * One compaction as a workflow (docs/design.md#compact-conversation). Cancelled, it stops its activity at once and ends
 * cancelled: there is no caller state to keep consistent, so it does not return the hard trim.
 *
 * @throws ApplicationFailure of type `Compaction.InvalidInput` (non-retryable) for bad input.
 * @throws ApplicationFailure of type `Compaction.PayloadTooLarge` (non-retryable) when the result is
 * larger than `options.maxPayloadBytes` (2,000,000) and the worker stores no payloads externally.
 * @example
 * const result = await client.workflow.execute('compactConversation', {
 *   taskQueue: 'compactor', workflowId: `compact-${id}`,
 *   args: [{ messages, options: { contextBudget: 128_000 } }],
 * });
 */
export async function compactConversation(input: CompactConversationInput): Promise<AnyCompactionResult> {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw invalidInputFailure(new InvalidInputError('input', 'must be an object { messages, options }'));
  // Unknown keys of `options` are refused by `compact`'s own check, naming `options.<key>`.
  failOnInvalidInput(() => assertKnownKeys(input, INPUT_KEYS, 'input', 'field'));
  const { messages, system, options } = input;
  const isObject = typeof options === 'object' && options !== null;
  // A counter cannot travel as JSON: drop whatever a client put there rather than call it.
  const jsonOptions: CompactOptions & FormatOption = isObject ? { ...options, counter: undefined } : options;
  // A queue name the server refuses would fail the workflow task at every retry, not the workflow.
  failOnInvalidInput(() => assertTaskQueueName(isObject ? options.taskQueue : undefined, 'options.taskQueue'));
  if (system !== undefined && Reflect.get(Object(options), 'format') !== 'anthropic')
    throw invalidInputFailure(
      new InvalidInputError(
        'system',
        'only with options.format "anthropic": in the other formats the system prompt is a message',
      ),
    );
  const pass = passOf(system === undefined ? messages : { system, messages }, jsonOptions);
  const { result: engine } = await driveCompaction(pass.messages, pass.call, 'rethrow');
  const result: AnyCompactionResult = pass.view === undefined ? engine : withoutRequest(pass.view.result(engine));
  const inline = typeof options?.maxPayloadBytes === 'number' ? options.maxPayloadBytes : DEFAULT_PAYLOAD_LIMIT_BYTES;
  const bytes = jsonPayloadBytes(result);
  const stored = bytes > inline && (options.payloadStore ?? (await describeWorker()).externalStorage);
  const limit = payloadBound(inline, stored);
  if (bytes > limit) {
    // A result the server (or the payload store) refuses would fail the workflow task again and again.
    const details: PayloadTooLargeDetails = { payload: 'the compaction result', bytes, limit };
    throw nonRetryableFailure(
      FailureType.Compaction.PayloadTooLarge,
      stored
        ? `the compaction result is ${bytes} bytes, over the ${limit} bytes the payload store holds`
        : `the compaction result is ${bytes} bytes, over the ${limit}-byte payload limit, and the worker stores no payloads externally (set COMPACTOR_PAYLOAD_STORE)`,
      details,
    );
  }
  return result;
}

/** The system prompt came in beside the messages: the result does not send a request body back (it would repeat the messages). */
function withoutRequest(result: FormatCompactionResult): FormatCompactionResult {
  if (!('request' in result)) return result;
  const { request: _request, ...rest } = result;
  return rest;
}
