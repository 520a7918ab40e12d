// Sandbox-safe: compaction timed to a cold cache (docs/design.md#cold-cache): after a pause longer than the
// prompt-cache lifetime a compaction re-bills nothing, so an agent run compacts at a lower trigger.
import { parseDuration, type Duration } from '../compaction/options.js';
import { InvalidInputError } from '../errors.js';

/** The trigger ratio once the cache has gone cold (bench/cold-cache-figures.md). */
export const DEFAULT_COLD_TRIGGER = 0.7;

/** Each provider's prompt-cache lifetime: OpenAI keeps a prefix 5 to 10 minutes (replay stands for it). */
export const DEFAULT_CACHE_TTL: Readonly<Record<'openai' | 'replay', string>> = { openai: '5m', replay: '5m' };

export type CacheTtl = Duration | 'off';

/** The rule as a run resolved it: undefined `ttlMs` when it is off. */
export interface ColdCache {
  ttlMs: number | undefined;
  trigger: number;
}

/** Resolves `cacheTtl` (by default the shortest of the chain's providers') and `coldTrigger`. */
export function resolveColdCache(
  { cacheTtl, coldTrigger }: { cacheTtl?: CacheTtl | undefined; coldTrigger?: unknown },
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
  if (cacheTtl !== undefined) return { ttlMs: parseDuration(cacheTtl, `${field}.cacheTtl`), trigger };
  const ttls = providers.map((provider) => parseDuration(DEFAULT_CACHE_TTL[provider], `${field}.cacheTtl`));
  return { ttlMs: ttls.length === 0 ? undefined : Math.min(...ttls), trigger };
}

/** Whether more than the cache's lifetime has passed since the last model call (workflow time). */
export function cacheIsCold(rule: ColdCache, lastModelCallAt: number | undefined, now: number): boolean {
  return rule.ttlMs !== undefined && lastModelCallAt !== undefined && now - lastModelCallAt > rule.ttlMs;
}

/** Options with the cold trigger in place of the trigger (and the target no higher). */
export function withColdTrigger<Options extends { triggerRatio: number; targetRatio: number }>(
  options: Options,
  trigger: number,
): Options {
  const { triggerRatio, targetRatio } = options;
  return { ...options, triggerRatio: Math.min(triggerRatio, trigger), targetRatio: Math.min(targetRatio, trigger) };
}
