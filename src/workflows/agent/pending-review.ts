// Sandbox-safe: an agent run's compaction waiting for `reviewCompaction` (docs/design.md#review), decided by a person
// or by its timeout.
import { condition } from '@temporalio/workflow';
import {
  parseReviewInput,
  type CompactionProposal,
  type ReviewAnswer,
  type ReviewCompactionInput,
} from '../../core/agent/steering.js';
import { InvalidInputError } from '../../core/errors.js';

export class PendingReview {
  private pending: { proposal: CompactionProposal; decision: ReviewCompactionInput | undefined } | undefined;

  /** `changed` is told when a proposal starts or stops waiting (it shows in the current details). */
  constructor(private readonly changed: () => void) {}

  /** The `pendingCompaction` query. */
  get proposal(): CompactionProposal | undefined {
    return this.pending?.proposal;
  }

  /** Publishes `proposal` and waits, durably, for `reviewCompaction` or `timeoutMs` (undefined: the time ran out). */
  async decision(
    proposal: CompactionProposal,
    timeoutMs: number,
    summary: string,
  ): Promise<ReviewCompactionInput | undefined> {
    this.pending = { proposal, decision: undefined };
    this.changed();
    const pending = this.pending;
    const answered = await condition(() => pending.decision !== undefined, timeoutMs, { summary });
    this.pending = undefined;
    this.changed();
    return answered ? pending.decision : undefined;
  }

  /** Checks a `reviewCompaction` argument against the proposal waiting. */
  check(input: unknown): ReviewCompactionInput {
    if (this.pending?.decision !== undefined)
      throw new InvalidInputError('reviewCompaction', 'the compaction waiting was reviewed already');
    return parseReviewInput(input, this.pending?.proposal);
  }

  /** The `reviewCompaction` update's handler: the loop, waiting in {@link decision}, goes on with it. */
  decide(input: ReviewCompactionInput): ReviewAnswer {
    const { pending } = this;
    if (pending === undefined)
      throw new Error('unreachable: reviewCompaction without a proposal (its validator checks)');
    pending.decision = input;
    return { decision: input.decision, round: pending.proposal.round };
  }
}
