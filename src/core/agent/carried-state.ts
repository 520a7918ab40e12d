// Sandbox-safe: what `agentRun` carries across continue-as-new (docs/design.md#agent-run), validated: a caller could
// hand-make one, and a bad one must fail the run naming the field.
import { z } from 'zod';
import { messageTexts } from '../counting/bpe-counter.js';
import type { UsageCounterState } from '../counting/usage-counter.js';
import { InvalidInputError } from '../errors.js';
import { checkWith, validateMessages } from '../schema.js';
import type { ChatMessage } from '../types.js';
import type { BackendStatus } from './backend-cooldown.js';
import type { CompactionHistory } from './compaction-history.js';
import type { RequestShape } from './request-cost.js';
import type { SessionEntry } from './session.js';
import type { Pins } from './steering.js';

/** The format a run writes and reads; it refuses any other (docs/compatibility.md). */
export const CARRIED_STATE_VERSION = 1;

/** What a run carries across continue-as-new (internal; plain JSON, bounded by the live context). */
export interface AgentRunCarried {
  version: typeof CARRIED_STATE_VERSION;
  live: SessionEntry[];
  /** Transcript lines recorded so far, across runs. */
  sessionLines: number;
  compactions: CompactionHistory;
  rounds: number;
  nextId: number;
  /** By position in the chain. */
  counters: Array<UsageCounterState | null>;
  pendingUserMessages: ChatMessage[];
  backendFallbacks: number;
  backends: BackendStatus[];
  /** The last chat request: the next one's cache is modelled against it. */
  previousRequest: RequestShape | null;
  peakContextTokens: number;
  continuedAsNew: number;
  /** Per BPE encoding, one count per text in `messageTexts` order (null: not counted), so nothing is counted again. */
  tokenCounts: Record<string, Array<number | null>>;
  pins: Pins;
  /** Workflow time (ms) of the last model call (docs/design.md#cold-cache). */
  lastModelCallAt?: number;
}

const count = z.number().int().nonnegative();
const tokenCountError = { error: 'must be a non-negative integer or null' };

/** The structure; messages are checked by `validateMessages`, the run's own records only as far as it reads them. */
const carriedStateSchema = z.looseObject(
  {
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
      z.array(z.int(tokenCountError).nonnegative(tokenCountError).nullable(), {
        error: 'must list a count or null for each text of the live conversation',
      }),
      { error: 'must be an object of count lists by encoding' },
    ),
    pins: z.looseObject({
      ids: z.array(z.string(), { error: 'must be a list of pinned message ids' }),
      facts: z.array(z.string(), { error: 'must be a list of pinned facts' }),
    }),
    lastModelCallAt: z.number({ error: 'must be a workflow time in milliseconds' }).optional(),
  },
  { error: 'is what a run carries when it continues as new; leave it out' },
);

/** Validates the state a continued run was handed and returns the caller's own objects (kept byte for byte). */
export function parseCarriedState(value: unknown, field = 'input.carried'): AgentRunCarried {
  const { live, pendingUserMessages, tokenCounts, pins } = checkWith(carriedStateSchema, value, field);
  const ids = new Set<string>();
  live.forEach((entry, index) => {
    if (ids.has(entry.id)) throw new InvalidInputError(`${field}.live[${index}].id`, 'must be a unique transcript id');
    ids.add(entry.id);
  });
  pins.ids.forEach((id, index) => {
    if (!ids.has(id))
      throw new InvalidInputError(`${field}.pins.ids[${index}]`, `no message with id "${id}" in input.carried.live`);
  });
  const liveMessages = live.map((entry) => entry.message);
  const messages = checkMessages(liveMessages, `${field}.live`, '.message');
  checkMessages(pendingUserMessages, `${field}.pendingUserMessages`, '');
  checkCounts(messages, tokenCounts, `${field}.tokenCounts`);
  return value as AgentRunCarried;
}

/** Messages validated, naming the carried field (`<list>[i]<suffix>…`). */
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

function checkCounts(live: readonly ChatMessage[], counts: Record<string, Array<number | null>>, field: string): void {
  const texts = live.reduce((sum, message) => sum + messageTexts(message).length, 0);
  for (const [encoding, list] of Object.entries(counts))
    if (list.length !== texts)
      throw new InvalidInputError(
        `${field}.${encoding}`,
        `must list a count or null for each of the ${texts} texts of the live conversation`,
      );
}
