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

/** What a caller may say about the instruction (docs/design.md#summary-instructions); both unset: the fixed one. */
export interface InstructionText {
  /** Added after the instruction: what to focus on or keep. */
  summaryInstructions?: string | undefined;
  /** Replaces {@link SUMMARY_INSTRUCTION}. */
  summaryPrompt?: string | undefined;
}

/** The heading under which `summaryInstructions` follow the instruction. */
export const SUMMARY_INSTRUCTIONS_HEADING =
  'Instructions from the user for this summary (follow them; what they ask you to keep must be in the summary):';

/** The instruction before any retry: the fixed one or `summaryPrompt`, then `summaryInstructions`. */
export function baseInstruction(text: InstructionText = {}): string {
  const base = text.summaryPrompt ?? SUMMARY_INSTRUCTION;
  const added = text.summaryInstructions?.trim();
  return added === undefined || added === '' ? base : [base, '', SUMMARY_INSTRUCTIONS_HEADING, added].join('\n');
}

/** The instruction for the one retry after a summary that did not compact enough. */
export function tooLongInstruction(previousSummaryChars: number, text: InstructionText = {}): string {
  const limit = Math.max(1, Math.floor(previousSummaryChars / 2));
  // The fixed instruction asks for four sections; a prompt of the caller's own may ask for another shape.
  const keep = text.summaryPrompt === undefined ? 'keep the four sections' : 'keep the shape asked for';
  return [
    baseInstruction(text),
    '',
    `Your last attempt was too long: at ${previousSummaryChars} characters it did not make the conversation small enough.`,
    `Write a much shorter summary, under ${limit} characters: ${keep}, drop detail the agent does not need to continue, keep identifiers exact.`,
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

/** The marker {@link capText} leaves at the end of what it cut. */
export const CAP_MARKER = /» \[truncated by the harness: \d+ more characters\]$/;

/**
 * The middle as the summarizer sees it, still as messages: tool results and tool-call argument
 * strings cut as {@link renderTranscript} cuts them, and of each message only what the transcript
 * shows (role, content, tool calls, the tool result's call id and name). A part that is not text
 * becomes a text part with its description (`[image: 1280×800 png]`: never its data), and a tool
 * result cut short becomes the string its parts render to. `renderTranscript(capMiddle(m, cap), Infinity)` is
 * `renderTranscript(m, cap)`: the request carries both, so a summarizer reads whichever it needs.
 */
export function capMiddle(messages: readonly ChatMessage[], toolResultCap: number): ChatMessage[] {
  return messages.map((message) => {
    const seen: ChatMessage = { role: message.role, content: withoutData(message.content) };
    if (message.role === 'tool') {
      const text = renderContent(message.content);
      if (text.length > toolResultCap) seen.content = capText(text, toolResultCap);
    }
    if (message.tool_calls !== undefined)
      seen.tool_calls = message.tool_calls.map((call) => ({
        id: call.id,
        type: call.type,
        function: { name: call.function.name, arguments: capText(call.function.arguments, toolResultCap) },
      }));
    if (message.tool_call_id !== undefined) seen.tool_call_id = message.tool_call_id;
    if (message.name !== undefined) seen.name = message.name;
    return seen;
  });
}

/** Content with every part that is not text replaced by a text part describing it. */
function withoutData(content: ChatMessage['content']): ChatMessage['content'] {
  if (content === null || typeof content === 'string' || content.every((part) => part.type === 'text')) return content;
  return content.map((part) => (part.type === 'text' ? part : { type: 'text', text: describeNonTextPart(part) }));
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

/**
 * The length of {@link renderTranscript}'s text, counted piece by piece without building it (a
 * test holds the two together).
 */
export function transcriptLength(messages: readonly ChatMessage[], toolResultCap: number): number {
  const toolNames = new Map<string, string>();
  let length = 0;
  messages.forEach((message, index) => {
    if (index > 0) length += 2;
    if (message.role === 'tool') {
      const id = message.tool_call_id ?? '';
      const name =
        (message.tool_call_id !== undefined ? toolNames.get(message.tool_call_id) : undefined) ?? message.name;
      // `[tool result ${name} (${id})]` or `[tool result (${id})]`
      length += '[tool result ('.length + id.length + ')]'.length + (name === undefined ? 0 : name.length + 1);
    } else length += message.role.length + 2;
    const text = renderContent(message.content);
    if (text !== '') length += 1 + (message.role === 'tool' ? cappedLength(text, toolResultCap) : text.length);
    for (const call of message.tool_calls ?? []) {
      toolNames.set(call.id, call.function.name);
      // `\n-> call ${name} (${id}) ${arguments}`
      length += '\n-> call  () '.length + call.function.name.length + call.id.length;
      length += cappedLength(call.function.arguments, toolResultCap);
    }
  });
  return length;
}

function cappedLength(text: string, cap: number): number {
  return text.length <= cap ? text.length : capText(text, cap).length;
}

function nameOf(message: ChatMessage, toolNames: Map<string, string>): string {
  const name = (message.tool_call_id !== undefined ? toolNames.get(message.tool_call_id) : undefined) ?? message.name;
  const id = message.tool_call_id ?? '';
  return name !== undefined ? ` ${name} (${id})` : ` (${id})`;
}

/** A message's content as the transcript shows it: text as it is, every other part as a one-line description, never its data (`[image: 1280×800 png]`, `[audio: wav, 48,000 bytes]`). */
export function renderContent(content: ChatMessage['content']): string {
  if (content === null || typeof content === 'string') return contentText(content);
  return content.map((part) => (part.type === 'text' ? contentText([part]) : describeNonTextPart(part))).join('');
}

/** The instruction of a request; `previousSummaryChars` makes it the tighter retry's. */
export function summaryInstruction(previousSummaryChars?: number, text: InstructionText = {}): string {
  return previousSummaryChars === undefined ? baseInstruction(text) : tooLongInstruction(previousSummaryChars, text);
}

/**
 * The request for an instruction and a middle already cut by {@link capMiddle}: the instruction as
 * the system message, the rendered transcript as the user message, and the middle itself; with
 * `instructions` (the caller's `summaryInstructions`, already in the instruction) those too.
 */
export function requestFor(instruction: string, cappedMiddle: ChatMessage[], instructions?: string): SummarizeRequest {
  const request: SummarizeRequest = {
    ...(instructions === undefined ? {} : { instructions }),
    messages: [],
    middle: cappedMiddle,
  };
  // `messages` is rendered when first read, then kept: the workflow driver sends the instruction
  // and the middle and never reads it, and a long middle's transcript runs to many megabytes.
  // Redefined in place, so the request's keys keep their order.
  let messages: ChatMessage[] | undefined;
  Object.defineProperty(request, 'messages', {
    enumerable: true,
    configurable: true,
    get: (): ChatMessage[] =>
      (messages ??= [
        { role: 'system', content: instruction },
        {
          role: 'user',
          content: `${transcriptHeader(cappedMiddle)}${renderTranscript(cappedMiddle, Number.POSITIVE_INFINITY)}`,
        },
      ]),
    set: (value: ChatMessage[]) => {
      messages = value;
    },
  });
  return request;
}

function transcriptHeader(cappedMiddle: readonly ChatMessage[]): string {
  return `Transcript to summarize (${cappedMiddle.length} messages):\n\n`;
}

/** The characters of {@link requestFor}'s messages (instruction and transcript), without rendering them. */
export function requestChars(instruction: string, cappedMiddle: readonly ChatMessage[]): number {
  return (
    instruction.length +
    transcriptHeader(cappedMiddle).length +
    transcriptLength(cappedMiddle, Number.POSITIVE_INFINITY)
  );
}

/** The whole request: one chat completion, no tools. `previousSummaryChars` makes it the tighter retry. */
export function summarizeRequest(
  middle: readonly ChatMessage[],
  toolResultCap: number,
  previousSummaryChars?: number,
  text: InstructionText = {},
): SummarizeRequest {
  const instructions = text.summaryInstructions?.trim();
  return requestFor(
    summaryInstruction(previousSummaryChars, text),
    capMiddle(middle, toolResultCap),
    instructions === '' ? undefined : instructions,
  );
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
