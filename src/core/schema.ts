// Sandbox-safe: message validation at the public boundary (zod), `isSticky`, `toProviderMessages`.
import { z } from 'zod';
import { InvalidInputError } from './errors.js';
import type { ChatMessage } from './types.js';

const roles = ['system', 'developer', 'user', 'assistant', 'tool'] as const;

const contentPartSchema = z.looseObject({ type: z.string() });

const toolCallSchema = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});

const messageSchema = z.looseObject({
  role: z.enum(roles),
  content: z.unknown(),
  tool_calls: z.array(toolCallSchema).optional(),
  tool_call_id: z.string().min(1).optional(),
  name: z.string().optional(),
  sticky: z.boolean().optional(),
  depth: z.number().int().nonnegative().optional(),
});

function pathOf(index: number, path: readonly PropertyKey[]): string {
  let field = `messages[${index}]`;
  for (const key of path) field += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  return field;
}

/** The value at `path` inside `root`, or undefined when any step is missing. */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = Reflect.get(value, key);
  }
  return value;
}

/** Zod's messages, made specific: "required" for a missing field, the allowed roles for a bad role. */
export function describeIssue(issue: z.core.$ZodIssue, root: unknown): string {
  if (issue.code === 'invalid_value' && issue.path.at(-1) === 'role') return `must be one of ${roles.join(', ')}`;
  if (issue.code === 'invalid_type' && valueAt(root, issue.path) === undefined) return 'required';
  return issue.message;
}

/**
 * Validates one message and the rules zod cannot express alone. Throws `InvalidInputError`
 * naming the index and field, e.g. `messages[12].tool_call_id: required for role "tool"`.
 */
function assertMessage(value: unknown, index: number): asserts value is ChatMessage {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidInputError(`messages[${index}]`, 'must be an object', index);
  }
  const parsed = messageSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue === undefined) throw new InvalidInputError(`messages[${index}]`, 'invalid message', index);
    throw new InvalidInputError(pathOf(index, issue.path), describeIssue(issue, value), index);
  }
  const message = parsed.data;
  assertContent(message.content, index);
  if (message.role === 'tool' && message.tool_call_id === undefined) {
    throw new InvalidInputError(`messages[${index}].tool_call_id`, 'required for role "tool"', index);
  }
  if (message.role !== 'tool' && message.tool_call_id !== undefined) {
    throw new InvalidInputError(`messages[${index}].tool_call_id`, `only allowed for role "tool", not "${message.role}"`, index);
  }
  if (message.tool_calls !== undefined && message.role !== 'assistant') {
    throw new InvalidInputError(`messages[${index}].tool_calls`, `only allowed for role "assistant", not "${message.role}"`, index);
  }
  if (message.content === null && message.role !== 'assistant') {
    throw new InvalidInputError(`messages[${index}].content`, `must not be null for role "${message.role}"`, index);
  }
  if (message.content === null && (message.tool_calls === undefined || message.tool_calls.length === 0)) {
    throw new InvalidInputError(`messages[${index}].content`, 'must not be null for an assistant message without tool_calls', index);
  }
  // Results name the call they answer by id: two calls of one turn with the same id cannot both be
  // answered, and pairing a result to "its" turn (compaction's rule never to split a turn from its
  // results) would be ambiguous. Reusing an id in a later turn is fine (see validateMessages).
  const positions = new Map<string, number>();
  message.tool_calls?.forEach((call, position) => {
    const first = positions.get(call.id);
    if (first !== undefined) {
      throw new InvalidInputError(
        `messages[${index}].tool_calls[${position}].id`,
        `"${call.id}" is also the id of tool_calls[${first}]: the ids of one assistant turn must differ (a result could not say which call it answers)`,
        index,
      );
    }
    positions.set(call.id, position);
  });
}

function assertContent(content: unknown, index: number): void {
  const field = `messages[${index}].content`;
  if (content === undefined) throw new InvalidInputError(field, 'required (a string, null or an array of content parts)', index);
  if (content === null || typeof content === 'string') return;
  if (!Array.isArray(content)) throw new InvalidInputError(field, 'must be a string, null or an array of content parts', index);
  content.forEach((part: unknown, partIndex) => {
    const parsed = contentPartSchema.safeParse(part);
    if (!parsed.success) throw new InvalidInputError(`${field}[${partIndex}].type`, 'required (a content part is an object with a string "type")', index);
    if (parsed.data.type === 'text' && typeof parsed.data.text !== 'string') {
      throw new InvalidInputError(`${field}[${partIndex}].text`, 'must be a string for a "text" part', index);
    }
  });
}

/**
 * Validates a conversation at a public boundary. Returns the caller's own message objects
 * (a zod parse would copy and reorder keys; the recent window must come back byte for byte);
 * throws `InvalidInputError`.
 */
export function validateMessages(messages: unknown, field = 'messages'): ChatMessage[] {
  if (!Array.isArray(messages)) throw new InvalidInputError(field, 'must be an array of chat messages');
  const valid: ChatMessage[] = [];
  messages.forEach((value: unknown, index) => {
    assertMessage(value, index);
    // A tool-call id reused by a later turn is unusual but well-formed: a result answers the latest turn that asked.
    valid.push(value);
  });
  return valid;
}

/** Sticky messages stay exactly where they are through every compaction. */
export function isSticky(message: ChatMessage): boolean {
  return message.sticky === true || message.role === 'system' || message.role === 'developer' || message.depth !== undefined;
}

/** Strips the harness flags (`sticky`, `depth`) so a provider never sees them. */
export function toProviderMessages(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.map(({ sticky: _sticky, depth: _depth, ...rest }) => rest);
}
