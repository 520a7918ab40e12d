// The inline source map of a prebuilt workflow bundle, rewritten without the data modules (the BPE
// rank tables): their text and mappings go; every other source, mapping and the code stay.
import { SourceMap, type SourceMapPayload } from 'node:module';
import { describe, expect, it } from 'vitest';
import { BundleSourceMapError, mappingsWithout, withoutDataSources } from '../../src/cli/bundle-source-map.js';

const RANKS = '/app/node_modules/gpt-tokenizer/esm/bpeRanks/o200k_base.js';
const CODE_SOURCE = '/app/node_modules/gpt-tokenizer/src/GptEncoding.ts';
const WORKFLOWS = '/app/workflows.ts';

/**
 * Generated line 0: [0 → workflows 0:0 name 0], [4 → ranks 0:0]; line 1: [0 → ranks 1:0], [6 → GptEncoding 3:2 name 1];
 * line 2: [0, no source], [2 → workflows 5:1].
 */
const MAPPINGS = 'AAAAA,ICAA;AACA,MCEEC;A,EFED';

const map = {
  version: 3,
  file: 'bundle.js',
  mappings: MAPPINGS,
  sources: [WORKFLOWS, RANKS, CODE_SOURCE],
  sourcesContent: ['export async function w() {}', 'const c0 = [\n"!",\n];', 'export class GptEncoding {}'],
  names: ['w', 'GptEncoding'],
  sourceRoot: '',
};

function bundle(payload: unknown, trailing = ''): string {
  const base64 = Buffer.from(JSON.stringify(payload)).toString('base64');
  return `var a = 1;\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,${base64}${trailing}`;
}

function mapOf(code: string): SourceMapPayload {
  const at = code.lastIndexOf('base64,') + 'base64,'.length;
  return JSON.parse(Buffer.from(code.slice(at), 'base64').toString('utf8')) as SourceMapPayload;
}

/** Every mapped generated position of a map: [line, column, source, original line, original column, name]. */
function entries(payload: SourceMapPayload, lines = 3, columns = 8): string[] {
  const sourceMap = new SourceMap(payload);
  const found = new Set<string>();
  for (let line = 0; line < lines; line++)
    for (let column = 0; column < columns; column++) {
      const entry: Record<string, unknown> = { ...sourceMap.findEntry(line, column) };
      if (entry.generatedLine === line && entry.originalSource !== undefined)
        found.add(
          JSON.stringify([
            line,
            entry.generatedColumn,
            entry.originalSource,
            entry.originalLine,
            entry.originalColumn,
            entry.name,
          ]),
        );
    }
  return [...found];
}

describe('mappingsWithout', () => {
  it('drops the segments into the dropped sources; every other keeps its generated and original position and name', () => {
    const before = entries(map);
    expect(before).toHaveLength(5);
    const after = mappingsWithout(MAPPINGS, new Set([1]));
    expect(after).not.toBe(MAPPINGS);
    expect(entries({ ...map, mappings: after })).toEqual(before.filter((entry) => !entry.includes(RANKS)));
    expect(mappingsWithout(MAPPINGS, new Set())).toBe(MAPPINGS);
  });

  it('a mapping that is not base64 VLQ fails naming the character', () => {
    expect(() => mappingsWithout('AA!A', new Set([1]))).toThrow(/mappings hold "!", not base64 VLQ/);
  });
});

describe('withoutDataSources', () => {
  it('leaves out the rank tables’ text and mappings and keeps every other field, source and the code', () => {
    const { code, left } = withoutDataSources(bundle(map));
    expect(left).toEqual([RANKS]);
    expect(code.startsWith('var a = 1;\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,')).toBe(true);
    const rewritten = mapOf(code);
    expect(rewritten).toEqual({
      ...map,
      mappings: mappingsWithout(MAPPINGS, new Set([1])),
      sourcesContent: [map.sourcesContent[0], null, map.sourcesContent[2]],
    });
    expect(entries(rewritten).some((entry) => entry.includes(RANKS))).toBe(false);
  });

  it('a map without data modules, or with them left out already, comes back as it was', () => {
    const plain = bundle({ ...map, sources: [CODE_SOURCE, WORKFLOWS, WORKFLOWS], sourcesContent: ['x', 'y', 'z'] });
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
    expect(() => withoutDataSources(bundle({ version: 3, mappings: '', sources: [RANKS] }))).toThrow(
      /\(mappings: string, sources: 1, sourcesContent: undefined\)/,
    );
  });
});
