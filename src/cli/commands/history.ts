// Node only: `temporal-compactor history <workflowId>` — the compaction table of an agentRun.
import {
  compactionRecordsFromSession,
  describeRunUsage,
  groupDigits,
  recordCount,
  renderCompactionTable,
  type CompactionHistory,
} from '../../core/agent/compaction-history.js';
import { readSessionLines } from '../../client/session-reader.js';
import { isRecord } from '../../core/schema.js';
import { openAgentRun, QUERY_TIMEOUT_OPTION, queryRun, queryTimeoutOf, type AgentRun } from '../agent-run.js';
import type { CliCommand } from '../command.js';

const isCompactionHistory = (value: unknown): value is CompactionHistory =>
  isRecord(value) && Array.isArray(value.recent) && typeof value.totals === 'object';

/** The compaction history of an agentRun: from its result when it completed, else by query (a worker must poll its task queue). */
async function readCompactionHistory(run: AgentRun, queryTimeoutMs: number): Promise<CompactionHistory> {
  const status = run.description.status.name;
  if (status === 'COMPLETED') {
    const result: unknown = await run.handle.result();
    const value = isRecord(result) ? result.compactions : undefined;
    if (isCompactionHistory(value)) return value;
  }
  const value: unknown = await queryRun(run, queryTimeoutMs, `the run is ${status}; reading its compactions`, () =>
    run.handle.query('compactions'),
  );
  if (!isCompactionHistory(value)) throw new Error('the compactions query answered something else than expected');
  return value;
}

/** `3 compactions`, `3 compactions, 1 undo`. */
function countLabel(compactions: number, undos: number): string {
  const label = `${compactions} compaction${compactions === 1 ? '' : 's'}`;
  return undos === 0 ? label : `${label}, ${undos} undo${undos === 1 ? '' : 's'}`;
}

export const history: CliCommand = {
  name: 'history',
  usage: '<workflowId> [--all] [--json] [--query-timeout 15s]',
  summary: 'print the compaction history of an agentRun as a Markdown table',
  description: [
    "Prints the compactions of an agentRun: from the run's result when it completed, else by query (a worker must poll the run's task queue). The table holds the most recent compactions the run keeps; --all reads every one from the session transcript.",
  ],
  options: {
    all: { type: 'boolean', help: 'every compaction, rebuilt from the session transcript' },
    json: { type: 'boolean', help: 'print JSON instead of the table' },
    'query-timeout': QUERY_TIMEOUT_OPTION,
  },
  async run(context) {
    const queryTimeoutMs = queryTimeoutOf(context);
    const run = await openAgentRun(context);
    const { workflowId } = run;
    const status = run.description.status.name;
    if (context.values.all === true) {
      const records = compactionRecordsFromSession(await readSessionLines(run.client, workflowId, { queryTimeoutMs }));
      const undos = records.filter((record) => record.kind === 'undo').length;
      if (context.values.json === true) context.io.stdout(`${JSON.stringify(records, null, 2)}\n`);
      else
        context.io.stdout(
          `agentRun ${workflowId} · ${status} · ${countLabel(records.length - undos, undos)}\n\n${renderCompactionTable(records)}\n`,
        );
      return 0;
    }
    const compactions = await readCompactionHistory(run, queryTimeoutMs);
    if (context.values.json === true) {
      context.io.stdout(`${JSON.stringify(compactions, null, 2)}\n`);
      return 0;
    }
    const { totals, recent } = compactions;
    const earlier = recordCount(totals) - recent.length;
    const heading = `agentRun ${workflowId} · ${status} · ${countLabel(totals.compactions, totals.undos)} · ${groupDigits(totals.tokensReclaimed)} tokens reclaimed`;
    const note =
      earlier > 0
        ? `\n(${earlier} earlier record${earlier === 1 ? '' : 's'} not shown: --all reads them from the transcript)\n`
        : '';
    context.io.stdout(
      `${heading}\n\n${renderCompactionTable(recent, earlier + 1, compactions.undone)}\n${note}\nCost so far: ${describeRunUsage(compactions.usage)}.\n`,
    );
    return 0;
  },
};
