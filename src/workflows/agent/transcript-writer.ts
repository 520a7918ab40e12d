// Sandbox-safe: an agent run's transcript leaving the workflow in batches as `recordSession` inputs
// (docs/design.md#transcript-format), so the run holds only what is not recorded yet.
import {
  ActivityFailure,
  CancellationScope,
  isCancellation,
  log,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { CompactorActivities } from '../../activities/index.js';
import { groupDigits } from '../../core/agent/compaction-history.js';
import type { SessionBatch, SessionLine, SessionReference } from '../../core/agent/session.js';
import { jsonPayloadBytes } from '../../core/limits/payload-size.js';
import { BOOKKEEPING_ACTIVITY } from '../../shared/activity-options.js';
import { failureMessage } from '../../shared/failures.js';
import type { PayloadLimit } from './payload-limit.js';

/**
 * Transcript lines are recorded once this many bytes wait, and always before the run continues as new, ends or fails:
 * inline without a payload store, under the 256 KB a history payload should stay below, yet rarely in a long run.
 */
export const SESSION_BATCH_BYTES = 128 * 1024;

/**
 * The batch size with a payload store: a batch is then a claim whatever its size, and each `recordSession` costs
 * events in history. The waiting lines stay in the workflow's memory, so this is still a bound.
 */
export const STORED_SESSION_BATCH_BYTES = 1024 * 1024;

/** The lines of a run's transcript not recorded yet, and how many were recorded before them (across runs). */
export class TranscriptWriter {
  private unrecorded: SessionLine[] = [];
  /** The JSON size of each line of {@link unrecorded}, measured once when it was written. */
  private unrecordedSizes: number[] = [];

  constructor(
    private recordedLines: number,
    private readonly limit: PayloadLimit,
  ) {}

  get recorded(): number {
    return this.recordedLines;
  }

  get nextLineIndex(): number {
    return this.recordedLines + this.unrecorded.length;
  }

  get pending(): SessionLine[] {
    return this.unrecorded;
  }

  reference(): SessionReference {
    const { workflowId, runId } = workflowInfo();
    return { workflowId, runId, lines: this.recordedLines };
  }

  write(line: SessionLine): void {
    this.unrecorded.push(line);
    this.unrecordedSizes.push(jsonPayloadBytes(line));
  }

  /** Whether enough lines wait for a batch to be recorded at the end of a round. */
  batchIsDue(): boolean {
    const bytes = this.unrecordedSizes.reduce((sum, size) => sum + size, 0);
    return bytes >= (this.limit.externalStorage ? STORED_SESSION_BATCH_BYTES : SESSION_BATCH_BYTES);
  }

  /** Records the waiting lines in batches: recorded once scheduled (as its input); the activity acknowledges it. */
  async record(): Promise<void> {
    // Without a store a batch must travel inline: at most ¾ of the payload limit (one line may be more, and is checked).
    // With a store everything waiting goes as one batch, a claim, within ¾ of what the store holds.
    const batchBytes = this.limit.externalStorage
      ? this.limit.batchBytes()
      : Math.min(SESSION_BATCH_BYTES, this.limit.batchBytes());
    while (this.unrecorded.length > 0) {
      let bytes = 0;
      let count = 0;
      for (const size of this.unrecordedSizes) {
        if (count > 0 && bytes + size > batchBytes) break;
        bytes += size;
        count += 1;
      }
      const batch: SessionBatch = { from: this.recordedLines, lines: this.unrecorded.slice(0, count) };
      this.limit.check(`a batch of ${count} transcript line${count === 1 ? '' : 's'} (from line ${batch.from})`, bytes);
      const { recordSession } = proxyActivities<CompactorActivities>({
        ...BOOKKEEPING_ACTIVITY,
        summary: `session lines ${batch.from}–${batch.from + count - 1} (${groupDigits(bytes)} bytes)`,
      });
      try {
        await recordSession(batch);
      } catch (error) {
        if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
        // The batch is in history as the activity's input whether or not a worker acknowledged it.
        log.warn('recordSession was not acknowledged; the batch is recorded as its input', {
          from: batch.from,
          lines: count,
          error: failureMessage(error),
        });
      }
      this.unrecorded = this.unrecorded.slice(count);
      this.unrecordedSizes = this.unrecordedSizes.slice(count);
      this.recordedLines += count;
    }
  }

  /** Records the transcript even while the run is being cancelled: nothing it wrote is lost. */
  recordNow(): Promise<void> {
    return CancellationScope.nonCancellable(() => this.record());
  }
}
