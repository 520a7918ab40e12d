// Node only (activities): `recall` (docs/design.md#recall), read from the run's history: the run keeps nothing extra.
import { Context } from '@temporalio/activity';
import { FailureType } from '../core/errors.js';
import { MAX_RECALL_CHARS, parseRecallArgs, unknownRecallId } from '../core/agent/recall.js';
import { capText, renderTranscript } from '../core/compaction/transcript.js';
import { readSession } from '../client/session-reader.js';
import { nonRetryableFailure } from '../shared/failures.js';

/** A refused id: the model reads the message (`Error: recall: ...`), the run goes on. */
const refused = (message: string) => nonRetryableFailure(FailureType.Tool.InvalidArguments, message);

/**
 * The `recall` activity: `{ id }` in, the message with that transcript id out, as the summarizer's
 * transcript renders it, cut at MAX_RECALL_CHARS. A bad or unknown id fails `Tool.InvalidArguments`.
 */
export function createRecallActivity() {
  return async function recall(args: unknown): Promise<string> {
    const parsed = parseRecallArgs(args);
    if ('error' in parsed) throw refused(parsed.error);
    const context = Context.current();
    const execution = context.info.workflowExecution;
    if (execution === undefined) throw refused('recall: only an agent run (a workflow) can recall its own transcript');
    const { workflowId, runId } = execution;
    // The run recorded every line before it asked (src/workflows/agent/loop.ts): its history holds them.
    for await (const line of readSession(context.client, { workflowId, runId, lines: 0 }, { pending: false })) {
      context.heartbeat();
      if (line.type === 'message' && line.id === parsed.id)
        return capText(renderTranscript([line.message], Number.POSITIVE_INFINITY), MAX_RECALL_CHARS);
    }
    throw refused(unknownRecallId(parsed.id));
  };
}
