// Node only: what the agentRun commands share: the run a workflow id names, and its queries.
import { durationFlag, onlyArgument, UsageError, type CommandContext, type OptionSpec } from './command.js';

const DEFAULT_QUERY_TIMEOUT_MS = 15_000;

export const QUERY_TIMEOUT_OPTION: OptionSpec = {
  type: 'string',
  value: 'DURATION',
  help: 'how long a query waits for a worker to answer, e.g. 15s (default), 500ms, 2m',
};

/** The agentRun the command's one argument names; a workflow that is not an agentRun is refused. */
export async function openAgentRun(context: CommandContext) {
  const workflowId = onlyArgument(context, 'the workflow id');
  const client = await context.client();
  const handle = client.workflow.getHandle(workflowId);
  const description = await handle.describe();
  if (description.type !== 'agentRun')
    throw new UsageError(`${workflowId} is a ${description.type} workflow, not an agentRun`);
  return { workflowId, client, handle, description };
}

export type AgentRun = Awaited<ReturnType<typeof openAgentRun>>;

/** `--query-timeout`: a duration longer than zero. */
export function queryTimeoutOf(context: CommandContext): number {
  const timeoutMs = durationFlag(context, 'query-timeout', DEFAULT_QUERY_TIMEOUT_MS, '15s, 500ms or 2m');
  if (timeoutMs <= 0) throw new UsageError('--query-timeout must be longer than zero');
  return timeoutMs;
}

/** A query of the run, bounded: without a deadline a missing worker would hold the CLI for the server's own timeout. */
export async function queryRun<T>(
  { client, description }: AgentRun,
  queryTimeoutMs: number,
  what: string,
  query: () => Promise<T>,
): Promise<T> {
  try {
    return await client.withDeadline(Date.now() + queryTimeoutMs, query);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const message = `${what} takes a query, which needs a worker polling task queue "${description.taskQueue}" (${reason})`;
    throw new Error(message, { cause: error });
  }
}
