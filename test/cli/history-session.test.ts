// The CLI against the dev server: `history` prints the compaction table (from the result of a
// finished run, or by query from a failed one), `session` prints the transcript for people or as
// the JSON lines replaySession reads; usage mistakes exit 2 with the usage line.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { commands, main } from '../../src/cli/main.js';
import { parseSessionJsonl, replaySession } from '../../src/core/agent/session.js';
import { COMPACTION_TABLE_HEADER, groupDigits } from '../../src/core/agent/compaction-history.js';
import { openingOf, replayActivities, runAgent, type AgentOutcome } from '../support/agent.js';
import { capturedCliIo } from '../support/cli-process.js';
import { bundleWorkflows, testConnection, uniqueId, withWorker, type TestConnection } from '../support/temporal.js';

describe('temporal-compactor CLI', { timeout: 90_000 }, () => {
  let t: TestConnection;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    t = await testConnection();
    bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
  });

  it('has history and session subcommands, easy to extend', () => {
    expect(Object.keys(commands)).toEqual(expect.arrayContaining(['history', 'session']));
  });

  it('history and session of a finished run come from its result', async () => {
    const name = 'generated_parallel-calls';
    const workflowId = uniqueId('cli-run');
    const outcome: AgentOutcome = await withWorker(t, { workflowBundle: bundle, activities: replayActivities() }, () =>
      runAgent(
        t,
        {
          messages: openingOf(name),
          model: { provider: 'replay', trajectory: name, contextWindow: 14_000, maxOutputTokens: 1000 },
          compaction: { keepRecent: 4 },
          maxRounds: 1000,
        },
        workflowId,
      ),
    );
    expect(outcome.status).toBe('completed');
    // No worker polls now: a completed run is read from its result.
    const history = capturedCliIo(t);
    expect(await main(['history', workflowId], history)).toBe(0);
    const lines = history.out().split('\n');
    const reclaimed = outcome.compactions.reduce((sum, record) => sum + record.tokensBefore - record.tokensAfter, 0);
    expect(lines[0]).toBe(
      `agentRun ${workflowId} · COMPLETED · ${outcome.compactions.length} compactions · ${groupDigits(reclaimed)} tokens reclaimed`,
    );
    expect(lines).toContain(COMPACTION_TABLE_HEADER);
    const rows = lines.filter((line) => /^\| \d+ \|/.test(line));
    expect(rows).toHaveLength(outcome.compactions.length);
    const first = outcome.compactions[0];
    expect(rows[0]).toContain(`| 1 | ${first?.round} | `);
    // --all rebuilds every record from the transcript: the same rows here (fewer than the run keeps).
    const all = capturedCliIo(t);
    expect(await main(['history', workflowId, '--all', '--json'], all)).toBe(0);
    expect(JSON.parse(all.out())).toEqual(outcome.compactions);

    const jsonl = capturedCliIo(t);
    expect(await main(['session', workflowId, '--jsonl'], jsonl)).toBe(0);
    expect(replaySession(parseSessionJsonl(jsonl.out()))).toEqual(outcome.messages);

    const readable = capturedCliIo(t);
    expect(await main(['session', workflowId], readable)).toBe(0);
    const text = readable.out().split('\n');
    expect(text.filter((line) => line.startsWith('── compaction:'))).toHaveLength(
      outcome.session.filter((line) => line.type === 'compaction').length,
    );
    expect(text[0]).toMatch(/^m1 +user +/);
  });

  it('a failed run is read by query while a worker polls', async () => {
    const name = 'taubench_gpt4o_airline_task46_trial3';
    const workflowId = uniqueId('cli-failed');
    await withWorker(t, { workflowBundle: bundle, activities: replayActivities() }, async () => {
      const outcome = await runAgent(
        t,
        {
          messages: openingOf(name),
          model: { provider: 'replay', trajectory: name, contextWindow: 2500, maxOutputTokens: 1000 },
          compaction: {},
        },
        workflowId,
      );
      expect(outcome.status).toBe('failed');
      const io = capturedCliIo(t);
      expect(await main(['history', workflowId], io)).toBe(0);
      // Round 3 is over the room: the recent window gives way (docs/design.md#window-gives-way) and a summary makes it
      // fit; at round 4 even the hard trim and cutting the largest result middle-out (docs/design.md#truncation)
      // cannot, and the run fails exhausted.
      expect(io.out()).toContain(`agentRun ${workflowId} · FAILED · 2 compactions · `);
      expect(io.out()).toMatch(
        /\| 1 \| 3 \| .* \| summary \(\d+ chars\) \| no \| no \| \d+% \| [\d,]+ \|\n\| 2 \| 4 \| .* \| trim, truncated 1 \| yes \| yes \| \d+% \| [\d,]+ \|\n/,
      );
      expect(io.out()).toMatch(
        /\nCost so far: [\d,]+ prompt tokens in 3 requests, \d+% from the cache \(modelled\); billed input ≈ [\d,]+/,
      );
    });
    // Without a worker, the query cannot be answered: the error says what is needed.
    const io = capturedCliIo(t);
    expect(await main(['history', workflowId, '--query-timeout', '2s'], io)).toBe(1);
    expect(io.err()).toContain('needs a worker polling task queue');
  });

  it('usage mistakes exit 2 and print the usage', async () => {
    const missing = capturedCliIo(t);
    expect(await main(['history'], missing)).toBe(2);
    expect(missing.err()).toContain('the workflow id is required');
    expect(missing.err()).toContain('usage: temporal-compactor history <workflowId> [--all] [--json]');
    const unknown = capturedCliIo(t);
    expect(await main(['compact-all'], unknown)).toBe(2);
    expect(unknown.err()).toContain('unknown command "compact-all"');
    const badFlag = capturedCliIo(t);
    expect(await main(['session', 'x', '--json-lines'], badFlag)).toBe(2);
    expect(badFlag.err()).toContain('--json-lines');
    const notFound = capturedCliIo(t);
    expect(await main(['history', uniqueId('no-such-run')], notFound)).toBe(1);
    expect(notFound.err()).toMatch(/not found/i);
  });
});
