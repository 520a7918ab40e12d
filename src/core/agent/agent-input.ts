// Sandbox-safe: the input of `agentRun` (docs/design.md#agent-run) — model configs, tools, compaction and activity
// settings — validated once, at the edge, into a plain-JSON plan the workflow runs.
import { z } from 'zod';
import { InvalidInputError } from '../errors.js';
import {
  COMPACTION_OPTION_KEYS,
  parseDuration,
  resolveOptions,
  type CompactionOptions,
  type Duration,
  type ResolvedOptions,
} from '../compaction/options.js';
import { COMPACTION_DEFAULTS } from '../compaction/defaults.js';
import { assertKnownKeys } from '../unknown-keys.js';
import { DEFAULT_PAYLOAD_LIMIT_BYTES } from '../limits/payload-size.js';
import { DEFAULT_PRICING, type Pricing } from './run-usage.js';
import type { ToolDeclaration } from '../counting/request-counter.js';
import { checkWith, isRecord, isSticky, validateMessages } from '../schema.js';
import { assertTaskQueueName } from '../limits/task-queue.js';
import { BUILT_IN_TOOLS, isBuiltInToolName, isInternalActivityName } from './tool-declarations.js';
import { RECALL_TOOL, RECALL_TOOL_NAME } from './recall.js';
import { resolveColdCache, type CacheTtl, type ColdCache } from './cold-cache.js';
import {
  COMPACT_CONTEXT_TOOL,
  COMPACT_CONTEXT_TOOL_NAME,
  parseAgentToolOption,
  type AgentToolOptions,
  type AgentToolPlan,
} from './agent-tool.js';
import { COMPACTION_REVIEWS, DEFAULT_REVIEW_TIMEOUT_MS, expected, type CompactionReview } from './steering.js';
import type { ChatMessage } from '../types.js';

/** How the workflow counts tokens for a backend when no billed number covers the messages. */
export type Tokenizer = 'o200k_base' | 'cl100k_base' | 'chars';

interface ModelConfigBase {
  /** The backend's context window in tokens. */
  contextWindow: number;
  /** Tokens reserved for the answer (sent as `max_completion_tokens` to OpenAI). */
  maxOutputTokens: number;
  /** Tokens kept free for counting error. @default 5% of contextWindow for 'openai'; 0 for 'replay' */
  safetyMargin?: number;
  /** How the workflow estimates what billed usage does not cover. @default 'o200k_base' */
  tokenizer?: Tokenizer;
  /** A short name for the UI, the CLI and failures. @default `openai:<model>` or `replay:<trajectory>` */
  label?: string;
}

/** An OpenAI-compatible chat-completions backend. The worker builds the client (OPENAI_BASE_URL, OPENAI_API_KEY). */
export interface OpenAIModelConfig extends ModelConfigBase {
  provider: 'openai';
  model: string;
  /** @default not sent (the provider's default) */
  temperature?: number;
}

/** Plays a recorded trajectory back, loaded by the worker (`COMPACTOR_TRAJECTORY_DIR`) so it never enters history. */
export interface ReplayModelConfig extends ModelConfigBase {
  provider: 'replay';
  /** A file name (`.json` may be left out) or a relative path under the worker's trajectory directory. */
  trajectory: string;
}

export type ModelConfig = OpenAIModelConfig | ReplayModelConfig;

/** Settings of an activity the loop schedules (`chat`, a tool). */
export interface AgentActivitySettings {
  /** Deadline of one attempt. @default '5m' for chat, '1m' for tools */
  startToCloseTimeout?: Duration;
  /** @default '10s' for chat and the built-in and replayed tools (they heartbeat while they run); none for your own tools (set it when they heartbeat) */
  heartbeatTimeout?: Duration;
  /** Attempts in total before the loop gives up on this backend (chat) or reports the failure to the model (tools). @default 3 */
  maximumAttempts?: number;
  /** Wait before the second attempt, ×2 per attempt. @default '1s' */
  initialInterval?: Duration;
  /** Run these activities on their own task queue. @default the workflow's */
  taskQueue?: string;
}

/** How long a backend that failed a round rests (not tried first); when all rest they are tried in chain order. */
export interface BackendCooldown {
  /** Rounds a failed backend rests. 0: no cooldown, every round starts with the first backend. @default 5 */
  rounds?: number;
  /** Or this long (workflow time): with both, the cooldown ends at whichever comes first. @default none */
  time?: Duration;
}

/** Compaction settings of a run: the compaction options, with `contextBudget` defaulting to the preflight's aim. */
export interface AgentCompactionOptions extends Omit<CompactionOptions, 'contextBudget'> {
  /** @default the aim of each round's preflight (the largest room among the backends still worth trying) */
  contextBudget?: number;
  /** Settings of the `summarize` activity (see `compact`). */
  startToCloseTimeout?: Duration;
  heartbeatTimeout?: Duration;
  taskQueue?: string;
  summarizerModel?: string;
  /** Whether a compaction waits for a person (docs/design.md#review). @default 'auto' */
  review?: CompactionReview;
  /** With `review: 'approve'`: how long a proposal waits before it is applied. @default '1h' */
  reviewTimeout?: Duration;
  /** Declare a `recall` tool and name replaced transcript ids in stubs and summaries (docs/design.md#recall). @default false */
  recall?: boolean;
  /**
   * Prompt-cache lifetime: after a longer pause the run compacts at `coldTrigger` (docs/design.md#cold-cache).
   * @default the shortest of the chain's providers' (`DEFAULT_CACHE_TTL`)
   */
  cacheTtl?: CacheTtl;
  /** The trigger, as a share of the budget, after a pause longer than `cacheTtl` (at most `triggerRatio`). @default 0.7 */
  coldTrigger?: number;
  /** Declare the agent's own tool `compact_context({ focus? })` (docs/design.md#agent-tool). @default false */
  agentTool?: boolean | AgentToolOptions;
}

/** The input of `agentRun`. */
export interface AgentRunInput {
  /** The conversation to start from (validated like every conversation: docs/design.md#messages). */
  messages: unknown[];
  /** One backend, or a fallback chain tried in order when a backend keeps failing. */
  model: ModelConfig | ModelConfig[];
  /** Tools the model may call: built-in names (`fs_read`, `fs_list`, `grep`) or declarations of tool activities registered on the worker. @default [] */
  tools?: Array<string | ToolDeclaration>;
  compaction: AgentCompactionOptions;
  /** The run ends after this many chat rounds. @default 100 */
  maxRounds?: number;
  /** How long a failed backend of the chain rests before it is tried first again. @default { rounds: 5 } */
  backendCooldown?: BackendCooldown;
  /** Keep the first user message verbatim through every compaction (docs/design.md#task-survives). @default true */
  keepTask?: boolean;
  /** Prices relative to one uncached input token, for the billed-input estimate. @default { cachedInput: 0.1, summarizerInput: 0.25 } */
  pricing?: { cachedInput?: number; summarizerInput?: number };
  /** @default see AgentActivitySettings */
  chatActivity?: AgentActivitySettings;
  toolActivity?: AgentActivitySettings;
  /** Continue-as-new after this many rounds in one run, besides when Temporal suggests it. For tests and tuning. @default never */
  continueAsNewAfterRounds?: number;
  /** Upsert the run's search attributes the namespace has (a missing one is never upserted). @default true */
  searchAttributes?: boolean;
  /**
   * The largest payload sent inline; over it, without a payload store, the run fails `RunFailed.PayloadTooLarge`
   * rather than send what the server refuses. @default 2,000,000
   */
  maxPayloadBytes?: number;
}

export interface ResolvedBackend {
  index: number;
  label: string;
  config: ModelConfig;
  safetyMargin: number;
  tokenizer: Tokenizer;
}

export interface AgentCompaction {
  options: Omit<ResolvedOptions, 'contextBudget'>;
  /** The run's `contextBudget`; undefined: each compaction aims at the preflight's room. */
  contextBudget: number | undefined;
  activity: Pick<AgentCompactionOptions, 'startToCloseTimeout' | 'heartbeatTimeout' | 'taskQueue' | 'summarizerModel'>;
}

/** A validated run plan (plain JSON). */
export interface AgentRunPlan {
  /** The opening conversation, validated (empty for a continued run: it carries its own). */
  messages: ChatMessage[];
  backends: ResolvedBackend[];
  tools: ToolDeclaration[];
  compaction: AgentCompaction;
  review: { mode: CompactionReview; timeoutMs: number };
  recall: boolean;
  coldCache: ColdCache;
  /** Undefined when `compaction.agentTool` is off. */
  agentTool: AgentToolPlan | undefined;
  maxRounds: number;
  /** Rounds and milliseconds a failed backend rests (no time limit when undefined). */
  backendCooldown: { rounds: number; timeMs: number | undefined };
  keepTask: boolean;
  pricing: Pricing;
  chatActivity: AgentActivitySettings;
  toolActivity: AgentActivitySettings;
  continueAsNewAfterRounds: number | undefined;
  searchAttributes: boolean;
  maxPayloadBytes: number;
}

export const DEFAULT_MAX_ROUNDS = 100;
export const DEFAULT_BACKEND_COOLDOWN_ROUNDS = 5;
/** The retry policy's `maximumInterval` of `chat` and tools; a larger `initialInterval` would make the SDK throw. */
export const AGENT_MAXIMUM_RETRY_INTERVAL_MS = 30_000;

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();
const duration = z.union(
  [z.number().nonnegative(), z.string().min(1)],
  expected('milliseconds or a duration like "30s"'),
);
const tokenizer = z.enum(['o200k_base', 'cl100k_base', 'chars']);

const modelBase = {
  contextWindow: positiveInt,
  maxOutputTokens: positiveInt,
  safetyMargin: nonNegativeInt.optional(),
  tokenizer: tokenizer.optional(),
  label: z.string().min(1).optional(),
};
const openaiModelSchema = z.strictObject({
  provider: z.literal('openai'),
  model: z.string().min(1),
  temperature: z.number().min(0).max(2).optional(),
  ...modelBase,
});
const replayModelSchema = z.strictObject({
  provider: z.literal('replay'),
  trajectory: z.string().min(1),
  ...modelBase,
});
const activitySchema = z.strictObject({
  startToCloseTimeout: duration.optional(),
  heartbeatTimeout: duration.optional(),
  maximumAttempts: z.number().int().min(1).max(100).optional(),
  initialInterval: duration.optional(),
  taskQueue: z.string().min(1).optional(),
});
const nonEmptyText = z.string(expected('a non-empty string')).min(1, expected('a non-empty string'));

/** `input.compaction` besides the compaction options (resolveOptions checks those). */
const agentCompactionSchema = z.looseObject({
  startToCloseTimeout: duration.optional(),
  heartbeatTimeout: duration.optional(),
  taskQueue: z.string().optional(),
  summarizerModel: nonEmptyText.optional(),
  review: z
    .enum(COMPACTION_REVIEWS, expected(`one of ${COMPACTION_REVIEWS.map((mode) => `"${mode}"`).join(', ')}`))
    .optional(),
  reviewTimeout: duration.optional(),
  recall: z.boolean(expected('true or false')).optional(),
  cacheTtl: z
    .union([z.number().nonnegative(), z.string().min(1)], expected('a duration like "5m" or "off"'))
    .optional(),
  // Checked by resolveColdCache and parseAgentToolOption, which say what they take.
  coldTrigger: z.unknown().optional(),
  agentTool: z.unknown().optional(),
} satisfies Record<keyof Omit<AgentCompactionOptions, keyof CompactionOptions>, z.ZodType>);

/** The names of `input.compaction`: the compaction options and the run's own settings. */
export const AGENT_COMPACTION_KEYS: readonly string[] = [
  ...COMPACTION_OPTION_KEYS,
  ...Object.keys(agentCompactionSchema.shape),
];

const inputSchema = z.strictObject(
  {
    messages: z.array(z.unknown()),
    model: z.unknown(),
    // Each entry is checked by parseTool, which names the field and says what is wrong with it.
    tools: z.array(z.unknown()).optional(),
    compaction: agentCompactionSchema,
    maxRounds: positiveInt.optional(),
    backendCooldown: z.strictObject({ rounds: nonNegativeInt.optional(), time: duration.optional() }).optional(),
    keepTask: z.boolean().optional(),
    pricing: z
      .strictObject({
        cachedInput: z.number().min(0).max(10).default(DEFAULT_PRICING.cachedInput),
        summarizerInput: z.number().min(0).max(10).default(DEFAULT_PRICING.summarizerInput),
      })
      .optional(),
    chatActivity: activitySchema.optional(),
    toolActivity: activitySchema.optional(),
    continueAsNewAfterRounds: positiveInt.optional(),
    searchAttributes: z.boolean().optional(),
    maxPayloadBytes: z.number().int().min(1024).optional(),
    // What a run carries across continue-as-new; the workflow checks it by replaying its transcript.
    carried: z.unknown().optional(),
  },
  // The kind of value seen, not the value: an input passed as the message list would fill the message.
  {
    error: ({ input }) =>
      `must be an object { messages, model, compaction, tools?, maxRounds? }, got ${Array.isArray(input) ? 'a list' : input === null ? 'null' : typeof input}`,
  },
);

/**
 * Validates an `agentRun` input and applies the defaults. Throws `InvalidInputError` naming the
 * field, e.g. `input.model[1].contextWindow`. A continued run's carried conversation is checked by the workflow.
 */
export function planAgentRun(input: unknown): AgentRunPlan {
  const data = checkWith(inputSchema, input, 'input');
  assertKnownKeys(data.compaction, AGENT_COMPACTION_KEYS, 'input.compaction');
  const { coldTrigger, agentTool: agentToolOption, ...settings } = data.compaction;
  const { review, reviewTimeout, recall, cacheTtl, ...compaction }: AgentCompactionOptions = settings;
  const agentTool = parseAgentToolOption(agentToolOption);
  const reviewTimeoutMs = checkDuration(reviewTimeout, 'input.compaction.reviewTimeout');
  const backends = parseBackends(data.model);
  const tools = (data.tools ?? []).map(parseTool);
  // The run's own tools (docs/design.md#agent-tool: compact_context is reserved, declared or not).
  const ownTools = new Map([
    [COMPACT_CONTEXT_TOOL_NAME, "is reserved for the run's own compaction tool (compaction.agentTool)"],
  ]);
  if (recall === true) ownTools.set(RECALL_TOOL_NAME, "is the run's own tool under compaction.recall");
  tools.forEach(({ function: { name } }, index) => {
    const field = `input.tools[${index}].function.name`;
    if (tools.findIndex((tool) => tool.function.name === name) < index)
      throw new InvalidInputError(field, `"${name}" is declared twice`);
    const own = ownTools.get(name);
    if (own !== undefined) throw new InvalidInputError(field, `"${name}" ${own}: name yours otherwise`);
  });
  if (recall === true) tools.push(RECALL_TOOL);
  if (agentTool !== undefined) tools.push(COMPACT_CONTEXT_TOOL);
  // Resolved now, so a bad option fails the run at its start; a stand-in budget when the preflight supplies it.
  const { contextBudget, startToCloseTimeout, heartbeatTimeout, taskQueue, summarizerModel, ...compactionOptions } =
    compaction;
  if (compactionOptions.keepTask !== undefined)
    throw new InvalidInputError(
      'input.compaction.keepTask',
      `the run keeps its task by input.keepTask (default ${COMPACTION_DEFAULTS.keepTask}): set it there`,
    );
  const { contextBudget: _standIn, ...resolved } = resolveOptions(
    { ...compactionOptions, contextBudget: contextBudget ?? 1 },
    'input.compaction',
  );
  // The run pins its task itself, as a sticky message (pinTask) its transcript's replay reads too;
  // with input.keepTask false nothing is pinned, and the engine must not pin it either.
  const options = { ...resolved, keepTask: false };
  for (const [field, settings] of [
    ['input.compaction', { startToCloseTimeout, heartbeatTimeout, taskQueue }],
    ['input.chatActivity', data.chatActivity],
    ['input.toolActivity', data.toolActivity],
  ] as const) {
    checkDuration(settings?.startToCloseTimeout, `${field}.startToCloseTimeout`);
    checkDuration(settings?.heartbeatTimeout, `${field}.heartbeatTimeout`);
    if ((checkDuration(settings?.initialInterval, `${field}.initialInterval`) ?? 0) > AGENT_MAXIMUM_RETRY_INTERVAL_MS)
      throw new InvalidInputError(
        `${field}.initialInterval`,
        `must be at most ${AGENT_MAXIMUM_RETRY_INTERVAL_MS / 1000}s (the longest wait between attempts), got ${JSON.stringify(settings?.initialInterval)}`,
      );
    assertTaskQueueName(settings?.taskQueue, `${field}.taskQueue`);
  }
  const messages = data.carried === undefined ? validateAgentMessages(data.messages) : [];
  return {
    messages,
    backends,
    tools,
    compaction: {
      options,
      contextBudget,
      activity: { startToCloseTimeout, heartbeatTimeout, taskQueue, summarizerModel },
    },
    recall: recall === true,
    coldCache: resolveColdCache(
      { cacheTtl, coldTrigger },
      backends.map((backend) => backend.config.provider),
      options.triggerRatio,
      'input.compaction',
    ),
    agentTool,
    review: {
      mode: review ?? 'auto',
      timeoutMs: reviewTimeoutMs ?? DEFAULT_REVIEW_TIMEOUT_MS,
    },
    maxRounds: data.maxRounds ?? DEFAULT_MAX_ROUNDS,
    backendCooldown: {
      rounds: data.backendCooldown?.rounds ?? DEFAULT_BACKEND_COOLDOWN_ROUNDS,
      timeMs:
        data.backendCooldown?.time === undefined
          ? undefined
          : parseDuration(data.backendCooldown.time, 'input.backendCooldown.time'),
    },
    keepTask: data.keepTask ?? COMPACTION_DEFAULTS.keepTask,
    pricing: data.pricing ?? DEFAULT_PRICING,
    chatActivity: data.chatActivity ?? {},
    toolActivity: data.toolActivity ?? {},
    continueAsNewAfterRounds: data.continueAsNewAfterRounds,
    searchAttributes: data.searchAttributes ?? true,
    maxPayloadBytes: data.maxPayloadBytes ?? DEFAULT_PAYLOAD_LIMIT_BYTES,
  };
}

/** A duration longer than zero when given: the run must not find out in its middle. */
function checkDuration(value: Duration | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseDuration(value, field);
  if (ms <= 0) throw new InvalidInputError(field, `must be longer than zero, got ${JSON.stringify(value)}`);
  return ms;
}

const MODEL_SHAPES =
  '{ provider: "openai", model, contextWindow, maxOutputTokens, safetyMargin? } or { provider: "replay", trajectory, contextWindow, maxOutputTokens }';

/** One model config or a non-empty chain of them, each with its defaults. */
function parseBackends(model: unknown): ResolvedBackend[] {
  if (model === undefined) throw new InvalidInputError('input.model', `required: ${MODEL_SHAPES}, or a list of them`);
  const list = Array.isArray(model) ? model : [model];
  if (list.length === 0) throw new InvalidInputError('input.model', 'must not be an empty list');
  return list.map((value: unknown, index): ResolvedBackend => {
    const field = Array.isArray(model) ? `input.model[${index}]` : 'input.model';
    if (typeof value !== 'object' || value === null) throw new InvalidInputError(field, `must be ${MODEL_SHAPES}`);
    const provider: unknown = Reflect.get(value, 'provider');
    if (provider !== 'openai' && provider !== 'replay')
      throw new InvalidInputError(`${field}.provider`, `must be "openai" or "replay", got ${JSON.stringify(provider)}`);
    const config =
      provider === 'openai' ? checkWith(openaiModelSchema, value, field) : checkWith(replayModelSchema, value, field);
    const safetyMargin =
      config.safetyMargin ?? (config.provider === 'openai' ? Math.ceil(config.contextWindow * 0.05) : 0);
    if (config.maxOutputTokens + safetyMargin >= config.contextWindow)
      throw new InvalidInputError(
        `${field}.contextWindow`,
        `${config.contextWindow} leaves no room for the conversation after maxOutputTokens (${config.maxOutputTokens}) and safetyMargin (${safetyMargin})`,
      );
    const label =
      config.label ?? (config.provider === 'openai' ? `openai:${config.model}` : `replay:${config.trajectory}`);
    return { index, label, config, safetyMargin, tokenizer: config.tokenizer ?? 'o200k_base' };
  });
}

/** The conversation with its first user message marked `sticky` (docs/design.md#task-survives). */
export function pinTask(messages: readonly ChatMessage[]): ChatMessage[] {
  const task = messages.findIndex((message) => message.role === 'user');
  const found = messages[task];
  if (found === undefined || isSticky(found)) return [...messages];
  return messages.map((message, index) => (index === task ? { ...message, sticky: true } : message));
}

const TOOL_SHAPE = '{ type: "function", function: { name, description?, parameters? } }';

/** An OpenAI function declaration, checked as a provider would (its parameters down to the top of their schema). */
const toolSchema = z.looseObject(
  {
    type: z.literal('function', expected('"function"')),
    function: z.looseObject(
      {
        name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, expected('1-64 letters, digits, _ or -')),
        description: z.string(expected('a string')).optional(),
        strict: z.boolean(expected('true, false or null')).nullable().optional(),
        parameters: z
          .looseObject(
            {
              type: z.literal('object', expected('"object" (a function takes named arguments)')).optional(),
              properties: z
                .record(
                  z.string(),
                  z.union([z.looseObject({}), z.boolean()], expected('a JSON Schema (an object)')),
                  expected('an object of property schemas'),
                )
                .optional(),
              required: z.array(z.string(expected('a property name')), expected('a list of property names')).optional(),
            },
            expected('a JSON Schema object'),
          )
          .optional(),
      },
      expected('an object { name, description?, parameters? }'),
    ),
  },
  expected(`a built-in tool name or ${TOOL_SHAPE}`),
);

/** One entry of `tools`: a built-in tool's name, or a function declaration. */
function parseTool(value: unknown, index: number): ToolDeclaration {
  const field = `input.tools[${index}]`;
  if (typeof value === 'string') {
    if (!isBuiltInToolName(value))
      throw new InvalidInputError(
        field,
        `"${value}" is not a built-in tool (fs_read, fs_list, grep); declare your own tools as ${TOOL_SHAPE}`,
      );
    return BUILT_IN_TOOLS[value];
  }
  checkWith(toolSchema, value, field);
  // The caller's object, not zod's copy (which would reorder its keys).
  const tool = value as z.input<typeof toolSchema>;
  if (isInternalActivityName(tool.function.name))
    throw new InvalidInputError(
      `${field}.function.name`,
      `"${tool.function.name}" is one of the worker's own activities, not a tool: the model could call it; name your tool otherwise`,
    );
  return tool;
}

function quoted(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
}

/** {@link validateMessages}, plus what a provider refuses: each call answered once right after its turn, arguments JSON objects. */
export function validateAgentMessages(messages: unknown): ChatMessage[] {
  const valid = validateMessages(messages);
  let open: { index: number; ids: string[]; answered: Map<string, number> } | undefined;
  const close = (): void => {
    if (open === undefined) return;
    const turn = open;
    open = undefined;
    const position = turn.ids.findIndex((id) => !turn.answered.has(id));
    if (position >= 0)
      throw new InvalidInputError(
        `messages[${turn.index}].tool_calls[${position}].id`,
        `"${turn.ids[position]}" has no tool result: every call of a turn must be answered before the next message`,
        turn.index,
      );
  };
  valid.forEach((message, index) => {
    if (message.role === 'tool') {
      const id = message.tool_call_id ?? '';
      const field = `messages[${index}].tool_call_id`;
      if (open === undefined)
        throw new InvalidInputError(
          field,
          'answers no tool call: a tool result must follow the assistant turn that asked for it (only other results in between)',
          index,
        );
      if (!open.ids.includes(id))
        throw new InvalidInputError(
          field,
          `"${id}" answers no tool call of messages[${open.index}] (its calls: ${open.ids.map((call) => JSON.stringify(call)).join(', ')})`,
          index,
        );
      const earlier = open.answered.get(id);
      if (earlier !== undefined)
        throw new InvalidInputError(field, `"${id}" is answered twice (also messages[${earlier}])`, index);
      open.answered.set(id, index);
      return;
    }
    close();
    const calls = message.role === 'assistant' ? (message.tool_calls ?? []) : [];
    if (calls.length === 0) return;
    calls.forEach((call, position) => {
      const field = `messages[${index}].tool_calls[${position}].function.arguments`;
      const fault = (note = ''): InvalidInputError =>
        new InvalidInputError(field, `must be a JSON object, got ${quoted(call.function.arguments)}${note}`, index);
      let parsed: unknown;
      try {
        parsed = JSON.parse(call.function.arguments);
      } catch {
        throw fault(' (not JSON)');
      }
      if (!isRecord(parsed)) throw fault();
    });
    open = { index, ids: calls.map((call) => call.id), answered: new Map() };
  });
  close();
  return valid;
}
