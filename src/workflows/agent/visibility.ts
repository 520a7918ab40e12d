// Sandbox-safe: what an agent run shows outside itself (docs/design.md#search-attributes): current details, the memo
// and our search attributes, each written only when it changed (an upsert is a history event).
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { setCurrentDetails, upsertMemo, upsertSearchAttributes } from '@temporalio/workflow';
import { renderCompactionDetails, type CompactionHistory } from '../../core/agent/compaction-history.js';
import { COMPACTION_MEMO_KEY, renderCompactionMemo, type MemoEnding } from '../../core/agent/compaction-memo.js';
import { SearchAttributeKeys } from '../../shared/search-attributes.js';
import { uiPayload } from '../../shared/ui-payload.js';

export class RunVisibility {
  /** What the run last published (the context size and the count -1 before the first publication). */
  private published = {
    compactions: -1,
    contextTokens: -1,
    fallbacks: -1,
    exhausted: false,
    pending: false,
    details: '',
  };
  /** The memo as last written ('' before the first), and the compactions it counted (-1 before). */
  private memo = { text: '', compactions: -1 };

  /** Writes the memo when a compaction was added (not every round: a write is a history event), or at `ending`. */
  publishMemo(history: CompactionHistory, ending?: MemoEnding): void {
    const { compactions } = history.totals;
    if (ending === undefined && (compactions === 0 || compactions === this.memo.compactions)) return;
    const text = renderCompactionMemo(history, ending);
    // Marked for the UI: with the payload store on, the table stays in history, not a claim.
    if (text !== this.memo.text) upsertMemo({ [COMPACTION_MEMO_KEY]: uiPayload(text) });
    this.memo = { text, compactions };
  }

  /**
   * Current details (the compaction history and `notes`) and the search attributes in `allowed`, when they changed;
   * `window`: that of the backend `contextTokens` is for; `pending`: a compaction waits for review.
   */
  publish(
    history: CompactionHistory,
    notes: readonly string[],
    allowed: ReadonlySet<string>,
    contextTokens: number | undefined,
    window?: number,
    pending = false,
  ): void {
    const { totals } = history;
    const exhausted = totals.exhausted > 0;
    // Current details are workflow state answered by query, not history: keep them current every round.
    const details = renderCompactionDetails(history, notes);
    if (details !== this.published.details) setCurrentDetails(details);
    this.publishMemo(history);
    const updates: SearchAttributeUpdatePair[] = [];
    if (allowed.has('CompactionCount') && this.published.compactions !== totals.compactions)
      updates.push({ key: SearchAttributeKeys.CompactionCount, value: totals.compactions });
    if (allowed.has('CompactionFallbacks') && this.published.fallbacks !== totals.fallbacks)
      updates.push({ key: SearchAttributeKeys.CompactionFallbacks, value: totals.fallbacks });
    if (allowed.has('ContextExhausted') && (this.published.exhausted !== exhausted || this.published.compactions < 0))
      updates.push({ key: SearchAttributeKeys.ContextExhausted, value: exhausted });
    // The context size moves every round: upsert it when it moved by a tenth of the window (without
    // one, a tenth of itself), or at a compaction, not every round (one history event each).
    const tolerance = window !== undefined ? window / 10 : this.published.contextTokens / 10;
    const moved =
      contextTokens !== undefined &&
      (this.published.contextTokens < 0 || Math.abs(contextTokens - this.published.contextTokens) > tolerance);
    const compacted = this.published.compactions !== totals.compactions;
    const contextTokensNow =
      contextTokens !== undefined && (moved || compacted) ? contextTokens : this.published.contextTokens;
    if (allowed.has('ContextTokens') && contextTokensNow !== this.published.contextTokens)
      updates.push({ key: SearchAttributeKeys.ContextTokens, value: contextTokensNow });
    // docs/design.md#review A proposal waiting is findable in the list (`CompactionPending = true`).
    const pendingNow = pending && allowed.has('CompactionPending');
    if (pendingNow !== this.published.pending)
      updates.push({ key: SearchAttributeKeys.CompactionPending, value: pendingNow });
    this.published = {
      compactions: totals.compactions,
      contextTokens: contextTokensNow,
      fallbacks: totals.fallbacks,
      exhausted,
      pending: pendingNow,
      details,
    };
    if (updates.length > 0) upsertSearchAttributes(updates);
  }
}
