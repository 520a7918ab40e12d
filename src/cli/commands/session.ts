// Node only: `temporal-compactor session <workflowId>` — an agentRun's transcript, streamed from its history.
import { groupDigits, oneLine } from '../../core/agent/compaction-history.js';
import type { SessionLine } from '../../core/agent/session.js';
import { contentText } from '../../core/counting/tokens.js';
import { readSession } from '../../client/session-reader.js';
import { openAgentRun, QUERY_TIMEOUT_OPTION, queryTimeoutOf } from '../agent-run.js';
import type { CliCommand } from '../command.js';

/** One transcript line for people: `m12  assistant  text [→ fs_read {...}]`. */
export function describeSessionLine(line: SessionLine): string {
  switch (line.type) {
    case 'message': {
      const { message } = line;
      const text = contentText(message.content);
      const calls = (message.tool_calls ?? []).map(
        (call) => `→ ${call.function.name} ${oneLine(call.function.arguments, 60)}`,
      );
      const what =
        message.role === 'tool'
          ? `(${message.tool_call_id ?? '?'}) ${groupDigits(text.length)} chars: ${oneLine(text, 80)}`
          : [oneLine(text, 100), ...calls].filter((part) => part !== '').join(' ');
      return `${line.id.padEnd(6)} ${message.role.padEnd(9)} ${what}`;
    }
    case 'compaction': {
      const kind = line.summary !== null ? 'summary' : line.fallback ? 'hard trim' : 'no change';
      const through =
        line.replacesThroughId === null
          ? 'nothing removed'
          : `${line.dropped} messages through ${line.replacesThroughId} → ${kind}`;
      const flags = [...(line.fallback ? ['fallback'] : []), ...(line.exhausted ? ['EXHAUSTED'] : [])].join(', ');
      return `── compaction: ${through} (${groupDigits(line.tokensBefore)} → ${groupDigits(line.tokensAfter)} tokens)${flags === '' ? '' : ` [${flags}]`}`;
    }
    case 'elision':
      return `── elision ${line.id}: ${line.stub}`;
    case 'pin':
      return `── ${line.pinned ? 'pinned' : 'unpinned'} ${line.ids.join(', ')}`;
    case 'undo':
      return `── undo of compaction #${line.compaction}: ${line.restored.length} messages back${line.removes.length === 0 ? '' : `, ${line.removes.join(', ')} out`} (${groupDigits(line.tokensBefore)} → ${groupDigits(line.tokensAfter)} tokens)`;
  }
}

export const session: CliCommand = {
  name: 'session',
  usage: '<workflowId> [--jsonl] [--query-timeout 15s]',
  summary: "print an agentRun's session transcript, streamed from its history",
  description: [
    "Prints the transcript of an agentRun — its messages, compactions and elisions — one line each, read from the run's history as it streams. --jsonl prints the JSON lines replaySession reads (and `compact` accepts).",
  ],
  options: {
    jsonl: { type: 'boolean', help: 'print the JSON lines replaySession reads' },
    'query-timeout': QUERY_TIMEOUT_OPTION,
  },
  async run(context) {
    const queryTimeoutMs = queryTimeoutOf(context);
    const { workflowId, client } = await openAgentRun(context);
    const jsonl = context.values.jsonl === true;
    for await (const line of readSession(client, workflowId, { queryTimeoutMs }))
      context.io.stdout(`${jsonl ? JSON.stringify(line) : describeSessionLine(line)}\n`);
    return 0;
  },
};
