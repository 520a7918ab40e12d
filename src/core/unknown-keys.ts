// Sandbox-safe: unknown keys in options and inputs, refused with the closest known name: a typo must not run.
import { InvalidInputError } from './errors.js';

/** The keys of an options type as a list the compiler keeps complete: `keysOf<T>({ a: true, b: true })`. */
export function keysOf<T extends object>(keys: { readonly [K in keyof Required<T>]: true }): ReadonlyArray<
  keyof T & string
> {
  return Object.keys(keys).filter((key): key is keyof T & string => key in keys);
}

/** The edit distance (insertions, deletions, substitutions, and swaps of two neighbours) between two names. */
export function editDistance(a: string, b: string): number {
  // Optimal string alignment: a swapped pair of letters (`keepRecnet`) is one edit, as people make it.
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i += 1) {
    const row = rows[i] ?? [];
    const previous = rows[i - 1] ?? [];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, (rows[i - 2]?.[j - 2] ?? 0) + 1);
      row[j] = best;
    }
  }
  return rows[a.length]?.[b.length] ?? Math.max(a.length, b.length);
}

/** The same name in another case or spelling, else the closest within a third of its length in edits (1 to 3). */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const folded = fold(name);
  const sameWord = known.find((candidate) => fold(candidate) === folded);
  if (sameWord !== undefined) return sameWord;
  const limit = Math.min(3, Math.max(1, Math.floor(name.length / 3)));
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

/** Lower case without separators: `keep_recent`, `keep-recent` and `KeepRecent` are one word. */
function fold(name: string): string {
  return name.toLowerCase().replace(/[-_\s]/g, '');
}

export type UnknownKeyKind = 'option' | 'field';

/** `unknown option; did you mean keepRecent?`, or the known names when none is close (when there are any). */
export function unknownKeyReason(key: string, known: readonly string[], kind: UnknownKeyKind = 'option'): string {
  if (known.length === 0) return `unknown ${kind}`;
  const closest = closestName(key, known);
  if (closest !== undefined) return `unknown ${kind}; did you mean ${closest}?`;
  return `unknown ${kind}; the ${kind}s are ${known.join(', ')}`;
}

/** Refuses the first unknown key of a plain object, naming `${field}.${key}` and the closest known name. */
export function assertKnownKeys(
  value: unknown,
  known: readonly string[],
  field: string,
  kind: UnknownKeyKind = 'option',
): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
  const key = Object.keys(value).find((name) => !known.includes(name));
  if (key !== undefined) throw new InvalidInputError(`${field}.${key}`, unknownKeyReason(key, known, kind));
}
