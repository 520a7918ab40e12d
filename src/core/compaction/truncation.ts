// Sandbox-safe: the last resort of a compaction that still does not fit (docs/design.md#truncation) —
// the largest tool results and user messages that compaction may touch are cut middle-out, head
// and tail kept, until the conversation fits. Without it, one oversized tool result in the recent
// window ends an agent run with ContextExhausted.
import { contentText } from '../counting/tokens.js';
import type { ChatMessage, CompactionResult, ContentPart, Elision, TokenCounter, Truncation } from '../types.js';
import { isSummaryMessage } from './transcript.js';

/** A truncated message keeps at least this many characters of its text (half from its head, half from its tail). */
export const TRUNCATION_MIN_KEEP = 1_000;

/**
 * Characters of cut text one truncation counts at most, over all its probes: a bisection over a text
 * of megabytes would keep a BPE counter past the SDK's deadlock timeout, on every retry of the task.
 */
export const TRUNCATION_COUNT_CHARS = 2_000_000;

/** Engine messages whose cut could not be carried back to their source (see {@link markUncuttable}). */
const uncuttable = new WeakSet<ChatMessage>();

/** Marks a message truncation must leave whole: a format view maps back only tool results with string content cut. */
export function markUncuttable(message: ChatMessage): void {
  uncuttable.add(message);
}

/** The text `middleOut` puts where it cut. Latin-1 only, like the transcript's markers. */
export function truncationMarker(cut: number): string {
  return `\n\n» [${cut} characters cut from the middle by the harness to fit the context window] «\n\n`;
}

/** `text` cut to `keep` characters of its own: the first half and the last half, the marker between. */
export function middleOut(text: string, keep: number): string {
  if (keep >= text.length) return text;
  const head = Math.ceil(keep / 2);
  const tail = keep - head;
  return `${text.slice(0, head)}${truncationMarker(text.length - keep)}${text.slice(text.length - tail)}`;
}

/** The text a truncation cuts: the content string, or the longest text part (its index in the parts). */
function longestText(content: ChatMessage['content']): { text: string; part: number } | undefined {
  if (typeof content === 'string') return { text: content, part: -1 };
  if (content === null) return undefined;
  let best: { text: string; part: number } | undefined;
  content.forEach((part, index) => {
    const text = part.type === 'text' && typeof part.text === 'string' ? part.text : undefined;
    if (text !== undefined && text.length > (best?.text.length ?? -1)) best = { text, part: index };
  });
  return best;
}

function withText(message: ChatMessage, part: number, text: string): ChatMessage {
  if (part < 0 || !Array.isArray(message.content)) return { ...message, content: text };
  const parts: ContentPart[] = message.content.map((each, index) => (index === part ? { ...each, text } : each));
  return { ...message, content: parts };
}

/**
 * Cuts the largest truncatable messages (a removable tool result or user message, kept, not a
 * summary, over TRUNCATION_MIN_KEEP characters) middle-out until `result` counts at most `limit`;
 * each only as far as needed, a cut that does not lower the count undone. Each cut is an elision of
 * its position (so a transcript replays it) and a `truncations` entry. Deterministic.
 */
export function truncateToFit(
  input: readonly ChatMessage[],
  result: CompactionResult,
  removable: Uint8Array,
  counter: TokenCounter,
  limit: number,
): CompactionResult {
  const position = new Map<ChatMessage, number>();
  result.messages.forEach((message, index) => position.set(message, index));
  const candidates = input
    .map((message, index) => ({ message, index, at: position.get(message), text: longestText(message.content) }))
    .filter(
      (candidate): candidate is typeof candidate & { at: number; text: { text: string; part: number } } =>
        candidate.at !== undefined &&
        removable[candidate.index] === 1 &&
        !uncuttable.has(candidate.message) &&
        (candidate.message.role === 'tool' || candidate.message.role === 'user') &&
        !isSummaryMessage(candidate.message) &&
        candidate.text !== undefined &&
        candidate.text.text.length > TRUNCATION_MIN_KEEP,
    )
    .sort((a, b) => b.text.text.length - a.text.text.length || a.index - b.index);

  const messages = [...result.messages];
  const elisions: Elision[] = [];
  const truncations: Truncation[] = [];
  let tokens = result.tokensAfter;
  let counted = 0;
  for (const { message, index, at, text } of candidates) {
    if (tokens <= limit) break;
    const length = text.text.length;
    const countWith = (keep: number): number => {
      messages[at] = withText(message, text.part, middleOut(text.text, keep));
      return counter.count(messages);
    };
    /** The cut text a probe counts: what it keeps and its marker. */
    const costOf = (keep: number): number => keep + truncationMarker(length - keep).length;
    // The most characters kept that fit; none fitting, the least, and on to the next candidate.
    let low = TRUNCATION_MIN_KEEP;
    let high = length - 1;
    // A bisection counts at most this many probes, each shorter than the text with its marker.
    const bisectionCost = (Math.ceil(Math.log2(high - low + 1)) + 1) * (length + truncationMarker(length).length);
    if (counted + bisectionCost <= TRUNCATION_COUNT_CHARS) {
      // Within the bound whatever the probes find: the bisection.
      counted += costOf(low);
      if (countWith(low) <= limit) {
        while (low < high) {
          const probe = Math.ceil((low + high) / 2);
          counted += costOf(probe);
          if (countWith(probe) <= limit) low = probe;
          else high = probe - 1;
        }
      }
    } else {
      const found = boundedSearch(length, tokens, limit, TRUNCATION_COUNT_CHARS - counted, costOf, countWith);
      low = found.keep;
      counted += found.spent;
    }
    const after = countWith(low);
    if (after >= tokens) {
      messages[at] = message;
      continue;
    }
    tokens = after;
    const cut = messages[at] ?? message;
    elisions.push(
      typeof cut.content === 'string'
        ? { index, stub: cut.content }
        : { index, stub: contentText(cut.content), content: cut.content ?? [] },
    );
    truncations.push({ index, chars: text.text.length, kept: low });
  }
  if (truncations.length === 0) return result;
  return {
    ...result,
    messages,
    elisions: [...result.elisions, ...elisions].sort((a, b) => a.index - b.index),
    tokensAfter: tokens,
    exhausted: tokens > limit,
    truncations: truncations.sort((a, b) => a.index - b.index),
  };
}

/**
 * The most characters to keep that fit `limit`, as far as `budget` characters of cut text can tell.
 * Counts grow nearly in proportion to the characters kept, so each probe goes where the line through
 * both ends reaches the limit (regula falsi, the first 1% short), with the Illinois rule so the
 * search cannot creep toward the limit from one side.
 */
function boundedSearch(
  length: number,
  whole: number,
  limit: number,
  budget: number,
  costOf: (keep: number) => number,
  countWith: (keep: number) => number,
): { keep: number; spent: number } {
  let left = budget;
  const spent = (): number => budget - left;
  let low = TRUNCATION_MIN_KEEP;
  if (costOf(low) > left) return { keep: low, spent: spent() };
  left -= costOf(low);
  let lowCount = countWith(low);
  if (lowCount > limit) return { keep: low, spent: spent() };
  // The shortest cut known not to fit, and its count (the whole text at first).
  let over = length;
  let overCount = whole;
  // How much each end counts in the next line, and which end the last probe moved.
  let lowWeight = 1;
  let overWeight = 1;
  let moved: 'low' | 'over' | undefined;
  let shade = 0.99;
  while (over - low > 1) {
    const below = (limit - lowCount) * lowWeight;
    const above = (overCount - limit) * overWeight;
    const reach = Math.floor((below / (below + above)) * (over - low) * shade);
    shade = 1;
    let probe = Math.min(over - 1, Math.max(low + 1, low + reach));
    // Out of budget for this probe: the longest one left that it pays for.
    while (probe > low && costOf(probe) > left) probe -= costOf(probe) - left;
    if (probe <= low) break;
    left -= costOf(probe);
    const count = countWith(probe);
    if (count <= limit) {
      low = probe;
      lowCount = count;
      overWeight = moved === 'low' ? overWeight / 2 : 1;
      lowWeight = 1;
      moved = 'low';
    } else {
      over = probe;
      overCount = count;
      lowWeight = moved === 'over' ? lowWeight / 2 : 1;
      overWeight = 1;
      moved = 'over';
    }
  }
  return { keep: low, spent: spent() };
}
