// Sandbox-safe: the patches of `agentRun` (docs/design.md#economics-patch) — what a long run changed after
// it shipped, each asked of `patched()` once, when first needed, so that a run recorded before a
// patch replays with the behaviour it was recorded with.
import { patched } from '@temporalio/workflow';

/**
 * Gates what a long run changed after it shipped: larger transcript batches with a payload store
 * (`STORED_SESSION_BATCH_BYTES`), and a token-count cache that forgets the texts compaction
 * dropped. A run recorded before them replays with the old batches and cache.
 */
export const LONG_RUN_PATCH_ID = 'temporal-compactor:long-run-v2';

/**
 * Runs that refresh the `ContextTokens` search attribute when the context moved by a tenth of the
 * round's context window (or at a compaction). Before it, the rule was a tenth of the last value:
 * a context that grows by a large tool result each round was upserted every round, one history
 * event each, for a figure that serves to find runs near their window.
 */
export const CONTEXT_TOKENS_PATCH_ID = 'temporal-compactor:context-tokens-window';

/**
 * Runs that bound what a model asks of the tools (docs/design.md#tools): at most
 * `MAX_TOOL_CALLS_PER_TURN` calls of a turn run, `TOOL_CALL_CONCURRENCY` at a time, and arguments
 * over `MAX_TOOL_ARGUMENT_CHARS` or nested deeper than `MAX_TOOL_ARGUMENT_DEPTH` are answered with an
 * error. Asked only at a turn where a bound changes what runs, so runs that never reach one
 * record no marker; a run recorded before it replays scheduling every call at once.
 */
export const TOOL_BOUNDS_PATCH_ID = 'temporal-compactor:tool-bounds-v1';

/**
 * Runs that set the `CompactionPending` search attribute while a compaction waits for
 * `reviewCompaction` (true) and once it is decided (false): two more upserts, new commands. Asked
 * only when a proposal is published on a namespace that has the attribute, so runs without a review
 * (or recorded before the attribute existed) record no marker; a run recorded before it replays
 * without the upserts.
 */
export const REVIEW_ATTRIBUTE_PATCH_ID = 'temporal-compactor:review-search-attribute-v1';

/**
 * Runs with `compaction.recall` whose compactions name what they replaced inside the pass
 * (docs/design.md#recall): the engine's `nameReplaced` hook, so the elision stop, `accepts`, the
 * tighter retry and the trim count the ids, and a hard trim or an edited summary names them too.
 * Before it the loop named the stubs and the summary after the engine had decided. Asked at the
 * first compaction of a run with recall on, so runs without recall record no marker.
 */
export const RECALL_IN_PASS_PATCH_ID = 'temporal-compactor:recall-in-pass-v1';

/**
 * The patches one run has, each asked once, at its first use: `patched()` writes a marker into
 * history where it is first called, so where that is must not move (nor be asked earlier).
 */
export class RunPatches {
  private longRun: boolean | undefined;
  private contextTokens: boolean | undefined;
  private toolBounds: boolean | undefined;
  private reviewAttribute: boolean | undefined;
  private recallInPass: boolean | undefined;

  /** {@link LONG_RUN_PATCH_ID}: asked when a batch size or the token cache first depends on it. */
  longRunV2(): boolean {
    this.longRun ??= patched(LONG_RUN_PATCH_ID);
    return this.longRun;
  }

  /** {@link CONTEXT_TOKENS_PATCH_ID}: asked at the first round's publication of the context size. */
  contextTokensByWindow(): boolean {
    this.contextTokens ??= patched(CONTEXT_TOKENS_PATCH_ID);
    return this.contextTokens;
  }

  /** {@link TOOL_BOUNDS_PATCH_ID}: asked at the first turn where a tool bound changes what runs. */
  toolBoundsV1(): boolean {
    this.toolBounds ??= patched(TOOL_BOUNDS_PATCH_ID);
    return this.toolBounds;
  }

  /** {@link REVIEW_ATTRIBUTE_PATCH_ID}: asked when the first proposal is published where `CompactionPending` exists. */
  reviewAttributeV1(): boolean {
    this.reviewAttribute ??= patched(REVIEW_ATTRIBUTE_PATCH_ID);
    return this.reviewAttribute;
  }

  /** {@link RECALL_IN_PASS_PATCH_ID}: asked at the first compaction of a run with recall on. */
  recallInPassV1(): boolean {
    this.recallInPass ??= patched(RECALL_IN_PASS_PATCH_ID);
    return this.recallInPass;
  }
}
