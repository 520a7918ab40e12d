// Sandbox-safe: the search attributes an agent run sets, shared by the workflow (which upserts
// them), the activity that tells it which ones the namespace has, and the worker and the dev
// server (which register them).
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Typed keys for `upsertSearchAttributes`. */
export const SearchAttributeKeys = {
  CompactionCount: defineSearchAttributeKey('CompactionCount', SearchAttributeType.INT),
  ContextTokens: defineSearchAttributeKey('ContextTokens', SearchAttributeType.INT),
  CompactionFallbacks: defineSearchAttributeKey('CompactionFallbacks', SearchAttributeType.INT),
  ContextExhausted: defineSearchAttributeKey('ContextExhausted', SearchAttributeType.BOOL),
  /** True while a compaction waits for `reviewCompaction` (`compaction.review: 'approve'`), false once decided. */
  CompactionPending: defineSearchAttributeKey('CompactionPending', SearchAttributeType.BOOL),
} as const;

/** Our search attributes and their types. Register them with `temporal operator search-attribute create`. */
export const COMPACTOR_SEARCH_ATTRIBUTES: Readonly<Record<string, SearchAttributeType>> = Object.fromEntries(
  Object.values(SearchAttributeKeys).map(({ name, type }) => [name, type]),
);
