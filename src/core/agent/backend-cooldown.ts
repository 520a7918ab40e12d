// Sandbox-safe: how the backends of an agent run's chain fare (docs/design.md#agent-run) — a
// backend that failed a round rests, so a backend that is down costs its retries once, not every
// round. Pure: the caller gives the round and the (workflow) time.

/** How a backend of the chain has fared: rounds it failed, and until when it rests (not tried first). */
export interface BackendStatus {
  label: string;
  /** Rounds in which it failed after its retries. */
  failedRounds: number;
  /** It is not tried first before this round (1-based); null when it is not resting. */
  restingUntilRound: number | null;
  /** Nor before this time (ms since the epoch, workflow time), when the cooldown has a time; else null. */
  restingUntilTime: number | null;
}

/** How long a failed backend rests: rounds (0: no cooldown), and milliseconds when the cooldown has a time. */
export interface Cooldown {
  rounds: number;
  timeMs: number | undefined;
}

/** A backend that has not failed yet. */
export function freshBackendStatus(label: string): BackendStatus {
  return { label, failedRounds: 0, restingUntilRound: null, restingUntilTime: null };
}

/** Whether a backend rests in round `round`: its cooldown (rounds, or time when set, whichever ends first) runs. */
export function isResting(status: BackendStatus | undefined, round: number, now: () => number): boolean {
  if (status === undefined || status.restingUntilRound === null) return false;
  if (round >= status.restingUntilRound) return false;
  return status.restingUntilTime === null || now() < status.restingUntilTime;
}

/** Counts a failed round against the backend and starts its rest (in place: the status is the run's state). */
export function startRest(status: BackendStatus, cooldown: Cooldown, round: number, now: () => number): void {
  const { rounds, timeMs } = cooldown;
  status.failedRounds += 1;
  status.restingUntilRound = rounds > 0 ? round + rounds : null;
  status.restingUntilTime = rounds > 0 && timeMs !== undefined ? now() + timeMs : null;
}

/** `Resting: openai:gpt-4o until round 12 (2 failed rounds)`, or '' when none of `resting` rests. */
export function restingNote(resting: readonly BackendStatus[]): string {
  if (resting.length === 0) return '';
  return `Resting: ${resting.map((status) => `${status.label} until round ${status.restingUntilRound ?? '?'} (${status.failedRounds} failed round${status.failedRounds === 1 ? '' : 's'})`).join(', ')}`;
}
