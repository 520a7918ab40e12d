// Sandbox-safe, pure: a backend of an agent run's chain that failed a round rests, so a backend that is
// down costs its retries once, not every round (docs/design.md#agent-run).

/** How a backend of the chain has fared, and until when it rests (not tried first); null: not resting. */
export interface BackendStatus {
  label: string;
  failedRounds: number;
  restingUntilRound: number | null;
  /** Workflow time, ms since the epoch. */
  restingUntilTime: number | null;
}

/** How long a failed backend rests (`rounds` 0: no cooldown). */
export interface Cooldown {
  rounds: number;
  timeMs: number | undefined;
}

export function freshBackendStatus(label: string): BackendStatus {
  return { label, failedRounds: 0, restingUntilRound: null, restingUntilTime: null };
}

/** Whether a backend rests in `round`: its cooldown of rounds, or time when set, whichever ends first. */
export function isResting(status: BackendStatus | undefined, round: number, now: () => number): boolean {
  if (status === undefined || status.restingUntilRound === null || round >= status.restingUntilRound) return false;
  return status.restingUntilTime === null || now() < status.restingUntilTime;
}

/** Counts a failed round and starts the backend's rest, in place. */
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
