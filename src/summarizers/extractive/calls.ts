// Sandbox-safe: a tool call as one short line a reader takes in at a glance — the tool, its
// sub-action, the file it works on and the gist of what it does — never its arguments' JSON.
import { argumentFields, clip, COMMAND_KEYS, firstLine, PATH_KEYS, SHELL_TOOLS } from './text.js';

const MAX_CALL_LINE = 240;
const QUOTE = 60;

/** Argument pairs that say "this text becomes that one". */
const REPLACEMENTS: ReadonlyArray<readonly [string, string]> = [
  ['old_str', 'new_str'],
  ['old_string', 'new_string'],
  ['old_text', 'new_text'],
  ['search', 'replace'],
];
/** Arguments that hold a whole file's new text. */
const FILE_TEXT_KEYS = ['file_text', 'content', 'contents', 'text'];

function quoted(text: string, max = QUOTE): string {
  return `"${clip(firstLine(text).trim(), max)}"`;
}

/** Replace, insert or write, with the texts' first lines quoted. */
function editGist(fields: Readonly<Record<string, string>>, args: string): string | undefined {
  for (const [from, to] of REPLACEMENTS) {
    const before = fields[from];
    const after = fields[to];
    if (before === undefined) continue;
    if (after === undefined) return `replace ${quoted(before)} …`;
    return after.trim() === '' ? `delete ${quoted(before)}` : `replace ${quoted(before)} with ${quoted(after)}`;
  }
  const inserted = fields.new_str ?? fields.insert_text;
  if (inserted !== undefined) return `insert ${quoted(inserted)}${lineNumber(args)}`;
  const text = FILE_TEXT_KEYS.map((name) => fields[name]).find((value) => value !== undefined);
  if (text !== undefined) {
    const lines = text.replace(/\n$/, '').split('\n').length;
    return `${lines} line${lines === 1 ? '' : 's'}, starting ${quoted(text)}`;
  }
  return undefined;
}

/** ` at line 12` from an `insert_line` argument (read from the JSON text), or nothing. */
function lineNumber(args: string): string {
  const match = /"insert_line"\s*:\s*"?(\d+)/.exec(args);
  return match === null ? '' : ` at line ${match[1]}`;
}

/** `todos: 3 items` for each list argument (when the arguments are whole JSON). */
function listArguments(args: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return '';
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return '';
  return Object.entries(parsed)
    .filter((entry): entry is [string, unknown[]] => Array.isArray(entry[1]) && entry[0] !== 'view_range')
    .slice(0, 3)
    .map(([key, items]) => `${key}: ${items.length} item${items.length === 1 ? '' : 's'}`)
    .join(', ');
}

/** At most three other short string arguments as `key=value`. */
function otherArguments(fields: Readonly<Record<string, string>>, skip: ReadonlySet<string>): string {
  return Object.entries(fields)
    .filter(([key, value]) => !skip.has(key) && value.trim() !== '' && !value.includes('\n'))
    .slice(0, 3)
    .map(([key, value]) => {
      const shown = clip(value.trim(), 40);
      return `${key}=${/\s/.test(shown) ? `"${shown}"` : shown}`;
    })
    .join(' ');
}

/** `view_range: [10, 40]` as ` lines 10–40`. */
function viewRange(args: string): string {
  const match = /"view_range"\s*:\s*\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]/.exec(args);
  return match === null ? '' : ` lines ${match[1]}–${match[2]}`;
}

/**
 * A call as one line of at most {@link MAX_CALL_LINE}: `bash: pytest tests/test_x.py -q`,
 * `str_replace_editor str_replace src/x.py: replace "a = 1" with "a = 2"`, `get_user_details user_id=mia_li_3668`.
 */
export function callLine(name: string, args: string): string {
  const fields = argumentFields(args);
  const command = COMMAND_KEYS.map((key) => fields[key]).find((value) => value !== undefined && value.trim() !== '');
  const commandKey = COMMAND_KEYS.find((key) => fields[key] === command);
  if (command !== undefined && (SHELL_TOOLS.test(name) || /\s/.test(command.trim())))
    return clip(`${name}: ${firstLine(command).trim()}${command.trim().includes('\n') ? ' …' : ''}`, MAX_CALL_LINE);
  const pathKey = PATH_KEYS.find((key) => (fields[key] ?? '').trim() !== '');
  const path = pathKey === undefined ? undefined : fields[pathKey]?.trim();
  const head = [name, command?.trim(), path].filter((part) => part !== undefined).join(' ');
  const gist = editGist(fields, args);
  if (gist !== undefined) return clip(`${head}: ${gist}`, MAX_CALL_LINE);
  const skip = new Set([commandKey, pathKey].filter((key): key is string => key !== undefined));
  const others = [otherArguments(fields, skip), listArguments(args)].filter((part) => part !== '').join(' ');
  return clip(`${head}${viewRange(args)}${others === '' ? '' : ` ${others}`}`, MAX_CALL_LINE);
}
