// Sandbox-safe: message validation at the public boundary (one zod schema), `isSticky`, `toProviderMessages`.
import { z } from 'zod';
import { InvalidInputError } from './errors.js';
import type { ChatMessage } from './types.js';
import { unknownKeyReason } from './unknown-keys.js';

const roles = ['system', 'developer', 'user', 'assistant', 'tool'] as const;

const textPartSchema = z.looseObject({ type: z.literal('text'), text: z.string() });
// JSON Schema says "any type but text" on the field; zod checks the same on the part.
const otherPartSchema = z
  .looseObject({ type: z.string().meta({ not: { const: 'text' } }) })
  .refine((part) => part.type !== 'text', { path: ['text'], message: 'must be a string for a "text" part' });

const toolCallSchema = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    arguments: z.string().meta({ description: 'The arguments as the model wrote them: a JSON text, kept verbatim.' }),
  }),
});

/** The rules across fields of one message ({@link chatMessageSchema}'s refinement), in JSON Schema: zod cannot write a refinement out. */
const MESSAGE_CONDITIONS = [
  {
    if: { properties: { role: { const: 'tool' } }, required: ['role'] },
    then: { required: ['tool_call_id'] },
    else: { not: { required: ['tool_call_id'] } },
  },
  {
    if: { properties: { role: { not: { const: 'assistant' } } }, required: ['role'] },
    then: { not: { required: ['tool_calls'] } },
  },
  {
    if: { properties: { content: { type: 'null' } }, required: ['content'] },
    then: {
      properties: { role: { const: 'assistant' }, tool_calls: { type: 'array', minItems: 1 } },
      required: ['tool_calls'],
    },
  },
];

/**
 * A `ChatMessage` (unknown fields come back verbatim), and the source of the messages' JSON Schema.
 * `content` is last, so other faults are named first.
 */
export const chatMessageSchema = z
  .looseObject({
    role: z.enum(roles),
    tool_calls: z.array(toolCallSchema).optional().meta({ description: 'Only on assistant messages.' }),
    tool_call_id: z
      .string()
      .min(1)
      .optional()
      .meta({ description: 'Required on tool messages, not allowed on others.' }),
    name: z.string().optional(),
    sticky: z.boolean().optional().meta({ description: 'Keep this message where it is through every compaction.' }),
    depth: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .meta({ description: 'An injection at a fixed depth (sticky too).' }),
    content: z.union([z.string(), z.null(), z.array(z.union([textPartSchema, otherPartSchema]))]).meta({
      description: 'A string, an array of content parts, or null (only for an assistant message with tool_calls).',
    }),
  })
  .superRefine((message, context) => {
    const { role } = message;
    const fault = (path: (string | number)[], text: string): void =>
      context.addIssue({ code: 'custom', path, message: text });
    if (role === 'tool' && message.tool_call_id === undefined) fault(['tool_call_id'], 'required for role "tool"');
    if (role !== 'tool' && message.tool_call_id !== undefined)
      fault(['tool_call_id'], `only allowed for role "tool", not "${role}"`);
    if (message.tool_calls !== undefined && role !== 'assistant')
      fault(['tool_calls'], `only allowed for role "assistant", not "${role}"`);
    if (message.content === null && role !== 'assistant') fault(['content'], `must not be null for role "${role}"`);
    if (message.content === null && (message.tool_calls === undefined || message.tool_calls.length === 0))
      fault(['content'], 'must not be null for an assistant message without tool_calls');
    // Two calls of one turn with the same id could not both be answered; reusing an id in a later turn is fine.
    const positions = new Map<string, number>();
    message.tool_calls?.forEach((call, position) => {
      const first = positions.get(call.id);
      if (first === undefined) positions.set(call.id, position);
      else
        fault(
          ['tool_calls', position, 'id'],
          `"${call.id}" is also the id of tool_calls[${first}]: the ids of one assistant turn must differ (a result could not say which call it answers)`,
        );
    });
  })
  .meta({ title: 'ChatMessage', allOf: MESSAGE_CONDITIONS });

export function pathOf(field: string, path: readonly PropertyKey[]): string {
  let full = field;
  for (const key of path) full += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  return full;
}

/** Zod's messages, made specific: "required" for a missing field (parsed with `reportInput`), the allowed roles for a bad role. */
function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_value' && issue.path.at(-1) === 'role') return `must be one of ${roles.join(', ')}`;
  if (issue.code === 'invalid_type' && issue.input === undefined) return 'required';
  return issue.message;
}

/** An `InvalidInputError` names the index and field, e.g. `messages[12].tool_call_id: required for role "tool"`. */
function assertMessage(value: unknown, index: number): asserts value is ChatMessage {
  if (!isRecord(value)) throw new InvalidInputError(`messages[${index}]`, 'must be an object', index);
  if (plainlyValid(value)) return;
  const parsed = chatMessageSchema.safeParse(value, { reportInput: true });
  if (parsed.success) return;
  const issue = parsed.error.issues[0];
  if (issue === undefined) throw new InvalidInputError(`messages[${index}]`, 'invalid message', index);
  // A fault in the content is named down to the part and field ("required (...)" rather than zod's "no union matched").
  if (issue.path[0] === 'content' && !(issue.code === 'custom' && issue.path.length === 1))
    assertContent(Reflect.get(value, 'content'), index);
  throw new InvalidInputError(pathOf(`messages[${index}]`, issue.path), describeIssue(issue), index);
}

const ROLES = new Set<unknown>(roles);

/**
 * True for a message the schema accepts, checked by hand (zod costs a long conversation at every
 * compaction); what this does not recognise goes to zod, which names the fault.
 */
function plainlyValid(message: unknown): boolean {
  if (!isRecord(message)) return false;
  const { role, content, tool_calls: calls, tool_call_id: callId, name, sticky, depth } = message;
  if (!ROLES.has(role)) return false;
  if (name !== undefined && typeof name !== 'string') return false;
  if (sticky !== undefined && typeof sticky !== 'boolean') return false;
  if (depth !== undefined && !(typeof depth === 'number' && Number.isSafeInteger(depth) && depth >= 0)) return false;
  if (role === 'tool' ? !(typeof callId === 'string' && callId !== '') : callId !== undefined) return false;
  if (calls !== undefined && (role !== 'assistant' || !plainCalls(calls))) return false;
  if (content === null) return role === 'assistant' && Array.isArray(calls) && calls.length > 0;
  if (typeof content === 'string') return true;
  if (!Array.isArray(content)) return false;
  for (let index = 0; index < content.length; index += 1) {
    const part: unknown = content[index];
    if (!isRecord(part)) return false;
    const { type, text } = part;
    if (typeof type !== 'string' || (type === 'text' && typeof text !== 'string')) return false;
  }
  return true;
}

/** Tool calls as {@link chatMessageSchema} wants them, with ids that differ. */
function plainCalls(calls: unknown): boolean {
  if (!Array.isArray(calls)) return false;
  for (let index = 0; index < calls.length; index += 1) {
    const call: unknown = calls[index];
    if (!isRecord(call)) return false;
    const { id, type, function: fn } = call;
    if (typeof id !== 'string' || id === '' || type !== 'function' || !isRecord(fn)) return false;
    if (typeof fn.name !== 'string' || fn.name === '' || typeof fn.arguments !== 'string') return false;
  }
  return distinctIds(calls as readonly { id: string }[]);
}

/** Whether the calls' ids differ: compared pair by pair for the few calls of a usual turn, not through a Set per turn. */
function distinctIds(calls: readonly { id: string }[]): boolean {
  if (calls.length > 16) return new Set(calls.map((call) => call.id)).size === calls.length;
  for (let index = 1; index < calls.length; index += 1)
    for (let earlier = 0; earlier < index; earlier += 1) if (calls[earlier]?.id === calls[index]?.id) return false;
  return true;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `key` is one of `table`'s own keys (a part or block type a format checks the fields of). */
export function isKeyOf<Table extends object>(table: Table, key: PropertyKey): key is keyof Table {
  return Object.hasOwn(table, key);
}

/** Names the fault in a message's content (the schema found one): its part and field. */
function assertContent(content: unknown, index: number): void {
  const field = `messages[${index}].content`;
  if (content === undefined)
    throw new InvalidInputError(field, 'required (a string, null or an array of content parts)', index);
  if (content === null || typeof content === 'string') return;
  if (!Array.isArray(content))
    throw new InvalidInputError(field, 'must be a string, null or an array of content parts', index);
  content.forEach((part: unknown, partIndex) => {
    if (!isRecord(part) || typeof part.type !== 'string')
      throw new InvalidInputError(
        `${field}[${partIndex}].type`,
        'required (a content part is an object with a string "type")',
        index,
      );
    if (part.type === 'text' && typeof part.text !== 'string')
      throw new InvalidInputError(`${field}[${partIndex}].text`, 'must be a string for a "text" part', index);
  });
}

/** Returns the caller's own objects: a zod parse would copy and reorder keys, and the recent window comes back byte for byte. */
export function validateMessages(messages: unknown, field = 'messages'): ChatMessage[] {
  if (!Array.isArray(messages)) throw new InvalidInputError(field, 'must be an array of chat messages');
  // A tool-call id reused by a later turn is unusual but well-formed: a result answers the latest turn that asked.
  return Array.from(messages, (value: unknown, index) => {
    assertMessage(value, index);
    return value;
  });
}

/** Sticky messages stay exactly where they are through every compaction. */
export function isSticky(message: ChatMessage): boolean {
  return (
    message.sticky === true || message.role === 'system' || message.role === 'developer' || message.depth !== undefined
  );
}

/** Strips the harness flags (`sticky`, `depth`) so a provider never sees them. */
export function toProviderMessages(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.map(({ sticky: _sticky, depth: _depth, ...rest }) => rest);
}

/** The keys `schema` declares for the object at `path`, to name the closest to an unknown one. */
function schemaKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  let at: z.core.$ZodType | undefined = schema;
  for (const key of [...path, undefined]) {
    while (at instanceof z.ZodOptional || at instanceof z.ZodNullable) at = at.unwrap();
    if (!(at instanceof z.ZodObject)) return [];
    if (key === undefined) return Object.keys(at.shape);
    at = at.shape[String(key)];
  }
  return [];
}

/** `value` parsed by `schema`; throws naming `field` and the first issue's path below it (an unknown key with the closest known one). */
export function checkWith<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  field: string,
  index?: number,
): z.output<Schema> {
  const parsed = schema.safeParse(value, { reportInput: true });
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (issue === undefined) throw new InvalidInputError(field, 'invalid', index);
  if (issue.code !== 'unrecognized_keys')
    throw new InvalidInputError(pathOf(field, issue.path), describeIssue(issue), index);
  const key = issue.keys[0] ?? '';
  const reason = unknownKeyReason(key, schemaKeysAt(schema, issue.path), 'field');
  throw new InvalidInputError(pathOf(field, [...issue.path, key]), reason, index);
}
