// Sandbox-safe: what one chat request of an agent run cost (docs/design.md#cost). Pure.
import type { ChatMessage } from '../types.js';
import type { RoundUsage } from './run-usage.js';

/** A chat request as prompt caching sees it: its messages' transcript ids and JSON sizes, in order. */
export interface RequestShape {
  ids: string[];
  sizes: number[];
}

/** The provider's usage of a request, as the `chat` activity reports it. */
export interface ReportedUsage {
  promptTokens: number;
  completionTokens?: number;
  cachedPromptTokens?: number;
}

export interface RequestCostInput {
  backend: string;
  sent: readonly ChatMessage[];
  shape: RequestShape;
  /** Null for the run's first request. */
  previous: RequestShape | null;
  /** The run's own count of the request, for when the provider reported no usage. */
  tokens: number;
  reported: ReportedUsage | undefined;
  /** Counts complete requests in the answering backend's units. */
  count: (messages: readonly ChatMessage[]) => number;
}

/** The provider's numbers; unreported cached tokens modelled as the prefix shared with the previous request. */
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
