// Node only: the activities a compactor worker registers (docs/design.md#worker).
import { createOpenAISummarizer } from '../summarizers/openai.js';
import type { RECALL_TOOL_NAME } from '../core/agent/recall.js';
import type { BuiltInToolName, InternalActivityName } from '../core/agent/tool-declarations.js';
import { createChatActivity } from './chat.js';
import type { ActivityDeps } from './deps.js';
import { createCountTokensActivity } from './count-tokens.js';
import { createDescribeWorkerActivity } from './describe-worker.js';
import { createRecallActivity } from './recall.js';
import { createRestoreCompactionActivity } from './restore-compaction.js';
import { createRecordSessionActivity } from './session.js';
import { createSummarizeActivity } from './summarize.js';
import { createBuiltInTools, createReplayTool } from './tools.js';
import { createTrajectoryStore } from './trajectories.js';

export type { ChatActivityInput, ChatActivityOutput } from './chat.js';
export { createDescribeWorkerActivity };
export type { ActivityDeps } from './deps.js';

/** The activities to register on a worker (`compactorPlugin` does); workflows reach them through `proxyActivities`. */
export function createActivities(deps: ActivityDeps) {
  const { summarizer, model, summarizerContextWindow, openai, chatServer, chatTimeoutMs } = deps;
  const backend = summarizer ?? (model !== undefined && model !== '' ? createOpenAISummarizer({ model }) : undefined);
  if (backend === undefined)
    throw new TypeError('createActivities: pass a summarizer, or the summarizer model name as `model`');
  const trajectories = createTrajectoryStore({ dir: deps.trajectoryDir });
  // Your own tools register beside these, named like their declarations: `{ ...createActivities(deps), my_tool }`.
  return {
    summarize: createSummarizeActivity({ summarizer: backend, summarizerContextWindow }),
    chat: createChatActivity({ openai, chatServer, chatTimeoutMs, trajectories }),
    replayTool: createReplayTool(trajectories),
    recordSession: createRecordSessionActivity(),
    countTokens: createCountTokensActivity(),
    describeWorker: createDescribeWorkerActivity(),
    recall: createRecallActivity(),
    restoreCompaction: createRestoreCompactionActivity(),
    ...createBuiltInTools({ root: deps.toolsRoot, allow: deps.toolsAllow }),
    // Every activity is a tool or named among the internal ones, which agentRun refuses as tool names.
  } satisfies Record<InternalActivityName | BuiltInToolName | typeof RECALL_TOOL_NAME, unknown>;
}

/** The activities as workflows see them through `proxyActivities`. */
export type CompactorActivities = ReturnType<typeof createActivities>;
