// Sandbox-safe: what an agent run cost so far (docs/design.md#cost), and the input billed under
// prompt caching as `bench:cost` models it, in uncached-input-token equivalents.
import type { SummarizerUsage } from '../counting/summarizer-usage.js';

/** Prices relative to one uncached input token of the agent's model. */
export interface Pricing {
  /** A cached prompt token. @default 0.1 (what OpenAI and Anthropic charge for a cache hit, roughly) */
  cachedInput: number;
  /** A summarizer prompt token (a smaller model). @default 0.25 */
  summarizerInput: number;
}

export const DEFAULT_PRICING: Pricing = { cachedInput: 0.1, summarizerInput: 0.25 };

/** One chat request's usage, as the run records it on the assistant message it produced. */
export interface RoundUsage {
  /** The backend that answered (its label). */
  backend: string;
  promptTokens: number;
  /** Prompt tokens served from the provider's cache: as it reported them, or modelled. */
  cachedPromptTokens: number;
  /** `reported` by the provider, or `modelled` from the prefix this request shares with the one before. */
  cacheSource: 'reported' | 'modelled';
  completionTokens: number | null;
}

/** Running totals of a run's usage, across continue-as-new. */
export interface RunUsage {
  /** Chat requests answered. */
  requests: number;
  promptTokens: number;
  cachedPromptTokens: number;
  /** Requests whose cached tokens the provider reported (the rest were modelled). */
  reportedCacheRequests: number;
  completionTokens: number;
  summarizer: { requests: number; promptTokens: number; completionTokens: number; estimated: boolean };
  /** `cachedPromptTokens / promptTokens` (0 before the first request). */
  cacheHitRate: number;
  /** Estimated billed input so far, in uncached-input-token equivalents (see `pricing`). */
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
  const billed =
    promptTokens -
    cachedPromptTokens +
    pricing.cachedInput * cachedPromptTokens +
    pricing.summarizerInput * summarizer.promptTokens;
  return {
    ...usage,
    cacheHitRate: promptTokens === 0 ? 0 : cachedPromptTokens / promptTokens,
    billedInput: Math.round(billed),
  };
}

/** The totals with one more chat request. */
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

/** The totals with one compaction's summarizer requests. */
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

/** `86%` (no decimals: a display). */
export function percent(rate: number): string {
  return `${Math.round(rate * 100)}%`;
}
