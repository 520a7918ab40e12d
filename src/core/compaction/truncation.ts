// Sandbox-safe: the last resort (docs/design.md#truncation): the largest removable messages cut middle-out until it fits.
import { contentText } from '../counting/tokens.js';
import type { ChatMessage, CompactionResult, ContentPart, Elision, Truncation } from '../types.js';
import type { Pass } from './pass.js';
import { isSummaryMessage } from './transcript.js';

/** A truncated message keeps at least this many characters of its text. */
export const TRUNCATION_MIN_KEEP = 1_000;

/** Characters of cut text one truncation counts at most: a bisection over megabytes would keep a BPE counter past the SDK's deadlock timeout. */
export const TRUNCATION_COUNT_CHARS = 2_000_000;

const uncuttable = new WeakSet<ChatMessage>();

/** Marks a message truncation must leave whole: its cut could not be carried back to its format's source. */
export function markUncuttable(message: ChatMessage): void {
  uncuttable.add(message);
}

/** The text `middleOut` puts where it cut (Latin-1 only). */
export function truncationMarker(cut: number): string {
  return `\n\n» [${cut} characters cut from the middle by the harness to fit the context window] «\n\n`;
}

export function middleOut(text: string, keep: number): string {
  if (keep >= text.length) return text;
  const head = Math.ceil(keep / 2);
  const tail = keep - head;
  return `${text.slice(0, head)}${truncationMarker(text.length - keep)}${text.slice(text.length - tail)}`;
}

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

/** Cuts the largest truncatable messages middle-out, each as far as needed, until `result` fits `limit`; each cut is an elision. */
export function truncateToFit(pass: Pass, result: CompactionResult): CompactionResult {
  const { counter, limit } = pass.aim;
  const position = new Map(result.messages.map((message, index) => [message, index]));
  const candidates = pass.input
    .flatMap((message, index) => {
      const at = position.get(message);
      const text = longestText(message.content);
      if (at === undefined || text === undefined || text.text.length <= TRUNCATION_MIN_KEEP) return [];
      const cuttable = (message.role === 'tool' || message.role === 'user') && !isSummaryMessage(message);
      return cuttable && pass.regions.removable[index] === 1 && !uncuttable.has(message)
        ? [{ message, index, at, text }]
        : [];
    })
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
    const costOf = (keep: number): number => keep + truncationMarker(length - keep).length;
    let low = TRUNCATION_MIN_KEEP;
    let high = length - 1;
    const bisectionCost = (Math.ceil(Math.log2(high - low + 1)) + 1) * (length + truncationMarker(length).length);
    if (counted + bisectionCost <= TRUNCATION_COUNT_CHARS) {
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
 * The most characters to keep within `limit` that `budget` characters of counting tell: regula falsi (counts grow
 * about in proportion to what is kept), the first probe 1% short, with the Illinois rule.
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
  let over = length;
  let overCount = whole;
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
