// Sandbox-safe: tool-call groups, the cut, and the middle (docs/design.md#regions).
import { isSticky } from '../schema.js';
import type { ChatMessage, ToolCall } from '../types.js';

/** Tool-call groups: an assistant turn with its results, else one message; a compaction keeps or removes a group whole. */
export interface Groups {
  groupOf: Int32Array;
  lastOf: Int32Array;
  /** The assistant turn that asked each answered call, by tool result index; -1 for every other message. */
  askedBy: Int32Array;
}

export function toolGroups(messages: readonly ChatMessage[]): Groups {
  // Typed arrays indexed by message, not Maps: this runs over every message of every pass.
  const count = messages.length;
  const groupOf = new Int32Array(count);
  const lastOf = new Int32Array(count);
  const askedBy = new Int32Array(count);
  const owners = new CallOwners(messages);
  for (let index = 0; index < count; index += 1) {
    const message = messages[index] as ChatMessage;
    const callId = message.role === 'tool' ? message.tool_call_id : undefined;
    const owner = callId === undefined ? undefined : owners.of(index, callId);
    const group = owner ?? index;
    groupOf[index] = group;
    askedBy[index] = owner ?? -1;
    lastOf[index] = index;
    lastOf[group] = index;
  }
  return { groupOf, lastOf, askedBy };
}

/** The turn a tool result answers: the latest call of its id before it, looked for nearby first, then in a map built once. */
export class CallOwners {
  static readonly NEAR = 32;
  private byResult: (number | undefined)[] | undefined;

  constructor(private readonly messages: readonly ChatMessage[]) {}

  of(index: number, callId: string): number | undefined {
    const from = Math.max(0, index - CallOwners.NEAR);
    for (let before = index - 1; before >= from; before -= 1) {
      const calls = this.messages[before]?.tool_calls;
      if (calls === undefined) continue;
      // An index loop: V8 does not always optimize a for-of's iterator away.
      for (let position = 0; position < calls.length; position += 1)
        if ((calls[position] as ToolCall).id === callId) return before;
    }
    if (from === 0) return undefined;
    this.byResult ??= this.collect();
    return this.byResult[index];
  }

  /** The tool name of the call a result answers. */
  nameOf(index: number, callId: string): string | undefined {
    const owner = this.of(index, callId);
    const calls = owner === undefined ? undefined : this.messages[owner]?.tool_calls;
    return calls?.find((call) => call.id === callId)?.function.name;
  }

  private collect(): (number | undefined)[] {
    const owner = new Map<string, number>();
    const byResult = new Array<number | undefined>(this.messages.length);
    this.messages.forEach((message, index) => {
      if (message.role === 'tool' && message.tool_call_id !== undefined)
        byResult[index] = owner.get(message.tool_call_id);
      for (const call of message.tool_calls ?? []) owner.set(call.id, index);
    });
    return byResult;
  }
}

/** What a compaction may remove: not sticky (nor `task`), nor in a group with a sticky message. Session replay uses it too. */
export function removableMask(messages: readonly ChatMessage[], groups = toolGroups(messages), task = -1): Uint8Array {
  // A sticky message pins its own group, so it is never removable either.
  const pinned = new Uint8Array(messages.length);
  for (let index = 0; index < messages.length; index += 1)
    if (index === task || isSticky(messages[index] as ChatMessage)) pinned[groups.groupOf[index] ?? index] = 1;
  const removable = new Uint8Array(messages.length);
  for (let index = 0; index < messages.length; index += 1)
    if (pinned[groups.groupOf[index] ?? index] === 0) removable[index] = 1;
  return removable;
}

/** The start of the recent window: `keepRecent` from the end, moved back so that no group straddles it. */
export function findCut(messages: readonly ChatMessage[], keepRecent: number, groups = toolGroups(messages)): number {
  return cutFrom(messages, Math.max(0, messages.length - keepRecent), groups);
}

export function cutFrom(messages: readonly ChatMessage[], start: number, groups: Groups): number {
  let cut = start;
  while (cut > 0 && cut < messages.length && messages[cut]?.role === 'tool') cut -= 1;
  // A turn whose results are separated from it by another message must not straddle the cut either.
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

/** The start of the smallest recent window that holds the last complete turn (docs/design.md#window-gives-way). */
export function lastTurnCut(messages: readonly ChatMessage[], groups: Groups): number {
  let last = messages.length - 1;
  while (last >= 0 && messages[last]?.role !== 'assistant') last -= 1;
  return cutFrom(messages, last >= 0 ? last : Math.max(0, messages.length - 1), groups);
}

/** Every valid start of a recent window in `(after, upTo]`, ascending (the positions {@link cutFrom} leaves). O(n). */
export function windowStarts(messages: readonly ChatMessage[], after: number, upTo: number, groups: Groups): number[] {
  const starts: number[] = [];
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
  cut: number;
  /** 1 for each message a compaction may remove: bytes, as a `boolean[]` would be 8 times larger at 100k messages. */
  removable: Uint8Array;
  middle: number[];
  inMiddle: Uint8Array;
}

export function findRegions(messages: readonly ChatMessage[], keepRecent: number, keepTask = false): Regions {
  const groups = toolGroups(messages);
  const task = keepTask ? messages.findIndex((message) => message.role === 'user') : -1;
  return regionsAt(findCut(messages, keepRecent, groups), groups, removableMask(messages, groups, task));
}

export function regionsAt(cut: number, groups: Groups, removable: Uint8Array): Regions {
  const inMiddle = new Uint8Array(removable.length);
  const middle: number[] = [];
  for (let index = 0; index < removable.length && index < cut; index += 1) {
    if (removable[index] !== 1) continue;
    inMiddle[index] = 1;
    middle.push(index);
  }
  return { groups, cut, removable, middle, inMiddle };
}

/** Prefix lengths of the middle that end on a group boundary, ending with `middle.length`. */
export function trimBoundaries(regions: Regions): number[] {
  const boundaries: number[] = [];
  let reach = -1;
  regions.middle.forEach((index, position) => {
    const group = regions.groups.groupOf[index] ?? index;
    reach = Math.max(reach, regions.groups.lastOf[group] ?? index);
    if (reach === index) boundaries.push(position + 1);
  });
  return boundaries;
}
