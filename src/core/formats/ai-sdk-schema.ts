// Sandbox-safe: AI SDK messages (also a middleware's prompt): types, zod schemas, validation naming a fault's path.
import { z } from 'zod';
import { InvalidInputError } from '../errors.js';
import { checkWith, isKeyOf, isRecord } from '../schema.js';

export type AiSdkToolCallPart = z.infer<typeof toolCallPartSchema> & { input: unknown };
/** What a tool returned: `text`/`error-text` (a string), `json`/`error-json` (any JSON), `content` (parts), or a type to come. */
export type AiSdkToolResultOutput = z.infer<typeof outputSchema> & { value?: unknown };
/** A `tool-result` part of a tool message: it answers a `tool-call` of the assistant message before it. */
export type AiSdkToolResultPart = z.infer<typeof toolResultPartSchema>;

/** A `text` part, a tool call or result, or any other part (`image`, `file`, `reasoning`, ...), unknown fields kept verbatim. */
export type AiSdkPart = AiSdkToolCallPart | AiSdkToolResultPart | { type: string; [key: string]: unknown };

/** One AI SDK message: `system` (string content), `user`, `assistant`, or `tool` (an array of parts). */
export interface AiSdkMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | AiSdkPart[];
  [key: string]: unknown;
}

const nonEmpty = z.string().min(1);

const textPartSchema = z.looseObject({ type: z.literal('text'), text: z.string() });
const reasoningPartSchema = z.looseObject({ type: z.literal('reasoning'), text: z.string() });
const toolCallPartSchema = z.looseObject({
  type: z.literal('tool-call'),
  toolCallId: nonEmpty,
  toolName: nonEmpty,
  /** A call the provider ran itself (its result is in the same assistant message): not paired with a tool message. */
  providerExecuted: z.boolean().optional(),
});
const outputSchema = z.looseObject({ type: z.string() });
const toolResultPartSchema = z.looseObject({
  type: z.literal('tool-result'),
  toolCallId: nonEmpty.meta({ description: 'The toolCallId of a tool-call of the assistant message before it.' }),
  toolName: nonEmpty,
  output: outputSchema.meta({ description: 'text, json, error-text, error-json, content, ...: kept verbatim.' }),
});

/** The part types this module checks the fields of; any other type is kept as it is. */
const KNOWN_PARTS = {
  text: textPartSchema,
  reasoning: reasoningPartSchema,
  'tool-call': toolCallPartSchema,
  'tool-result': toolResultPartSchema,
} as const;

const otherPartSchema = z.looseObject({ type: z.string().meta({ not: { enum: Object.keys(KNOWN_PARTS) } }) }).meta({
  description: 'image, file, approvals, or a type this version does not know: kept verbatim, counted by its size.',
});

const partSchema = z.union([...Object.values(KNOWN_PARTS), otherPartSchema]);

/** One message (the JSON Schema of `compactConversation`'s AI SDK input; validation runs part by part). */
export const aiSdkMessageSchema = z
  .looseObject({
    role: z.enum(['system', 'user', 'assistant', 'tool']),
    content: z.union([z.string(), z.array(partSchema)]).meta({
      description:
        'A string (not for tool), or parts: tool-call only in assistant messages, tool-result in tool messages (and provider-executed ones in assistant messages).',
    }),
  })
  .meta({ title: 'AiSdkMessage' });

/** The tool calls a tool message may answer: those of the last assistant message before it, by id. */
function askedBefore(messages: readonly AiSdkMessage[]): Set<string> {
  let at = messages.length - 1;
  while (at >= 0 && messages[at]?.role === 'tool') at -= 1;
  const last = messages[at];
  if (last?.role !== 'assistant' || typeof last.content === 'string') return new Set();
  const calls = last.content.filter((part) => part.type === 'tool-call' && part.providerExecuted !== true);
  return new Set(calls.map((part) => String(part.toolCallId)));
}

function assertAiSdkMessage(
  value: unknown,
  index: number,
  before: readonly AiSdkMessage[],
): asserts value is AiSdkMessage {
  const field = `messages[${index}]`;
  const fail: (path: string, reason: string) => never = (path, reason) => {
    throw new InvalidInputError(path, reason, index);
  };
  if (!isRecord(value)) fail(field, 'must be an object');
  const { role, content } = value;
  if (role !== 'system' && role !== 'user' && role !== 'assistant' && role !== 'tool')
    fail(`${field}.role`, role === undefined ? 'required' : 'must be one of system, user, assistant, tool');
  if (typeof content === 'string') {
    if (role === 'tool') fail(`${field}.content`, 'must be an array of tool-result parts for role "tool"');
    return;
  }
  if (role === 'system') fail(`${field}.content`, 'must be a string for role "system"');
  if (!Array.isArray(content))
    fail(
      `${field}.content`,
      content === undefined ? 'required (a string or an array of parts)' : 'must be a string or an array of parts',
    );
  const asked = role === 'tool' ? askedBefore(before) : new Set<string>();
  const calls = new Map<string, number>();
  content.forEach((part: unknown, position) => {
    const partField = `${field}.content[${position}]`;
    const type = isRecord(part) ? part.type : undefined;
    if (!isRecord(part) || typeof type !== 'string')
      fail(`${partField}.type`, 'required (a part is an object with a string "type")');
    if (type === 'tool-call' && role !== 'assistant')
      fail(`${partField}.type`, '"tool-call" is only allowed in an assistant message');
    if (type === 'tool-result' && role !== 'tool' && role !== 'assistant')
      fail(`${partField}.type`, '"tool-result" is only allowed in a tool message');
    if (isKeyOf(KNOWN_PARTS, type)) checkWith(KNOWN_PARTS[type], part, partField, index);
    if (type === 'tool-call') {
      const id = String(part.toolCallId);
      const first = calls.get(id);
      if (first !== undefined)
        fail(
          `${partField}.toolCallId`,
          `"${id}" is also the toolCallId of content[${first}]: the calls of one message must differ`,
        );
      calls.set(id, position);
    }
    if (type === 'tool-result' && role === 'tool' && !asked.has(String(part.toolCallId)))
      fail(
        `${partField}.toolCallId`,
        `"${String(part.toolCallId)}" answers no tool-call of the last assistant message before it`,
      );
  });
}

/** Returns the caller's own objects; an `InvalidInputError` names the path of the first fault. */
export function validateAiSdk(messages: unknown): AiSdkMessage[] {
  if (!Array.isArray(messages)) throw new InvalidInputError('messages', 'must be an array of AI SDK messages');
  const valid: AiSdkMessage[] = [];
  messages.forEach((value: unknown, index) => {
    assertAiSdkMessage(value, index, valid);
    valid.push(value);
  });
  return valid;
}
