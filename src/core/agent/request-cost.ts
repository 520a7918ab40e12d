// Sandbox-safe: what one chat request of an agent run cost (docs/design.md#cost). Pure.
import type { ChatMessage } from '../types.js';
import type { RoundUsage } from './run-usage.js';

/** A chat request as far as prompt caching is concerned: its messages' transcript ids and JSON sizes, in order. */
export interface RequestShape {
  ids: string[];
  sizes: number[];
}

/** The provider's usage of a request, as the `chat` activity reports it (absent when it did not say). */
export interface ReportedUsage {
  promptTokens: number;
  completionTokens?: number;
  cachedPromptTokens?: number;
}

export interface RequestCostInput {
  /** The backend that answered (its label). */
  backend: string;
  /** The messages sent, and the request's shape (their transcript ids and sizes). */
  sent: readonly ChatMessage[];
  shape: RequestShape;
  /** The request before this one, or null for the run's first. */
  previous: RequestShape | null;
  /** The run's own count of the request, for when the provider reported no usage. */
  tokens: number;
  reported: ReportedUsage | undefined;
  /** Counts messages in the answering backend's units (complete requests). */
  count: (messages: readonly ChatMessage[]) => number;
}

/**
 * The provider's numbers, with cached prompt tokens as reported or, unreported, modelled as a prefix
 * cache serves them: the messages shared from the start with the previous request (same ids, sizes).
 */
export function requestCost({ backend, sent, shape, previous, tokens, reported, count }: RequestCostInput): RoundUsage {
  const promptTokens = reported?.promptTokens ?? tokens;
  const completionTokens = reported?.completionTokens ?? null;
  const reportedCached = reported?.cachedPromptTokens;
  let cachedPromptTokens = reportedCached ?? 0;
  if (reportedCached === undefined && previous !== null) {
    let shared = 0;
    while (
      shared < shape.ids.length &&
      shape.ids[shared] === previous.ids[shared] &&
      shape.sizes[shared] === previous.sizes[shared]
    )
      shared += 1;
    cachedPromptTokens = shared === 0 ? 0 : Math.min(promptTokens, count(sent.slice(0, shared)));
  }
  return {
    backend,
    promptTokens,
    cachedPromptTokens,
    cacheSource: reportedCached === undefined ? 'modelled' : 'reported',
    completionTokens,
  };
}
