// Sandbox-safe: what `agentRun` carries across continue-as-new (docs/design.md#agent-run), and its
// validation — one zod schema for the structure, then the rules across fields (unique transcript
// ids, valid messages, a token count for each text). The run builds this state itself; it is
// checked because a caller could hand-make one, and a bad one must fail the run naming the field,
// not break it somewhere later.
import { z } from 'zod';
import { messageTexts } from '../counting/bpe-counter.js';
import type { UsageCounterState } from '../counting/usage-counter.js';
import { InvalidInputError } from '../errors.js';
import { describeIssue, validateMessages } from '../schema.js';
import type { ChatMessage } from '../types.js';
import type { BackendStatus } from './backend-cooldown.js';
import type { CompactionHistory } from './compaction-history.js';
import type { RequestShape } from './request-cost.js';
import type { SessionEntry } from './session.js';
import type { Pins } from './steering.js';

/**
 * The format of {@link AgentRunCarried} a run writes and reads; a run refuses carried state of any
 * other version (docs/compatibility.md: a change of the format within a minor keeps a reader for
 * every version written).
 */
export const CARRIED_STATE_VERSION = 1;

/** What a run carries across continue-as-new (internal; plain JSON, bounded by the live context). */
export interface AgentRunCarried {
  /** {@link CARRIED_STATE_VERSION}. */
  version: typeof CARRIED_STATE_VERSION;
  /** The live conversation, each message with its transcript id. */
  live: SessionEntry[];
  /** Transcript lines recorded so far, across runs (every line is recorded before continuing as new). */
  sessionLines: number;
  compactions: CompactionHistory;
  rounds: number;
  nextId: number;
  /** Each backend's `UsageCounter` state, by position in the chain. */
  counters: Array<UsageCounterState | null>;
  pendingUserMessages: ChatMessage[];
  backendFallbacks: number;
  /** Each backend's failed rounds and rest, by position in the chain. */
  backends: BackendStatus[];
  /** The last chat request, as ids and sizes of its messages: the next one's cache is modelled against it. */
  previousRequest: RequestShape | null;
  peakContextTokens: number;
  continuedAsNew: number;
  /**
   * Token counts of the live conversation's texts, per BPE encoding of the chain: one entry per
   * text, message by message in the order `messageTexts` lists them (null: not counted). The
   * continued run starts knowing them instead of counting its conversation again.
   */
  tokenCounts: Record<string, Array<number | null>>;
  /** The pins of the `pin` update (docs/design.md#steering). */
  pins: Pins;
  /** Workflow time (ms) of the last model call, for the cold-cache rule (docs/design.md#cold-cache); absent before the first. */
  lastModelCallAt?: number;
}

const count = z.number().int().nonnegative();

/**
 * The structure of {@link AgentRunCarried}. Messages are checked by `validateMessages` (with its
 * messages naming the field), the compaction history and the counters' states as far as the run
 * reads them: they are the run's own records, passed through.
 */
export const carriedStateSchema = z.looseObject({
  version: z.literal(CARRIED_STATE_VERSION, {
    error: `must be ${CARRIED_STATE_VERSION} (state carried by another version of agentRun cannot be continued); leave input.carried out`,
  }),
  live: z.array(z.looseObject({ id: z.string({ error: 'must be a unique transcript id' }), message: z.unknown() })),
  sessionLines: count,
  compactions: z.looseObject({
    recent: z.array(z.unknown()),
    totals: z.looseObject({}),
    usage: z.looseObject({}),
    undone: z.array(z.looseObject({ compaction: count, by: count })),
  }),
  rounds: count,
  nextId: count,
  counters: z.array(z.looseObject({}).nullable()),
  pendingUserMessages: z.array(z.unknown()),
  backendFallbacks: count,
  backends: z.array(
    z.looseObject({
      label: z.string(),
      failedRounds: count,
      restingUntilRound: z.number().int().nullable(),
      restingUntilTime: z.number().nullable(),
    }),
  ),
  previousRequest: z.looseObject({ ids: z.array(z.string()), sizes: z.array(count) }).nullable(),
  peakContextTokens: count,
  continuedAsNew: count,
  tokenCounts: z.record(
    z.string(),
    z.array(count.nullable(), { error: 'must list a count or null for each text of the live conversation' }),
    { error: 'must be an object of count lists by encoding' },
  ),
  pins: z.looseObject({
    ids: z.array(z.string(), { error: 'must be a list of pinned message ids' }),
    facts: z.array(z.string(), { error: 'must be a list of pinned facts' }),
  }),
  lastModelCallAt: z.number({ error: 'must be a workflow time in milliseconds' }).optional(),
});

function pathOf(field: string, path: readonly PropertyKey[]): string {
  return path.reduce<string>((text, key) => text + (typeof key === 'number' ? `[${key}]` : `.${String(key)}`), field);
}

/**
 * Validates the state a continued run was handed and returns it (the caller's own objects: they
 * go on into the run's transcript, result and next state byte for byte). Throws
 * `InvalidInputError` naming the field, e.g. `input.carried.live[3].message.tool_call_id` or
 * `input.carried.tokenCounts.o200k_base[12]`.
 */
export function parseCarriedState(value: unknown, field = 'input.carried'): AgentRunCarried {
  assertCarriedState(value, field);
  return value;
}

function assertCarriedState(value: unknown, field: string): asserts value is AgentRunCarried {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidInputError(field, 'is what a run carries when it continues as new; leave it out');
  const parsed = carriedStateSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue === undefined)
      throw new InvalidInputError(field, 'is what a run carries when it continues as new; leave it out');
    // A token count is named with its encoding and index: `input.carried.tokenCounts.o200k_base[3]`.
    const reason =
      issue.path[0] === 'tokenCounts' && issue.path.length === 3
        ? 'must be a non-negative integer or null'
        : describeIssue(issue, value);
    throw new InvalidInputError(pathOf(field, issue.path), reason);
  }
  // The rules across fields, on the parsed structure (whose messages are the caller's own objects).
  const { live, pendingUserMessages, tokenCounts, pins } = parsed.data;
  const ids = new Set<string>();
  live.forEach((entry, index) => {
    if (ids.has(entry.id)) throw new InvalidInputError(`${field}.live[${index}].id`, 'must be a unique transcript id');
    ids.add(entry.id);
  });
  // A pinned message is one of the live conversation (pins never leave it: they are sticky).
  pins.ids.forEach((id, index) => {
    if (!ids.has(id))
      throw new InvalidInputError(`${field}.pins.ids[${index}]`, `no message with id "${id}" in input.carried.live`);
  });
  const messages = checkMessages(
    live.map((entry) => entry.message),
    `${field}.live`,
    '.message',
  );
  checkMessages(pendingUserMessages, `${field}.pendingUserMessages`, '');
  checkCounts(messages, tokenCounts, `${field}.tokenCounts`);
}

/** Validates messages kept in carried state, naming the carried field (`<list>[i]<suffix>…`), not the conversation they were checked as. */
function checkMessages(messages: unknown[], list: string, suffix: string): ChatMessage[] {
  try {
    return validateMessages(messages);
  } catch (error) {
    if (error instanceof InvalidInputError)
      throw new InvalidInputError(
        error.field.replace(/^messages\[(\d+)\]/, `${list}[$1]${suffix}`),
        error.reason,
        error.index,
      );
    throw error;
  }
}

/** `tokenCounts`: a count (or null) for each text of the live conversation, per encoding. */
function checkCounts(live: readonly ChatMessage[], counts: Record<string, Array<number | null>>, field: string): void {
  const texts = live.reduce((sum, message) => sum + messageTexts(message).length, 0);
  for (const [encoding, list] of Object.entries(counts)) {
    if (list.length !== texts)
      throw new InvalidInputError(
        `${field}.${encoding}`,
        `must list a count or null for each of the ${texts} texts of the live conversation`,
      );
  }
}
