// Sandbox-safe: which message format a parsed conversation is in, from the marks only one format
// makes (docs/compaction.md#formats). A conversation with marks of two formats is refused, naming
// a mark of each and where it is; one with none (plain text turns) reads the same in every format.
import { InvalidInputError } from '../errors.js';
import type { MessageFormat } from './format.js';

/** The format names people read. */
export const FORMAT_NAMES: Record<MessageFormat, string> = {
  openai: 'OpenAI chat',
  anthropic: 'Anthropic Messages',
};

/** Roles only OpenAI chat has (Anthropic keeps its system prompt beside the messages). */
const OPENAI_ROLES: readonly unknown[] = ['system', 'developer', 'tool'];
/** Message fields only OpenAI chat has. */
const OPENAI_FIELDS = ['tool_calls', 'tool_call_id'] as const;
/** Content part types of each format that the other does not have. */
const PART_TYPES: Record<MessageFormat, readonly string[]> = {
  openai: ['image_url', 'input_audio', 'file', 'refusal'],
  anthropic: ['tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'image', 'document'],
};

/** A mark of one format: what was seen, and where. */
export interface FormatMark {
  format: MessageFormat;
  where: string;
  what: string;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? { ...value } : undefined;
}

/** The first mark of each format in `value` (a message array or a request body), in document order. */
export function formatMarks(value: unknown): FormatMark[] {
  const marks = new Map<MessageFormat, FormatMark>();
  const mark = (format: MessageFormat, where: string, what: string): void => {
    if (!marks.has(format)) marks.set(format, { format, where, what });
  };
  const body = record(value);
  if (body !== undefined && body.system !== undefined)
    mark('anthropic', 'system', 'a "system" field beside "messages"');
  const messages: unknown = body === undefined ? value : body.messages;
  if (!Array.isArray(messages)) return [];
  messages.forEach((item: unknown, index) => {
    const message = record(item);
    if (message === undefined) return;
    if (OPENAI_ROLES.includes(message.role))
      mark('openai', `messages[${index}].role`, `role "${String(message.role)}"`);
    for (const field of OPENAI_FIELDS)
      if (message[field] !== undefined) mark('openai', `messages[${index}].${field}`, `a "${field}" field`);
    const content: unknown = message.content;
    if (!Array.isArray(content)) return;
    content.forEach((part: unknown, position) => {
      const type = record(part)?.type;
      for (const format of ['openai', 'anthropic'] as const)
        if (typeof type === 'string' && PART_TYPES[format].includes(type))
          mark(format, `messages[${index}].content[${position}].type`, `a "${type}" part`);
    });
  });
  return [...marks.values()];
}

/**
 * The format of a parsed conversation file: the one format whose marks it holds, or `openai` when
 * it holds none (plain text turns compact alike in every format). Throws `InvalidInputError`
 * when it holds marks of two, naming one of each and where it is.
 */
export function detectFormat(value: unknown): MessageFormat {
  const marks = formatMarks(value);
  const [first, second] = marks;
  if (first === undefined) return 'openai';
  if (second === undefined) return first.format;
  const seen = marks.map(({ format, where, what }) => `${what} at ${where} (${FORMAT_NAMES[format]})`).join(', but ');
  throw new InvalidInputError(
    second.where,
    `cannot tell the message format: ${seen}; name it with --format ${marks.map(({ format }) => format).join('|')}`,
  );
}
