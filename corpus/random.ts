// Dev-only and pure (tests and benchmarks; src/ never imports corpus/): a small seeded PRNG, so
// that generated trajectories are the same bytes on every machine and every run — no
// Math.random, no clock.

/** A deterministic source of choices. */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  /** One item of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** True with probability `probability`. */
  chance(probability: number): boolean;
  /** A copy of `items` in a random order. */
  shuffled<T>(items: readonly T[]): T[];
}

/** FNV-1a (32 bits) of a string: how a trajectory's name becomes its seed. */
export function seedOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * mulberry32 seeded by a number, or by a string through {@link seedOf}. Small, fast and good
 * enough for test content; not for anything that needs unpredictability.
 */
export function createRandom(seed: number | string): Random {
  let state = (typeof seed === 'string' ? seedOf(seed) : seed) >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    pick<T>(items: readonly T[]): T {
      const item = items[Math.floor(next() * items.length)];
      if (item === undefined) throw new RangeError('pick: the list is empty');
      return item;
    },
    chance: (probability) => next() < probability,
    shuffled<T>(items: readonly T[]): T[] {
      const copy = [...items];
      for (let index = copy.length - 1; index > 0; index -= 1) {
        const other = int(0, index);
        const held = copy[index];
        const swapped = copy[other];
        if (held === undefined || swapped === undefined) continue;
        copy[index] = swapped;
        copy[other] = held;
      }
      return copy;
    },
  };
}
