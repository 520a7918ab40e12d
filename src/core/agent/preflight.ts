// Sandbox-safe: the agent loop's per-attempt preflight (docs/design.md#preflight) — each backend's usable room and
// counter, in that backend's own units, and which backend a round aims at and calls.
import type { ResolvedBackend, Tokenizer } from './agent-input.js';
import { createBpeCounter, type TextTokenCounts } from '../counting/bpe-counter.js';
import { withRequestFraming, type ToolDeclaration } from '../counting/request-counter.js';
import { createCharCounter } from '../counting/tokens.js';
import type { ChatMessage, TokenCounter } from '../types.js';
import { UsageCounter, type UsageCounterState } from '../counting/usage-counter.js';

/** One backend's counting, in its own units. */
export interface BackendCounter {
  backend: ResolvedBackend;
  /** Counts complete requests (conversation, tool declarations, framing), calibrated from billed usage. */
  usage: UsageCounter;
  toolTokens: number;
  /** Window − reserved output − safety margin − tool declarations. */
  room: number;
  /** Counts the conversation alone: what `compact` gets as `counter`. */
  conversation: TokenCounter;
}

/** The count of complete requests a backend is billed for (the replay provider reports exactly this). */
export function requestCounter(tokenizer: Tokenizer, tools: readonly ToolDeclaration[], known?: TextTokenCounts) {
  const counter = tokenizer === 'chars' ? createCharCounter() : createBpeCounter({ encoding: tokenizer, known });
  return withRequestFraming(counter, { tools });
}

/** Builds a backend's counter, restoring its calibration when `state` is given (continue-as-new). */
export function backendCounter(
  backend: ResolvedBackend,
  tools: readonly ToolDeclaration[],
  state?: UsageCounterState | null,
  known?: TextTokenCounts,
): BackendCounter {
  const estimator = requestCounter(backend.tokenizer, tools, known);
  const usage =
    state === undefined || state === null ? new UsageCounter({ estimator }) : UsageCounter.fromJSON(state, estimator);
  const { contextWindow, maxOutputTokens } = backend.config;
  const { toolTokens } = estimator;
  const room = contextWindow - maxOutputTokens - backend.safetyMargin - toolTokens;
  return {
    backend,
    usage,
    toolTokens,
    room,
    conversation: { count: (messages) => usage.count(messages) - toolTokens },
  };
}

export interface PreflightResult {
  /** The backend with the largest room among those still worth trying: compaction aims at its room. */
  aimAt: BackendCounter;
  aim: number;
  /** The conversation counted by `aimAt`. */
  tokens: number;
  /** The first backend the conversation fits as it is. */
  fits: BackendCounter | undefined;
}

/** Aims at the largest room among `candidates` (the first wins a tie); calls the first one the conversation fits. */
export function preflight(messages: readonly ChatMessage[], candidates: readonly BackendCounter[]): PreflightResult {
  const first = candidates[0];
  if (first === undefined) throw new Error('preflight: no backend left to try');
  const aimAt = candidates.reduce((best, candidate) => (candidate.room > best.room ? candidate : best), first);
  const fits = candidates.find((candidate) => candidate.conversation.count(messages) <= candidate.room);
  return { aimAt, aim: aimAt.room, tokens: aimAt.conversation.count(messages), fits };
}
