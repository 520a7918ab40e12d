// Sandbox-safe: the summarizer's request — the fixed instruction and the capped transcript (docs/design.md#summarizer-request).
import { describeNonTextPart } from '../counting/parts.js';
import { contentText } from '../counting/tokens.js';
import { CallOwners } from './regions.js';
import type { ChatMessage, SummarizeRequest, ToolCall } from '../types.js';

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

/** What a caller may say about the instruction (docs/design.md#summary-instructions). */
export interface InstructionText {
  summaryInstructions?: string | undefined;
  summaryPrompt?: string | undefined;
  /** The task when the compaction keeps it in place (docs/design.md#task-survives): the summarizer is told it apart. */
  task?: string | undefined;
}

export const TASK_HEADING =
  'The task of this conversation, which stays in it verbatim before your summary (do not repeat it; keep what it needs):';

export const SUMMARY_INSTRUCTIONS_HEADING =
  'Instructions from the user for this summary (follow them; what they ask you to keep must be in the summary):';

/** The instruction before any retry: the fixed one or `summaryPrompt`, then the kept task, then `summaryInstructions`. */
export function baseInstruction(text: InstructionText = {}): string {
  const base = text.summaryPrompt ?? SUMMARY_INSTRUCTION;
  const task = text.task === undefined || text.task === '' ? [] : ['', TASK_HEADING, text.task];
  const added = text.summaryInstructions?.trim();
  const instructions = added === undefined || added === '' ? [] : ['', SUMMARY_INSTRUCTIONS_HEADING, added];
  return [base, ...task, ...instructions].join('\n');
}

export function tooLongInstruction(previousSummaryChars: number, text: InstructionText = {}): string {
  const limit = Math.max(1, Math.floor(previousSummaryChars / 2));
  const keep = text.summaryPrompt === undefined ? 'keep the four sections' : 'keep the shape asked for';
  return [
    baseInstruction(text),
    '',
    `Your last attempt was too long: at ${previousSummaryChars} characters it did not make the conversation small enough.`,
    `Write a much shorter summary, under ${limit} characters: ${keep}, drop detail the agent does not need to continue, keep identifiers exact.`,
  ].join('\n');
}

/** Cuts `text` to `cap` characters plus a marker naming how many were cut. Latin-1 only: a two-byte string is slower. */
export function capText(text: string, cap: number): string {
  if (text.length <= cap) return text;
  return `${text.slice(0, cap)}» [truncated by the harness: ${text.length - cap} more characters]`;
}

export const CAP_MARKER = /» \[truncated by the harness: \d+ more characters\]$/;

/**
 * The middle as the summarizer sees it, still as messages: `renderTranscript(capMiddle(m, cap),
 * Infinity)` is `renderTranscript(m, cap)`. With `contents`, elided messages read as elided.
 */
export function capMiddle(
  messages: readonly ChatMessage[],
  toolResultCap: number,
  contents?: readonly (ChatMessage['content'] | undefined)[],
): ChatMessage[] {
  return messages.map((message, index) => seenMessage(message, toolResultCap, contents?.[index] ?? message.content));
}

/** One message as {@link capMiddle} leaves it: keys in the order role, content, tool_calls, tool_call_id, name. */
export function seenMessage(
  message: ChatMessage,
  toolResultCap: number,
  original: ChatMessage['content'] = message.content,
): ChatMessage {
  const { role, tool_calls: calls, tool_call_id: callId, name } = message;
  let content = withoutData(original);
  if (role === 'tool') {
    const text = typeof content === 'string' ? content : renderContent(original);
    if (text.length > toolResultCap) content = capText(text, toolResultCap);
  }
  // A message already in that shape is kept: no copy of most of a long middle.
  const callsSeen = calls === undefined || everyCallSeen(calls, toolResultCap);
  if (content === message.content && callsSeen && inSeenShape(message)) return message;
  const seen: ChatMessage = { role, content };
  if (calls !== undefined) seen.tool_calls = callsSeen ? calls : seenCalls(calls, toolResultCap);
  if (callId !== undefined) seen.tool_call_id = callId;
  if (name !== undefined) seen.name = name;
  return seen;
}

function seenCalls(calls: readonly ToolCall[], toolResultCap: number): ToolCall[] {
  return calls.map(({ id, type, function: { name, arguments: args } }) => ({
    id,
    type,
    function: { name, arguments: capText(args, toolResultCap) },
  }));
}

const SEEN_KEYS = ['role', 'content', 'tool_calls', 'tool_call_id', 'name'] as const;

function inSeenShape(message: ChatMessage): boolean {
  const record = message as unknown as Record<string, unknown>;
  let next = 0;
  for (const key in record) {
    while (next >= 2 && next < SEEN_KEYS.length && SEEN_KEYS[next] !== key) next += 1;
    if (SEEN_KEYS[next] !== key || record[key] === undefined) return false;
    next += 1;
  }
  return next >= 2;
}

const CALL_KEYS = ['id', 'type', 'function'] as const;
const FUNCTION_KEYS = ['name', 'arguments'] as const;

function keysAre(value: object, keys: readonly string[]): boolean {
  let position = 0;
  for (const key in value) {
    if (key !== keys[position]) return false;
    position += 1;
  }
  return position === keys.length;
}

function everyCallSeen(calls: readonly ToolCall[], toolResultCap: number): boolean {
  for (let index = 0; index < calls.length; index += 1) {
    const call = calls[index] as ToolCall;
    if (!keysAre(call, CALL_KEYS) || !keysAre(call.function, FUNCTION_KEYS)) return false;
    if (call.function.arguments.length > toolResultCap) return false;
  }
  return true;
}

function withoutData(content: ChatMessage['content']): ChatMessage['content'] {
  if (content === null || typeof content === 'string' || content.every((part) => part.type === 'text')) return content;
  return content.map((part) => (part.type === 'text' ? part : { type: 'text', text: describeNonTextPart(part) }));
}

/** The middle as text: tool results and call arguments capped, other parts described, never their data. */
export function renderTranscript(messages: readonly ChatMessage[], toolResultCap: number): string {
  const owners = new CallOwners(messages);
  return messages.map((message, index) => renderedMessage(message, index, owners, toolResultCap)).join('');
}

/** The length of {@link renderTranscript}'s text: rendered message by message, the whole never joined. */
export function transcriptLength(messages: readonly ChatMessage[], toolResultCap: number): number {
  const owners = new CallOwners(messages);
  let length = 0;
  for (let index = 0; index < messages.length; index += 1)
    length += renderedMessage(messages[index] as ChatMessage, index, owners, toolResultCap).length;
  return length;
}

function renderedMessage(message: ChatMessage, index: number, owners: CallOwners, toolResultCap: number): string {
  const { role, tool_call_id: callId } = message;
  let text = index > 0 ? '\n\n' : '';
  if (role === 'tool') {
    const name = (callId !== undefined ? owners.nameOf(index, callId) : undefined) ?? message.name;
    text += name === undefined ? `[tool result (${callId ?? ''})]` : `[tool result ${name} (${callId ?? ''})]`;
  } else text += `[${role}]`;
  const content = renderContent(message.content);
  if (content !== '') text += `\n${role === 'tool' ? capText(content, toolResultCap) : content}`;
  for (const call of message.tool_calls ?? [])
    text += `\n-> call ${call.function.name} (${call.id}) ${capText(call.function.arguments, toolResultCap)}`;
  return text;
}

/** A message's content as the transcript shows it: text as it is, every other part as a one-line description. */
export function renderContent(content: ChatMessage['content']): string {
  if (content === null || typeof content === 'string') return contentText(content);
  return content.map((part) => (part.type === 'text' ? contentText([part]) : describeNonTextPart(part))).join('');
}

/** The request for an instruction and a capped middle; `instructions` and `task` are in `instruction` already. */
export function requestFor(
  instruction: string,
  cappedMiddle: ChatMessage[],
  instructions?: string,
  task?: string,
): SummarizeRequest {
  const request: SummarizeRequest = { instruction, middle: cappedMiddle };
  if (instructions !== undefined) request.instructions = instructions;
  if (task !== undefined && task !== '') request.task = task;
  return request;
}

/** The text of the first user message when it stays in place (sticky, or `keepTask`), cut at `toolResultCap`. */
export function keptTask(
  messages: readonly ChatMessage[],
  removable: Uint8Array,
  toolResultCap: number,
): string | undefined {
  const index = messages.findIndex((message) => message.role === 'user');
  const task = messages[index];
  if (task === undefined || removable[index] === 1) return undefined;
  const text = renderContent(task.content).trim();
  return text === '' ? undefined : capText(text, toolResultCap);
}

/** What a model is sent: the instruction as the system message, the middle's transcript as the user message. */
export function summarizerMessages(request: SummarizeRequest): ChatMessage[] {
  return [
    { role: 'system', content: request.instruction },
    {
      role: 'user',
      content: `${transcriptHeader(request.middle)}${renderTranscript(request.middle, Number.POSITIVE_INFINITY)}`,
    },
  ];
}

function transcriptHeader(cappedMiddle: readonly ChatMessage[]): string {
  return `Transcript to summarize (${cappedMiddle.length} messages):\n\n`;
}

/** The characters of {@link summarizerMessages} of a request, the transcript never joined into one text. */
export function requestChars(instruction: string, cappedMiddle: readonly ChatMessage[]): number {
  const transcript = transcriptChars.get(cappedMiddle) ?? transcriptLength(cappedMiddle, Number.POSITIVE_INFINITY);
  transcriptChars.set(cappedMiddle, transcript);
  return instruction.length + transcriptHeader(cappedMiddle).length + transcript;
}

/** The transcript length of a capped middle (never changed once cut). */
const transcriptChars = new WeakMap<readonly ChatMessage[], number>();

const summaryHeader = /^\[Summary by the harness of \d+ earlier messages\]\n\n/;

export function isSummaryMessage(message: ChatMessage): boolean {
  return message.role === 'user' && typeof message.content === 'string' && summaryHeader.test(message.content);
}

export function summaryContent(summaryText: string, replacedMessages: number): string {
  return `[Summary by the harness of ${replacedMessages} earlier messages]\n\n${summaryText.trim()}`;
}
