// Sandbox-safe: the reference agent loop `agentRun` (DESIGN §7). Each round: preflight in every
// backend's own units, compact when needed (inline, through `compact`), one `chat` activity, the
// requested tools as activities, append, calibrate. The live conversation is derived from the same
// transcript lines that are recorded, so `replaySession(session)` equals it by construction.
import { ApplicationFailure, defineSearchAttributeKey, SearchAttributeType, type SearchAttributeUpdatePair } from '@temporalio/common';
import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  defineUpdate,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { ChatActivityInput, ChatActivityOutput } from '../activities/chat.js';
import type { ReplayToolInput } from '../activities/tools.js';
import { ChatFailureType, ReplayFailureType, RunFailureType, ToolFailureType, UpdateFailureType } from '../core/agent-errors.js';
import { planAgentRun, type AgentActivitySettings, type AgentRunInput, type AgentRunPlan, type ResolvedBackend } from '../core/agent-input.js';
import { compactionRecord, groupDigits, oneLine, renderCompactionTable, type CompactionRecord } from '../core/compaction-history.js';
import { FailureType, InvalidInputError } from '../core/errors.js';
import { parseDuration, type Duration } from '../core/options.js';
import { backendCounter, preflight, type BackendCounter } from '../core/preflight.js';
import { validateMessages } from '../core/schema.js';
import { applySessionLine, recordCompaction, type SessionEntry, type SessionLine } from '../core/session.js';
import type { ChatMessage, CompactionResult, ContentPart } from '../core/types.js';
import type { UsageCounterState } from '../core/usage-counter.js';
import { compact, needsCompaction, type CompactOptions } from './compact.js';
import { failOnInvalidInput, invalidInputFailure } from './failures.js';

/** What a run carries across continue-as-new (internal; plain JSON). */
export interface AgentRunCarried {
  session: SessionLine[];
  compactions: CompactionRecord[];
  rounds: number;
  nextId: number;
  /** Each backend's `UsageCounter` state, by position in the chain. */
  counters: Array<UsageCounterState | null>;
  pendingUserMessages: ChatMessage[];
  backendFallbacks: number;
  peakContextTokens: number;
  continuedAsNew: number;
}

/** The workflow's input: {@link AgentRunInput}, plus the state a continued run carries. */
export interface AgentRunWorkflowInput extends AgentRunInput {
  /** Set by the run itself when it continues as new; never set it yourself. */
  carried?: AgentRunCarried;
}

/** Why the loop stopped: the model answered without tools (or the recording ended), `maxRounds`, or a cancellation. */
export type StopReason = 'completed' | 'maxRounds' | 'cancelled';

/** What `agentRun` returns (DESIGN §7). */
export interface AgentRunResult {
  /** The final conversation (equal to `replaySession(session)`). */
  messages: ChatMessage[];
  /** The transcript lines. */
  session: SessionLine[];
  /** One record per compaction. */
  compactions: CompactionRecord[];
  /** Chat rounds, across continue-as-new. */
  rounds: number;
  stopReason: StopReason;
  /** Rounds in which a backend failed after its retries and the next one of the chain was tried. */
  backendFallbacks: number;
  /** The largest prompt the run sent, in the answering backend's units (billed when the backend reported usage). */
  peakContextTokens: number;
  /** How many times the run continued as new. */
  continuedAsNew: number;
}

/** Details of a `RunFailed.ContextExhausted` failure. */
export interface ContextExhaustedDetails {
  round: number;
  backend: string;
  tokens: number;
  room: number;
}

/** The update's argument: the text (or content parts) of a user message. */
export type AddUserMessageInput = string | { content: string | ContentPart[] };

export const addUserMessageUpdate = defineUpdate<{ pending: number }, [AddUserMessageInput]>('addUserMessage');
export const sessionQuery = defineQuery<SessionLine[]>('session');
export const compactionsQuery = defineQuery<CompactionRecord[]>('compactions');
/** The live conversation (what `replaySession(session)` returns). */
export const conversationQuery = defineQuery<ChatMessage[]>('conversation');

const CompactionCount = defineSearchAttributeKey('CompactionCount', SearchAttributeType.INT);
const ContextTokens = defineSearchAttributeKey('ContextTokens', SearchAttributeType.INT);
const CompactionFallbacks = defineSearchAttributeKey('CompactionFallbacks', SearchAttributeType.INT);
const ContextExhausted = defineSearchAttributeKey('ContextExhausted', SearchAttributeType.BOOL);

function ms(value: Duration | undefined, field: string, fallback: number): number {
  return value === undefined ? fallback : parseDuration(value, field);
}

function activityOptions(settings: AgentActivitySettings, field: string, defaults: { startToClose: number; heartbeat: number | undefined }, nonRetryable: string[]): ActivityOptions {
  const heartbeat = ms(settings.heartbeatTimeout, `${field}.heartbeatTimeout`, defaults.heartbeat ?? 0);
  return {
    startToCloseTimeout: Math.max(1, ms(settings.startToCloseTimeout, `${field}.startToCloseTimeout`, defaults.startToClose)),
    ...(heartbeat > 0 ? { heartbeatTimeout: heartbeat } : {}),
    retry: {
      maximumAttempts: settings.maximumAttempts ?? 3,
      initialInterval: Math.max(1, ms(settings.initialInterval, `${field}.initialInterval`, 1000)),
      backoffCoefficient: 2,
      maximumInterval: 30_000,
      nonRetryableErrorTypes: nonRetryable,
    },
    ...(settings.taskQueue === undefined ? {} : { taskQueue: settings.taskQueue }),
  };
}

const CHAT_NON_RETRYABLE = [ChatFailureType.Rejected, FailureType.InvalidInput, ...Object.values(ReplayFailureType)];
const TOOL_NON_RETRYABLE = [...Object.values(ToolFailureType), ...Object.values(ReplayFailureType), FailureType.InvalidInput];

function failureMessage(error: unknown): string {
  if (error instanceof ActivityFailure) return error.cause?.message ?? error.message;
  return error instanceof Error ? error.message : String(error);
}

function userMessageFrom(input: AddUserMessageInput): ChatMessage {
  const content = typeof input === 'string' ? input : input?.content;
  try {
    const [message] = validateMessages([{ role: 'user', content }]);
    if (message === undefined) throw new InvalidInputError('message', 'required');
    return message;
  } catch (error) {
    // Name the update's argument, not the one-message conversation it was checked as.
    if (error instanceof InvalidInputError) throw new InvalidInputError(error.field.replace(/^messages\[0\]/, 'message'), error.reason);
    throw error;
  }
}

function isCarried(value: unknown): value is AgentRunCarried {
  if (typeof value !== 'object' || value === null) return false;
  const arrays = ['session', 'compactions', 'counters', 'pendingUserMessages'].every((key) => Array.isArray(Reflect.get(value, key)));
  const numbers = ['rounds', 'nextId', 'backendFallbacks', 'peakContextTokens', 'continuedAsNew'].every((key) => Number.isInteger(Reflect.get(value, key)));
  return arrays && numbers;
}

/** One run of the loop: the state, and what a round does with it. */
class AgentLoop {
  entries: SessionEntry[] = [];
  readonly session: SessionLine[];
  readonly compactions: CompactionRecord[];
  readonly counters: BackendCounter[];
  readonly pending: ChatMessage[];
  rounds: number;
  roundsThisRun = 0;
  nextId: number;
  backendFallbacks: number;
  peakContextTokens: number;
  continuedAsNew: number;
  finished = false;
  private published = { compactions: -1, contextTokens: -1, fallbacks: -1, exhausted: false };

  constructor(
    readonly input: AgentRunWorkflowInput,
    readonly plan: AgentRunPlan,
  ) {
    const carried = input.carried;
    if (carried !== undefined && !isCarried(carried)) {
      throw new InvalidInputError('input.carried', 'is what a run carries when it continues as new; leave it out');
    }
    this.session = carried?.session ?? [];
    this.compactions = carried?.compactions ?? [];
    this.rounds = carried?.rounds ?? 0;
    this.nextId = carried?.nextId ?? 1;
    this.pending = carried?.pendingUserMessages ?? [];
    this.backendFallbacks = carried?.backendFallbacks ?? 0;
    this.peakContextTokens = carried?.peakContextTokens ?? 0;
    this.continuedAsNew = carried?.continuedAsNew ?? 0;
    this.counters = plan.backends.map((backend) => backendCounter(backend, plan.tools, carried?.counters[backend.index] ?? null));
    if (carried !== undefined) {
      // The conversation is the transcript replayed: nothing else is carried, so nothing can disagree.
      carried.session.forEach((line, index) => {
        this.entries = applySessionLine(this.entries, line, index);
      });
    } else {
      for (const message of validateMessages(input.messages)) this.append(message);
    }
  }

  get messages(): ChatMessage[] {
    return this.entries.map((entry) => entry.message);
  }

  append(message: ChatMessage): void {
    const line: SessionLine = { type: 'message', id: `m${this.nextId}`, message };
    this.nextId += 1;
    this.entries = applySessionLine(this.entries, line, this.session.length);
    this.session.push(line);
  }

  carry(): AgentRunCarried {
    return {
      session: this.session,
      compactions: this.compactions,
      rounds: this.rounds,
      nextId: this.nextId,
      counters: this.counters.map((counter) => counter.usage.toJSON()),
      pendingUserMessages: this.pending,
      backendFallbacks: this.backendFallbacks,
      peakContextTokens: this.peakContextTokens,
      continuedAsNew: this.continuedAsNew,
    };
  }

  result(stopReason: StopReason): AgentRunResult {
    return {
      messages: this.messages,
      session: this.session,
      compactions: this.compactions,
      rounds: this.rounds,
      stopReason,
      backendFallbacks: this.backendFallbacks,
      peakContextTokens: this.peakContextTokens,
      continuedAsNew: this.continuedAsNew,
    };
  }

  /** Current details (a Markdown table of the compactions) and search attributes, when they changed. */
  publish(contextTokens: number | undefined): void {
    const fallbacks = this.compactions.filter((record) => record.fallback).length;
    const exhausted = this.compactions.some((record) => record.exhausted);
    if (this.published.compactions !== this.compactions.length) {
      setCurrentDetails(`### Compactions\n\n${renderCompactionTable(this.compactions)}`);
    }
    if (!this.plan.searchAttributes) return;
    const updates: SearchAttributeUpdatePair[] = [];
    if (this.published.compactions !== this.compactions.length) updates.push({ key: CompactionCount, value: this.compactions.length });
    if (this.published.fallbacks !== fallbacks) updates.push({ key: CompactionFallbacks, value: fallbacks });
    if (this.published.exhausted !== exhausted || this.published.compactions < 0) updates.push({ key: ContextExhausted, value: exhausted });
    if (contextTokens !== undefined && this.published.contextTokens !== contextTokens) updates.push({ key: ContextTokens, value: contextTokens });
    this.published = { compactions: this.compactions.length, contextTokens: contextTokens ?? this.published.contextTokens, fallbacks, exhausted };
    if (updates.length > 0) upsertSearchAttributes(updates);
  }

  private compactOptions(aimAt: BackendCounter, aim: number): CompactOptions {
    const { contextBudget, ...rest } = this.plan.compaction;
    return { ...rest, contextBudget: contextBudget ?? aim, counter: aimAt.conversation };
  }

  /**
   * Compacts when the conversation does not fit the aim, or is over the compaction trigger (or
   * holds an elision batch). Over the room, `compact` aims at the room exactly (DESIGN §4.12);
   * merely over the trigger, it aims at `targetRatio × contextBudget` so one compaction buys
   * several rounds instead of trimming a little every round.
   */
  async compactIfNeeded(candidates: readonly BackendCounter[]): Promise<void> {
    const { aimAt, aim, tokens } = preflight(this.messages, candidates);
    const options = this.compactOptions(aimAt, aim);
    const overRoom = tokens > aim;
    if (!overRoom && !needsCompaction(this.messages, options)) return;
    const result = await compact(this.messages, overRoom ? { ...options, target: aim } : options);
    this.record(result, aimAt.backend, overRoom ? aim : (this.plan.compaction.contextBudget ?? aim));
    if (result.exhausted || (overRoom && result.tokensAfter > aim)) {
      this.publish(result.tokensAfter);
      const details: ContextExhaustedDetails = { round: this.rounds + 1, backend: aimAt.backend.label, tokens: result.tokensAfter, room: aim };
      throw ApplicationFailure.create({
        type: RunFailureType.ContextExhausted,
        message: `context exhausted before round ${details.round}: ${groupDigits(details.tokens)} tokens after compaction, ${groupDigits(aim)} usable on ${details.backend} (keepRecent or a recent tool result is too large for the window)`,
        nonRetryable: true,
        details: [details],
      });
    }
  }

  private record(result: CompactionResult, backend: ResolvedBackend, target: number): void {
    const changed = result.cutIndex >= 0 || result.elisions.length > 0 || result.fallback || result.exhausted;
    if (!changed) return;
    const { lines, entries } = recordCompaction(this.entries, result);
    this.session.push(...lines);
    this.entries = entries;
    this.compactions.push(compactionRecord(this.rounds + 1, backend.label, target, result));
  }

  /** One chat call, falling back along the chain when a backend fails after its retries. */
  async chat(): Promise<{ answer: ChatActivityOutput; backend: BackendCounter }> {
    let from = 0;
    let lastFailure: unknown;
    for (;;) {
      const candidates = this.counters.filter((counter) => counter.backend.index >= from);
      if (candidates.length === 0) {
        throw ApplicationFailure.create({
          type: RunFailureType.BackendsFailed,
          message: `every backend failed in round ${this.rounds + 1}; last: ${failureMessage(lastFailure)}`,
          nonRetryable: true,
          cause: lastFailure instanceof Error ? lastFailure : undefined,
        });
      }
      await this.compactIfNeeded(candidates);
      const { fits, aimAt } = preflight(this.messages, candidates);
      const backend = fits ?? aimAt;
      const sent = this.messages;
      const tokens = backend.conversation.count(sent);
      this.publish(tokens);
      try {
        const { chat } = proxyActivities<{ chat(input: ChatActivityInput): Promise<ChatActivityOutput> }>({
          ...activityOptions(this.plan.chatActivity, 'input.chatActivity', { startToClose: 300_000, heartbeat: 30_000 }, CHAT_NON_RETRYABLE),
          summary: `chat · ${backend.backend.label} · ${sent.length} messages (${groupDigits(tokens)} tokens)`,
        });
        const answer = await chat({ backend: backend.backend.config, messages: sent, tools: this.plan.tools, turn: this.rounds });
        if (answer.usage !== undefined) backend.usage.calibrate(sent, answer.usage.promptTokens);
        this.peakContextTokens = Math.max(this.peakContextTokens, answer.usage?.promptTokens ?? tokens);
        return { answer, backend };
      } catch (error) {
        if (isCancellation(error) || !(error instanceof ActivityFailure)) throw error;
        lastFailure = error;
        from = backend.backend.index + 1;
        if (from < this.counters.length) this.backendFallbacks += 1;
      }
    }
  }

  /** Runs the tool calls of an assistant turn as activities (in parallel) and returns their results in call order. */
  async runTools(message: ChatMessage, backend: BackendCounter, unanswered: readonly string[]): Promise<ChatMessage[]> {
    const calls = (message.tool_calls ?? []).filter((call) => !unanswered.includes(call.id));
    const settings = activityOptions(this.plan.toolActivity, 'input.toolActivity', { startToClose: 60_000, heartbeat: undefined }, TOOL_NON_RETRYABLE);
    const declared = new Set(this.plan.tools.map((tool) => tool.function.name));
    const config = backend.backend.config;
    return Promise.all(
      calls.map(async (call): Promise<ChatMessage> => {
        const summary = `${call.function.name} ${oneLine(call.function.arguments, 80)}`;
        const answer = (content: string): ChatMessage => ({ role: 'tool', tool_call_id: call.id, content });
        try {
          if (config.provider === 'replay') {
            const { replayTool } = proxyActivities<{ replayTool(input: ReplayToolInput): Promise<ChatMessage> }>({ ...settings, summary: `replay ${summary}` });
            return await replayTool({ trajectory: config.trajectory, toolCallId: call.id });
          }
          if (!declared.has(call.function.name)) return answer(`Error: there is no tool named "${call.function.name}"; the tools are: ${[...declared].join(', ') || 'none'}`);
          let args: unknown;
          try {
            args = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
          } catch {
            return answer(`Error: the arguments of ${call.function.name} are not valid JSON: ${oneLine(call.function.arguments, 200)}`);
          }
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

  shouldContinueAsNew(): boolean {
    if (this.roundsThisRun === 0) return false;
    const every = this.plan.continueAsNewAfterRounds;
    return workflowInfo().continueAsNewSuggested || (every !== undefined && this.roundsThisRun >= every);
  }

  async run(): Promise<AgentRunResult> {
    this.publish(undefined);
    for (;;) {
      for (const message of this.pending.splice(0)) this.append(message);
      if (this.rounds >= this.plan.maxRounds) return this.result('maxRounds');
      if (this.shouldContinueAsNew()) {
        // Updates in flight finish first: their messages must be in what the next run carries.
        await condition(allHandlersFinished);
        for (const message of this.pending.splice(0)) this.append(message);
        const next: AgentRunWorkflowInput = { ...this.input, messages: [], carried: { ...this.carry(), continuedAsNew: this.continuedAsNew + 1 } };
        await continueAsNew<typeof agentRun>(next);
      }
      const { answer, backend } = await this.chat();
      this.append(answer.message);
      this.rounds += 1;
      this.roundsThisRun += 1;
      const results = await this.runTools(answer.message, backend, answer.unanswered ?? []);
      for (const result of results) this.append(result);
      for (const message of answer.userMessages ?? []) this.append(message);
      if (answer.endOfTrajectory === true) return this.result('completed');
      if (results.length === 0 && (answer.userMessages ?? []).length === 0 && this.pending.length === 0) return this.result('completed');
    }
  }
}

/**
 * The reference agent loop (DESIGN §7). Keeps the conversation, a `UsageCounter` per backend and
 * the session transcript; compacts with `compact` (summaries as the `summarize` activity); calls
 * the `chat` activity and the requested tools as activities; continues as new when Temporal
 * suggests it (or every `continueAsNewAfterRounds`), carrying conversation, counters, transcript
 * and compaction history.
 *
 * Ends when the model answers without tool calls (and no user message is waiting), when a replayed
 * recording ends, after `maxRounds`, or when cancelled — then it returns cleanly with the
 * transcript intact (`stopReason: 'cancelled'`).
 *
 * @throws ApplicationFailure `Compaction.InvalidInput` (non-retryable) naming the field of bad input.
 * @throws ApplicationFailure `RunFailed.ContextExhausted` (non-retryable) when even a hard trim cannot make the conversation fit; the transcript (query `session`) is written first.
 * @throws ApplicationFailure `RunFailed.BackendsFailed` (non-retryable) when every backend of the chain failed in one round.
 * @example
 * const result = await client.workflow.execute(agentRun, {
 *   taskQueue: 'compactor', workflowId: `agent-${id}`,
 *   args: [{ messages, model: { provider: 'openai', model: 'gpt-4o', contextWindow: 128_000, maxOutputTokens: 4_096 },
 *            tools: ['fs_read', 'fs_list', 'grep'], compaction: { summarizerModel: 'gpt-4o-mini' } }],
 * });
 */
export async function agentRun(input: AgentRunWorkflowInput): Promise<AgentRunResult> {
  const plan = failOnInvalidInput(() => planAgentRun(input));
  const loop = failOnInvalidInput(() => new AgentLoop(input, plan));
  setHandler(sessionQuery, () => loop.session);
  setHandler(compactionsQuery, () => loop.compactions);
  setHandler(conversationQuery, () => loop.messages);
  setHandler(
    addUserMessageUpdate,
    (message) => {
      loop.pending.push(userMessageFrom(message));
      return { pending: loop.pending.length };
    },
    {
      validator: (message) => {
        if (loop.finished) throw ApplicationFailure.create({ type: UpdateFailureType.Finished, message: 'the run has finished; start a new one', nonRetryable: true });
        try {
          userMessageFrom(message);
        } catch (error) {
          if (error instanceof InvalidInputError) throw invalidInputFailure(error);
          throw error;
        }
      },
    },
  );
  try {
    const result = await loop.run();
    loop.finished = true;
    loop.publish(undefined);
    return result;
  } catch (error) {
    loop.finished = true;
    if (isCancellation(error)) return loop.result('cancelled');
    throw error;
  }
}
