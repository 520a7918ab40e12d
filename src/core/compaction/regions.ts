// Sandbox-safe: tool-call groups, the cut, and the middle (docs/design.md#regions).
import { isSticky } from '../schema.js';
import type { ChatMessage } from '../types.js';

/**
 * Tool-call groups: an assistant turn with `tool_calls` and every later tool result that
 * answers one of its calls. Every other message is a group of its own (an orphan tool result
 * too). Compaction removes or keeps a group whole, so it never separates a turn from its results.
 */
export interface Groups {
  /** Group id per message index (the index of the group's first message). */
  groupOf: number[];
  /** Last member index per group id. */
  lastOf: Map<number, number>;
  /** Index of the assistant turn that asked each answered call, by tool result index. */
  askedBy: Map<number, number>;
}

export function toolGroups(messages: readonly ChatMessage[]): Groups {
  const groupOf: number[] = [];
  const lastOf = new Map<number, number>();
  const askedBy = new Map<number, number>();
  const callOwner = new Map<string, number>();
  messages.forEach((message, index) => {
    let group = index;
    if (message.role === 'tool' && message.tool_call_id !== undefined) {
      const owner = callOwner.get(message.tool_call_id);
      if (owner !== undefined) {
        group = owner;
        askedBy.set(index, owner);
      }
    }
    for (const call of message.tool_calls ?? []) callOwner.set(call.id, index);
    groupOf.push(group);
    lastOf.set(group, index);
  });
  return { groupOf, lastOf, askedBy };
}

/**
 * Which messages a compaction may remove: not sticky, and not in a group that holds a sticky
 * message (removing the rest of such a group would orphan a sticky result or strand a sticky turn).
 * Session replay uses the same rule to turn `replacesThroughId` back into removed messages.
 */
export function removableMask(messages: readonly ChatMessage[], groups: Groups = toolGroups(messages)): boolean[] {
  const pinned = new Set<number>();
  messages.forEach((message, index) => {
    if (isSticky(message)) pinned.add(groups.groupOf[index] ?? index);
  });
  return messages.map((message, index) => !isSticky(message) && !pinned.has(groups.groupOf[index] ?? index));
}

/**
 * The start of the recent window: `keepRecent` messages from the end, moved backwards while the
 * window's first message is a tool result, and further while any group would straddle it.
 */
export function findCut(
  messages: readonly ChatMessage[],
  keepRecent: number,
  groups: Groups = toolGroups(messages),
): number {
  return cutFrom(messages, Math.max(0, messages.length - keepRecent), groups);
}

/** The latest valid start of a recent window at or before `start` (the moves of {@link findCut}). */
export function cutFrom(
  messages: readonly ChatMessage[],
  start: number,
  groups: Groups = toolGroups(messages),
): number {
  let cut = start;
  while (cut > 0 && cut < messages.length && messages[cut]?.role === 'tool') cut -= 1;
  // A turn whose results are separated from it by another message (a depth injection, a user
  // message between parallel results) must not straddle the cut either.
  for (;;) {
    let moved = cut;
    for (let index = cut; index < messages.length; index += 1) {
      const group = groups.groupOf[index] ?? index;
      if (group < moved) moved = group;
    }
    if (moved === cut) return cut;
    cut = moved;
  }
}

/**
 * The start of the smallest recent window that still holds the last complete turn: the last
 * assistant message with everything after it (its tool results, a user's reply), or the last
 * message when there is no assistant turn. docs/design.md#window-gives-way: how far a recent window may give way.
 */
export function lastTurnCut(messages: readonly ChatMessage[], groups: Groups = toolGroups(messages)): number {
  let last = messages.length - 1;
  while (last >= 0 && messages[last]?.role !== 'assistant') last -= 1;
  return cutFrom(messages, last >= 0 ? last : Math.max(0, messages.length - 1), groups);
}

/**
 * Every valid start of a recent window in `(after, upTo]`, ascending: not a tool result and no
 * group straddling it (exactly the positions {@link cutFrom} leaves where they are). O(n).
 */
export function windowStarts(
  messages: readonly ChatMessage[],
  after: number,
  upTo: number,
  groups: Groups = toolGroups(messages),
): number[] {
  const starts: number[] = [];
  // Smallest group start among the messages at or after each position, from the end.
  let smallestGroup = Number.POSITIVE_INFINITY;
  const from = Math.max(0, after + 1);
  const smallestFrom: number[] = new Array<number>(Math.max(0, upTo - from + 1));
  for (let index = messages.length - 1; index >= from; index -= 1) {
    smallestGroup = Math.min(smallestGroup, groups.groupOf[index] ?? index);
    if (index <= upTo) smallestFrom[index - from] = smallestGroup;
  }
  for (let position = from; position <= upTo; position += 1) {
    if (position === 0 || position === messages.length) starts.push(position);
    else if (messages[position]?.role !== 'tool' && (smallestFrom[position - from] ?? position) >= position)
      starts.push(position);
  }
  return starts;
}

export interface Regions {
  groups: Groups;
  /** First index of the recent window (messages.length when the window is empty). */
  cut: number;
  removable: boolean[];
  /** Ascending indices of the middle: removable messages before the cut. */
  middle: number[];
  inMiddle: boolean[];
}

export function findRegions(messages: readonly ChatMessage[], keepRecent: number): Regions {
  const groups = toolGroups(messages);
  return regionsAt(messages, findCut(messages, keepRecent, groups), groups, removableMask(messages, groups));
}

/** The regions for a recent window that starts at `cut` (a valid start: see {@link windowStarts}). */
export function regionsAt(
  messages: readonly ChatMessage[],
  cut: number,
  groups: Groups,
  removable: boolean[],
): Regions {
  const inMiddle = removable.map((canRemove, index) => canRemove && index < cut);
  const middle: number[] = [];
  inMiddle.forEach((isMiddle, index) => {
    if (isMiddle) middle.push(index);
  });
  return { groups, cut, removable, middle, inMiddle };
}

/**
 * Prefix lengths of the middle that end on a group boundary: dropping `middle.slice(0, k)` for
 * such a k never leaves a tool result without its turn. Always ends with `middle.length`.
 */
export function trimBoundaries(regions: Regions): number[] {
  const boundaries: number[] = [];
  let reach = -1;
  regions.middle.forEach((index, position) => {
    const group = regions.groups.groupOf[index] ?? index;
    reach = Math.max(reach, regions.groups.lastOf.get(group) ?? index);
    if (reach === index) boundaries.push(position + 1);
  });
  return boundaries;
}
