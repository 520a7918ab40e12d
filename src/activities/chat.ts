// Node only (activities): the agent loop's `chat` activity, against an OpenAI-compatible server or a recording.
import { ApplicationFailure } from '@temporalio/common';
import type OpenAI from 'openai';
import { z } from 'zod';
import type { ModelConfig, OpenAIModelConfig, ReplayModelConfig } from '../core/agent/agent-input.js';
import { requestCounter } from '../core/agent/preflight.js';
import type { ToolDeclaration } from '../core/counting/request-counter.js';
import { FailureType, InvalidInputError } from '../core/errors.js';
import { toProviderMessages, validateMessages } from '../core/schema.js';
import type { ChatMessage, ToolCall } from '../core/types.js';
import {
  createOpenAIClient,
  describeProviderError,
  NoModelServerError,
  readCompletion,
  requestCompletion,
} from '../llm/openai-adapter.js';
import { failOnInvalidInput, nonRetryableFailure } from '../shared/failures.js';
import { DEFAULT_CHAT_TIMEOUT_MS } from '../config.js';
import type { ActivityDeps } from './deps.js';
import type { TrajectoryStore } from './trajectories.js';
import { whileHeartbeating } from './heartbeats.js';

export interface ChatActivityInput {
  backend: ModelConfig;
  /** The conversation as sent (harness flags are stripped before it leaves the worker). */
  messages: ChatMessage[];
  tools: ToolDeclaration[];
  /** Chat rounds the run has completed; the replay provider answers with recorded turn number `turn` (from 0). */
  turn: number;
}

/** What the provider billed for the request (absent when it did not say). */
interface ChatUsage {
  promptTokens: number;
  /** Prompt tokens served from the provider's prompt cache (`prompt_tokens_details.cached_tokens`), when it says. */
  cachedPromptTokens?: number;
  completionTokens?: number;
}

export interface ChatActivityOutput {
  message: ChatMessage;
  usage?: ChatUsage;
  finishReason?: string;
  /** Replay: user turns the recording has after this turn's tool results; the loop appends them. */
  userMessages?: ChatMessage[];
  /** Replay: tool calls of this turn the recording never answered; the loop leaves them unanswered. */
  unanswered?: string[];
  /** Replay: this was the recording's last assistant turn; the run ends after its tools. */
  endOfTrajectory?: boolean;
}

// z.object drops whatever else a provider puts on a call: the message keeps only what a ToolCall has.
const toolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal('function').catch('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string().catch('') }),
});
const toolCallsSchema = z.array(toolCallSchema).nullish();

function malformed(message: string, cause?: unknown): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.Chat.Malformed,
    message: `chat: ${message}`,
    nonRetryable: false,
    cause: cause instanceof Error ? cause : undefined,
  });
}

/** What the request to `endpoint` threw, as the failure the retry policy acts on (400-404 never retried). */
export function toChatFailure(error: unknown, endpoint?: string): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  const cause = error instanceof Error ? error : undefined;
  const rejected = (message: string, details?: unknown): ApplicationFailure =>
    nonRetryableFailure(FailureType.Chat.Rejected, message, details, cause);
  if (error instanceof NoModelServerError) return rejected(`chat: ${error.message}`);
  const fault = describeProviderError(error, endpoint);
  const message = `chat: ${fault.message}`;
  if (fault.kind === 'deadline' || fault.kind === 'timeout' || fault.kind === 'connection')
    return ApplicationFailure.create({ type: FailureType.Chat.Transient, message, cause });
  const { status, retryAfterMs } = fault;
  if (fault.rejected) return rejected(message, { status });
  return ApplicationFailure.create({
    type: FailureType.Chat.Transient,
    message,
    details: [{ status, retryAfterMs }],
    cause,
    ...(retryAfterMs !== undefined && retryAfterMs > 0 ? { nextRetryDelay: retryAfterMs } : {}),
  });
}

async function openAIChat(
  client: OpenAI,
  backend: OpenAIModelConfig,
  input: ChatActivityInput,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<ChatActivityOutput> {
  const body = {
    model: backend.model,
    messages: toProviderMessages(input.messages),
    ...(input.tools.length > 0 ? { tools: input.tools } : {}),
    max_completion_tokens: backend.maxOutputTokens,
    ...(backend.temperature === undefined ? {} : { temperature: backend.temperature }),
  };
  let response: unknown;
  try {
    response = await requestCompletion(client, body, { signal, timeoutMs });
  } catch (error) {
    if (signal.aborted) throw error;
    if (describeProviderError(error).kind === 'invalid-json')
      throw malformed('the response body is not valid JSON', error);
    throw toChatFailure(error, client.baseURL);
  }
  const read = readCompletion(response);
  const choice = 'error' in read ? undefined : read.completion.choice;
  const parsedCalls = toolCallsSchema.safeParse(choice?.toolCalls);
  if ('error' in read || choice === undefined || !choice.hasMessage || !parsedCalls.success) {
    const cause = 'error' in read ? read.error : parsedCalls.success ? undefined : parsedCalls.error;
    throw malformed('the response is not a chat completion with at least one choice', cause);
  }
  const toolCalls: ToolCall[] = parsedCalls.data ?? [];
  // A reply the conversation's own rules refuse (two tool calls of one id: a result could not say
  // which it answers) would fail the run's next validation once appended. Asking again usually heals it.
  // A message with neither text nor calls is still a valid turn: an empty answer.
  const message: ChatMessage =
    toolCalls.length === 0
      ? { role: 'assistant', content: choice.content ?? '' }
      : { role: 'assistant', content: choice.content ?? null, tool_calls: toolCalls };
  // Through validateMessages, which names the part and field at fault inside the content.
  try {
    validateMessages([message]);
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    throw malformed(`reply${error.field.replace(/^messages\[0\]/, '')}: ${error.reason}`, error);
  }
  const output: ChatActivityOutput = { message };
  const { promptTokens, cachedPromptTokens: cached, completionTokens } = read.completion.usage ?? {};
  if (promptTokens !== undefined) {
    output.usage = { promptTokens };
    if (cached !== undefined) output.usage.cachedPromptTokens = Math.min(cached, promptTokens);
    if (completionTokens !== undefined) output.usage.completionTokens = completionTokens;
  }
  if (choice.finishReason !== undefined) output.finishReason = choice.finishReason;
  return output;
}

async function replayChat(
  trajectories: TrajectoryStore,
  backend: ReplayModelConfig,
  input: ChatActivityInput,
): Promise<ChatActivityOutput> {
  const script = await trajectories.load(backend.trajectory);
  const turn = script.turns[input.turn];
  if (turn === undefined) {
    const { length } = script.turns;
    const message = `replay: trajectory "${backend.trajectory}" has ${length} assistant turns; turn ${input.turn} (from 0) was asked for`;
    throw nonRetryableFailure(FailureType.Replay.NotRecorded, message);
  }
  // Billed as the workflow's own estimator counts the request actually sent, so calibration is exact.
  const tokenizer = backend.tokenizer ?? 'o200k_base';
  const promptTokens = requestCounter(tokenizer, input.tools).count(toProviderMessages(input.messages));
  const completionTokens = requestCounter(tokenizer, []).count([turn.message]);
  const output: ChatActivityOutput = {
    message: turn.message,
    usage: { promptTokens, completionTokens },
    finishReason: (turn.message.tool_calls ?? []).length > 0 ? 'tool_calls' : 'stop',
  };
  if (turn.userMessages.length > 0) output.userMessages = turn.userMessages;
  if (turn.unanswered.length > 0) output.unanswered = turn.unanswered;
  if (input.turn === script.turns.length - 1) output.endOfTrajectory = true;
  return output;
}

/**
 * The `chat` activity. `provider: 'openai'`: one chat completion (no client retries: Temporal owns
 * them); 400-404 → `Chat.Rejected`, else `Chat.Transient` (`Retry-After` as `nextRetryDelay`), an
 * unusable 200 → `Chat.Malformed`. `provider: 'replay'`: recorded turn `turn`, billed in its tokenizer.
 */
export function createChatActivity({
  openai,
  chatServer = {},
  chatTimeoutMs: timeoutMs = DEFAULT_CHAT_TIMEOUT_MS, // to the answer's last byte
  trajectories,
}: Pick<ActivityDeps, 'openai' | 'chatServer' | 'chatTimeoutMs'> & { trajectories: TrajectoryStore }) {
  let client = openai;
  return async function chat(input: ChatActivityInput): Promise<ChatActivityOutput> {
    failOnInvalidInput(() => validateMessages(input?.messages, 'input.messages'));
    const { backend } = input;
    if (backend.provider === 'replay') return replayChat(trajectories, backend, input);
    let connected: OpenAI;
    try {
      connected = client ??= createOpenAIClient({ ...chatServer, timeoutMs });
    } catch (error) {
      // No server configured: a setting to give, which no retry supplies.
      throw toChatFailure(error);
    }
    return whileHeartbeating(
      (signal) => openAIChat(connected, backend, input, timeoutMs, signal),
      (error) => toChatFailure(error, connected.baseURL),
      [connected.apiKey],
    );
  };
}
