// Node only: the worker's API keys taken out of failures. A provider may quote the key
// it was sent in an error message (some OpenAI-compatible proxies do); an activity's failure is
// written to workflow history, shown in the UI and logged by the worker, so a key in it would leak
// to everyone who can read the namespace.

/** What a secret is replaced with. */
export const REDACTED = '[redacted]';

/** The environment variables that hold the worker's secrets. */
export const SECRET_VARIABLES = ['OPENAI_API_KEY', 'TEMPORAL_API_KEY'] as const;

/** Shorter values are not treated as secrets: placeholders such as `unused` would be replaced everywhere. */
const MIN_SECRET_LENGTH = 8;

/** The secret values to keep out of failures: the worker's keys from `env`, plus `extra` (a client's own key). */
export function workerSecrets(
  extra: ReadonlyArray<string | null | undefined> = [],
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  const values = [...SECRET_VARIABLES.map((name) => env[name]?.trim()), ...extra.map((value) => value?.trim())];
  return [
    ...new Set(values.filter((value): value is string => value !== undefined && value.length >= MIN_SECRET_LENGTH)),
  ];
}

/** `text` with every occurrence of a secret replaced by {@link REDACTED}. */
export function redactText(text: string, secrets: readonly string[]): string {
  let redacted = text;
  for (const secret of secrets) redacted = redacted.split(secret).join(REDACTED);
  return redacted;
}

/**
 * Takes `secrets` out of an error's message and stack and those of its causes, in place (the
 * failure keeps its type, details and retry hints), and returns it.
 */
export function redactFailure<T>(error: T, secrets: readonly string[] = workerSecrets()): T {
  if (secrets.length === 0) return error;
  const seen = new Set<unknown>();
  for (let current: unknown = error; current instanceof Error && !seen.has(current); current = current.cause) {
    seen.add(current);
    // Written only when a secret was found: some errors in a cause chain (an abort's DOMException)
    // have a read-only message, and assigning it would throw a TypeError in place of the failure.
    const message = redactText(current.message, secrets);
    if (message !== current.message) current.message = message;
    if (current.stack !== undefined) {
      const stack = redactText(current.stack, secrets);
      if (stack !== current.stack) current.stack = stack;
    }
  }
  return error;
}
