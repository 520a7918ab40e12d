// Sandbox-safe: the agent's `compact_context` calls in a round (docs/design.md#agent-tool), each answered by the run
// itself (accepted, or refused with the reason the model reads).
import type { AgentRunPlan } from '../../core/agent/agent-input.js';
import { acceptedAnswer, COMPACT_CONTEXT_TOOL_NAME, decideAgentTool } from '../../core/agent/agent-tool.js';
import type { CompactionHistory } from '../../core/agent/compaction-history.js';
import { preflight, type BackendCounter } from '../../core/agent/preflight.js';
import type { ChatMessage } from '../../core/types.js';

/** Arguments longer than this are refused unread: a focus is at most 2,000 characters. */
const MAX_ARGUMENT_CHARS = 10_000;

interface AgentToolRound {
  plan: AgentRunPlan;
  round: number;
  history: CompactionHistory;
  messages: readonly ChatMessage[];
  candidates: readonly BackendCounter[];
}

/**
 * Each call's answer by id, and whether the round ends with a compaction, with which focus: the first `compact_context`
 * call of the turn that passes the bounds is accepted; undefined when it made none.
 */
export function answerAgentToolCalls(
  message: ChatMessage,
  { plan, round, history, messages, candidates }: AgentToolRound,
) {
  const bounds = plan.agentTool;
  if (bounds === undefined) return undefined;
  const calls = (message.tool_calls ?? []).filter((call) => call.function.name === COMPACT_CONTEXT_TOOL_NAME);
  if (calls.length === 0) return undefined;
  const { aimAt, aim } = preflight(messages, candidates);
  const lastCompactionRound = [...history.recent].reverse().find((record) => record.kind !== 'undo')?.round;
  const answered = new Map<string, string>();
  let accepted: { focus: string | undefined } | undefined;
  for (const call of calls) {
    if (accepted !== undefined) {
      answered.set(call.id, 'compact_context: already asked this round; the harness compacts once.');
      continue;
    }
    let args: unknown;
    try {
      if (call.function.arguments.length > MAX_ARGUMENT_CHARS) throw new Error('too long');
      args = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
    } catch {
      answered.set(call.id, 'Error: compact_context: the arguments must be a JSON object { focus?: string }');
      continue;
    }
    const decision = decideAgentTool(args, {
      bounds,
      round,
      lastCompactionRound,
      messages,
      keepRecent: plan.compaction.options.keepRecent,
      counter: aimAt.conversation,
      budget: plan.compaction.contextBudget ?? aim,
    });
    if (decision.accepted) {
      accepted = { focus: decision.focus };
      answered.set(call.id, acceptedAnswer(decision.focus));
    } else answered.set(call.id, decision.answer);
  }
  return { answered, compact: accepted !== undefined, focus: accepted?.focus };
}
