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
  const start = url.indexOf('://') + 3;
  const authorityEnd = url.slice(start).search(/[/?#]/);
  const authority = authorityEnd < 0 ? url.slice(start) : url.slice(start, start + authorityEnd);
  const at = authority.lastIndexOf('@');
  const host = at < 0 ? authority : `${REDACTED}@${authority.slice(at + 1)}`;
  const rest = url.slice(start + authority.length);
  const queryStart = rest.indexOf('?');
  if (queryStart < 0) return `${url.slice(0, start)}${host}${rest}`;
  const fragmentStart = rest.indexOf('#', queryStart);
  const query = rest.slice(queryStart + 1, fragmentStart < 0 ? undefined : fragmentStart);
  const fragment = fragmentStart < 0 ? '' : rest.slice(fragmentStart);
  const values = query
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      return equals < 0 ? REDACTED : `${pair.slice(0, equals)}=${REDACTED}`;
    })
    .join('&');
  return `${url.slice(0, start)}${host}${rest.slice(0, queryStart)}?${values}${fragment}`;
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
    const message = redactUrls(redactText(current.message, secrets));
    if (message !== current.message) current.message = message;
    if (current.stack !== undefined) {
      const stack = redactUrls(redactText(current.stack, secrets));
      if (stack !== current.stack) current.stack = stack;
    }
  }
  return error;
}
