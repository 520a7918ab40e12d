// Sandbox-safe: the agent's own compaction tool `compact_context({ focus? })` (docs/design.md#agent-tool):
// its declaration, option and arguments, and the bounds (a cooldown, a minimum reclaim) a call must meet.
import type { ToolDeclaration } from '../counting/request-counter.js';
import { findRegions } from '../compaction/regions.js';
import { z } from 'zod';
import { checkWith, isRecord } from '../schema.js';
import { assertKnownKeys } from '../unknown-keys.js';
import type { ChatMessage, TokenCounter } from '../types.js';
import { groupDigits } from './compaction-history.js';
import { expected } from './steering.js';
import { declaration } from './tool-declarations.js';

/** The name of the tool: reserved, a run's own tools may not take it. */
export const COMPACT_CONTEXT_TOOL_NAME = 'compact_context';

export const MAX_FOCUS_CHARS = 2_000;

/** `compaction.agentTool` in full: `true` is these defaults. */
export interface AgentToolOptions {
  /** Rounds after any compaction during which a call is refused. @default 3 */
  cooldownRounds?: number;
  /** Tokens the messages a summary would replace must hold. @default a tenth of the budget */
  minReclaim?: number;
}

/** The tool's bounds as a run resolves them (`minReclaim` undefined: a tenth of each round's budget). */
export interface AgentToolPlan {
  cooldownRounds: number;
  minReclaim?: number;
}

export const DEFAULT_AGENT_TOOL_COOLDOWN_ROUNDS = 3;

/** The declaration the run sends the model under `compaction.agentTool`. */
export const COMPACT_CONTEXT_TOOL: ToolDeclaration = declaration(
  COMPACT_CONTEXT_TOOL_NAME,
  'Compact your context at the end of this round: the harness replaces older turns with one summary, keeping the task and recent turns. Use it when earlier turns are no longer needed; pass focus to say what the summary must keep.',
  { focus: { type: 'string', description: 'What the summary must keep (files, decisions, open questions).' } },
);

const wholeNumber = expected('a whole number from 0');
const count = z.number(wholeNumber).int(wholeNumber).nonnegative(wholeNumber);
const agentToolSchema = z.strictObject(
  { cooldownRounds: count.default(DEFAULT_AGENT_TOOL_COOLDOWN_ROUNDS), minReclaim: count.optional() },
  expected('true, false or { cooldownRounds?, minReclaim? }'),
);

/** `compaction.agentTool` checked: `true`, `false` or `{ cooldownRounds?, minReclaim? }`; undefined when off. */
export function parseAgentToolOption(value: unknown, field = 'input.compaction.agentTool'): AgentToolPlan | undefined {
  if (value === undefined || value === false) return undefined;
  assertKnownKeys(value, Object.keys(agentToolSchema.shape), field);
  return checkWith(agentToolSchema, value === true ? {} : value, field);
}

/** A tool call's one argument `key` (`args` must be `shape`), or the error the model reads. */
export function onlyArgument(
  tool: string,
  args: unknown,
  key: string,
  shape: string,
): { value: unknown } | { error: string } {
  if (!isRecord(args)) return { error: `${tool}: the arguments must be an object ${shape}` };
  const extra = Object.keys(args).find((name) => name !== key);
  if (extra !== undefined) return { error: `${tool}: unknown argument "${extra.slice(0, 64)}" (it takes only ${key})` };
  return { value: args[key] };
}

export function parseCompactContextArgs(args: unknown): { focus: string | undefined } | { error: string } {
  const parsed = onlyArgument('compact_context', args, 'focus', '{ focus?: string }');
  if ('error' in parsed) return parsed;
  const focus = parsed.value;
  if (focus === undefined) return { focus: undefined };
  if (typeof focus !== 'string') return { error: 'compact_context: arguments.focus must be a string' };
  if (focus.length > MAX_FOCUS_CHARS)
    return { error: `compact_context: arguments.focus is ${focus.length} characters; at most ${MAX_FOCUS_CHARS}` };
  return { focus: focus.trim() === '' ? undefined : focus };
}

export type AgentToolDecision = { accepted: true; focus: string | undefined } | { accepted: false; answer: string };

/** The state a call is judged against. */
export interface AgentToolContext {
  bounds: AgentToolPlan;
  /** The round the call came in (1-based), and that of the last compaction. */
  round: number;
  lastCompactionRound: number | undefined;
  /** The conversation as it will be when the round ends. */
  messages: readonly ChatMessage[];
  keepRecent: number;
  counter: TokenCounter;
  /** The budget a compaction aims at. */
  budget: number;
}

export function acceptedAnswer(focus: string | undefined): string {
  return `compact_context: accepted; the harness compacts your context at the end of this round${focus === undefined ? '' : ', keeping what focus names'}.`;
}

/** Whether a call is accepted: refused in the cooldown after a compaction, and below `minReclaim`. */
export function decideAgentTool(args: unknown, context: AgentToolContext): AgentToolDecision {
  const parsed = parseCompactContextArgs(args);
  if ('error' in parsed) return { accepted: false, answer: `Error: ${parsed.error}` };
  const { bounds, round, lastCompactionRound } = context;
  if (lastCompactionRound !== undefined && round - lastCompactionRound < bounds.cooldownRounds) {
    const wait = bounds.cooldownRounds - (round - lastCompactionRound);
    return {
      accepted: false,
      answer: `compact_context: refused; your context was compacted ${round - lastCompactionRound === 0 ? 'this round' : `${round - lastCompactionRound} round${round - lastCompactionRound === 1 ? '' : 's'} ago`}; ask again in ${wait} round${wait === 1 ? '' : 's'} at the earliest. Go on with your task.`,
    };
  }
  const minReclaim = bounds.minReclaim ?? Math.ceil(context.budget / 10);
  const { middle } = findRegions([...context.messages], context.keepRecent);
  const reclaimable =
    middle.length === 0 ? 0 : context.counter.count(middle.map((index) => context.messages[index] as ChatMessage));
  if (reclaimable < minReclaim)
    return {
      accepted: false,
      answer: `compact_context: refused; a compaction now would reclaim at most about ${groupDigits(reclaimable)} tokens, less than the ${groupDigits(minReclaim)} it must; your context is small enough. Go on with your task.`,
    };
  return { accepted: true, focus: parsed.focus };
}
