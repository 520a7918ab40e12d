// Sandbox-safe: a summarizer or data converter remembers how it was made, so a worker's start line can say
// which model, endpoint, store and codec it uses however it was handed them.

const descriptions = new WeakMap<object, string>();

/** `thing`, remembered as `description` (one phrase, credentials already redacted). */
export function describedAs<T extends object>(thing: T, description: string): T {
  descriptions.set(thing, description);
  return thing;
}

/** How `thing` was described when it was built, else `otherwise` (one the caller made itself). */
export function descriptionOf(thing: object, otherwise: string): string {
  return descriptions.get(thing) ?? otherwise;
}
