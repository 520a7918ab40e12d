// Node only: the conversation file `compact` reads (a JSON array, { "messages": [...] } such as a
// request body, or the lines of `session --jsonl`; `-` is standard input), and the file it writes.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  lstatSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { text as streamText } from 'node:stream/consumers';
import { InvalidInputError } from '../core/errors.js';
import { isRecord, validateMessages } from '../core/schema.js';
import { failureMessage } from '../shared/failures.js';
import { parseSessionJsonl, replaySession, SESSION_LINE_TYPES } from '../core/agent/session.js';
import type { ChatMessage } from '../core/types.js';
import { validateAnthropic, type AnthropicMessage } from '../core/formats/anthropic-schema.js';
import { validateAiSdk, type AiSdkMessage } from '../core/formats/ai-sdk-schema.js';
import { detectFormat, FORMAT_NAMES } from '../core/formats/detect.js';
import type { AnyCompactionResult, MessageFormat } from '../core/formats/format.js';

export type FormatChoice = MessageFormat | 'auto';

export type ConversationFile = (
  | { messageFormat: 'openai'; messages: ChatMessage[] }
  | { messageFormat: 'anthropic'; messages: AnthropicMessage[] }
  | { messageFormat: 'ai-sdk'; messages: AiSdkMessage[] }
) & {
  path: string;
  /** The output keeps the shape (session lines come back as an array). */
  format: 'array' | 'object' | 'session-jsonl';
  formatDetected: boolean;
  /** For `object`: the parsed object, so the output keeps its other fields (an Anthropic body's `system` too). */
  container: Record<string, unknown> | undefined;
};

/** `JSON array`, `{ "messages": [...] }`, `Anthropic Messages request body, detected`. */
export function describeFileShape(file: ConversationFile): string {
  if (file.format === 'session-jsonl') return 'session transcript';
  const shape =
    file.format === 'array'
      ? 'JSON array'
      : file.messageFormat === 'anthropic'
        ? 'request body'
        : '{ "messages": [...] }';
  if (file.messageFormat === 'openai') return shape;
  return `${FORMAT_NAMES[file.messageFormat]} ${shape}${file.formatDetected ? ', detected' : ''}`;
}

/** The message names the file and, for a bad message, its index and field. */
export class ConversationFileError extends Error {
  override readonly name = 'ConversationFileError';
  constructor(
    path: string,
    reason: string,
    /** No such file, or a directory: a usage mistake. */
    readonly missing = false,
    /** E.g. `messages[3].tool_call_id`. */
    readonly field?: string,
    readonly index?: number,
  ) {
    super(`${path}: ${reason}`);
  }
}

/** Whether the first non-blank line is a line of `temporal-compactor session --jsonl`. */
function looksLikeSessionJsonl(text: string): boolean {
  const first = text.split('\n').find((line) => line.trim() !== '');
  try {
    const value: unknown = first === undefined ? undefined : JSON.parse(first);
    return isRecord(value) && SESSION_LINE_TYPES.some((type) => type === value.type);
  } catch {
    return false;
  }
}

/** Where `JSON.parse` stopped, in words (V8 says "at position N" for most errors, nothing for a cut-off file). */
function describeSyntaxError(text: string, error: SyntaxError): string {
  const position = /at position (\d+)/.exec(error.message)?.[1];
  const before = text.slice(0, Number(position));
  const where =
    position !== undefined
      ? ` at line ${before.split('\n').length}, column ${before.length - before.lastIndexOf('\n')}`
      : /end of JSON input/.test(error.message)
        ? ' at the end of the file (is it cut off?)'
        : '';
  return `not valid JSON${where}: ${error.message}`;
}

/**
 * A JSON array of messages, an object `{ "messages": [...] }` (other fields kept for the output), or
 * the JSON lines of `session --jsonl` (replayed to the live conversation).
 */
export function parseConversation(text: string, path: string, choice: FormatChoice = 'auto'): ConversationFile {
  const body = text.replace(/^\uFEFF/, '');
  if (body.trim() === '') throw new ConversationFileError(path, 'is empty: expected a JSON array of chat messages');
  try {
    if (looksLikeSessionJsonl(body)) {
      if (choice !== 'auto' && choice !== 'openai')
        throw new ConversationFileError(
          path,
          `is a session transcript (\`session --jsonl\`), whose messages are OpenAI chat, not ${FORMAT_NAMES[choice]}`,
        );
      const messages = validateMessages(replaySession(parseSessionJsonl(body)));
      const formatDetected = choice === 'auto';
      return { path, format: 'session-jsonl', messageFormat: 'openai', formatDetected, messages, container: undefined };
    }
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch (error) {
      if (error instanceof SyntaxError) throw new ConversationFileError(path, describeSyntaxError(body, error));
      throw error;
    }
    const container = isRecord(value) ? { ...value } : undefined;
    if (!Array.isArray(value) && (container === undefined || !Object.hasOwn(container, 'messages')))
      throw new ConversationFileError(
        path,
        `expected a JSON array of messages, an object { "messages": [...] } (a request body), or the JSON lines of \`temporal-compactor session --jsonl\`; got ${shapeOf(value)}`,
      );
    const messageFormat = choice === 'auto' ? detectFormat(value) : choice;
    const format = Array.isArray(value) ? 'array' : 'object';
    const shared = { path, format, formatDetected: choice === 'auto', container } as const;
    const messages: unknown = Array.isArray(value) ? value : container?.messages;
    const file: ConversationFile =
      messageFormat === 'anthropic'
        ? { ...shared, messageFormat, messages: validateAnthropic(value).messages }
        : messageFormat === 'ai-sdk'
          ? { ...shared, messageFormat, messages: validateAiSdk(messages) }
          : { ...shared, messageFormat, messages: validateMessages(messages) };
    if (file.messages.length === 0) throw new InvalidInputError('messages', 'is empty: there is nothing to compact');
    return file;
  } catch (error) {
    if (error instanceof InvalidInputError)
      throw new ConversationFileError(path, error.message, false, error.field, error.index);
    throw error;
  }
}

/** `an object with keys model, prompt`, `a JSON string`. */
function shapeOf(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') {
    const keys = Object.keys(value).slice(0, 6);
    return keys.length === 0 ? 'an empty object' : `an object with keys ${keys.join(', ')}`;
  }
  return `a JSON ${typeof value}`;
}

export async function readConversationFile(
  path: string,
  readStdin = (): Promise<string> => streamText(process.stdin),
  choice: FormatChoice = 'auto',
): Promise<ConversationFile> {
  if (path === '-') return parseConversation(await readStdin(), '<stdin>', choice);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = isRecord(error) ? error.code : undefined;
    if (code === 'ENOENT') throw new ConversationFileError(path, 'no such file', true);
    if (code === 'EISDIR') throw new ConversationFileError(path, 'is a directory, not a conversation file', true);
    throw new ConversationFileError(path, `cannot read it: ${failureMessage(error)}`);
  }
  return parseConversation(text, path, choice);
}

/** The compacted conversation in the input's shape and format (2-space JSON, final newline). */
export function conversationOutput(file: ConversationFile, messages: AnyCompactionResult['messages']): string {
  const value = file.format === 'object' && file.container !== undefined ? { ...file.container, messages } : messages;
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** A conversation holds whatever the agent read. */
const NEW_FILE_MODE = 0o600;
const NEW_FILE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Why `writeFileWhole` would refuse `path`: a link, followed or replaced, would write where the user did not name. */
export function unwritableReason(path: string): string | undefined {
  const stats = lstatSync(path, { throwIfNoEntry: false });
  if (stats === undefined) return undefined;
  if (stats.isSymbolicLink())
    return 'is a symbolic link; the result is never written through one: name the file itself';
  if (stats.isDirectory()) return 'is a directory';
  if (!stats.isFile()) return 'is not a regular file';
  return undefined;
}

/**
 * Writes `text` to `path` whole or not at all: into a temporary file beside it, created exclusively,
 * then renamed over `path` (a link is replaced, never followed; one there from the start is refused
 * unless `replaceLink`). The file keeps the mode of the one it replaces; a new one gets `mode` (by
 * default private), less the umask.
 */
export function writeFileWhole(
  path: string,
  text: string,
  { mode, replaceLink = false }: { mode?: number; replaceLink?: boolean } = {},
): void {
  const replaced = lstatSync(path, { throwIfNoEntry: false });
  const refused = replaceLink && replaced?.isSymbolicLink() === true ? undefined : unwritableReason(path);
  if (refused !== undefined) throw new Error(`cannot write ${path}: it ${refused}`);
  const kept = replaced?.isFile() ? replaced.mode & 0o777 : undefined;
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(8).toString('hex')}.tmp`);
  let descriptor: number | undefined;
  try {
    descriptor = openSync(temporary, NEW_FILE_FLAGS, mode ?? NEW_FILE_MODE);
    // The umask took bits off at creation; a replaced file's mode is kept exactly.
    if (kept !== undefined) fchmodSync(descriptor, kept);
    writeFileSync(descriptor, text, 'utf8');
    fsyncSync(descriptor);
    closeSync(descriptor);
    descriptor = undefined;
    renameSync(temporary, path);
  } catch (error) {
    if (descriptor !== undefined) closeSync(descriptor);
    rmSync(temporary, { force: true });
    throw new Error(`cannot write ${path}: ${failureMessage(error)}`, { cause: error });
  }
}
