// Sandbox-safe: the agent loop's tool calls as activities, in parallel (docs/design.md#tools); what goes wrong with
// one becomes that call's result, for the model to read, not the end of the run.
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { CompactorActivities } from '../activities/index.js';
import type { AgentRunPlan, ModelConfig } from '../core/agent/agent-input.js';
import { oneLine } from '../core/agent/compaction-history.js';
import { RECALL_TOOL_NAME } from '../core/agent/recall.js';
import { isBuiltInToolName } from '../core/agent/tool-declarations.js';
import { jsonPayloadBytes, payloadBound } from '../core/limits/payload-size.js';
import type { ChatMessage, ToolCall } from '../core/types.js';
import { agentActivityOptions, OUR_TOOL_DEFAULTS, USER_TOOL_DEFAULTS } from '../shared/activity-options.js';
import { failureMessage } from '../shared/failures.js';

/** At most this many tool calls of one assistant turn run; the rest are answered with an error the model reads. */
export const MAX_TOOL_CALLS_PER_TURN = 64;
/** At most this many tool activities of one turn run at a time (and are scheduled in one workflow task). */
export const TOOL_CALL_CONCURRENCY = 8;
/** Longer argument strings are answered with an error instead of being parsed and sent. */
export const MAX_TOOL_ARGUMENT_CHARS = 1_000_000;
/** Argument JSON nested deeper than this is answered with an error (deep nesting can overflow the stack of whatever serializes it). */
export const MAX_TOOL_ARGUMENT_DEPTH = 64;

/** The backend that answered (a recording answers its own tool calls) and the calls the run answered itself, by id. */
interface ToolDispatch {
  plan: AgentRunPlan;
  backend: ModelConfig;
  externalStorage: boolean;
  answered?: ReadonlyMap<string, string>;
}

/** How deeply the JSON in `text` nests (brackets outside strings); stops counting past `limit`. */
export function jsonDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const char = text.charCodeAt(index);
    if (inString) {
      if (char === 0x5c) index += 1;
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x5b || char === 0x7b) {
      depth += 1;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (char === 0x5d || char === 0x7d) depth -= 1;
  }
  return deepest;
}

/** Why a call over the bounds is answered without running. */
function overBound(call: ToolCall): string | undefined {
  const { name, arguments: args } = call.function;
  if (args.length > MAX_TOOL_ARGUMENT_CHARS)
    return `Error: the arguments of ${name} are ${args.length} characters, more than a tool call may carry (${MAX_TOOL_ARGUMENT_CHARS})`;
  if (jsonDepth(args, MAX_TOOL_ARGUMENT_DEPTH) > MAX_TOOL_ARGUMENT_DEPTH)
    return `Error: the arguments of ${name} nest deeper than ${MAX_TOOL_ARGUMENT_DEPTH} levels`;
  return undefined;
}

/**
 * Runs `tasks` in order, at most `limit` and (past the first) `budget` of their `weight` (argument bytes) in flight:
 * what starts together is scheduled in one workflow task, whose commands must stay under the server's message limit.
 * Results in task order; the first failure rejects (as `Promise.all`).
 */
function inWaves<T>(
  tasks: ReadonlyArray<{ run: () => Promise<T>; weight: number }>,
  limit: number,
  budget: number,
): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  let next = 0;
  let inFlight = 0;
  let weight = 0;
  return new Promise<T[]>((resolve, reject) => {
    const pump = (): void => {
      for (let task = tasks[next]; task !== undefined; task = tasks[next]) {
        if (inFlight >= limit || (inFlight > 0 && weight + task.weight > budget)) return;
        const index = next;
        const started = task;
        next += 1;
        inFlight += 1;
        weight += started.weight;
        started.run().then((result) => {
          results[index] = result;
          inFlight -= 1;
          weight -= started.weight;
          if (inFlight === 0 && next === tasks.length) resolve(results);
          else pump();
        }, reject);
      }
    };
    if (tasks.length === 0) resolve(results);
    else pump();
  });
}

/** The results of an assistant turn's tool calls, in call order, without those a recording left `unanswered`. */
export async function runToolCalls(
  message: ChatMessage,
  unanswered: readonly string[],
  { plan, backend: config, externalStorage, answered }: ToolDispatch,
): Promise<ChatMessage[]> {
  const calls = (message.tool_calls ?? []).filter((call) => !unanswered.includes(call.id));
  // With a payload store, arguments travel as small claims: only the count bounds a wave.
  const weights = calls.map((call) => (externalStorage ? 0 : jsonPayloadBytes([call.function.arguments])));
  const ours = agentActivityOptions(plan.toolActivity, 'input.toolActivity', OUR_TOOL_DEFAULTS);
  const theirs = agentActivityOptions(plan.toolActivity, 'input.toolActivity', USER_TOOL_DEFAULTS);
  const declared = new Set(plan.tools.map((tool) => tool.function.name));
  const tasks = calls.map((call, index) => async (): Promise<ChatMessage> => {
    const { name, arguments: text } = call.function;
    const summary = `${name} ${oneLine(text, 60)}`;
    const answer = (content: string): ChatMessage => ({ role: 'tool', tool_call_id: call.id, content });
    const own = answered?.get(call.id);
    if (own !== undefined) return answer(own);
    if (index >= MAX_TOOL_CALLS_PER_TURN)
      return answer(
        `Error: this turn asked for ${calls.length} tool calls; at most ${MAX_TOOL_CALLS_PER_TURN} run per turn, so this one did not run: ask for it again in a later turn`,
      );
    const refused = overBound(call);
    if (refused !== undefined) return answer(refused);
    try {
      if (config.provider === 'replay') {
        const { replayTool } = proxyActivities<CompactorActivities>({ ...ours, summary: `replay ${summary}` });
        return await replayTool({ trajectory: config.trajectory, toolCallId: call.id });
      }
      if (!declared.has(name))
        return answer(`Error: there is no tool named "${name}"; the tools are: ${[...declared].join(', ') || 'none'}`);
      let args: unknown;
      try {
        args = text.trim() === '' ? {} : JSON.parse(text);
      } catch {
        return answer(`Error: the arguments of ${name} are not valid JSON: ${oneLine(text, 200)}`);
      }
      const bytes = jsonPayloadBytes([args]);
      const limit = payloadBound(plan.maxPayloadBytes, externalStorage);
      if (bytes > limit)
        return answer(`Error: the arguments of ${name} are ${bytes} bytes, more than a tool call may carry (${limit})`);
      // `recall` (docs/design.md#recall) is ours, when the run declared it: a user's own tool of that name is not.
      const settings = isBuiltInToolName(name) || (plan.recall && name === RECALL_TOOL_NAME) ? ours : theirs;
      // Typed by name, not from createActivities: a worker registers the user's own tools beside ours.
      const tools = proxyActivities<Record<string, (args: unknown) => Promise<unknown>>>({ ...settings, summary });
      const run = tools[name];
      if (run === undefined) return answer(`Error: there is no tool named "${name}"`);
      const output = await run(args);
      return answer(typeof output === 'string' ? output : JSON.stringify(output));
    } catch (error) {
      if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
      return answer(`Error: ${failureMessage(error)}`);
    }
  });
  const weighted = tasks.map((run, index) => ({ run, weight: weights[index] ?? 0 }));
  return inWaves(weighted, TOOL_CALL_CONCURRENCY, plan.maxPayloadBytes);
}
