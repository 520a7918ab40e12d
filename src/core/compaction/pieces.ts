// Sandbox-safe and pure: a middle too large for the summarizer's window, in pieces (docs/design.md#summarizer-window).
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

/** Added to every instruction of a fold; the summary so far comes as the engine's own summary message. */
export const FOLD_NOTE = [
  'This transcript is one part of a longer conversation, taken in order.',
  'When its first message is a summary by the harness of earlier messages, that is the summary of everything before this part:',
  'write one summary of both, keeping what that summary holds unless this part settles or replaces it.',
].join(' ');

export function foldInstruction(instruction: string): string {
  return `${instruction}\n\n${FOLD_NOTE}`;
}

/** Of the input room of a request, the share kept free for the longer instruction of the final fold's retry. */
export const RETRY_SHARE = 0.05;

/** The most of the transcript's room a piece after the first leaves for the summary so far. */
export const CARRIED_SHARE = 0.5;

export interface Pieces {
  /** The input room of every request, in tokens. */
  room: number;
  instruction: string;
  /** The counter's tokens of the request for a transcript with this instruction. */
  tokensOf: (middle: ChatMessage[]) => number;
  pieces: ChatMessage[][];
  /** How many messages of the middle a summary so far covers (a fold cut again part-way); 0 for the whole middle. */
  before: number;
}

export function inputRoom(window: number): number {
  return Math.floor(window * (1 - SUMMARY_OUTPUT_SHARE));
}

export function requestFits(request: SummarizeRequest, window: number, counter: TokenCounter): boolean {
  return counter.count(summarizerMessages(request)) <= inputRoom(window);
}

/**
 * The capped middle in pieces when its one request would not fit `window` (undefined when it fits; `'unfit'` when
 * the instruction alone does not). With `after`, always cut, each piece leaving room for the summary so far.
 */
export function cutPieces(
  seen: readonly ChatMessage[],
  instruction: string,
  counter: TokenCounter,
  window: number,
  after?: { before: number },
): Pieces | 'unfit' | undefined {
  if (after === undefined && requestFits(requestFor(instruction, [...seen]), window, counter)) return undefined;
  const room = inputRoom(window);
  const folded = foldInstruction(instruction);
  const tokensOf = (middle: ChatMessage[]): number => counter.count(summarizerMessages(requestFor(folded, middle)));
  const overhead = tokensOf([]);
  const free = room - Math.ceil(room * RETRY_SHARE) - overhead;
  // The pieces after the first leave room for the summary so far.
  const laterRoom = free - Math.min(Math.floor(window * SUMMARY_OUTPUT_SHARE), Math.floor(free * CARRIED_SHARE));
  if (laterRoom <= 0) return 'unfit';
  const bare = counter.count([{ role: 'user', content: '' }]);
  const costOf = (message: ChatMessage): number =>
    counter.count([{ role: 'user', content: `${renderTranscript([message], Number.POSITIVE_INFINITY)}\n\n` }]) - bare;
  const pieces: ChatMessage[][] = [];
  const limit = (): number => overhead + (pieces.length === 0 && after === undefined ? free : laterRoom);
  let current: ChatMessage[] = [];
  let used = 0;
  const queue: ChatMessage[] = [...seen].reverse();
  const close = (): void => {
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
      // A tool call stays with its results, unless they are all the piece holds.
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
  return { room, instruction: folded, tokensOf, pieces, before: after?.before ?? 0 };
}

/** The transcript of a piece's request: the summary so far (cut to fit), then the piece; undefined when nothing fits. */
export function foldedMiddle(pieces: Pieces, index: number, carried: string | undefined): ChatMessage[] | undefined {
  const piece = pieces.pieces[index] ?? [];
  if (carried === undefined) return piece;
  const limit = pieces.room - Math.ceil(pieces.room * RETRY_SHARE);
  const before = pieces.pieces.slice(0, index).reduce((sum, earlier) => sum + earlier.length, pieces.before);
  const withText = (chars: number): ChatMessage[] => [
    { role: 'user', content: summaryContent(capText(carried, chars), before) },
    ...piece,
  ];
  const chars = largestFitting(carried.length, (length) => pieces.tokensOf(withText(length)) <= limit);
  return chars === undefined ? undefined : withText(chars);
}

/** Where the tool-call group at the end of `messages` starts; `messages.length` when none, or when it is all. */
function groupStart(messages: readonly ChatMessage[]): number {
  let start = messages.length;
  while (start > 0 && messages[start - 1]?.role === 'tool') start -= 1;
  return start > 1 && messages[start - 1]?.tool_calls !== undefined ? start - 1 : messages.length;
}

/** A message too large for any piece, its text cut until `fits`; undefined when nothing fits. */
function cutMessage(message: ChatMessage, fits: (message: ChatMessage) => boolean): ChatMessage | undefined {
  const text = renderContent(message.content);
  const withText = (chars: number): ChatMessage => ({ ...message, content: capText(text, chars) });
  const chars = largestFitting(text.length, (length) => fits(withText(length)));
  return chars === undefined ? undefined : withText(chars);
}

/** The largest length in [0, max] for which the monotone `fits` holds; undefined when 0 does not fit. */
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
