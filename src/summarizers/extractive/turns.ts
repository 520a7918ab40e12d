// Sandbox-safe: the middle's messages (never the rendered text) read as turns — what the user asked,
// what the agent said, its tool calls with their results, and what earlier summaries carry over.
import { isSummaryMessage, renderContent } from '../../core/compaction/transcript.js';
import type { ChatMessage } from '../../core/types.js';
import { readEarlierSummaries, type EarlierSummaries } from './earlier.js';
import { errorLine } from './text.js';

export interface TurnCall {
  name: string;
  id: string;
  /** As the summarizer was sent it: possibly cut, so possibly not valid JSON. */
  args: string;
  /** Among all turns and calls. */
  order: number;
  result?: TurnResult;
}

export interface TurnResult {
  text: string;
  /** The line that made it look like an error. */
  error: string | undefined;
  order: number;
}

export interface Turns {
  /** User turns, without the engine's earlier summaries (those are in `earlier`). */
  users: Array<{ text: string; order: number }>;
  /** Assistant turns' text; a turn's `order` is that of its last call, if it made any. */
  assistants: Array<{ text: string; order: number }>;
  earlier: EarlierSummaries;
  calls: TurnCall[];
  /** Tool results in order (answered or not). */
  results: Array<{ name: string | undefined; call: TurnCall | undefined; result: TurnResult }>;
}

/** System and developer messages carry nothing to summarize. */
export function readTurns(middle: readonly ChatMessage[]): Turns {
  const turns: Omit<Turns, 'earlier'> = { users: [], assistants: [], calls: [], results: [] };
  const callsById = new Map<string, TurnCall>();
  const summaries: string[] = [];
  let order = 0;
  for (const message of middle) {
    order += 1;
    const text = renderContent(message.content);
    if (message.role === 'user') {
      if (isSummaryMessage(message)) summaries.push(text);
      else turns.users.push({ text, order });
    } else if (message.role === 'assistant') {
      for (const { id, function: called } of message.tool_calls ?? []) {
        order += 1;
        const call: TurnCall = { name: called.name, id, args: called.arguments, order };
        turns.calls.push(call);
        callsById.set(id, call);
      }
      turns.assistants.push({ text, order });
    } else if (message.role === 'tool') {
      const call = message.tool_call_id === undefined ? undefined : callsById.get(message.tool_call_id);
      const result: TurnResult = { text, error: errorLine(text), order };
      if (call !== undefined && call.result === undefined) call.result = result;
      turns.results.push({ name: call?.name ?? message.name, call, result });
    }
  }
  return { ...turns, earlier: readEarlierSummaries(summaries) };
}
