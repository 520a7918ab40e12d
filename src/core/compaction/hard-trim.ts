// Sandbox-safe: the hard trim (docs/design.md#hard-trim), the fallback of every pass that summarizes.
import type { Aim } from './options.js';
import type { NameReplaced } from './pass.js';
import { trimBoundaries, type Regions } from './regions.js';
import type { ChatMessage } from '../types.js';

/** Drops the oldest middle messages, whole groups at a time, until it fits; cannot fail. Counters are additive: a bisection. */
export function hardTrim(
  messages: readonly ChatMessage[],
  regions: Regions,
  aim: Aim,
  nameReplaced?: NameReplaced,
): { messages: ChatMessage[]; dropped: number; cutIndex: number; trimMarker?: string } {
  const boundaries = [0, ...trimBoundaries(regions)];
  // docs/design.md#recall A marker only when there are ids to name.
  const markerOf = (prefix: number): string => {
    const named = prefix === 0 ? '' : (nameReplaced?.('trim', regions.middle.slice(0, prefix)) ?? '');
    return named === '' ? '' : `[${prefix} earlier messages dropped by the harness to fit the context]${named}`;
  };
  // The middle ascends: a mask and a bound, not a Set per probe (hot at 100k messages).
  const without = (prefix: number): ChatMessage[] => {
    const last = prefix === 0 ? -1 : (regions.middle[prefix - 1] ?? -1);
    const kept = messages.filter((_, index) => index > last || regions.inMiddle[index] !== 1);
    // docs/design.md#recall A trim's marker stands where the first message it dropped stood.
    const text = markerOf(prefix);
    if (text !== '') kept.splice(regions.middle[0] ?? 0, 0, { role: 'user', content: text });
    return kept;
  };
  const fits = (prefix: number): boolean => aim.counter.count(without(prefix)) <= aim.trimTo;
  let low = 0;
  let high = boundaries.length - 1;
  if (!fits(boundaries[low] ?? 0)) {
    // Invariant: boundaries[low] does not fit; boundaries[high] fits or is everything there is to drop.
    while (high - low > 1) {
      const probe = (low + high) >> 1;
      if (fits(boundaries[probe] ?? 0)) high = probe;
      else low = probe;
    }
    low = high;
  }
  const prefix = boundaries[low] ?? 0;
  const trimMarker = markerOf(prefix);
  return {
    messages: without(prefix),
    dropped: prefix,
    cutIndex: prefix === 0 ? -1 : (regions.middle[prefix - 1] ?? -1),
    ...(trimMarker === '' ? {} : { trimMarker }),
  };
}
