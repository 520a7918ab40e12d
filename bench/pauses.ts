// Node: the pauses bench:cost --pauses lays over the corpus trajectories (docs/design.md#cold-cache).
// The recorded trajectories carry no timing, so the time before each request is drawn from a stated
// distribution with a seeded generator: the same seed gives every policy the same pauses.

/** A time before one request, in milliseconds, and where it came from. */
export interface Pause {
  ms: number;
  kind: 'turn' | 'wait';
}

/**
 * The distribution, as published in bench/cold-cache-figures.md. Before each request:
 * - with probability 1 − `WAIT_SHARE`, an ordinary turn: the model's answer and the tool run, uniform
 *   in [`TURN_MIN_MS`, `TURN_MAX_MS`];
 * - with probability `WAIT_SHARE`, a wait: a person in the loop, a review (`review: 'approve'`), a
 *   long tool run; log-uniform in [`WAIT_MIN_MS`, `WAIT_MAX_MS`] (as likely to be 1–10 min as
 *   10–100 min).
 */
export const PAUSE_DISTRIBUTION = {
  WAIT_SHARE: 0.15,
  TURN_MIN_MS: 2_000,
  TURN_MAX_MS: 60_000,
  WAIT_MIN_MS: 60_000,
  WAIT_MAX_MS: 2 * 3_600_000,
} as const;

/** Mulberry32: a small seeded generator of numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** FNV-1a of a name: each trajectory's pauses depend on the seed and its name, not on the order it runs in. */
function hashName(name: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < name.length; index += 1) {
    hash ^= name.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The pauses before a trajectory's `requests` requests (the first one's is the time since the run started). */
export function pausesFor(name: string, requests: number, seed: number): Pause[] {
  const random = seededRandom(hashName(name) ^ seed);
  const { WAIT_SHARE, TURN_MIN_MS, TURN_MAX_MS, WAIT_MIN_MS, WAIT_MAX_MS } = PAUSE_DISTRIBUTION;
  return Array.from({ length: requests }, (): Pause => {
    if (random() >= WAIT_SHARE) return { ms: TURN_MIN_MS + random() * (TURN_MAX_MS - TURN_MIN_MS), kind: 'turn' };
    return { ms: WAIT_MIN_MS * (WAIT_MAX_MS / WAIT_MIN_MS) ** random(), kind: 'wait' };
  });
}

/** The distribution in words, for the figures page. */
export function describePauses(): string {
  const { WAIT_SHARE, TURN_MIN_MS, TURN_MAX_MS, WAIT_MIN_MS, WAIT_MAX_MS } = PAUSE_DISTRIBUTION;
  return `before each request, with probability ${1 - WAIT_SHARE} an ordinary turn (the model's answer and the tool run) uniform in ${TURN_MIN_MS / 1000}–${TURN_MAX_MS / 1000} s, and with probability ${WAIT_SHARE} a wait (a person in the loop, a review, a long tool run) log-uniform in ${WAIT_MIN_MS / 60_000} min–${WAIT_MAX_MS / 3_600_000} h`;
}
