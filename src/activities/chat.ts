// Node only (activities): the agent loop's `chat` activity — one chat completion with tool calling,
// against an OpenAI-compatible backend or the replay provider (a recorded trajectory played back).
import { ApplicationFailure } from '@temporalio/common';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { z } from 'zod';
import { ChatFailureType, ReplayFailureType } from '../core/agent-errors.js';
import type { ModelConfig, OpenAIModelConfig, ReplayModelConfig } from '../core/agent-input.js';
import { classifyStatus, statusOf } from '../core/errors.js';
import { requestCounter } from '../core/preflight.js';
import type { ToolDeclaration } from '../core/request-counter.js';
import { toProviderMessages, validateMessages } from '../core/schema.js';
import type { ChatMessage, ToolCall } from '../core/types.js';
import { parseRetryAfter } from '../summarizers/openai.js';
import { failOnInvalidInput } from '../workflows/failures.js';
import type { TrajectoryStore } from './trajectories.js';
import { whileHeartbeating } from './heartbeats.js';

/** Input of the `chat` activity. */
export interface ChatActivityInput {
  backend: ModelConfig;
  /** The conversation as sent (harness flags are stripped before it leaves the worker). */
  messages: ChatMessage[];
  /** Tool declarations sent with the request. */
  tools: ToolDeclaration[];
  /** Chat rounds the run has completed; the replay provider answers with recorded turn number `turn` (from 0). */
  turn: number;
}

/** What the provider billed for the request (absent when it did not say). */
export interface ChatUsage {
  promptTokens: number;
  /** Prompt tokens served from the provider's prompt cache (`prompt_tokens_details.cached_tokens`), when it says. */
  cachedPromptTokens?: number;
  completionTokens?: number;
}

/** Output of the `chat` activity: the assistant's message and what the loop needs to go on. */
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

export interface ChatActivityDeps {
  /** The OpenAI-compatible client. @default one built on first use from OPENAI_BASE_URL / OPENAI_API_KEY, with `maxRetries: 0` */
  openai?: OpenAI;
  /** Deadline of one request in ms; keep it below the activity's startToCloseTimeout. @default 120_000 */
  timeoutMs?: number;
  /** Heartbeat interval while a request is in flight. @default 5_000 ms (capped at a quarter of the heartbeatTimeout) */
  heartbeatIntervalMs?: number;
  /** Where the replay provider finds trajectories. */
  trajectories: TrajectoryStore;
}

/** @default 120_000 ms for one chat request */
export const DEFAULT_CHAT_TIMEOUT_MS = 120_000;

const optionalCount = z.number().int().nonnegative().nullish().catch(undefined);
const toolCallSchema = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function').catch('function'),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string().catch('') }),
});
const completionSchema = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        finish_reason: z.string().nullish().catch(undefined),
        message: z.looseObject({
          content: z.string().nullish(),
          tool_calls: z.array(toolCallSchema).nullish(),
        }),
      }),
    )
    .min(1),
  usage: z
    .looseObject({
      prompt_tokens: optionalCount,
      completion_tokens: optionalCount,
      prompt_tokens_details: z.looseObject({ cached_tokens: optionalCount }).nullish().catch(undefined),
    })
    .nullish()
    .catch(undefined),
});

function malformed(message: string, cause?: unknown): ApplicationFailure {
  return ApplicationFailure.create({ type: ChatFailureType.Malformed, message: `chat: ${message}`, nonRetryable: false, cause: cause instanceof Error ? cause : undefined });
}

/** Maps what the openai client threw to the failure Temporal's retry policy acts on (400-404 never retried). */
export function toChatFailure(error: unknown): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  const cause = error instanceof Error ? error : undefined;
  if (error instanceof APIConnectionTimeoutError) return ApplicationFailure.create({ type: ChatFailureType.Transient, message: 'chat: the request timed out', cause });
  if (error instanceof APIConnectionError) return ApplicationFailure.create({ type: ChatFailureType.Transient, message: `chat: connection failed: ${error.message}`, cause });
  const status = statusOf(error);
  const message = `chat: ${status === undefined ? '' : 'HTTP '}${error instanceof Error ? error.message : String(error)}`;
  if (classifyStatus(status) === 'abort') {
    return ApplicationFailure.create({ type: ChatFailureType.Rejected, message, nonRetryable: true, details: [{ status }], cause });
  }
  const retryAfterMs = error instanceof APIError ? parseRetryAfter(error.headers) : undefined;
  return ApplicationFailure.create({
    type: ChatFailureType.Transient,
    message,
    details: [{ status, retryAfterMs }],
    cause,
    ...(retryAfterMs !== undefined && retryAfterMs > 0 ? { nextRetryDelay: retryAfterMs } : {}),
  });
}

function assistantMessage(content: string | null | undefined, toolCalls: ToolCall[]): ChatMessage {
  // A message with neither text nor calls is still a valid turn: an empty answer.
  if (toolCalls.length === 0) return { role: 'assistant', content: content ?? '' };
  return { role: 'assistant', content: content ?? null, tool_calls: toolCalls };
}

async function openAIChat(client: OpenAI, backend: OpenAIModelConfig, input: ChatActivityInput, timeoutMs: number, signal: AbortSignal): Promise<ChatActivityOutput> {
  const body = {
    model: backend.model,
    messages: toProviderMessages(input.messages),
    ...(input.tools.length > 0 ? { tools: input.tools } : {}),
    max_completion_tokens: backend.maxOutputTokens,
    ...(backend.temperature === undefined ? {} : { temperature: backend.temperature }),
  };
  let response: unknown;
  try {
    response = await client.post<unknown>('/chat/completions', { body, signal, maxRetries: 0, timeout: timeoutMs });
  } catch (error) {
    if (signal.aborted) throw error;
    if (error instanceof SyntaxError) throw malformed('the response body is not valid JSON', error);
    throw toChatFailure(error);
  }
  const parsed = completionSchema.safeParse(response);
  if (!parsed.success) throw malformed('the response is not a chat completion with at least one choice', parsed.error);
  const choice = parsed.data.choices[0];
  if (choice === undefined) throw malformed('the response has no choices');
  const toolCalls: ToolCall[] = (choice.message.tool_calls ?? []).map((call) => ({ id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } }));
  // Results name their call by id: a turn with two calls of one id cannot be answered, and once in
  // the conversation it would fail the run's next validation. Asking again usually heals it.
  const ids = new Set<string>();
  for (const call of toolCalls) {
    if (ids.has(call.id)) throw malformed(`the reply has two tool calls with the id ${JSON.stringify(call.id)}`);
    ids.add(call.id);
  }
  const output: ChatActivityOutput = { message: assistantMessage(choice.message.content, toolCalls) };
  const usage = parsed.data.usage;
  if (typeof usage?.prompt_tokens === 'number') {
    const cached = usage.prompt_tokens_details?.cached_tokens;
    output.usage = {
      promptTokens: usage.prompt_tokens,
      ...(typeof cached === 'number' ? { cachedPromptTokens: Math.min(cached, usage.prompt_tokens) } : {}),
      ...(typeof usage.completion_tokens === 'number' ? { completionTokens: usage.completion_tokens } : {}),
    };
  }
  if (typeof choice.finish_reason === 'string') output.finishReason = choice.finish_reason;
  return output;
}

async function replayChat(trajectories: TrajectoryStore, backend: ReplayModelConfig, input: ChatActivityInput): Promise<ChatActivityOutput> {
  const script = await trajectories.load(backend.trajectory);
  const turn = script.turns[input.turn];
  if (turn === undefined) {
    throw ApplicationFailure.create({
      type: ReplayFailureType.NotRecorded,
      message: `replay: trajectory "${backend.trajectory}" has ${script.turns.length} assistant turns; turn ${input.turn} (from 0) was asked for`,
      nonRetryable: true,
    });
  }
  // Billed as the workflow's own estimator counts the request actually sent, so calibration is exact.
  const promptTokens = requestCounter(backend.tokenizer ?? 'o200k_base', input.tools).count(toProviderMessages(input.messages));
  const completionTokens = requestCounter(backend.tokenizer ?? 'o200k_base', []).count([turn.message]);
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

function buildClient(timeoutMs: number): OpenAI {
  const baseURL = process.env.OPENAI_BASE_URL?.trim() || undefined;
  const apiKey = process.env.OPENAI_API_KEY?.trim() || (baseURL !== undefined ? 'unused' : undefined);
  return new OpenAI({ apiKey, baseURL, timeout: timeoutMs, maxRetries: 0 });
}

/**
 * Creates the `chat` activity. For `provider: 'openai'` it sends one chat completion with the
 * tool declarations (no client retries: Temporal owns them), heartbeats while it waits, and maps
 * failures like the summarizer's: 400-404 → `Chat.Rejected` (non-retryable), anything else →
 * `Chat.Transient` (with `nextRetryDelay` from `Retry-After`), an unusable 200 → `Chat.Malformed`.
 * Cancelled, it rethrows the activity's cancellation. For `provider: 'replay'` it returns the
 * recorded assistant turn number `turn`, with usage = the request's count in the backend's tokenizer.
 */
export function createChatActivity({ openai, timeoutMs = DEFAULT_CHAT_TIMEOUT_MS, heartbeatIntervalMs, trajectories }: ChatActivityDeps) {
  let client = openai;
  return async function chat(input: ChatActivityInput): Promise<ChatActivityOutput> {
    failOnInvalidInput(() => validateMessages(input?.messages, 'input.messages'));
    const { backend } = input;
    if (backend.provider === 'replay') return replayChat(trajectories, backend, input);
    const connected = (client ??= buildClient(timeoutMs));
    return whileHeartbeating((signal) => openAIChat(connected, backend, input, timeoutMs, signal), toChatFailure, heartbeatIntervalMs, [connected.apiKey]);
  };
}
