// Sandbox-safe: the time of the workflow task, for what an agent run schedules by the clock.

/** Workflow time in ms: the sandbox's `Date` is the workflow task's time, the same on replay. */
export function workflowTime(): number {
  // eslint-disable-next-line no-restricted-properties -- workflow time, not the machine's clock
  return Date.now();
}
