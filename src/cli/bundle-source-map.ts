// Node only: the inline source map of a prebuilt workflow bundle without the sources of modules that
// are data, not code. gpt-tokenizer's BPE rank tables are one string literal per line, 3.3 MB of
// the map's sourcesContent (base64: 4.4 MB of the file); a worker reads, decodes and compiles the
// bundle in its main thread and again in its workflow thread, so every megabyte costs its start.
// Their mappings stay (a stack frame in them still maps to its file and line); the SDK requires the
// inline map itself, so it is rewritten, never removed.

/** Sources whose text a bundle's source map leaves out: the BPE rank tables (data; no frame stops in them). */
const DATA_SOURCES = /[\\/]gpt-tokenizer[\\/](?:[^\\/]+[\\/])?bpeRanks[\\/][^\\/]+\.[cm]?[jt]s$/;

/** Where a bundle's inline source map starts (webpack's `inline-source-map`, as the SDK's bundler sets it). */
const INLINE_MAP = '\n//# sourceMappingURL=data:application/json;';

export class BundleSourceMapError extends Error {
  override readonly name = 'BundleSourceMapError';
}

/**
 * `code` with the sourcesContent of {@link DATA_SOURCES} set to null in its inline source map,
 * and the sources left out; `code` itself when none is there.
 * @throws BundleSourceMapError when the bundle has no inline base64 source map, or one that is not
 * a source map (its sources and sourcesContent arrays), naming what was found.
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
  const sources: unknown = typeof parsed === 'object' && parsed !== null ? Reflect.get(parsed, 'sources') : undefined;
  const contents: unknown =
    typeof parsed === 'object' && parsed !== null ? Reflect.get(parsed, 'sourcesContent') : undefined;
  if (!Array.isArray(sources) || !Array.isArray(contents) || contents.length !== sources.length)
    throw new BundleSourceMapError(
      `the workflow bundle's inline source map has no sources and sourcesContent of one length (sources: ${Array.isArray(sources) ? sources.length : typeof sources}, sourcesContent: ${Array.isArray(contents) ? contents.length : typeof contents})`,
    );
  const left: string[] = [];
  sources.forEach((source: unknown, index) => {
    if (typeof source !== 'string' || !DATA_SOURCES.test(source) || contents[index] === null) return;
    contents[index] = null;
    left.push(source);
  });
  if (left.length === 0) return { code, left };
  return {
    code: code.slice(0, start) + Buffer.from(JSON.stringify(parsed)).toString('base64') + code.slice(end),
    left,
  };
}
