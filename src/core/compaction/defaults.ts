// Sandbox-safe: the defaults every entry point shares (docs/compaction.md#defaults says where one differs, and why).
export const COMPACTION_DEFAULTS = {
  triggerRatio: 0.8,
  targetRatio: 0.5,
  keepRecent: 8,
  toolResultCap: 2000,
  ageObservations: false,
  /** agentRun and the CLI's `compact` keep the task; the library's entry points take {@link LIBRARY_KEEP_TASK}. */
  keepTask: true,
} as const;

/**
 * `keepTask` of `compact()`, `Compactor` and `compactConversation`: their results may be replayed from a
 * session transcript, which knows only the messages' `sticky` flags; a task kept by the option would
 * replay as removed.
 */
export const LIBRARY_KEEP_TASK = false;
