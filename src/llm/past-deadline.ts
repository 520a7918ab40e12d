// Sandbox-safe: pure. Says whether a failed summarizer or chat request failed because its deadline
// passed, so that it is sent again smaller rather than as it is (docs/design.md#summarizer-overflow).
// It reads error names, not classes, so that what imports it does not load the OpenAI client.

/**
 * The errors that mean a deadline passed: the adapter's whole-call deadline (`CompletionDeadlineError`,
 * src/llm/openai-adapter.ts) and openai-node's wait for headers (`APIConnectionTimeoutError`).
 */
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
