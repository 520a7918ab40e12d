// Sandbox-safe: steering a running `agentRun` (docs/design.md#steering): its updates' arguments, its pins
// and the summary instructions; the loop applies what the updates ask.
import { z } from 'zod';
import { InvalidInputError } from '../errors.js';
import { checkWith, isRecord, isSticky } from '../schema.js';
import { assertKnownKeys } from '../unknown-keys.js';
import { compactionKind, type CompactionKind } from '../compaction/kind.js';
import { capText, summaryContent } from '../compaction/transcript.js';
import type { CompactionResult, TokenCounter } from '../types.js';
import type { CompactionRecord } from './compaction-history.js';
import { oneLine } from './compaction-history.js';
import { recordCompaction, type SessionEntry } from './session.js';

// Bounds of the updates' arguments (characters) and of what a run holds pinned.
export const MAX_COMPACT_INSTRUCTIONS_CHARS = 4_000;
export const MAX_PIN_FACT_CHARS = 500;
export const MAX_PIN_FACTS = 20;
export const MAX_PINNED_MESSAGES = 50;

/** The argument of the `compact` update. */
export interface CompactUpdateInput {
  /** What this compaction's summary must focus on or keep. */
  instructions?: string;
}

export interface NothingCompacted {
  compacted: false;
  reason: string;
}

export const NOTHING_TO_COMPACT: NothingCompacted = {
  compacted: false,
  reason:
    'nothing to compact: every message is kept (the task, pinned and other sticky messages, and the recent window of keepRecent messages)',
};

/** What the `compact` update answers: the compaction's record, or why there was none. */
export type CompactAnswer = CompactionRecord | NothingCompacted;

/** The argument of `pin` and `unpin`: transcript message ids, a fact, or both. */
export interface PinUpdateInput {
  /** Ids of messages of the live conversation (the `conversationEntries` query lists them). */
  ids?: string[];
  /** A short fact every later summary must keep (`unpin`: the same text, to forget it). */
  fact?: string;
}

/** The pins of a run, in the order pinned: what `pin` and `unpin` answer. */
export interface Pins {
  ids: string[];
  facts: string[];
}

export function noPins(): Pins {
  return { ids: [], facts: [] };
}

export type CheckedPinInput = Required<Pick<PinUpdateInput, 'ids'>> & Pick<PinUpdateInput, 'fact'>;

/** A value seen where something else was expected: a scalar as JSON, a list or object by its kind (it may be large). */
function seenKind(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object' && value !== null) return 'an object';
  return value === undefined ? 'undefined' : capText(String(JSON.stringify(value)), 200);
}

/** A zod error that says what was expected and what came: `must be a string, got 3`. */
export function expected(what: string): { error: (issue: { input?: unknown }) => string } {
  return { error: (issue) => `must be ${what}, got ${seenKind(issue.input)}` };
}

/** A zod error for a string or list longer than `max`: it says the length seen, not the text. */
function atMost(max: number, unit: string): { error: (issue: { input?: unknown }) => string } {
  return {
    error: (issue) => `must be at most ${max} ${unit}, got ${String(Reflect.get(Object(issue.input), 'length'))}`,
  };
}

function boundedText(max: number, what = 'a string') {
  return z.string(expected(what)).max(max, atMost(max, 'characters'));
}

const messageId = expected('a message id such as "m12"');

const compactSchema = z.strictObject(
  { instructions: boundedText(MAX_COMPACT_INSTRUCTIONS_CHARS).optional() },
  expected('an object { instructions?: string } or left out'),
);

export function parseCompactInput(value: unknown): CompactUpdateInput {
  const { instructions } = checkWith(compactSchema, value ?? {}, 'compact');
  return instructions === undefined || instructions.trim() === '' ? {} : { instructions };
}

const pinSchema = z
  .strictObject({
    ids: z
      .array(z.string(messageId).min(1, messageId), expected('a list of message ids'))
      .max(MAX_PINNED_MESSAGES, atMost(MAX_PINNED_MESSAGES, 'ids'))
      .optional(),
    fact: boundedText(MAX_PIN_FACT_CHARS, 'a non-empty string').regex(/\S/, expected('a non-empty string')).optional(),
  })
  .refine((pin) => pin.ids !== undefined || pin.fact !== undefined, {
    error: 'must name message ids ({ ids: string[] }) or a fact ({ fact: string }), got neither',
  });

export function parsePinInput(value: unknown, update: 'pin' | 'unpin'): CheckedPinInput {
  if (!isRecord(value)) throw new InvalidInputError(update, 'must be an object { ids: string[] } or { fact: string }');
  const { ids = [], fact } = checkWith(pinSchema, value, update);
  return fact === undefined ? { ids } : { ids, fact: fact.trim() };
}

/** What one `pin` or `unpin` changes: the ids whose sticky flag it sets or clears, and the pins after it. */
export interface PinChange {
  ids: string[];
  pins: Pins;
}

/** What `pin` does; a message sticky already is left as it is. */
export function pinChange(input: CheckedPinInput, entries: readonly SessionEntry[], pins: Pins): PinChange {
  const byId = new Map(entries.map((entry) => [entry.id, entry.message]));
  const ids: string[] = [];
  input.ids.forEach((id, index) => {
    const message = byId.get(id);
    if (message === undefined)
      throw new InvalidInputError(
        `pin.ids[${index}]`,
        `no message with id "${id}" in the live conversation (the conversationEntries query lists them)`,
      );
    if (!isSticky(message) && !ids.includes(id)) ids.push(id);
  });
  if (pins.ids.length + ids.length > MAX_PINNED_MESSAGES)
    throw new InvalidInputError(
      'pin.ids',
      `a run holds at most ${MAX_PINNED_MESSAGES} pinned messages; ${pins.ids.length} are pinned (unpin some first)`,
    );
  const facts = [...pins.facts];
  if (input.fact !== undefined && !facts.includes(input.fact)) {
    if (facts.length >= MAX_PIN_FACTS)
      throw new InvalidInputError('pin.fact', `a run holds at most ${MAX_PIN_FACTS} facts (unpin one first)`);
    facts.push(input.fact);
  }
  return { ids, pins: { ids: [...pins.ids, ...ids], facts } };
}

/** What `unpin` does: only what `pin` pinned can be unpinned. */
export function unpinChange(input: CheckedPinInput, pins: Pins): PinChange {
  input.ids.forEach((id, index) => {
    if (!pins.ids.includes(id))
      throw new InvalidInputError(
        `unpin.ids[${index}]`,
        `"${id}" is not pinned (only messages pinned by the pin update can be unpinned; pinned: ${pins.ids.join(', ') || 'none'})`,
      );
  });
  const ids = [...new Set(input.ids)];
  if (input.fact !== undefined && !pins.facts.includes(input.fact))
    throw new InvalidInputError('unpin.fact', `is not a pinned fact (pinned: ${pins.facts.length})`);
  return {
    ids,
    pins: {
      ids: pins.ids.filter((id) => !ids.includes(id)),
      facts: pins.facts.filter((fact) => fact !== input.fact),
    },
  };
}

/** The run's `summaryInstructions`, then the `compact` update's, then the pinned facts to keep; undefined for none. */
export function steeredInstructions(
  base: string | undefined,
  facts: readonly string[],
  onDemand: string | undefined,
): string | undefined {
  const parts = [base, onDemand].filter((part): part is string => part !== undefined && part.trim() !== '');
  if (facts.length > 0)
    parts.push(['Keep these facts, word for word:', ...facts.map((fact) => `- ${fact}`)].join('\n'));
  return parts.length === 0 ? undefined : parts.join('\n\n');
}

export function pinDetails(pins: Pins): string[] {
  const facts = pins.facts.map((fact) => `“${oneLine(fact, 80)}”`).join(' · ');
  return [
    ...(pins.ids.length > 0 ? [`Pinned messages: ${pins.ids.join(', ')}`] : []),
    ...(pins.facts.length > 0 ? [`Pinned facts (kept by every summary): ${facts}`] : []),
  ];
}

/** docs/design.md#review */
export type CompactionReview = 'auto' | 'approve' | 'manual';
export const COMPACTION_REVIEWS: readonly CompactionReview[] = ['auto', 'approve', 'manual'];
export const DEFAULT_REVIEW_TIMEOUT_MS = 3_600_000;
/** The longest summary `reviewCompaction` with `edit` takes, in characters. */
const MAX_REVIEWED_SUMMARY_CHARS = 100_000;

/** A compaction computed and waiting for `reviewCompaction` (the `pendingCompaction` query). */
export interface CompactionProposal {
  /** The chat round it would run before (1-based). */
  round: number;
  backend: string;
  kind: CompactionKind;
  tokensBefore: number;
  tokensAfter: number;
  /** Transcript ids of the messages it would remove, and of those it would elide. */
  dropped: string[];
  elided: string[];
  /** Null for a trim or an elision. */
  summary: string | null;
  /** When the run applies it unreviewed (workflow time, ms since the epoch). */
  applyAt: number;
}

/** The argument of `reviewCompaction`. */
export interface ReviewCompactionInput {
  /** `edit`: apply it with `summary` in place of its own. */
  decision: 'apply' | 'reject' | 'edit';
  /** With `edit`: the summary to apply (the harness's one-line header is put before it). */
  summary?: string;
}

/** What `reviewCompaction` answers. */
export interface ReviewAnswer {
  decision: ReviewCompactionInput['decision'];
  round: number;
}

const reviewSchema = z.strictObject(
  {
    decision: z.enum(['apply', 'reject', 'edit'], expected('"apply", "reject" or "edit"')),
    summary: boundedText(MAX_REVIEWED_SUMMARY_CHARS, 'the summary to apply (a non-empty string)')
      .regex(/\S/, expected('the summary to apply (a non-empty string)'))
      .optional(),
  },
  expected("an object { decision: 'apply' | 'reject' | 'edit', summary? }"),
);

export function parseReviewInput(value: unknown, proposal: CompactionProposal | undefined): ReviewCompactionInput {
  if (proposal === undefined)
    throw new InvalidInputError(
      'reviewCompaction',
      'no compaction is waiting for review (the pendingCompaction query)',
    );
  assertKnownKeys(value, Object.keys(reviewSchema.shape), 'reviewCompaction', 'field');
  const { decision, summary } = checkWith(reviewSchema, value, 'reviewCompaction');
  if (decision !== 'edit') {
    if (summary !== undefined)
      throw new InvalidInputError('reviewCompaction.summary', 'is only taken with decision "edit"');
    return { decision };
  }
  if (proposal.summary === null)
    throw new InvalidInputError(
      'reviewCompaction.decision',
      `"edit" needs a proposal with a summary; this one is a ${proposal.kind}`,
    );
  if (summary === undefined)
    throw new InvalidInputError('reviewCompaction.summary', 'must be the summary to apply (a non-empty string)');
  return { decision, summary };
}

/** What a compaction result would do to the live entries, as a proposal (nothing is applied). */
export function proposalOf(
  entries: readonly SessionEntry[],
  result: CompactionResult,
  where: { round: number; backend: string; applyAt: number },
): CompactionProposal {
  const { entries: after } = recordCompaction(entries, result);
  const kept = new Set(after.map((entry) => entry.id));
  return {
    ...where,
    kind: compactionKind(result),
    tokensBefore: result.tokensBefore,
    tokensAfter: result.tokensAfter,
    dropped: entries.filter((entry) => !kept.has(entry.id)).map((entry) => entry.id),
    elided: result.elisions.flatMap(({ index }) => entries[index]?.id ?? []),
    summary: result.summary,
  };
}

/** The result with a person's summary (`edit`) under the harness's header, its tokens counted again. */
export function withEditedSummary(result: CompactionResult, summary: string, counter: TokenCounter): CompactionResult {
  const content = summaryContent(summary, result.dropped);
  const messages = result.messages.map((message) =>
    message.role === 'user' && message.content === result.summary && message.sticky !== true
      ? { ...message, content }
      : message,
  );
  return { ...result, messages, summary: content, tokensAfter: counter.count(messages) };
}

export function proposalDetails(proposal: CompactionProposal): string {
  return `**Compaction waiting for review** (round ${proposal.round}, ${proposal.kind}): ${proposal.tokensBefore} → ${proposal.tokensAfter} tokens, dropping ${proposal.dropped.length} messages, eliding ${proposal.elided.length}; applied at ${new Date(proposal.applyAt).toISOString()} unless reviewed (\`reviewCompaction\`).`;
}
