// Sandbox-safe: what the extractive summarizer reads from the request's text — the transcript's
// length (its budget is a share of it) and a length limit the instruction states.
import { contentText } from '../../core/counting/tokens.js';
import type { ChatMessage } from '../../core/types.js';

/** The transcript: the user message's text without the renderer's first line. */
export function transcriptText(messages: readonly ChatMessage[]): string {
  const userMessages = messages.filter((message) => message.role === 'user');
  const source =
    userMessages.length > 0
      ? userMessages
      : messages.filter((message) => message.role !== 'system' && message.role !== 'developer');
  const text = source.map((message) => contentText(message.content)).join('\n\n');
  return text.replace(/^Transcript to summarize \(\d+ messages?\):\r?\n(?:\r?\n)?/, '');
}

/**
 * The largest length the instruction allows, from the too-long retry's "under N characters"
 * (`tooLongInstruction`); "at most N characters" is read too. `undefined` when none is stated.
 */
export function statedCharLimit(messages: readonly ChatMessage[]): number | undefined {
  let limit: number | undefined;
  for (const message of messages) {
    if (message.role !== 'system' && message.role !== 'developer') continue;
    const text = contentText(message.content);
    for (const match of text.matchAll(
      /\b(under|fewer than|less than|at most|no more than)\s+([\d,_]+)\s+characters\b/gi,
    )) {
      const amount = Number((match[2] ?? '').replace(/[,_]/g, ''));
      if (!Number.isFinite(amount)) continue;
      const allowed = /^(under|fewer than|less than)$/i.test(match[1] ?? '') ? amount - 1 : amount;
      limit = limit === undefined ? allowed : Math.min(limit, allowed);
    }
  }
  return limit === undefined ? undefined : Math.max(0, limit);
}
