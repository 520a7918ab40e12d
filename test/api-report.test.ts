// The public surface: the committed API reports (api/*.api.md) are what `npm run api:report` writes
// from the sources, each entry stays within its count of runtime names, the report's runtime names
// are what importing the entry really gives, and package.json exports no entry without a report.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_ENTRIES, readApi, renderReport, type ApiEntry, type ApiExport } from '../scripts/api-report.js';

const modules: Record<string, () => Promise<Record<string, unknown>>> = {
  'src/index.ts': () => import('../src/index.js'),
  'src/workflow.ts': () => import('../src/workflow.js'),
};

function committed(entry: ApiEntry): string | null {
  try {
    return readFileSync(new URL(`../api/${entry.report}`, import.meta.url), 'utf8');
  } catch {
    return null;
  }
}

describe('public API (api/*.api.md)', () => {
  let api: Map<ApiEntry, ApiExport[]>;
  const runtime = new Map<ApiEntry, string[]>();
  // The compiler reads every declaration the entries reach, and the Node entry loads the SDK: slow on a busy machine.
  beforeAll(async () => {
    api = readApi();
    for (const entry of API_ENTRIES) {
      const load = modules[entry.source];
      if (load === undefined) throw new Error(`test/api-report.test.ts: add an import for ${entry.source}`);
      runtime.set(entry, Object.keys(await load()).sort());
    }
  }, 300_000);

  it.each(API_ENTRIES.map((entry) => [entry.importPath, entry] as const))(
    '%s: the committed report is what `npm run api:report` writes',
    (_name, entry) => {
      const exports = api.get(entry) ?? [];
      expect(committed(entry), `api/${entry.report} is stale or missing: run npm run api:report`).toBe(
        renderReport(entry, exports),
      );
    },
  );

  it.each(API_ENTRIES.map((entry) => [entry.importPath, entry] as const))(
    '%s: within its count of runtime names, and the report lists exactly those',
    (_name, entry) => {
      const names = runtime.get(entry) ?? [];
      expect(
        names.length,
        `${entry.importPath} exports ${names.length} runtime names: ${names.join(', ')}`,
      ).toBeLessThanOrEqual(entry.maxRuntimeNames);
      const reported = (api.get(entry) ?? []).filter((row) => row.runtime).map((row) => row.name);
      expect(reported).toEqual(names);
    },
  );

  it('package.json exports the reported entries and no other', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      exports?: Record<string, unknown>;
    };
    const subpaths = Object.keys(pkg.exports ?? {}).filter((subpath) => subpath !== './package.json');
    const expected = API_ENTRIES.map((entry) =>
      entry.importPath === 'temporal-compactor' ? '.' : `./${entry.importPath.slice('temporal-compactor/'.length)}`,
    );
    expect(subpaths.sort()).toEqual(expected.sort());
  });
});
