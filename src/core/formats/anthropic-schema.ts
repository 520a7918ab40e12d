// Sandbox-safe: Anthropic Messages conversations: types, zod schemas of their blocks, validation naming a fault's path.
import { z } from 'zod';
import { InvalidInputError } from '../errors.js';
import { checkWith, isKeyOf, isRecord } from '../schema.js';

/** A `text` block. Unknown fields (`cache_control`, `citations`, ...) are kept verbatim. */
export type AnthropicTextBlock = z.infer<typeof anthropicTextBlockSchema>;
/** A `tool_use` block of an assistant message: the model asks for a tool call. */
export type AnthropicToolUseBlock = z.infer<typeof toolUseSchema>;
/** A `tool_result` block of a user message: it answers a `tool_use` of the assistant message just before. */
export type AnthropicToolResultBlock = z.infer<typeof toolResultSchema>;

/** Any other block (`image`, `document`, `thinking`, server tools, types to come) is kept verbatim. */
export type AnthropicBlock =
  AnthropicTextBlock | AnthropicToolUseBlock | AnthropicToolResultBlock | { type: string; [key: string]: unknown };

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | AnthropicBlock[];
  [key: string]: unknown;
}

/** A Messages API request body: `system` is the system prompt; every other field (`model`, `tools`, ...) comes back untouched. */
export interface AnthropicRequest {
  system?: string | AnthropicTextBlock[];
  messages: AnthropicMessage[];
  [key: string]: unknown;
}

/** What the `anthropic` format compacts: a message array, or a request body. */
export type AnthropicConversation = readonly AnthropicMessage[] | AnthropicRequest;

const nonEmpty = z.string().min(1);

const anthropicTextBlockSchema = z.looseObject({ type: z.literal('text'), text: z.string() });
const imageSchema = z.looseObject({
  type: z.literal('image'),
  source: z.looseObject({ type: z.string() }).meta({ description: 'base64, url or file: kept verbatim.' }),
});
const documentSchema = z.looseObject({ type: z.literal('document'), source: z.looseObject({ type: z.string() }) });
const thinkingSchema = z.looseObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() });
const redactedThinkingSchema = z.looseObject({ type: z.literal('redacted_thinking'), data: z.string() });
const toolUseSchema = z.looseObject({
  type: z.literal('tool_use'),
  id: nonEmpty,
  name: nonEmpty,
  input: z.record(z.string(), z.unknown()).meta({ description: 'The arguments, an object.' }),
});

/** The block types this module checks the fields of; any other type is kept as it is. */
const KNOWN_BLOCKS = {
  text: anthropicTextBlockSchema,
  image: imageSchema,
  document: documentSchema,
  thinking: thinkingSchema,
  redacted_thinking: redactedThinkingSchema,
  tool_use: toolUseSchema,
} as const;

const otherBlockSchema = z
  .looseObject({ type: z.string().meta({ not: { enum: [...Object.keys(KNOWN_BLOCKS), 'tool_result'] } }) })
  .meta({ description: 'A block type this version does not know: kept verbatim, counted by its size.' });

/** What a `tool_result` may hold: any block but `tool_use` and `tool_result`. */
const nestedBlockSchema = z.union([
  anthropicTextBlockSchema,
  imageSchema,
  documentSchema,
  z.looseObject({
    type: z.string().meta({ not: { enum: ['text', 'image', 'document', 'tool_use', 'tool_result'] } }),
  }),
]);

const toolResultSchema = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: nonEmpty.meta({ description: 'The id of a tool_use of the assistant message just before.' }),
  content: z.union([z.string(), z.array(nestedBlockSchema)]).optional(),
  is_error: z.boolean().optional(),
});

/** One message (the JSON Schema of `compactConversation`'s Anthropic input; validation runs block by block). */
export const anthropicMessageSchema = z
  .looseObject({
    role: z.enum(['user', 'assistant']),
    content: z.union([
      z.string(),
      z.array(
        z.union([...Object.values(KNOWN_BLOCKS), toolResultSchema, otherBlockSchema]).meta({
          description: 'tool_use only in assistant messages, tool_result only in user messages.',
        }),
      ),
    ]),
  })
  .meta({ title: 'AnthropicMessage' });

export const anthropicSystemSchema = z.union([z.string(), z.array(anthropicTextBlockSchema)]);

/** The `type` of a block, or an error naming it: every block is an object with a string `type`. */
function blockType(block: unknown, field: string, index?: number): string {
  const type = isRecord(block) ? block.type : undefined;
  if (typeof type !== 'string')
    throw new InvalidInputError(`${field}.type`, 'required (a content block is an object with a string "type")', index);
  return type;
}

/** What a `tool_result` holds: a string, or blocks of any type but tool_use and tool_result. */
function checkToolResult(block: unknown, field: string, index: number): void {
  const content = isRecord(block) ? block.content : undefined;
  if (content !== undefined && typeof content !== 'string' && !Array.isArray(content))
    throw new InvalidInputError(`${field}.content`, 'must be a string or an array of content blocks', index);
  if (Array.isArray(content))
    content.forEach((nested: unknown, position) => {
      const nestedField = `${field}.content[${position}]`;
      const type = blockType(nested, nestedField, index);
      if (type === 'tool_use' || type === 'tool_result')
        throw new InvalidInputError(`${nestedField}.type`, `"${type}" is not allowed inside a tool_result`, index);
      if (isKeyOf(KNOWN_BLOCKS, type)) checkWith(KNOWN_BLOCKS[type], nested, nestedField, index);
    });
  checkWith(toolResultSchema, block, field, index);
}

/** The ids of the tool_use blocks of an assistant message's content (checked: distinct), with their positions. */
function toolUseIds(content: string | readonly unknown[], index: number): Map<string, number> {
  const ids = new Map<string, number>();
  if (typeof content === 'string') return ids;
  content.forEach((block, position) => {
    if (!isRecord(block) || block.type !== 'tool_use' || typeof block.id !== 'string') return;
    const first = ids.get(block.id);
    if (first !== undefined)
      throw new InvalidInputError(
        `messages[${index}].content[${position}].id`,
        `"${block.id}" is also the id of content[${first}]: the tool_use ids of one message must differ`,
        index,
      );
    ids.set(block.id, position);
  });
  return ids;
}

/** Checks one message; `previous` is the message before it (a tool_result answers one of its tool_use blocks). */
function assertAnthropicMessage(
  value: unknown,
  index: number,
  previous: AnthropicMessage | undefined,
): asserts value is AnthropicMessage {
  const field = `messages[${index}]`;
  const fail: (path: string, reason: string) => never = (path, reason) => {
    throw new InvalidInputError(path, reason, index);
  };
  if (!isRecord(value)) fail(field, 'must be an object');
  const { role, content } = value;
  if (role === 'system')
    fail(
      `${field}.role`,
      'must be user or assistant: an Anthropic conversation has its system prompt in the request body\'s "system"',
    );
  if (role !== 'user' && role !== 'assistant')
    fail(`${field}.role`, role === undefined ? 'required' : 'must be one of user, assistant');
  if (typeof content === 'string') return;
  if (!Array.isArray(content))
    fail(
      `${field}.content`,
      content === undefined
        ? 'required (a string or an array of content blocks)'
        : 'must be a string or an array of content blocks',
    );
  const asked = previous?.role === 'assistant' ? toolUseIds(previous.content, index - 1) : new Map<string, number>();
  const answered = new Map<string, number>();
  content.forEach((block: unknown, position) => {
    const blockField = `${field}.content[${position}]`;
    const type = blockType(block, blockField, index);
    if (type === 'tool_use' && role !== 'assistant')
      fail(`${blockField}.type`, '"tool_use" is only allowed in an assistant message');
    if (type === 'tool_result') {
      if (role !== 'user') fail(`${blockField}.type`, '"tool_result" is only allowed in a user message');
      checkToolResult(block, blockField, index);
      const id = isRecord(block) ? String(block.tool_use_id) : '';
      if (!asked.has(id))
        fail(
          `${blockField}.tool_use_id`,
          index === 0 || previous?.role !== 'assistant'
            ? `"${id}" answers no tool_use: a tool_result must answer a tool_use of the assistant message just before it`
            : `"${id}" answers no tool_use of messages[${index - 1}] (the assistant message just before)`,
        );
      const first = answered.get(id);
      if (first !== undefined) fail(`${blockField}.tool_use_id`, `"${id}" is already answered by content[${first}]`);
      answered.set(id, position);
      return;
    }
    if (isKeyOf(KNOWN_BLOCKS, type)) checkWith(KNOWN_BLOCKS[type], block, blockField, index);
  });
  if (role === 'assistant') toolUseIds(content, index);
}

/**
 * Validates a message array or a request body, returning the caller's own objects: the messages, the body's system
 * prompt, and the body (its other fields come back untouched); errors name the path of the first fault.
 */
export function validateAnthropic(conversation: unknown) {
  const body = isRecord(conversation) ? conversation : undefined;
  if (body !== undefined) {
    if (!Object.hasOwn(body, 'messages'))
      throw new InvalidInputError(
        'messages',
        'required: an Anthropic conversation is an array of messages or a request body { system?, messages }',
      );
    if (Array.isArray(body.system))
      body.system.forEach((block: unknown, position) => {
        const field = `system[${position}]`;
        if (blockType(block, field) !== 'text')
          throw new InvalidInputError(`${field}.type`, 'must be "text": a system prompt holds text blocks only');
        checkWith(anthropicTextBlockSchema, block, field);
      });
    else if (body.system !== undefined && typeof body.system !== 'string')
      throw new InvalidInputError('system', 'must be a string or an array of text blocks');
  }
  const messages: unknown = body === undefined ? conversation : body.messages;
  if (!Array.isArray(messages)) throw new InvalidInputError('messages', 'must be an array of Anthropic messages');
  const valid: AnthropicMessage[] = [];
  messages.forEach((value: unknown, index) => {
    assertAnthropicMessage(value, index, valid[index - 1]);
    valid.push(value);
  });
  // Checked above: a string or text blocks, when given.
  const system = body?.system as string | AnthropicTextBlock[] | undefined;
  return { messages: valid, system, body };
}
