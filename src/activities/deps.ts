// Node only: what the activities need, in a module of its own so that each activity's file can
// take its part of it without importing the index that imports them.
import type OpenAI from 'openai';
import type { OpenAIClientSettings } from '../llm/openai-adapter.js';
import type { Summarizer } from '../core/types.js';

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
