// docs/design.md#truncation on a real trajectory: sweagent jackson-databind-4365 (extended corpus)
// replayed at a 16,000-token window. Its system prompt, its pinned task (~4.9k tokens) and one 41 KB
// tool result in a late turn do not fit together; before truncation the run ended with
// RunFailed.ContextExhausted. Now the result is cut middle-out and the run completes.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { openingOf, replayActivities, runAgent } from '../support/agent.js';
import { extendedCases } from '../support/corpus.js';
import { bundleWorkflows, testConnection, uniqueId, withWorker } from '../support/temporal.js';

const NAME = 'sweagent_doubao_fasterxml__jackson-databind-4365';
const present = extendedCases().some(({ name }) => name === NAME);

describe('an oversized tool result in a real run', { timeout: 300_000 }, () => {
  it.runIf(present)(`${NAME} completes at a 16,000-token window, the oversized result cut to fit`, async () => {
    const bundle: WorkflowBundleWithSourceMap = await bundleWorkflows(
      new URL('../../src/workflows/index.ts', import.meta.url),
    );
    const t = await testConnection();
    const outcome = await withWorker(t, { workflowBundle: bundle, activities: replayActivities() }, () =>
      runAgent(
        t,
        {
          messages: openingOf(NAME),
          model: { provider: 'replay', trajectory: NAME, contextWindow: 16_000, maxOutputTokens: 1000 },
          compaction: {},
        },
        uniqueId('oversized-4365'),
      ),
    );
    expect(outcome.status).toBe('completed');
    const truncated = outcome.compactions.reduce((sum, record) => sum + (record.truncated ?? 0), 0);
    console.log(
      `[oversized-result] ${NAME}: ${outcome.rounds} rounds, ${outcome.compactions.length} compactions, ${truncated} message(s) truncated`,
    );
    expect(truncated).toBeGreaterThan(0);
  });
});
