// Node only: `temporal-compactor review <workflowId>` — the compaction an agentRun holds for review
// (compaction.review: 'approve', docs/design.md#review), and the decision on it.
import { readFileSync } from 'node:fs';
import { groupDigits } from '../../core/agent/compaction-history.js';
import type { CompactionProposal, ReviewCompactionInput } from '../../core/agent/steering.js';
import { agentRunUpdates, agentRunQueries } from '../../shared/agent-run.js';
import { openAgentRun, QUERY_TIMEOUT_OPTION, queryRun, queryTimeoutOf } from '../agent-run.js';
import { UsageError, type CliCommand, type CommandContext } from '../command.js';

function describeProposal(workflowId: string, proposal: CompactionProposal): string {
  const lines = [
    `agentRun ${workflowId} · compaction waiting for review (round ${proposal.round}, ${proposal.kind}, aimed at ${proposal.backend})`,
    `tokens: ${groupDigits(proposal.tokensBefore)} → ${groupDigits(proposal.tokensAfter)}`,
    `drops: ${proposal.dropped.length === 0 ? 'nothing' : proposal.dropped.join(', ')}`,
    `elides: ${proposal.elided.length === 0 ? 'nothing' : proposal.elided.join(', ')}`,
    `applied at ${new Date(proposal.applyAt).toISOString()} unless reviewed (--apply, --reject, --edit FILE)`,
  ];
  if (proposal.summary !== null) lines.push('', proposal.summary);
  return `${lines.join('\n')}\n`;
}

/** The decision the flags ask for, or undefined for none (print the proposal); two of them are a usage mistake. */
function decisionOf(values: CommandContext['values']): ReviewCompactionInput | undefined {
  const asked = (['apply', 'reject', 'edit'] as const).filter((flag) => values[flag] !== undefined);
  if (asked.length > 1)
    throw new UsageError(
      `give one of --apply, --reject, --edit, not ${asked.map((flag) => `--${flag}`).join(' and ')}`,
    );
  const [decision] = asked;
  if (decision !== 'edit') return decision === undefined ? undefined : { decision };
  const file = values.edit;
  if (typeof file !== 'string' || file === '')
    throw new UsageError('--edit takes the file holding the summary to apply');
  return { decision, summary: readFileSync(file, 'utf8') };
}

export const review: CliCommand = {
  name: 'review',
  usage: '<workflowId> [--apply|--reject|--edit FILE] [--json]',
  summary: 'show the compaction an agentRun holds for review, and apply, reject or edit it',
  description: [
    "With compaction.review 'approve', an agentRun computes a compaction and waits for a decision before it applies it. Without a flag this prints the proposal (what it would drop and elide, tokens before and after, its summary, when it applies on its own); --apply applies it, --reject keeps the conversation as it is, --edit FILE applies it with the summary in FILE. Exit 1 when no compaction is waiting.",
  ],
  options: {
    apply: { type: 'boolean', help: 'apply the proposal' },
    reject: { type: 'boolean', help: 'reject it: the conversation stays as it is' },
    edit: { type: 'string', help: 'apply it with the summary in this file instead of its own' },
    json: { type: 'boolean', help: 'print the proposal (or the answer) as JSON' },
    'query-timeout': QUERY_TIMEOUT_OPTION,
  },
  async run(context) {
    const decision = decisionOf(context.values);
    const run = await openAgentRun(context);
    const { workflowId, handle, description } = run;
    const proposal = await queryRun(run, queryTimeoutOf(context), 'reading the proposal', () =>
      handle.query(agentRunQueries.pendingCompaction),
    );
    if (proposal === null) {
      context.io.stderr(`agentRun ${workflowId} (${description.status.name}): no compaction is waiting for review\n`);
      return 1;
    }
    if (decision === undefined) {
      const json = context.values.json === true;
      context.io.stdout(json ? `${JSON.stringify(proposal, null, 2)}\n` : describeProposal(workflowId, proposal));
      return 0;
    }
    const answer = await handle.executeUpdate(agentRunUpdates.reviewCompaction, { args: [decision] });
    context.io.stdout(
      context.values.json === true
        ? `${JSON.stringify(answer)}\n`
        : `agentRun ${workflowId}: ${answer.decision === 'reject' ? 'rejected' : answer.decision === 'edit' ? 'applied with your summary' : 'applied'} the compaction of round ${answer.round}\n`,
    );
    return 0;
  },
};
