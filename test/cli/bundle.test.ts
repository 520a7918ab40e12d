// `temporal-compactor bundle`: the prebuilt workflow bundle of a worker — the user's workflows and
// ours, as the plugin bundles them at start-up — written where --out says, never through a symlink.
import { lstatSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { injectGlobals } from '@temporalio/worker/lib/workflow/vm-shared.js';
import { describe, expect, it } from 'vitest';
import { mappingsWithout } from '../../src/cli/bundle-source-map.js';
import { main, type CliIo } from '../../src/cli/main.js';
import { workerBuildId } from '../../src/worker/plugin.js';
import { temporaryDirectory } from '../support/cleanup.js';

const USER_WORKFLOWS = fileURLToPath(new URL('../fixtures/user-worker/workflows.ts', import.meta.url));

function capture(): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (text) => (out += text),
    stderr: (text) => (err += text),
    env: {},
    out: () => out,
    err: () => err,
  };
}

/** The workflow names a bundle exports, evaluated as the worker's sandbox evaluates it. */
function workflowsOf(code: string): unknown {
  const context = vm.createContext({});
  injectGlobals(context);
  vm.runInContext('globalThis.__webpack_module_cache__ = {};', context);
  vm.runInContext(code, context, { filename: 'workflow-bundle.js' });
  return vm.runInContext('Object.keys(__TEMPORAL__.importWorkflows()).sort()', context);
}

/** The bundle's inline source map, decoded. */
function inlineSourceMap(code: string): { sources: string[]; sourcesContent: Array<string | null>; mappings: string } {
  const at = code.lastIndexOf('\n//# sourceMappingURL=data:application/json;');
  const base64 = code.indexOf('base64,', at) + 'base64,'.length;
  return JSON.parse(Buffer.from(code.slice(base64), 'base64').toString('utf8')) as ReturnType<typeof inlineSourceMap>;
}

describe('temporal-compactor bundle', { timeout: 120_000 }, () => {
  it('writes the worker’s workflows and ours to --out, through a new file: a symlink there is replaced, its target untouched', async () => {
    const dir = temporaryDirectory('cli-bundle-');
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'not a bundle\n');
    const out = join(dir, 'workflow-bundle.js');
    symlinkSync(victim, out);
    const io = capture();
    expect(await main(['bundle', '--workflows', USER_WORKFLOWS, '--out', out], io)).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('not a bundle\n');
    expect(lstatSync(out).isFile()).toBe(true);
    const code = readFileSync(out, 'utf8');
    expect(workflowsOf(code)).toEqual(['agentRun', 'compactConversation', 'supportChat']);
    // Its inline source map keeps every source's text and mappings but the BPE rank tables' (data).
    const map = inlineSourceMap(code);
    const ranks = new Set(map.sources.flatMap((source, index) => (/bpeRanks/.test(source) ? [index] : [])));
    expect([...ranks].map((index) => (map.sources[index] ?? '').replace(/^.*node_modules\//, '')).sort()).toEqual([
      'gpt-tokenizer/esm/bpeRanks/cl100k_base.js',
      'gpt-tokenizer/esm/bpeRanks/o200k_base.js',
    ]);
    expect(map.sources.length).toBeGreaterThan(50);
    expect(map.sourcesContent.flatMap((content, index) => (content === null ? [index] : []))).toEqual(
      [...ranks].sort((a, b) => a - b),
    );
    // No mapping into a table is left to drop; the rest of the code maps.
    expect(mappingsWithout(map.mappings, ranks)).toBe(map.mappings);
    expect(map.mappings.length).toBeGreaterThan(100_000);
    // The report: the size, the largest parts (the BPE rank tables lead), the build id a worker gets.
    expect(io.err()).toMatch(
      /^workflow bundle .*: \d+\.\d MB \(modules \d+\.\d MB, inline source map \d+\.\d MB, without the text and mappings of 2 data modules \(the BPE rank tables\)\)/,
    );
    expect(io.err()).toMatch(/largest parts \(module sources\): gpt-tokenizer \d+\.\d MB, /);
    expect(io.err()).toContain(`build id of a worker that runs it with compactorPlugin(): ${workerBuildId(code)}`);
    expect(io.out()).toBe('');
  });

  it('a missing --out, a missing --workflows file or an --out folder that does not exist is a usage mistake (exit 2)', async () => {
    const dir = temporaryDirectory('cli-bundle-usage-');
    const cases: Array<[string[], RegExp]> = [
      [['bundle'], /--out is required/],
      [['bundle', '--out', join(dir, 'b.js'), '--workflows', join(dir, 'nope.ts')], /--workflows: .*does not exist/],
      [['bundle', '--out', join(dir, 'no-such-folder', 'b.js')], /--out: the folder .* does not exist/],
    ];
    for (const [argv, message] of cases) {
      const io = capture();
      expect(await main(argv, io), argv.join(' ')).toBe(2);
      expect(io.err()).toMatch(message);
    }
  });
});
