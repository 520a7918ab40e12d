// Sandbox-safe: the summarizer's request — the fixed instruction and the capped transcript (docs/design.md#summarizer-request).
import { describeNonTextPart } from '../counting/parts.js';
import { contentText } from '../counting/tokens.js';
import type { ChatMessage, SummarizeRequest } from '../types.js';

/** The fixed instruction: four sections in order, no preamble, no invented facts, exact identifiers. */
export const SUMMARY_INSTRUCTION = [
  'You compact the middle of a long conversation between a user, an AI agent and its tools, so that the agent can continue without it.',
  'Write a summary with exactly these four sections, in this order, each under its heading:',
  '## Goals — what the user asked for and what the agent is trying to achieve.',
  '## Decisions — what was decided, tried, found or ruled out, and why.',
  '## Files and commands — the files read or changed and the commands run, with their outcomes.',
  '## Unresolved — what is still open, failing or unanswered.',
  'Start with the first heading: no preamble and no closing remarks.',
  'State only what the transcript shows; never invent facts, results or file contents.',
  'Copy identifiers exactly (file paths, function and class names, commands, error messages, ids, numbers) rather than paraphrasing them.',
  'Some tool output and tool-call arguments were truncated before you saw them, with a marker saying how much was cut: do not guess what was cut.',
].join('\n');

/** The instruction for the one retry after a summary that did not compact enough. */
export function tooLongInstruction(previousSummaryChars: number): string {
  const limit = Math.max(1, Math.floor(previousSummaryChars / 2));
  return [
    SUMMARY_INSTRUCTION,
    '',
    `Your last attempt was too long: at ${previousSummaryChars} characters it did not make the conversation small enough.`,
    `Write a much shorter summary, under ${limit} characters: keep the four sections, drop detail the agent does not need to continue, keep identifiers exact.`,
  ].join('\n');
}

/**
 * Cuts `text` to `cap` characters plus a marker saying how many characters were cut. The markers
 * are Latin-1 on purpose: one character beyond it (`…`, `→`) turns V8's whole transcript into a
 * two-byte string, which measured ~1.5–2× slower to build at 10k messages (bench/README.md).
 * `»` rather than an ASCII `...` so the marker cannot be mistaken for the text going on.
 */
export function capText(text: string, cap: number): string {
  if (text.length <= cap) return text;
  return `${text.slice(0, cap)}» [truncated by the harness: ${text.length - cap} more characters]`;
}

/**
 * The middle as plain text for the summarizer. Tool results and tool-call argument strings are
 * capped at `toolResultCap`; other text is whole. Other content parts appear as a description
 * without their data: `[image: 1280×800 png]`, `[audio: wav, 48,000 bytes]`, `[<type>]`.
 */
export function renderTranscript(messages: readonly ChatMessage[], toolResultCap: number): string {
  const toolNames = new Map<string, string>();
  // One flat list of pieces joined once: the transcript of a long middle runs to many megabytes,
  // and joining lines per message and then blocks copied all of it twice.
  const pieces: string[] = [];
  messages.forEach((message, index) => {
    if (index > 0) pieces.push('\n\n');
    pieces.push(message.role === 'tool' ? `[tool result${nameOf(message, toolNames)}]` : `[${message.role}]`);
    const text = renderContent(message.content);
    if (text !== '') pieces.push('\n', message.role === 'tool' ? capText(text, toolResultCap) : text);
    for (const call of message.tool_calls ?? []) {
      toolNames.set(call.id, call.function.name);
      pieces.push(
        '\n',
        `-> call ${call.function.name} (${call.id}) ${capText(call.function.arguments, toolResultCap)}`,
      );
    }
  });
  return pieces.join('');
}

function nameOf(message: ChatMessage, toolNames: Map<string, string>): string {
  const name = (message.tool_call_id !== undefined ? toolNames.get(message.tool_call_id) : undefined) ?? message.name;
  const id = message.tool_call_id ?? '';
  return name !== undefined ? ` ${name} (${id})` : ` (${id})`;
}

/** Text as it is; every other part as a one-line description, never its data (`[image: 1280×800 png]`, `[audio: wav, 48,000 bytes]`). */
function renderContent(content: ChatMessage['content']): string {
  if (content === null || typeof content === 'string') return contentText(content);
  return content.map((part) => (part.type === 'text' ? contentText([part]) : describeNonTextPart(part))).join('');
}

/** The whole request: one chat completion, no tools. `previousSummaryChars` makes it the tighter retry. */
export function summarizeRequest(
  middle: readonly ChatMessage[],
  toolResultCap: number,
  previousSummaryChars?: number,
): SummarizeRequest {
  const instruction =
    previousSummaryChars === undefined ? SUMMARY_INSTRUCTION : tooLongInstruction(previousSummaryChars);
  return {
    messages: [
      { role: 'system', content: instruction },
      {
        role: 'user',
        content: `Transcript to summarize (${middle.length} messages):\n\n${renderTranscript(middle, toolResultCap)}`,
      },
    ],
  };
}

const summaryHeader = /^\[Summary by the harness of \d+ earlier messages\]\n\n/;

/** True for the synthetic message a summarizing compaction leaves (`summaryContent` as a user message). */
export function isSummaryMessage(message: ChatMessage): boolean {
  return message.role === 'user' && typeof message.content === 'string' && summaryHeader.test(message.content);
}

/** The content of the synthetic message that replaces the middle: `result.summary`. */
export function summaryContent(summaryText: string, replacedMessages: number): string {
  return `[Summary by the harness of ${replacedMessages} earlier messages]\n\n${summaryText.trim()}`;
}
