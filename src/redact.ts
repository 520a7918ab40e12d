// Node only: secrets taken out of text. A provider may quote the key it was sent in an error, and an
// endpoint may carry a password in its URL; failures go to history, the UI and logs, start lines to logs.

export const REDACTED = '[redacted]';

/** `text` with every occurrence of a secret replaced by {@link REDACTED}, the longest secrets first. */
export function redactText(text: string, secrets: readonly string[]): string {
  let redacted = text;
  for (const secret of [...secrets].sort((left, right) => right.length - left.length))
    redacted = redacted.split(secret).join(REDACTED);
  return redacted;
}

const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;

/** One URL with its userinfo and query values redacted; its scheme, host, port and path kept. */
function redactUrl(url: string): string {
  const redactPair = (pair: string): string => (pair.includes('=') ? pair.replace(/=.*/, `=${REDACTED}`) : REDACTED);
  return url
    .replace(/^([^:]+:\/\/)[^/?#]*@/, `$1${REDACTED}@`)
    .replace(/\?[^#]*/, (query) => `?${query.slice(1).split('&').map(redactPair).join('&')}`);
}

/** `text` with the userinfo and query values of every URL redacted: `https://[redacted]@host/v1?key=[redacted]`. */
export function redactUrls(text: string): string {
  return text.replace(URL_IN_TEXT, redactUrl);
}

/** Takes `secrets` and URL credentials out of an error's and its causes' messages and stacks, in place. */
export function redactFailure<T>(error: T, secrets: readonly string[]): T {
  const seen = new Set<unknown>();
  for (let current: unknown = error; current instanceof Error && !seen.has(current); current = current.cause) {
    seen.add(current);
    // Written only when something was found: some errors in a cause chain (an abort's DOMException)
    // have a read-only message, and assigning it would throw a TypeError in place of the failure.
    for (const key of ['message', 'stack'] as const) {
      const text = current[key] ?? '';
      const redacted = redactUrls(redactText(text, secrets));
      if (redacted !== text) current[key] = redacted;
    }
  }
  return error;
}
