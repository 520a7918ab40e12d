// The built-in tools under random model input (fast-check; the hostile model's classes, at random):
// whatever JSON a model sends a tool — any value, paths with NUL bytes, lone surrogates, `..`, a
// symlink out of the root or a FIFO, patterns of regular-expression metacharacters, limits of any
// number — the tool answers with a bounded string or refuses with a `Tool.*` failure that is not
// retried (so the model reads it at once). Never another kind of error, never a hang.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBuiltInTools } from '../../src/activities/tools.js';
import { writeHostileToolRoot } from '../support/hostile-model.js';

/** A tool activity: parsed JSON arguments in, the result the model reads out. */
type ToolActivity = (args: unknown) => Promise<unknown>;

const MAX_RESULT_CHARS = 20_000;

/** What a tool did with `args`: its answer, or the failure it refused them with. */
async function outcome(tool: ToolActivity, args: unknown): Promise<{ text: string } | { failure: ApplicationFailure }> {
  try {
    const text = await new MockActivityEnvironment().run(tool, args);
    if (typeof text !== 'string') throw new Error(`a tool answered ${typeof text}, not text`);
    return { text };
  } catch (error) {
    if (error instanceof ApplicationFailure) return { failure: error };
    throw error;
  }
}

/** The property every call must hold; returns what is wrong, or undefined. */
function problemWith(result: { text: string } | { failure: ApplicationFailure }): string | undefined {
  if ('text' in result)
    return result.text.length <= MAX_RESULT_CHARS + 200 ? undefined : `a result of ${result.text.length} characters`;
  const { type, nonRetryable, message } = result.failure;
  if (!(type ?? '').startsWith('Tool.')) return `failure type ${type}: ${message}`;
  if (nonRetryable !== true) return `a retryable ${type}: ${message}`;
  return undefined;
}

const KNOWN_PATHS = [
  'a.txt',
  'evil.txt',
  'big.txt',
  'lines.txt',
  'many',
  'special',
  'special/pipe',
  'outside',
  'outside/passwd',
  '.',
  '..',
  '../..',
  '/etc/passwd',
  'a\u0000.txt',
  '\ud800.txt',
  'a.txt/',
  './/a.txt',
  '~',
];
const path = fc.oneof(
  fc.constantFrom(...KNOWN_PATHS),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);
const number = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1, 1_000, 1_001, 2 ** 31, 1e15, Number.MAX_SAFE_INTEGER),
);
const pattern = fc.oneof(
  fc.string({ unit: fc.constantFrom(...'a+*()[]{}?|^$\\.!-,0123456789'.split('')), maxLength: 24 }),
  fc.constantFrom('(a+)+$', '(a|aa)+$', '^(a*)*$', '(', '[z-a]', '\\', '(?<n>a)\\k<n>', 'a'.repeat(1_001)),
  fc.string({ maxLength: 30 }),
);
const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });
/** Arguments shaped like each tool's, with random values, beside any JSON value at all. */
const argsFor = {
  fs_read: fc.oneof(
    fc.record({ path, offset: maybe(number), limit: maybe(number) }, { requiredKeys: [] }),
    fc.jsonValue(),
  ),
  fs_list: fc.oneof(fc.record({ path }, { requiredKeys: [] }), fc.jsonValue()),
  grep: fc.oneof(
    fc.record(
      { pattern, path: maybe(path), ignoreCase: maybe(fc.boolean()), maxResults: maybe(number) },
      { requiredKeys: [] },
    ),
    fc.jsonValue(),
  ),
};

describe('built-in tools under random model input (fast-check)', () => {
  let root: string;
  let tools: ReturnType<typeof createBuiltInTools>;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'compactor-tool-fuzz-'));
    writeHostileToolRoot(root);
    tools = createBuiltInTools({ root, maxResultChars: MAX_RESULT_CHARS, grepTimeoutMs: 300 });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  for (const name of ['fs_read', 'fs_list', 'grep'] as const) {
    it(`${name}: a bounded answer or a Tool.* refusal, whatever the arguments`, { timeout: 120_000 }, async () => {
      await fc.assert(
        fc.asyncProperty(argsFor[name], async (args) => {
          const problem = problemWith(await outcome(tools[name], args));
          expect(problem).toBeUndefined();
        }),
        { numRuns: name === 'grep' ? 80 : 200, seed: 20_261_202 },
      );
    });
  }
});
