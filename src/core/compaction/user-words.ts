// Sandbox-safe: the user's words (docs/design.md#user-words): the middle's newest user messages kept verbatim.
import type { Aim } from './options.js';
import type { Regions } from './regions.js';
import { isSummaryMessage } from './transcript.js';
import type { ChatMessage, UserMessagesKept } from '../types.js';

const TRIM_MARKER = /^\[\d+ earlier messages dropped by the harness to fit the context\]/;

export interface UserWords {
  /** The regions with the kept user messages out of the middle. */
  regions: Regions;
  /** Ascending input positions of the middle's user messages that are the user's own words. */
  eligible: number[];
  /** Those kept verbatim (the newest of `eligible`), ascending. */
  kept: number[];
  keptTokens: number;
}

/** The middle's user messages that are the user's words: no summary, trim marker, or message inside a tool-call turn. */
function userWordsOf(messages: readonly ChatMessage[], regions: Regions): number[] {
  const { groupOf, lastOf } = regions.groups;
  const eligible: number[] = [];
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

/** The newest user messages of the middle that fit `share × limit` together, newest first up to the first that does not. */
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

/** What a result that replaced up to `cutIndex` says of the user messages (undefined: nothing replaced). */
export function userMessagesOf(words: UserWords, cutIndex: number): UserMessagesKept | undefined {
  if (cutIndex < 0) return undefined;
  const kept = new Set(words.kept);
  const summarized = words.eligible.filter((index) => index <= cutIndex && !kept.has(index)).length;
  return { kept: words.kept.length, summarized, keptAt: [...words.kept] };
}
