import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { bundleWorkflowCode, DefaultLogger, type LogEntry } from '@temporalio/worker';
import { injectGlobals } from '@temporalio/worker/lib/workflow/vm-shared.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { createBpeCounter } from '../../src/core/counting/bpe-counter.js';
import { digestMessagePrefix } from '../../src/core/counting/digest.js';
import { withRequestFraming } from '../../src/core/counting/request-counter.js';
import { UsageCounter } from '../../src/core/counting/usage-counter.js';
import { type BpeCountResult, bpeCountWorkflow, sampleConversation } from '../fixtures/workflows/bpe-count.js';

const workflowsPath = fileURLToPath(new URL('../fixtures/workflows/bpe-count.ts', import.meta.url));

describe('the counters in the Temporal workflow bundle', () => {
  const logs: LogEntry[] = [];
  let code = '';

  beforeAll(async () => {
    // The bundler rejects (throws on) disallowed modules — Node built-ins — and logs webpack's
    // output (warnings included) through this logger.
    const bundle = await bundleWorkflowCode({
      workflowsPath,
      logger: new DefaultLogger('TRACE', (entry) => logs.push(entry)),
    });
    code = bundle.code;
  }, 120_000);

  it('bundles with no ignored or forbidden module and no webpack warning', () => {
    expect(code.length).toBeGreaterThan(0);
    const problems = logs.filter((entry) => entry.level === 'WARN' || entry.level === 'ERROR');
    expect(problems.map((entry) => entry.message)).toEqual([]);
    const webpackOutput = logs.map((entry) => entry.message).join('\n');
    expect(webpackOutput).toMatch(/compiled successfully/);
    // Whole words: the module list names src/core/errors.ts.
    expect(webpackOutput).not.toMatch(/\bWARNING\b|\bERROR\b|Module not found|disallowed/i);
    expect(logs.some((entry) => entry.message === 'Workflow bundle created')).toBe(true);
    // webpack marks every module it replaced by an empty one ("ignored"): only the SDK's own
    // optional converter slots may be, none of ours or gpt-tokenizer's
    const ignored = new Set([...code.matchAll(/\*\*\* (\S+) \(ignored\) \*\*\*/g)].map((match) => match[1]));
    expect([...ignored].sort()).toEqual(['__temporal_custom_failure_converter', '__temporal_custom_payload_converter']);
  });

  it('contains the counters, the digest and the rank tables', () => {
    for (const name of [
      'createBpeCounter',
      'countTextTokens',
      'UsageCounter',
      'digestMessagePrefix',
      'withRequestFraming',
      'bpeCountWorkflow',
    ]) {
      expect(code).toContain(name);
    }
    expect(code).toMatch(/src\/core\/counting\/bpe-counter\.ts/);
    expect(code).toMatch(/gpt-tokenizer\/esm\/bpeRanks\/o200k_base\.js/);
    expect(code).toMatch(/gpt-tokenizer\/esm\/bpeRanks\/cl100k_base\.js/);
    // the eager per-encoding modules are not pulled in: only the rank tables and GptEncoding
    expect(code).not.toMatch(/gpt-tokenizer\/esm\/encoding\/o200k_base\.js/);
    expect(code).not.toMatch(/require\(["']node:/);
  });

  it('runs in a V8 context holding only the globals the worker injects, and counts like Node', async () => {
    // Not a workflow execution (that needs a server): the bundle evaluated in a fresh context
    // with the SDK's own injectGlobals (an internal module of @temporalio/worker: if an SDK
    // upgrade moves it, update the import), and the workflow function called directly.
    const context = vm.createContext({});
    injectGlobals(context);
    vm.runInContext('globalThis.__webpack_module_cache__ = {};', context);
    vm.runInContext(code, context, { filename: 'workflow-bundle.js' });
    const workflows: unknown = vm.runInContext('__TEMPORAL__.importWorkflows()', context);
    if (
      typeof workflows !== 'object' ||
      workflows === null ||
      !('bpeCountWorkflow' in workflows) ||
      typeof workflows.bpeCountWorkflow !== 'function'
    ) {
      throw new Error('the bundle does not export bpeCountWorkflow');
    }
    const sandboxed: unknown = await workflows.bpeCountWorkflow();
    const inNode: BpeCountResult = await bpeCountWorkflow();
    expect(JSON.parse(JSON.stringify(sandboxed))).toEqual(inNode);
    // and Node's numbers are the ones the modules compute directly
    const estimator = createBpeCounter();
    expect(inNode.o200k).toBe(estimator.count(sampleConversation));
    expect(inNode.framed).toBeGreaterThan(inNode.o200k);
    expect(inNode.digest).toBe(digestMessagePrefix(sampleConversation));
    expect(inNode.calibrated).toBe(1_000);
    expect(inNode.calibratedPlusReply).toBeGreaterThan(1_000);
    expect(inNode.restoredPlusReply).toBe(inNode.calibratedPlusReply);
    expect(inNode.fallback).toBe(estimator.count(sampleConversation.slice(1)));
    expect(UsageCounter.fromJSON(inNode.state, estimator).count(sampleConversation)).toBe(1_000);
    expect(withRequestFraming(estimator).count(sampleConversation)).toBe(inNode.o200k);
  });
});
