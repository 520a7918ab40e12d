// The BPE encoders are built once per worker thread, not once per workflow run
// (docs/design.md#bpe): a bundle built by this package preloads their module into the worker's
// reusable V8 context, and every workflow on the thread counts with the same encoder. Each encoder
// is a table of up to 200,000 entries: built per run, it would cost every run, continue-as-new and
// replay its CPU and memory again.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { compactorPlugin } from '../../src/worker/plugin.js';
import { compactorPreloadModules, withOurWorkflows } from '../../src/worker/workflow-bundling.js';
import { bundleTestWorkflows, uniqueId, withWorker } from './harness.js';
import type { encoderUses } from './test-workflows.js';

const USER_WORKFLOWS = fileURLToPath(new URL('../fixtures/user-worker/workflows.ts', import.meta.url));

describe('the BPE encoders on a worker', { timeout: 120_000 }, () => {
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    bundle = await bundleTestWorkflows();
  });

  it('every bundle this package builds preloads the encoders module, and that module imports nothing of ours', () => {
    const [encoders, ...others] = compactorPreloadModules();
    expect(others).toEqual([]);
    expect(encoders).toMatch(/core\/counting\/bpe-encoders\.(ts|js)$/);
    // With a worker's own workflows or without, and once however often it is applied.
    for (const workflowsPath of [undefined, USER_WORKFLOWS])
      expect(withOurWorkflows(withOurWorkflows({ workflowsPath })).preloadModules).toEqual([encoders]);
    expect(withOurWorkflows({ preloadModules: ['theirs'] }).preloadModules).toEqual(['theirs', encoders]);
    // The plugin's worker that bundles at start, and bundleWorkflowCode with the plugin.
    const plugin = compactorPlugin({ config: loadConfig({ env: {} }), register: 'workflows', tracing: 'off' });
    const worker = plugin.configureWorker({ taskQueue: 'q', workflowsPath: USER_WORKFLOWS });
    expect(worker.bundlerOptions?.preloadModules).toEqual([encoders]);
    expect(plugin.configureBundler({ workflowsPath: USER_WORKFLOWS }).preloadModules).toEqual([encoders]);
    // Preloaded state is shared by every workflow on the thread: only gpt-tokenizer's pure encoders may be reached from it.
    // Every module specifier in the file, however its import is written (static, dynamic, re-export).
    const imports = [...readFileSync(encoders ?? '', 'utf8').matchAll(/(?:from|import\s*\()\s*'([^']+)'/g)].map(
      (match) => match[1],
    );
    expect(imports.sort()).toEqual([
      'gpt-tokenizer/GptEncoding',
      'gpt-tokenizer/bpeRanks/cl100k_base',
      'gpt-tokenizer/bpeRanks/o200k_base',
    ]);
  });

  it('two workflows run one after the other on one worker count with one encoder', async () => {
    const uses = await withWorker(
      bundle,
      { summarizer: createExtractiveSummarizer() },
      async ({ client, taskQueue }) => {
        const counts: number[] = [];
        for (const run of [1, 2])
          counts.push(
            await client.workflow.execute<typeof encoderUses>('encoderUses', {
              taskQueue,
              workflowId: uniqueId(`encoder-uses-${run}`),
            }),
          );
        return counts;
      },
    );
    // The worker may have run other files' workflows before: what matters is that the second saw the first.
    expect(uses[1]).toBe((uses[0] ?? 0) + 1);
  });
});
