// Sandbox-safe: the user's words (docs/design.md#user-words) — with `keepUserMessages`, the user
// messages of the middle a summary replaces stay verbatim, in place; the newest are kept first,
// within `keepUserMessagesShare` of the budget, and the older ones are summarized with the rest.
import type { Aim } from './options.js';
import type { Regions } from './regions.js';
import { isSummaryMessage } from './transcript.js';
import type { ChatMessage, UserMessagesKept } from '../types.js';

/** The content of a hard trim's marker (src/core/compaction/hard-trim.ts): the harness's words, not the user's. */
const TRIM_MARKER = /^\[\d+ earlier messages dropped by the harness to fit the context\]/;

/** Which user messages of a middle a pass keeps, and the middle it summarizes without them. */
export interface UserWords {
  /** The regions with the kept user messages out of the middle: what the summary replaces and the hard trim drops. */
  regions: Regions;
  /** Input positions of every user message of the middle that is the user's own words, ascending. */
  eligible: number[];
  /** Input positions of those kept verbatim (the newest of `eligible`), ascending. */
  kept: number[];
  /** Their count, with the pass's counter, one message at a time. */
  keptTokens: number;
}

/**
 * The user messages of `regions.middle` that are the user's own words: role `user`, not a summary
 * or a trim marker of an earlier compaction, and not inside a tool-call turn (between an assistant
 * message with tool calls and the last of its results: a format's user message that also held
 * tool results lies there, and keeping it alone would split its message).
 */
export function userWordsOf(messages: readonly ChatMessage[], regions: Regions): number[] {
  const { groupOf, lastOf } = regions.groups;
  const eligible: number[] = [];
  // The furthest last member of any group begun so far: a message before it lies inside a turn.
  let reach = -1;
  for (let index = 0; index < messages.length && index < regions.cut; index += 1) {
    const message = messages[index] as ChatMessage;
    const inside = reach > index;
    const group = groupOf[index] ?? index;
    reach = Math.max(reach, lastOf[group] ?? index);
    if (inside || regions.inMiddle[index] !== 1 || message.role !== 'user') continue;
    if (isSummaryMessage(message)) continue;
    if (typeof message.content === 'string' && TRIM_MARKER.test(message.content)) continue;
    eligible.push(index);
  }
  return eligible;
}

/**
 * docs/design.md#user-words The newest user messages of the middle whose count together stays within
 * `share × limit`, taken newest first and stopping at the first that does not fit (so every
 * summarized one is older than every kept one), and the regions without them.
 */
export function keepUserWords(messages: readonly ChatMessage[], regions: Regions, aim: Aim, share: number): UserWords {
  const eligible = userWordsOf(messages, regions);
  const allowed = share * aim.limit;
  const kept: number[] = [];
  let keptTokens = 0;
  for (let position = eligible.length - 1; position >= 0; position -= 1) {
    const index = eligible[position] as number;
    const tokens = aim.counter.count([messages[index] as ChatMessage]);
    if (keptTokens + tokens > allowed) break;
    keptTokens += tokens;
    kept.push(index);
  }
  kept.reverse();
  if (kept.length === 0) return { regions, eligible, kept, keptTokens };
  const inMiddle = regions.inMiddle.slice();
  for (const index of kept) inMiddle[index] = 0;
  const middle = regions.middle.filter((index) => inMiddle[index] === 1);
  return { regions: { ...regions, middle, inMiddle }, eligible, kept, keptTokens };
}

/**
 * What a result with its last replaced message at `cutIndex` says of the user messages (undefined:
 * nothing replaced): every one kept, and those up to `cutIndex` that were not (summarized, or
 * dropped by the hard trim).
 */
export function userMessagesOf(words: UserWords, cutIndex: number): UserMessagesKept | undefined {
  if (cutIndex < 0) return undefined;
  const kept = new Set(words.kept);
  const summarized = words.eligible.filter((index) => index <= cutIndex && !kept.has(index)).length;
  return { kept: words.kept.length, summarized, keptAt: [...words.kept] };
}
