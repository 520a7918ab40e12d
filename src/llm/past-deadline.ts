// Sandbox-safe: pure. Whether a request failed because its deadline passed, so it is sent again smaller
// (docs/design.md#summarizer-overflow). Reads error names, not classes: no OpenAI client is loaded.

/** The adapter's whole-call deadline and openai-node's wait for headers. */
const DEADLINE_ERRORS: ReadonlySet<string> = new Set(['CompletionDeadlineError', 'APIConnectionTimeoutError']);

/** How many `cause` links are followed (a `SummarizerError` wraps the client's error). */
const MAX_CAUSE_DEPTH = 4;

/** True when `error`, or an error in its `cause` chain, says a request's deadline passed. */
export function pastDeadline(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && current instanceof Error; depth += 1) {
    if (DEADLINE_ERRORS.has(current.name) || DEADLINE_ERRORS.has(current.constructor.name)) return true;
    current = current.cause;
  }
  return false;
}
