// Sandbox-safe: a middle too large for the summarizer's own window, cut into pieces summarized as a
// fold (docs/design.md#summarizer-window). Pure and deterministic: the same middle, options and
// counter cut the same pieces, in workflow code as in-process.
import { SUMMARY_OUTPUT_SHARE } from './options.js';
import {
  capText,
  renderContent,
  renderTranscript,
  requestFor,
  summarizerMessages,
  summaryContent,
} from './transcript.js';
import type { ChatMessage, SummarizeRequest, TokenCounter } from '../types.js';

/**
 * Added to every instruction of a folded summary: the transcript is one part, maybe after the summary
 * so far. That summary comes as the engine's own summary message (`summaryContent`: `[Summary by the
 * harness of N earlier messages]`), so a summarizer that merges earlier summaries (the extractive
 * one) merges it as it merges the summary of an earlier compaction.
 */
export const FOLD_NOTE = [
  'This transcript is one part of a longer conversation, taken in order.',
  'When its first message is a summary by the harness of earlier messages, that is the summary of everything before this part:',
  'write one summary of both, keeping what that summary holds unless this part settles or replaces it.',
].join(' ');

/** The instruction of a folded request: the pass's instruction and {@link FOLD_NOTE}. */
export function foldInstruction(instruction: string): string {
  return `${instruction}\n\n${FOLD_NOTE}`;
}

/**
 * Of the input room of a request (the window less {@link SUMMARY_OUTPUT_SHARE}), the share kept
 * free for the longer instruction of the final fold's one retry (tighter, or naming identifiers).
 */
export const RETRY_SHARE = 0.05;

/**
 * The most of what is left for the transcript a piece after the first leaves for the summary so far
 * (it leaves the summary's output share of the window when that is less: no summary is longer).
 */
export const CARRIED_SHARE = 0.5;

/** The pieces of a middle and how to build each one's transcript. */
export interface Pieces {
  /** The input room of every request: `summarizerContextWindow × (1 − SUMMARY_OUTPUT_SHARE)`, in tokens. */
  room: number;
  /** The instruction every folded request starts from ({@link foldInstruction} of the pass's). */
  instruction: string;
  /** The capped middle's messages, cut on message boundaries (a message alone too large for a piece is cut itself). */
  pieces: ChatMessage[][];
  /**
   * How many messages of the middle a summary so far already covers when the cut starts after it
   * (a fold cut again smaller part-way, docs/design.md#summarizer-overflow); 0 for a cut of the whole middle.
   */
  before: number;
}

/** The input room of a request under `window`: what is left when the summary's share is set aside. */
export function inputRoom(window: number): number {
  return Math.floor(window * (1 - SUMMARY_OUTPUT_SHARE));
}

/** True when a request is within the input room of `window`. */
export function requestFits(request: SummarizeRequest, window: number, counter: TokenCounter): boolean {
  return counter.count(summarizerMessages(request)) <= inputRoom(window);
}

/**
 * Cuts the capped middle into pieces when its one request would not fit `window`; undefined when it
 * fits (one request, as without the option); `'unfit'` when even one message cut to nothing, with the
 * instruction, does not (an instruction too long for the window).
 *
 * With `after`, the messages are what is left of a middle whose first `after.before` messages a
 * summary so far already covers: every piece, the first too, leaves room for that summary, and the
 * cut is made even when they would fit one request (the summary so far is folded in).
 */
export function cutPieces(
  seen: readonly ChatMessage[],
  instruction: string,
  instructions: string | undefined,
  counter: TokenCounter,
  window: number,
  after?: { before: number },
): Pieces | 'unfit' | undefined {
  if (after === undefined && requestFits(requestFor(instruction, [...seen], instructions), window, counter))
    return undefined;
  const room = inputRoom(window);
  const folded = foldInstruction(instruction);
  const tokensOf = (middle: ChatMessage[]): number =>
    counter.count(summarizerMessages(requestFor(folded, middle, instructions)));
  const overhead = tokensOf([]);
  const free = room - Math.ceil(room * RETRY_SHARE) - overhead;
  // The first piece has the whole free room; the others leave room for the summary so far: what a
  // summary within the window can be (its output share), at most half of the free room.
  const laterRoom = free - Math.min(Math.floor(window * SUMMARY_OUTPUT_SHARE), Math.floor(free * CARRIED_SHARE));
  if (laterRoom <= 0) return 'unfit';
  // A message's share of a request, without rendering the instruction again for each one.
  const bare = counter.count([{ role: 'user', content: '' }]);
  const costOf = (message: ChatMessage): number =>
    counter.count([{ role: 'user', content: `${renderTranscript([message], Number.POSITIVE_INFINITY)}\n\n` }]) - bare;
  const pieces: ChatMessage[][] = [];
  const limit = (): number => overhead + (pieces.length === 0 && after === undefined ? free : laterRoom);
  let current: ChatMessage[] = [];
  let used = 0;
  // Messages still to place, in order; a piece checked whole and found over its room gives its last ones back.
  const queue: ChatMessage[] = [...seen].reverse();
  const close = (): void => {
    // The sum of the messages' shares estimates the piece; the piece itself is counted once here.
    const back: ChatMessage[] = [];
    while (current.length > 1 && tokensOf(current) > limit()) back.push(...current.splice(-1));
    if (current.length > 0) pieces.push(current);
    queue.push(...back);
    current = [];
    used = 0;
  };
  for (let message = queue.pop(); message !== undefined; message = queue.pop()) {
    let cost = costOf(message);
    if (current.length > 0 && overhead + used + cost > limit()) {
      queue.push(message);
      // A tool call stays with its results: the piece gives back the call and the results it holds,
      // unless they are all it holds (then the group is cut between messages).
      if (message.role === 'tool') queue.push(...current.splice(groupStart(current)).reverse());
      close();
      continue;
    }
    let placed = message;
    if (current.length === 0 && tokensOf([message]) > limit()) {
      const cut = cutMessage(message, (candidate) => tokensOf([candidate]) <= limit());
      if (cut === undefined) return 'unfit';
      placed = cut;
      cost = costOf(cut);
    }
    current.push(placed);
    used += cost;
  }
  close();
  return { room, instruction: folded, pieces, before: after?.before ?? 0 };
}

/**
 * The transcript of a piece's request: the summary so far as the engine's summary message of the
 * messages before the piece (its text cut, marker and all, until the request fits the room less the
 * retry share), then the piece; undefined when even an
 * empty summary so far does not fit.
 */
export function foldedMiddle(
  pieces: Pieces,
  index: number,
  carried: string | undefined,
  instructions: string | undefined,
  counter: TokenCounter,
): ChatMessage[] | undefined {
  const piece = pieces.pieces[index] ?? [];
  if (carried === undefined) return piece;
  const limit = pieces.room - Math.ceil(pieces.room * RETRY_SHARE);
  const before = pieces.pieces.slice(0, index).reduce((sum, earlier) => sum + earlier.length, pieces.before);
  const withText = (chars: number): ChatMessage[] => [
    { role: 'user', content: summaryContent(capText(carried, chars), before) },
    ...piece,
  ];
  const fits = (chars: number): boolean =>
    counter.count(summarizerMessages(requestFor(pieces.instruction, withText(chars), instructions))) <= limit;
  const chars = largestFitting(carried.length, fits);
  return chars === undefined ? undefined : withText(chars);
}

/**
 * Where the tool-call group at the end of `messages` starts (the assistant message whose calls the
 * trailing tool results answer); `messages.length` when it does not end in one, or when that group
 * is all it holds.
 */
function groupStart(messages: readonly ChatMessage[]): number {
  let start = messages.length;
  while (start > 0 && messages[start - 1]?.role === 'tool') start -= 1;
  if (start === 0 || messages[start - 1]?.tool_calls === undefined) return messages.length;
  return start - 1 > 0 ? start - 1 : messages.length;
}

/** A message too large for any piece, its text cut as `capText` cuts it until `fits`; undefined when nothing fits. */
function cutMessage(message: ChatMessage, fits: (message: ChatMessage) => boolean): ChatMessage | undefined {
  const text = renderContent(message.content);
  const withText = (chars: number): ChatMessage => ({ ...message, content: capText(text, chars) });
  const chars = largestFitting(text.length, (length) => fits(withText(length)));
  return chars === undefined ? undefined : withText(chars);
}

/** The largest length in [0, max] for which `fits` holds, by bisection (fits is monotone in it); undefined when 0 does not fit. */
function largestFitting(max: number, fits: (length: number) => boolean): number | undefined {
  if (fits(max)) return max;
  if (!fits(0)) return undefined;
  let low = 0;
  let high = max;
  while (high - low > 1) {
    const probe = (low + high) >> 1;
    if (fits(probe)) low = probe;
    else high = probe;
  }
  return low;
}
