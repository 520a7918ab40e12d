// Sandbox-safe: which message format a parsed conversation is in (docs/compaction.md#formats): every
// mark narrows the formats it can be in; a conversation with none reads as OpenAI chat, the default.
import { InvalidInputError } from '../errors.js';
import { isRecord } from '../schema.js';
import { MESSAGE_FORMATS, type MessageFormat } from './format.js';

export const FORMAT_NAMES: Record<MessageFormat, string> = {
  openai: 'OpenAI chat',
  anthropic: 'Anthropic Messages',
  'ai-sdk': 'AI SDK messages',
};

/** A mark: what was seen, where, and the formats that allow it. */
export interface FormatMark {
  where: string;
  what: string;
  formats: readonly MessageFormat[];
}

/** The part types one format alone has. */
const PARTS_OF: Record<MessageFormat, readonly unknown[]> = {
  openai: ['image_url', 'input_audio', 'refusal'],
  anthropic: ['tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'document'],
  'ai-sdk': ['tool-call', 'tool-result', 'reasoning', 'tool-approval-request', 'tool-approval-response'],
};

/** The formats that have a content part's type (with the field that tells look-alikes apart). */
function partFormats(part: Record<string, unknown>): readonly MessageFormat[] | undefined {
  const { type } = part;
  const only = MESSAGE_FORMATS.find((format) => PARTS_OF[format].includes(type));
  if (only !== undefined) return [only];
  if (type === 'image')
    return part.source !== undefined ? ['anthropic'] : part.image !== undefined ? ['ai-sdk'] : undefined;
  if (type === 'file') return part.file !== undefined ? ['openai'] : part.data !== undefined ? ['ai-sdk'] : undefined;
  return undefined;
}

/** Every mark in `value` (a message array or a request body), in document order. */
export function formatMarks(value: unknown): FormatMark[] {
  const marks: FormatMark[] = [];
  const body = isRecord(value) ? value : undefined;
  if (body !== undefined && body.system !== undefined)
    marks.push({ where: 'system', what: 'a "system" field beside "messages"', formats: ['anthropic'] });
  const messages: unknown = body === undefined ? value : body.messages;
  if (!Array.isArray(messages)) return marks;
  messages.forEach((message: unknown, index) => {
    if (!isRecord(message)) return;
    const at = `messages[${index}]`;
    const { role, content } = message;
    if (role === 'system') marks.push({ where: `${at}.role`, what: 'role "system"', formats: ['openai', 'ai-sdk'] });
    if (role === 'developer') marks.push({ where: `${at}.role`, what: 'role "developer"', formats: ['openai'] });
    if (role === 'tool')
      marks.push(
        Array.isArray(content) && message.tool_call_id === undefined
          ? { where: `${at}.content`, what: 'a "tool" message of parts', formats: ['ai-sdk'] }
          : { where: `${at}.role`, what: 'role "tool"', formats: ['openai'] },
      );
    for (const field of ['tool_calls', 'tool_call_id'])
      if (message[field] !== undefined)
        marks.push({ where: `${at}.${field}`, what: `a "${field}" field`, formats: ['openai'] });
    if (!Array.isArray(content)) return;
    content.forEach((part: unknown, position) => {
      const formats = isRecord(part) ? partFormats(part) : undefined;
      if (isRecord(part) && formats !== undefined)
        marks.push({ where: `${at}.content[${position}].type`, what: `a "${String(part.type)}" part`, formats });
    });
  });
  return marks;
}

/** The format its marks allow (`openai` when they allow it, or there are none); else an error naming two that disagree. */
export function detectFormat(value: unknown): MessageFormat {
  let allowed: readonly MessageFormat[] = ['openai', 'anthropic', 'ai-sdk'];
  let narrowing: FormatMark | undefined;
  for (const mark of formatMarks(value)) {
    const left = allowed.filter((format) => mark.formats.includes(format));
    if (left.length === 0) {
      const earlier =
        narrowing === undefined ? '' : `${narrowing.what} at ${narrowing.where} (${names(narrowing)}), but `;
      throw new InvalidInputError(
        mark.where,
        `cannot tell the message format: ${earlier}${mark.what} at ${mark.where} (${names(mark)}); name it with --format openai|anthropic|ai-sdk`,
      );
    }
    if (left.length < allowed.length) narrowing = mark;
    allowed = left;
  }
  return allowed.includes('openai') ? 'openai' : (allowed[0] ?? 'openai');
}

function names(mark: FormatMark): string {
  return mark.formats.map((format) => FORMAT_NAMES[format]).join(' or ');
}
