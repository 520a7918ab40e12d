// Sandbox-safe: when an agent run continues as new (docs/design.md#continue-as-new): when Temporal suggests it, or
// every `continueAsNewAfterRounds` rounds, never before this run's first round.
import { workflowInfo } from '@temporalio/workflow';

export class Continuation {
  private roundsThisRun = 0;

  /** `continuedAsNew`: how many runs came before this one; `every`: the input's `continueAsNewAfterRounds`. */
  constructor(
    readonly continuedAsNew: number,
    private readonly every: number | undefined,
  ) {}

  roundDone(): void {
    this.roundsThisRun += 1;
  }

  due(): boolean {
    if (this.roundsThisRun === 0) return false;
    return workflowInfo().continueAsNewSuggested || (this.every !== undefined && this.roundsThisRun >= this.every);
  }
}
