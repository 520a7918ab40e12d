// Node only: the inline source map of a prebuilt workflow bundle without the modules that are data,
// not code. gpt-tokenizer's BPE rank tables are one string literal per line: most of the map's
// sourcesContent and mappings (figures: bench/README.md#install). A worker reads, decodes and
// compiles the bundle in its main thread and again in its workflow thread, so every megabyte costs
// its start, and no stack frame ever stops in a table. The tables' text and mappings are left out
// (their names stay in `sources`); the SDK requires the inline map itself, so it is rewritten,
// never removed.

/** Sources a bundle's source map leaves out: the BPE rank tables (data; no frame stops in them). */
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
  // Absolute values of the fields that carry over from segment to segment (and line to line).
  const read = { source: 0, line: 0, column: 0, name: 0 };
  const written = { source: 0, line: 0, column: 0, name: 0 };
  return mappings
    .split(';')
    .map((line) => {
      let readColumn = 0;
      let writtenColumn = 0;
      const kept: string[] = [];
      for (const segment of line.split(',')) {
        if (segment === '') continue;
        const [column = 0, source, originalLine, originalColumn, name] = decodeSegment(segment);
        readColumn += column;
        if (source !== undefined) {
          read.source += source;
          read.line += originalLine ?? 0;
          read.column += originalColumn ?? 0;
          if (name !== undefined) read.name += name;
          if (dropped.has(read.source)) continue;
        }
        let text = encodeValue(readColumn - writtenColumn);
        writtenColumn = readColumn;
        if (source !== undefined) {
          text += encodeValue(read.source - written.source);
          text += encodeValue(read.line - written.line);
          text += encodeValue(read.column - written.column);
          written.source = read.source;
          written.line = read.line;
          written.column = read.column;
          if (name !== undefined) {
            text += encodeValue(read.name - written.name);
            written.name = read.name;
          }
        }
        kept.push(text);
      }
      return kept.join(',');
    })
    .join(';');
}

/**
 * `code` with the text (sourcesContent set to null) and the mappings of {@link DATA_SOURCES} left
 * out of its inline source map, and those sources' names; `code` itself when none is there or they
 * are left out already.
 * @throws BundleSourceMapError when the bundle has no inline base64 source map, or one that is not
 * a source map (its mappings, sources and sourcesContent), naming what was found.
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
  const field = (name: string): unknown =>
    typeof parsed === 'object' && parsed !== null ? Reflect.get(parsed, name) : undefined;
  const sources = field('sources');
  const contents = field('sourcesContent');
  const mappings = field('mappings');
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    typeof mappings !== 'string' ||
    !Array.isArray(sources) ||
    !Array.isArray(contents) ||
    contents.length !== sources.length
  )
    throw new BundleSourceMapError(
      `the workflow bundle's inline source map has no mappings, or no sources and sourcesContent of one length (mappings: ${typeof mappings}, sources: ${Array.isArray(sources) ? sources.length : typeof sources}, sourcesContent: ${Array.isArray(contents) ? contents.length : typeof contents})`,
    );
  const dropped = new Set<number>();
  sources.forEach((source: unknown, index) => {
    if (typeof source === 'string' && DATA_SOURCES.test(source)) dropped.add(index);
  });
  const rewritten = dropped.size === 0 ? mappings : mappingsWithout(mappings, dropped);
  const left = [...dropped].filter((index) => contents[index] !== null || rewritten !== mappings);
  if (left.length === 0) return { code, left: [] };
  for (const index of dropped) contents[index] = null;
  Reflect.set(parsed, 'mappings', rewritten);
  return {
    code: code.slice(0, start) + Buffer.from(JSON.stringify(parsed)).toString('base64') + code.slice(end),
    left: [...dropped].map((index) => String(sources[index])),
  };
}
