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

/** `keepTask` of `compact()`, `Compactor`, `compactConversation`: a session transcript's replay knows only `sticky` flags. */
export const LIBRARY_KEEP_TASK = false;
