// Sandbox-safe: the backends of an agent run's chain (docs/design.md#cooldown): each one's calibrated counter, which a
// round may try (one that failed a round rests), and how often a round fell back to the next one.
import type { AgentRunPlan } from '../../core/agent/agent-input.js';
import {
  freshBackendStatus,
  isResting,
  restingNote,
  startRest,
  type BackendStatus,
} from '../../core/agent/backend-cooldown.js';
import type { AgentRunCarried } from '../../core/agent/carried-state.js';
import { backendCounter, type BackendCounter } from '../../core/agent/preflight.js';
import type { UsageCounterState } from '../../core/counting/usage-counter.js';
import type { TokenCache } from './token-cache.js';
import { workflowTime } from './workflow-time.js';

export class BackendChain {
  private readonly counters: BackendCounter[];
  /** How each backend has fared, in chain order (the run's state: carried and returned as it is). */
  readonly backends: BackendStatus[];
  private fallbacks: number;

  constructor(
    private readonly plan: AgentRunPlan,
    tokens: TokenCache,
    carried: Pick<AgentRunCarried, 'counters' | 'backends' | 'backendFallbacks'> | undefined,
  ) {
    this.fallbacks = carried?.backendFallbacks ?? 0;
    this.backends = plan.backends.map(
      (backend) => carried?.backends[backend.index] ?? freshBackendStatus(backend.label),
    );
    this.counters = plan.backends.map((backend) => {
      const calibration = carried?.counters[backend.index] ?? null;
      return backendCounter(backend, plan.tools, calibration, tokens.countsFor(backend.tokenizer));
    });
  }

  get hasChoice(): boolean {
    return this.backends.length > 1;
  }

  get backendFallbacks(): number {
    return this.fallbacks;
  }

  counterStates(): Array<UsageCounterState | null> {
    return this.counters.map((counter) => counter.usage.toJSON());
  }

  /** The backends round `round` may try: those that have not `failed` it, resting ones only when no other is left. */
  candidates(failed: ReadonlySet<number>, round: number): BackendCounter[] {
    const available = this.counters.filter((counter) => !failed.has(counter.backend.index));
    const rested = available.filter((counter) => !this.isResting(counter.backend.index, round));
    return rested.length > 0 ? rested : available;
  }

  /** A backend failed round `round` after its retries (`failed`: all that did): it rests; the round falls back. */
  fail(index: number, failed: ReadonlySet<number>, round: number): void {
    const status = this.backends[index];
    if (status !== undefined) startRest(status, this.plan.backendCooldown, round, workflowTime);
    if (failed.size < this.counters.length) this.fallbacks += 1;
  }

  /** `Resting: …` for the backends that rest in round `round`, or ''. */
  restingNote(round: number): string {
    return restingNote(this.backends.filter((_, index) => this.isResting(index, round)));
  }

  /** docs/design.md#cooldown */
  private isResting(index: number, round: number): boolean {
    return isResting(this.backends[index], round, workflowTime);
  }
}
