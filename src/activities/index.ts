// Node only: the activities a compactor worker registers (docs/design.md#worker).
import type OpenAI from 'openai';
import type { OpenAIClientSettings } from '../llm/openai-adapter.js';
import { createOpenAISummarizer } from '../summarizers/openai.js';
import type { Summarizer } from '../core/types.js';
import type { RECALL_TOOL_NAME } from '../core/agent/recall.js';
import type { BuiltInToolName, InternalActivityName } from '../core/agent/tool-declarations.js';
import { createChatActivity } from './chat.js';
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

/** What the activities need; built on the worker, so API keys never enter workflow history. */
export interface ActivityDeps {
  /** The backend that writes summaries. @default an OpenAI-compatible summarizer for `model`, configured from the environment */
  summarizer?: Summarizer;
  /** The summarizer model, when `summarizer` is not given (`OPENAI_BASE_URL` and `OPENAI_API_KEY` of src/config.ts configure the client). */
  model?: string;
  /**
   * The summarizer's context window in tokens: `summarize` refuses a request over it unsent
   * (`Summarizer.ContextOverflow`) and the compaction cuts smaller (docs/design.md#summarizer-window).
   * @default unset, one request as the workflow sent it (`compactorPlugin` and `createWorker` pass COMPACTOR_SUMMARIZER_CONTEXT_WINDOW)
   */
  summarizerContextWindow?: number;
  /** The agent loop's OpenAI-compatible client for `chat`. @default built on first use from `chatServer`, `maxRetries: 0` */
  openai?: OpenAI;
  /** Where the `chat` client built on first use sends requests. @default the openai client's own (`compactorPlugin` and `createWorker` pass OPENAI_BASE_URL and OPENAI_API_KEY) */
  chatServer?: Pick<OpenAIClientSettings, 'baseURL' | 'apiKey'>;
  /** Deadline of one `chat` request in ms; keep it below the chat activity's startToCloseTimeout. @default 120_000 */
  chatTimeoutMs?: number;
  /** The directory the built-in tools (`fs_read`, `fs_list`, `grep`) may read. @default unset: they read nothing (`compactorPlugin` and `createWorker` pass COMPACTOR_TOOLS_ROOT) */
  toolsRoot?: string;
  /** Secret files under the tool root the built-in tools may read after all, by rule or path (docs/agent-runs.md#secret-files). @default none (`compactorPlugin` and `createWorker` pass COMPACTOR_TOOLS_ALLOW) */
  toolsAllow?: readonly string[];
  /** Where the replay provider finds trajectories by name. @default the current directory (`compactorPlugin` and `createWorker` pass COMPACTOR_TRAJECTORY_DIR) */
  trajectoryDir?: string;
}

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
