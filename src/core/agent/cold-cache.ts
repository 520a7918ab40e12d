// Sandbox-safe: compaction timed to a cold cache (docs/design.md#cold-cache). After a pause longer
// than the provider's prompt-cache lifetime the next request reads nothing from the cache whatever
// the run does, so a compaction then re-bills nothing: an agent run compacts at a lower trigger.
import { parseDuration, type Duration } from '../compaction/options.js';
import { InvalidInputError } from '../errors.js';

/**
 * The trigger, as a share of the budget, an agent run compacts at when its cache has gone cold.
 * Measured with `npm run bench:cost -- --corpus ../shared/corpus --pauses` (bench/cold-cache-figures.md).
 */
export const DEFAULT_COLD_TRIGGER = 0.7;

/**
 * The prompt-cache lifetime of each provider of `agentRun`, the default of `compaction.cacheTtl`:
 * OpenAI keeps a cached prefix for 5 to 10 minutes of inactivity (so 5 is safe); a replayed
 * trajectory stands for the same OpenAI-compatible model. Anthropic's default cache lifetime is 5
 * minutes too.
 */
export const DEFAULT_CACHE_TTL: Readonly<Record<'openai' | 'replay', string>> = { openai: '5m', replay: '5m' };

/** `compaction.cacheTtl`: a duration, or `'off'` for no cold-cache rule. */
export type CacheTtl = Duration | 'off';

/** The rule as a run resolved it: undefined `ttlMs` when it is off. */
export interface ColdCache {
  ttlMs: number | undefined;
  /** The trigger ratio after a pause longer than `ttlMs`. */
  trigger: number;
}

/**
 * Resolves `compaction.cacheTtl` and `compaction.coldTrigger`: the TTL defaults to the shortest of
 * the chain's providers' (each backend may be the one the next request goes to); the cold trigger
 * must be a ratio in (0, `triggerRatio`]. Throws `InvalidInputError` naming the field.
 */
export function resolveColdCache(
  { cacheTtl, coldTrigger }: { cacheTtl?: unknown; coldTrigger?: unknown },
  providers: ReadonlyArray<keyof typeof DEFAULT_CACHE_TTL>,
  triggerRatio: number,
  field: string,
): ColdCache {
  const trigger = coldTrigger ?? Math.min(DEFAULT_COLD_TRIGGER, triggerRatio);
  if (typeof trigger !== 'number' || !(trigger > 0 && trigger <= triggerRatio))
    throw new InvalidInputError(
      `${field}.coldTrigger`,
      `must be a ratio over 0 and at most triggerRatio (${triggerRatio}), got ${JSON.stringify(coldTrigger)}`,
    );
  if (cacheTtl === 'off') return { ttlMs: undefined, trigger };
  if (cacheTtl !== undefined) {
    if (typeof cacheTtl !== 'number' && typeof cacheTtl !== 'string')
      throw new InvalidInputError(
        `${field}.cacheTtl`,
        `must be a duration like "5m" or "off", got ${JSON.stringify(cacheTtl)}`,
      );
    return { ttlMs: parseDuration(cacheTtl, `${field}.cacheTtl`), trigger };
  }
  const ttls = providers.map((provider) => parseDuration(DEFAULT_CACHE_TTL[provider], `${field}.cacheTtl`));
  return { ttlMs: ttls.length === 0 ? undefined : Math.min(...ttls), trigger };
}

/** Whether more than the cache's lifetime has passed between the last model call and `now` (both workflow time, ms). */
export function cacheIsCold(rule: ColdCache, lastModelCallAt: number | undefined, now: number): boolean {
  return rule.ttlMs !== undefined && lastModelCallAt !== undefined && now - lastModelCallAt > rule.ttlMs;
}

/** Options with the cold trigger in place of the trigger (and the low-water mark no higher than it). */
export function withColdTrigger<Options extends { triggerRatio: number; targetRatio: number }>(
  options: Options,
  trigger: number,
): Options {
  return {
    ...options,
    triggerRatio: Math.min(options.triggerRatio, trigger),
    targetRatio: Math.min(options.targetRatio, trigger),
  };
}
