// The inline source map of a prebuilt workflow bundle, rewritten without the text of data modules
// (the BPE rank tables): every other source, the mappings and the code stay as they were.
import { describe, expect, it } from 'vitest';
import { BundleSourceMapError, withoutDataSources } from '../../src/cli/bundle-source-map.js';

const RANKS = '/app/node_modules/gpt-tokenizer/esm/bpeRanks/o200k_base.js';
const CODE_SOURCE = '/app/node_modules/gpt-tokenizer/src/GptEncoding.ts';

function bundle(map: unknown, trailing = ''): string {
  const base64 = Buffer.from(JSON.stringify(map)).toString('base64');
  return `var a = 1;\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,${base64}${trailing}`;
}

function mapOf(code: string): Record<string, unknown> {
  const at = code.lastIndexOf('base64,') + 'base64,'.length;
  return JSON.parse(Buffer.from(code.slice(at), 'base64').toString('utf8')) as Record<string, unknown>;
}

describe('withoutDataSources', () => {
  const map = {
    version: 3,
    file: 'bundle.js',
    mappings: 'AAAA;AACA',
    sources: [CODE_SOURCE, RANKS, '/app/workflows.ts'],
    sourcesContent: ['export class GptEncoding {}', 'const c0 = [\n"!",\n];', 'export async function w() {}'],
    names: [],
  };

  it('sets the rank tables’ sourcesContent to null and keeps every other field, source and the code', () => {
    const { code, left } = withoutDataSources(bundle(map));
    expect(left).toEqual([RANKS]);
    expect(code.startsWith('var a = 1;\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,')).toBe(true);
    expect(mapOf(code)).toEqual({ ...map, sourcesContent: [map.sourcesContent[0], null, map.sourcesContent[2]] });
  });

  it('a map without data modules (or with their text left out already) comes back as it was', () => {
    const plain = bundle({ ...map, sources: [CODE_SOURCE], sourcesContent: ['x'] });
    expect(withoutDataSources(plain)).toEqual({ code: plain, left: [] });
    const once = withoutDataSources(bundle(map)).code;
    expect(withoutDataSources(once)).toEqual({ code: once, left: [] });
  });

  it('keeps a trailing newline after the map', () => {
    const { code } = withoutDataSources(bundle(map, '\n'));
    expect(code.endsWith('\n')).toBe(true);
    expect(mapOf(code.trimEnd()).sourcesContent).toEqual([map.sourcesContent[0], null, map.sourcesContent[2]]);
  });

  it('a bundle without an inline source map, or with one that is not a source map, fails naming what it found', () => {
    expect(() => withoutDataSources('var a = 1;\n')).toThrow(BundleSourceMapError);
    expect(() => withoutDataSources('var a = 1;\n')).toThrow(
      /ends without an inline base64 source map.*found "var a = 1;\\n"/,
    );
    expect(() => withoutDataSources(bundle({ version: 3, sources: [RANKS] }))).toThrow(
      /no sources and sourcesContent of one length \(sources: 1, sourcesContent: undefined\)/,
    );
  });
});
