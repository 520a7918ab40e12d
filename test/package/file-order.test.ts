// The order `npm test` starts its files in (test/support/file-order.ts): the longest first, also in a
// fresh clone, where vitest has timed no file and would start the largest first.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TestSpecification, Vitest } from 'vitest/node';
import { LONGEST, LongestFirst } from '../support/file-order.js';

const ROOT = '/repo';

/** A file of `project`, `size` bytes long, timed by vitest at `duration` ms if given. */
interface File {
  path: string;
  project: string;
  size: number;
  duration?: number;
}

async function order(files: File[]): Promise<string[]> {
  const key = (file: File): string => `${file.project}:${file.path}`;
  const byKey = new Map(files.map((file) => [key(file), file]));
  const ctx = {
    config: { root: ROOT },
    cache: {
      getFileTestResults: (name: string) => {
        const duration = byKey.get(name)?.duration;
        return duration === undefined ? undefined : { duration, failed: false };
      },
      getFileStats: (name: string) => ({ size: byKey.get(name)?.size ?? 0 }),
    },
  } as unknown as Vitest;
  const specs = files.map(
    (file) =>
      ({
        moduleId: join(ROOT, file.path),
        project: {
          name: file.project,
          config: { isolate: file.project === 'own-process', sequence: { groupOrder: 0 } },
        },
      }) as unknown as TestSpecification,
  );
  const sorted = await new LongestFirst(ctx).sort(specs);
  return sorted.map((spec) => spec.moduleId.slice(ROOT.length + 1));
}

describe('the order npm test starts its files in', () => {
  it('lists only files that exist', () => {
    for (const path of LONGEST) expect(existsSync(path), path).toBe(true);
  });

  it('starts the longest first when vitest has timed nothing, the rest largest first, each project whole', async () => {
    const [longest, second] = LONGEST as [string, string];
    const files: File[] = [
      { path: 'test/large.test.ts', project: 'shared', size: 90_000 },
      { path: second, project: 'shared', size: 5_000 },
      { path: 'test/medium.test.ts', project: 'shared', size: 20_000 },
      { path: longest, project: 'shared', size: 3_000 },
      { path: 'test/own.test.ts', project: 'own-process', size: 1_000 },
    ];
    expect(await order(files)).toEqual([
      'test/own.test.ts',
      longest,
      second,
      'test/large.test.ts',
      'test/medium.test.ts',
    ]);
  });

  it("keeps vitest's order, by the durations it measured, once it has timed the files", async () => {
    const [longest, second] = LONGEST as [string, string];
    const files: File[] = [
      { path: longest, project: 'shared', size: 3_000, duration: 1_000 },
      { path: second, project: 'shared', size: 5_000, duration: 2_000 },
      { path: 'test/slow.test.ts', project: 'shared', size: 1_000, duration: 9_000 },
    ];
    expect(await order(files)).toEqual(['test/slow.test.ts', second, longest]);
  });
});
