// Sandbox-safe: the time of the workflow task, for what an agent run schedules by the clock (a
// backend's cooldown, a review's deadline).

/**
 * Workflow time in ms: the sandbox replaces `Date` with the time of the workflow task, the same
 * on replay, so this is deterministic (the lint rule against clocks is for the pure core).
 */
export function workflowTime(): number {
  // eslint-disable-next-line no-restricted-properties -- workflow time, not the machine's clock (see above)
  return Date.now();
}
