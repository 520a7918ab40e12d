// Sandbox-safe: the agent loop's tool dispatch (docs/design.md#tools) — the tool calls of an
// assistant turn run as activities, in parallel; what goes wrong with one (an unknown tool, bad
// JSON arguments, arguments over the payload limit, a failed activity) becomes that call's result,
// information for the model rather than the end of the run.
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { CompactorActivities } from '../activities/index.js';
import type { AgentRunPlan, ModelConfig } from '../core/agent/agent-input.js';
import { oneLine } from '../core/agent/compaction-history.js';
import { isBuiltInToolName } from '../core/agent/tool-declarations.js';
import { jsonPayloadBytes } from '../core/limits/payload-size.js';
import type { ChatMessage } from '../core/types.js';
import { agentActivityOptions, OUR_TOOL_DEFAULTS, USER_TOOL_DEFAULTS } from '../shared/activity-options.js';
import { failureMessage } from '../shared/failures.js';

/** What a round's tool calls are dispatched with. */
export interface ToolDispatch {
  /** The run's plan: the declared tools, the tool activity settings and the payload limit. */
  plan: AgentRunPlan;
  /** The config of the backend that answered: a replayed recording answers its own tool calls. */
  backend: ModelConfig;
  /** Whether the worker stores payloads externally (then no argument is too large to send). */
  externalStorage: boolean;
}

/**
 * Runs the tool calls of an assistant turn as activities (in parallel) and returns their results
 * in call order; the calls in `unanswered` (a recording that never answered them) are left out.
 */
export async function runToolCalls(
  message: ChatMessage,
  unanswered: readonly string[],
  { plan, backend: config, externalStorage }: ToolDispatch,
): Promise<ChatMessage[]> {
  const calls = (message.tool_calls ?? []).filter((call) => !unanswered.includes(call.id));
  const ours = agentActivityOptions(plan.toolActivity, 'input.toolActivity', OUR_TOOL_DEFAULTS);
  const theirs = agentActivityOptions(plan.toolActivity, 'input.toolActivity', USER_TOOL_DEFAULTS);
  const declared = new Set(plan.tools.map((tool) => tool.function.name));
  return Promise.all(
    calls.map(async (call): Promise<ChatMessage> => {
      const summary = `${call.function.name} ${oneLine(call.function.arguments, 60)}`;
      const answer = (content: string): ChatMessage => ({ role: 'tool', tool_call_id: call.id, content });
      try {
        if (config.provider === 'replay') {
          const { replayTool } = proxyActivities<CompactorActivities>({ ...ours, summary: `replay ${summary}` });
          return await replayTool({ trajectory: config.trajectory, toolCallId: call.id });
        }
        if (!declared.has(call.function.name))
          return answer(
            `Error: there is no tool named "${call.function.name}"; the tools are: ${[...declared].join(', ') || 'none'}`,
          );
        let args: unknown;
        try {
          args = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
        } catch {
          return answer(
            `Error: the arguments of ${call.function.name} are not valid JSON: ${oneLine(call.function.arguments, 200)}`,
          );
        }
        const bytes = jsonPayloadBytes([args]);
        if (bytes > plan.maxPayloadBytes && !externalStorage) {
          return answer(
            `Error: the arguments of ${call.function.name} are ${bytes} bytes, more than a tool call may carry (${plan.maxPayloadBytes})`,
          );
        }
        const settings = isBuiltInToolName(call.function.name) ? ours : theirs;
        // Typed by name, not from createActivities: a worker registers the user's own tools beside ours.
        const tools = proxyActivities<Record<string, (args: unknown) => Promise<unknown>>>({ ...settings, summary });
        const run = tools[call.function.name];
        if (run === undefined) return answer(`Error: there is no tool named "${call.function.name}"`);
        const output = await run(args);
        return answer(typeof output === 'string' ? output : JSON.stringify(output));
      } catch (error) {
        if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
        // A failed tool is information for the model, not the end of the run.
        return answer(`Error: ${failureMessage(error)}`);
      }
    }),
  );
}
