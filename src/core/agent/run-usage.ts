// Sandbox-safe: what an agent run cost so far (docs/design.md#cost), and the input billed under
// prompt caching as `bench:cost` models it, in uncached-input-token equivalents.
import type { SummarizerUsage } from '../counting/summarizer-usage.js';

/** Prices relative to one uncached input token of the agent's model. */
export interface Pricing {
  /** @default 0.1 (roughly what OpenAI and Anthropic charge for a cache hit) */
  cachedInput: number;
  /** @default 0.25 (a smaller model) */
  summarizerInput: number;
}

export const DEFAULT_PRICING: Pricing = { cachedInput: 0.1, summarizerInput: 0.25 };

/** One chat request's usage, as the run records it on the assistant message it produced. */
export interface RoundUsage {
  backend: string;
  promptTokens: number;
  cachedPromptTokens: number;
  /** `modelled` from the prefix this request shares with the one before. */
  cacheSource: 'reported' | 'modelled';
  completionTokens: number | null;
}

/** Running totals of a run's usage, across continue-as-new. */
export interface RunUsage {
  requests: number;
  promptTokens: number;
  cachedPromptTokens: number;
  /** Requests whose cached tokens the provider reported. */
  reportedCacheRequests: number;
  completionTokens: number;
  summarizer: { requests: number; promptTokens: number; completionTokens: number; estimated: boolean };
  cacheHitRate: number;
  /** In uncached-input-token equivalents. */
  billedInput: number;
  pricing: Pricing;
}

export function emptyRunUsage(pricing: Pricing = DEFAULT_PRICING): RunUsage {
  return {
    requests: 0,
    promptTokens: 0,
    cachedPromptTokens: 0,
    reportedCacheRequests: 0,
    completionTokens: 0,
    summarizer: { requests: 0, promptTokens: 0, completionTokens: 0, estimated: false },
    cacheHitRate: 0,
    billedInput: 0,
    pricing,
  };
}

function derive(usage: Omit<RunUsage, 'cacheHitRate' | 'billedInput'>): RunUsage {
  const { promptTokens, cachedPromptTokens, summarizer, pricing } = usage;
  const uncached = promptTokens - cachedPromptTokens;
  const billed =
    uncached + pricing.cachedInput * cachedPromptTokens + pricing.summarizerInput * summarizer.promptTokens;
  return {
    ...usage,
    cacheHitRate: promptTokens === 0 ? 0 : cachedPromptTokens / promptTokens,
    billedInput: Math.round(billed),
  };
}

export function addRoundUsage(usage: RunUsage, round: RoundUsage): RunUsage {
  return derive({
    ...usage,
    requests: usage.requests + 1,
    promptTokens: usage.promptTokens + round.promptTokens,
    cachedPromptTokens: usage.cachedPromptTokens + Math.min(round.cachedPromptTokens, round.promptTokens),
    reportedCacheRequests: usage.reportedCacheRequests + (round.cacheSource === 'reported' ? 1 : 0),
    completionTokens: usage.completionTokens + (round.completionTokens ?? 0),
  });
}

export function addSummarizerUsage(usage: RunUsage, summarizer: SummarizerUsage): RunUsage {
  return derive({
    ...usage,
    summarizer: {
      requests: usage.summarizer.requests + summarizer.requests,
      promptTokens: usage.summarizer.promptTokens + summarizer.promptTokens,
      completionTokens: usage.summarizer.completionTokens + summarizer.completionTokens,
      estimated: usage.summarizer.estimated || summarizer.estimated,
    },
  });
}

export function percent(rate: number): string {
  return `${Math.round(rate * 100)}%`;
}
