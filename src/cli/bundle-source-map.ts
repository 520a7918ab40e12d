// Node only: the inline source map of a prebuilt workflow bundle without gpt-tokenizer's BPE rank
// tables, which are data: most of the map (bench/README.md#install), where no stack frame stops. A
// worker decodes and compiles the bundle twice as it starts, so every megabyte costs. The SDK
// requires the inline map, so it is rewritten, never removed; the tables' names stay in `sources`.
import { isRecord } from '../core/schema.js';

/** The BPE rank tables' sources. */
const DATA_SOURCES = /[\\/]gpt-tokenizer[\\/](?:[^\\/]+[\\/])?bpeRanks[\\/][^\\/]+\.[cm]?[jt]s$/;

/** Where a bundle's inline source map starts (webpack's `inline-source-map`, as the SDK's bundler sets it). */
const INLINE_MAP = '\n//# sourceMappingURL=data:application/json;';

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64_VALUE = new Map([...BASE64].map((char, value) => [char, value]));

export class BundleSourceMapError extends Error {
  override readonly name = 'BundleSourceMapError';
}

/** One mapping segment's base64 VLQ fields (relative values, as written). */
function decodeSegment(segment: string): number[] {
  const fields: number[] = [];
  let value = 0;
  let shift = 0;
  for (const char of segment) {
    const digit = BASE64_VALUE.get(char);
    if (digit === undefined)
      throw new BundleSourceMapError(`the source map's mappings hold ${JSON.stringify(char)}, not base64 VLQ`);
    value += (digit & 31) * 2 ** shift;
    if ((digit & 32) !== 0) shift += 5;
    else {
      fields.push(value % 2 === 1 ? -(value - 1) / 2 : value / 2);
      value = 0;
      shift = 0;
    }
  }
  return fields;
}

function encodeValue(value: number): string {
  let rest = value < 0 ? -value * 2 + 1 : value * 2;
  let text = '';
  do {
    const digit = rest % 32;
    rest = Math.floor(rest / 32);
    text += BASE64[rest > 0 ? digit + 32 : digit] ?? '';
  } while (rest > 0);
  return text;
}

/**
 * `mappings` without the segments that map into a source of `dropped` (by index); every other
 * segment keeps its generated and original position (the relative fields are written anew).
 */
export function mappingsWithout(mappings: string, dropped: ReadonlySet<number>): string {
  // Absolute source, line, column and name: they carry over from segment to segment (and line to line).
  const read = [0, 0, 0, 0];
  const written = [0, 0, 0, 0];
  return mappings
    .split(';')
    .map((line) => {
      let readColumn = 0;
      let writtenColumn = 0;
      const kept: string[] = [];
      for (const segment of line.split(',')) {
        if (segment === '') continue;
        const [column = 0, ...fields] = decodeSegment(segment);
        readColumn += column;
        // A segment with a source has its line and column (a malformed one counts them 0).
        const deltas = fields.length === 0 ? [] : [0, 1, 2, ...(fields.length > 3 ? [3] : [])];
        for (const field of deltas) read[field] = (read[field] ?? 0) + (fields[field] ?? 0);
        if (deltas.length > 0 && dropped.has(read[0] ?? 0)) continue;
        let text = encodeValue(readColumn - writtenColumn);
        writtenColumn = readColumn;
        for (const field of deltas) {
          text += encodeValue((read[field] ?? 0) - (written[field] ?? 0));
          written[field] = read[field] ?? 0;
        }
        kept.push(text);
      }
      return kept.join(',');
    })
    .join(';');
}

/**
 * `code` with the text (sourcesContent null) and the mappings of {@link DATA_SOURCES} left out of its
 * inline source map, and those sources' names; `code` itself when none is there or they are out already.
 * @throws BundleSourceMapError when there is no inline base64 source map, or it is not one, naming what was found.
 */
export function withoutDataSources(code: string): { code: string; left: string[] } {
  const at = code.lastIndexOf(INLINE_MAP);
  const base64 = at < 0 ? -1 : code.indexOf('base64,', at);
  const lineEnd = at < 0 ? -1 : code.indexOf('\n', at + 1);
  const end = lineEnd < 0 ? code.length : lineEnd;
  if (at < 0 || base64 < 0 || base64 > end || code.slice(end).trim() !== '')
    throw new BundleSourceMapError(
      `the workflow bundle ends without an inline base64 source map (${JSON.stringify(INLINE_MAP.trim())}…base64,…); found ${JSON.stringify(code.slice(-120))}`,
    );
  const start = base64 + 'base64,'.length;
  const parsed: unknown = JSON.parse(Buffer.from(code.slice(start, end), 'base64').toString('utf8'));
  const map = isRecord(parsed) ? parsed : {};
  const { sources, sourcesContent: contents, mappings } = map;
  if (
    typeof mappings !== 'string' ||
    !Array.isArray(sources) ||
    !Array.isArray(contents) ||
    contents.length !== sources.length
  )
    throw new BundleSourceMapError(
      `the workflow bundle's inline source map has no mappings, or no sources and sourcesContent of one length (mappings: ${typeof mappings}, sources: ${Array.isArray(sources) ? sources.length : typeof sources}, sourcesContent: ${Array.isArray(contents) ? contents.length : typeof contents})`,
    );
  const dropped = new Set(
    sources.flatMap((source: unknown, index) =>
      typeof source === 'string' && DATA_SOURCES.test(source) ? [index] : [],
    ),
  );
  const rewritten = dropped.size === 0 ? mappings : mappingsWithout(mappings, dropped);
  const left = [...dropped].filter((index) => contents[index] !== null || rewritten !== mappings);
  if (left.length === 0) return { code, left: [] };
  for (const index of dropped) contents[index] = null;
  map.mappings = rewritten;
  return {
    code: code.slice(0, start) + Buffer.from(JSON.stringify(map)).toString('base64') + code.slice(end),
    left: [...dropped].map((index) => String(sources[index])),
  };
}
