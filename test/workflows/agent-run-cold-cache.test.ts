// agentRun's cold-cache rule on the dev server (docs/design.md#cold-cache): with `cacheTtl` 0 every
// round after a model call finds the cache cold (workflow time moved on), so the run compacts at
// `coldTrigger`, below the trigger, and its records say so; with 'off' it compacts at the trigger.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AgentRunWorkflowInput } from '../../src/workflows/agent-run.js';
import { openingOf, replayActivities, runAgent } from '../support/agent.js';
import { bundleWorkflows, testConnection, uniqueId, withFileWorker } from '../support/temporal.js';

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
});

const TAU = 'taubench_gpt4o_airline_task2_trial1';
const BUDGET = 6_000;

describe('agentRun cold-cache rule', { timeout: 90_000 }, () => {
  it('compacts at coldTrigger when the cache has gone cold, at the trigger when the rule is off', async () => {
    const t = await testConnection();
    const input = (cacheTtl: number | 'off'): AgentRunWorkflowInput => ({
      messages: openingOf(TAU),
      model: { provider: 'replay', trajectory: TAU, contextWindow: 100_000, maxOutputTokens: 1000 },
      compaction: { contextBudget: BUDGET, cacheTtl, coldTrigger: 0.5 },
      maxRounds: 1000,
    });
    const [cold, warm] = await withFileWorker(t, { workflowBundle: bundle, activities: replayActivities() }, (t) =>
      Promise.all([runAgent(t, input(0), uniqueId('agent-cold')), runAgent(t, input('off'), uniqueId('agent-warm'))]),
    );
    expect([cold.status, warm.status]).toEqual(['completed', 'completed']);
    const [firstCold] = cold.compactions;
    const [firstWarm] = warm.compactions;
    expect(firstCold?.coldCache).toBe(true);
    expect(firstCold?.tokensBefore).toBeGreaterThan(0.5 * BUDGET);
    expect(firstCold?.tokensBefore).toBeLessThanOrEqual(0.8 * BUDGET);
    expect(firstWarm?.tokensBefore).toBeGreaterThan(0.8 * BUDGET);
    expect(warm.compactions.some((record) => record.coldCache === true)).toBe(false);
    // The run's own records say it too (the UI's details and `history` read them).
    expect(cold.history.recent[0]?.coldCache).toBe(true);
  });
});
