// agentRun with compaction.keepUserMessages on the dev server (docs/design.md#user-words): its
// compactions keep the customer's messages verbatim, its records say how many, and its transcript
// replays (kept messages in place) to the conversation the run ended with.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { replaySession } from '../../src/core/agent/session.js';
import type { AgentRunWorkflowInput } from '../../src/workflows/agent-run.js';
import { openingOf, replayActivities, runAgent } from '../support/agent.js';
import { bundleWorkflows, testConnection, uniqueId, withFileWorker } from '../support/temporal.js';

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
});

const TAU = 'taubench_gpt4o_airline_task2_trial1';

describe('agentRun keepUserMessages', { timeout: 90_000 }, () => {
  it("keeps the user's messages through its compactions, says how many, and replays", async () => {
    const t = await testConnection();
    const input: AgentRunWorkflowInput = {
      messages: openingOf(TAU),
      model: { provider: 'replay', trajectory: TAU, contextWindow: 100_000, maxOutputTokens: 1000 },
      compaction: { contextBudget: 5_000, keepUserMessages: true, keepRecent: 2 },
      maxRounds: 1000,
    };
    const outcome = await withFileWorker(t, { workflowBundle: bundle, activities: replayActivities() }, (t) =>
      runAgent(t, input, uniqueId('agent-user-words')),
    );
    expect(outcome.status).toBe('completed');
    const summaries = outcome.compactions.filter((record) => record.kind === 'summary');
    expect(summaries.length).toBeGreaterThan(0);
    const kept = summaries.reduce((sum, record) => sum + (record.userMessages?.kept ?? 0), 0);
    expect(kept).toBeGreaterThan(0);
    // Every compaction line naming kept messages: each of them is still in the conversation the run ended with.
    const ids = outcome.session.flatMap((line) => (line.type === 'compaction' ? (line.keptUserIds ?? []) : []));
    expect(ids.length).toBeGreaterThan(0);
    const byId = new Map(
      outcome.session.flatMap((line) => (line.type === 'message' ? [[line.id, line.message] as const] : [])),
    );
    const last = ids.at(-1);
    expect(outcome.messages).toContainEqual(byId.get(last ?? ''));
    expect(JSON.stringify(replaySession(outcome.session))).toBe(JSON.stringify(outcome.messages));
  });
});
