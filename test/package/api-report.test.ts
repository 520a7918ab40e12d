// The public surface: the committed API reports (api/*.api.md) are what `npm run api:report` writes
// from the sources, each entry stays within its count of runtime names, the report's runtime names
// are what importing the entry really gives, and package.json exports no entry without a report.
// The error classes the entries do not export are told apart by their `name`: each names itself.
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_ENTRIES, readApi, renderReport, type ApiEntry, type ApiExport } from '../../scripts/api-report.js';
import { INSTALLED, inputsDigest, KEPT_DIR, ROOT, writeWhole } from '../support/build-inputs.js';

const modules: Record<string, () => Promise<Record<string, unknown>>> = {
  'src/index.ts': () => import('../../src/index.js'),
  'src/workflow.ts': () => import('../../src/workflow.js'),
};

function committed(entry: ApiEntry): string | null {
  try {
    return readFileSync(new URL(`../../api/${entry.report}`, import.meta.url), 'utf8');
  } catch {
    return null;
  }
}

/**
 * What readApi reads, by entry source: kept under node_modules/.cache by a digest of the sources,
 * the script, the installed packages and the compiler settings. The compiler reads every declaration
 * the entries reach (about 30 CPU-seconds); a run with none of those changed reads the last result.
 */
function keptApi(): Map<ApiEntry, ApiExport[]> {
  const dir = join(KEPT_DIR, 'api-report');
  const file = join(dir, `${inputsDigest(ROOT, ['scripts/api-report.ts', ...INSTALLED], ['src'])}.json`);
  let kept: Record<string, ApiExport[]> | undefined;
  try {
    kept = JSON.parse(readFileSync(file, 'utf8')) as Record<string, ApiExport[]>;
  } catch {
    kept = undefined;
  }
  if (kept !== undefined) return new Map(API_ENTRIES.map((entry) => [entry, kept[entry.source] ?? []]));
  const api = readApi();
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { force: true });
  writeWhole(file, JSON.stringify(Object.fromEntries([...api].map(([entry, rows]) => [entry.source, rows]))));
  return api;
}

describe('public API (api/*.api.md)', () => {
  let api: Map<ApiEntry, ApiExport[]>;
  const runtime = new Map<ApiEntry, string[]>();
  // The compiler reads every declaration the entries reach, and the Node entry loads the SDK: slow on a busy machine.
  beforeAll(async () => {
    api = keptApi();
    for (const entry of API_ENTRIES) {
      const load = modules[entry.source];
      if (load === undefined) throw new Error(`test/package/api-report.test.ts: add an import for ${entry.source}`);
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
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      exports?: Record<string, unknown>;
    };
    const subpaths = Object.keys(pkg.exports ?? {}).filter((subpath) => subpath !== './package.json');
    const expected = API_ENTRIES.map((entry) =>
      entry.importPath === 'temporal-compactor' ? '.' : `./${entry.importPath.slice('temporal-compactor/'.length)}`,
    );
    expect(subpaths.sort()).toEqual(expected.sort());
  });
});

/** Every `.ts` file under `src/`, with its text. */
function sources(directory = new URL('../../src/', import.meta.url).pathname): Array<{ path: string; text: string }> {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [{ path, text: readFileSync(path, 'utf8') }] : [];
  });
}

describe('error classes (docs/design.md#failure-types)', () => {
  it('each exported error class that is thrown has its class name as its `name`', () => {
    const classes = sources().flatMap(({ path, text }) =>
      [...text.matchAll(/^export (abstract )?class (\w+) extends (\w*Error)\b[^{]*\{(?:\}|([^]*?)^\})/gm)].map(
        (match) => ({
          at: `${path}: ${match[2] ?? ''}`,
          name: match[2] ?? '',
          abstract: match[1] !== undefined,
          body: match[4] ?? '',
        }),
      ),
    );
    expect(classes.length).toBeGreaterThan(10);
    const unnamed = classes
      .filter((error) => !error.abstract && !error.body.includes(`readonly name = '${error.name}'`))
      .map((error) => error.at);
    expect(unnamed).toEqual([]);
  });
});
