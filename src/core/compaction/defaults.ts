// Sandbox-safe: the defaults of a compaction, in one place — `compact()`, `Compactor`,
// `compactConversation`, `agentRun` and the CLI's `compact` all take theirs from here
// (docs/compaction.md#defaults says where one differs, and why).

/** The defaults every entry point shares. */
export const COMPACTION_DEFAULTS = {
  /** Compact over 0.8 × contextBudget. */
  triggerRatio: 0.8,
  /** Aim at 0.5 × contextBudget. */
  targetRatio: 0.5,
  /** The last 8 messages kept verbatim. */
  keepRecent: 8,
  /** Tool results cut to 2,000 characters in the summarizer's transcript. */
  toolResultCap: 2000,
  /** Dead tool output is not elided unless asked for (off: byte-identical to no elision). */
  ageObservations: false,
  /**
   * The task — the first user message — is kept verbatim through every compaction, as a sticky
   * message is: by agentRun (input.keepTask) and the CLI's `compact`. The library's own entry points
   * (`compact()`, `Compactor`, `compactConversation`) differ: see {@link LIBRARY_KEEP_TASK}.
   */
  keepTask: true,
} as const;

/**
 * `keepTask` of `compact()`, `Compactor` and `compactConversation` unless asked: off. Their results
 * may be recorded in a session transcript, whose replay (`replaySession`) tells what a compaction
 * removed from the messages' own `sticky` flags; a task kept by the option, not by a flag, would
 * replay as removed. Mark the task `sticky`, or pass `keepTask: true` when no transcript replays
 * the result (docs/compaction.md#defaults).
 */
export const LIBRARY_KEEP_TASK = false;
