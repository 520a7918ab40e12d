// Sandbox-safe: the Files and commands section — each file and command the calls named, how often,
// by which tools and how it last went, merged with what earlier summaries recorded.
import { type Candidate } from './format.js';
import {
  argumentFields,
  clip,
  code,
  COMMAND_KEYS,
  firstLine,
  PATH_KEYS,
  pathsIn,
  pathsInCommand,
  SHELL_TOOLS,
} from './text.js';
import type { Turns } from './turns.js';

interface FileUse {
  path: string;
  tools: Map<string, number>;
  firstOrder: number;
  /** Order of the latest call or result that named it: negative while only earlier summaries did. */
  lastOrder: number;
  lastError: string | undefined;
  /** Named in a call's arguments rather than only seen in a result. */
  acted: boolean;
  edited: boolean;
  mentions: number;
}

/** The use of `path` in `files`, made on first sight, with `mentions` more and its latest order. */
function useFile(files: Map<string, FileUse>, path: string, order: number, acted: boolean, mentions = 1): FileUse {
  const use = files.get(path) ?? {
    path,
    tools: new Map<string, number>(),
    firstOrder: order,
    lastOrder: order,
    lastError: undefined,
    acted,
    edited: false,
    mentions: 0,
  };
  use.acted ||= acted;
  use.mentions += mentions;
  use.lastOrder = order;
  files.set(path, use);
  return use;
}

interface CommandUse {
  command: string;
  tool: string;
  times: number;
  /** Order of the latest run: negative while only earlier summaries recorded one. */
  lastOrder: number;
  outcome: 'error' | 'no result' | 'done';
  error: string | undefined;
}

interface ToolUse {
  calls: number;
  errors: number;
  order: number;
}

/** A command's latest run, its count added to what `commands` holds of it. */
function useCommand(commands: Map<string, CommandUse>, latest: Omit<CommandUse, 'times'>, times: number): void {
  const key = `${latest.tool}\u0000${latest.command}`;
  commands.set(key, { ...latest, times: (commands.get(key)?.times ?? 0) + times });
}

function useTool(tools: Map<string, ToolUse>, name: string, order: number, calls: number, errors: number): void {
  const use = tools.get(name) ?? { calls: 0, errors: 0, order };
  use.calls += calls;
  use.errors += errors;
  tools.set(name, use);
}

const EDIT_TOOLS = /edit|write|create|replace|insert|patch|str_replace/i;

/** Inline code as {@link code} writes it: `` `x` `` or ``` `` x `` ```. */
const CODE_SPAN = '(``\\s.+?\\s``|`[^`]*`)';
const FILE_USE_LINE = new RegExp(`^- ${CODE_SPAN} — (.+)$`);
const COMMAND_USE_LINE = new RegExp(
  `^- ${CODE_SPAN} \\(([^()]+?)(?: ×(\\d+))?\\)(?: → (?:error: (.*)|(no result recorded)))?$`,
);
const OTHER_TOOLS_LINE = /^- Other tools called: (.*)$/;
const FILE_ERROR = '; last result an error: ';

function fromCode(span: string): string {
  return span.startsWith('``') ? span.slice(3, -3) : span.slice(1, -1);
}

/** `name ×3` → [name, 3]; `name` → [name, 1]. */
function countedName(text: string): [string, number] {
  const match = /^(.+?)(?: ×(\d+))?$/.exec(text.trim());
  return [match?.[1] ?? text.trim(), Number(match?.[2] ?? 1)];
}

/**
 * The files, commands and other tools of earlier summaries, read back from the lines this summarizer
 * writes, so new uses add to them. Orders are negative, oldest lowest; other lines come back `verbatim`.
 */
function earlierUses(lines: readonly string[]) {
  const files = new Map<string, FileUse>();
  const commands = new Map<string, CommandUse>();
  const otherTools = new Map<string, ToolUse>();
  const verbatim: Candidate[] = [];
  lines.forEach((line, index) => {
    const order = index - lines.length;
    const command = COMMAND_USE_LINE.exec(line);
    const file = command === null ? FILE_USE_LINE.exec(line) : null;
    const others = OTHER_TOOLS_LINE.exec(line);
    if (command !== null) {
      const [, span = '', tool = '', times, error, noResult] = command;
      const outcome = error !== undefined ? 'error' : noResult !== undefined ? 'no result' : 'done';
      useCommand(commands, { command: fromCode(span), tool, lastOrder: order, outcome, error }, Number(times ?? 1));
    } else if (file !== null) {
      const [, span = '', detail = ''] = file;
      const path = fromCode(span);
      const cut = detail.indexOf(FILE_ERROR);
      const toolList = cut < 0 ? detail : detail.slice(0, cut);
      const seen = /^(?:seen in results|mentioned) ×(\d+)$/.exec(toolList);
      const use = useFile(files, path, order, false, 0);
      use.lastError = cut < 0 ? undefined : detail.slice(cut + FILE_ERROR.length);
      if (seen !== null) use.mentions += Number(seen[1]);
      else {
        for (const [tool, times] of toolList.split(', ').map(countedName)) {
          use.tools.set(tool, (use.tools.get(tool) ?? 0) + times);
          use.mentions += times;
          use.edited ||= EDIT_TOOLS.test(tool);
        }
        use.acted = true;
      }
    } else if (others !== null) {
      for (const match of (others[1] ?? '').matchAll(
        /(?:^|, )([^,]+?) ×(\d+)(?: \((\d+) looked like errors\))?(?=, |…?$)/g,
      ))
        useTool(otherTools, match[1] ?? '', order, Number(match[2]), Number(match[3] ?? 0));
    } else {
      verbatim.push({ text: line, priority: 4 + (index + 1) / (lines.length + 1), order });
    }
  });
  return { files, commands, otherTools, verbatim };
}

/** How far an earlier-only use ranks below a new one: in [0.5, 1), the oldest lowest; 0 for a use the transcript has. */
function staleness(lastOrder: number): number {
  return lastOrder < 0 ? 1 - 1 / (1 - lastOrder) : 0;
}

export function fileAndCommandCandidates(transcript: Turns): Candidate[] {
  const { files, commands, otherTools, verbatim } = earlierUses(transcript.earlier.files);

  for (const call of transcript.calls) {
    const fields = argumentFields(call.args);
    const subcommand = COMMAND_KEYS.map((key) => fields[key]).find((value) => value?.trim());
    const isCommandLine = subcommand !== undefined && (SHELL_TOOLS.test(call.name) || /\s/.test(subcommand.trim()));
    const argPaths = PATH_KEYS.flatMap((key) => fields[key]?.trim() || []);
    const paths = [...argPaths, ...(isCommandLine ? pathsInCommand(subcommand) : [])];
    const error = call.result?.error;
    // str_replace_editor's `command` is a sub-action (`view`, `create`), not a shell command.
    const action = subcommand !== undefined && !isCommandLine ? `${call.name} ${subcommand.trim()}` : call.name;

    for (const path of new Set(paths)) {
      const use = useFile(files, path, call.order, true);
      use.tools.set(action, (use.tools.get(action) ?? 0) + 1);
      use.lastError = error;
      use.edited ||= EDIT_TOOLS.test(action);
    }
    if (isCommandLine) {
      const line = firstLine(subcommand).trim();
      const command = clip(line, 160) + (subcommand.trim() !== line ? ' …' : '');
      const outcome = call.result === undefined ? 'no result' : error === undefined ? 'done' : 'error';
      useCommand(commands, { command, tool: call.name, lastOrder: call.order, outcome, error }, 1);
    }
    if (!isCommandLine && paths.length === 0)
      useTool(otherTools, call.name, call.order, 1, error === undefined ? 0 : 1);
  }
  for (const { result } of transcript.results)
    for (const path of pathsIn(result.text)) useFile(files, path, result.order, false);

  const candidates: Candidate[] = [...verbatim];
  const lastOrder = Math.max(1, ...transcript.calls.map((call) => call.order));
  for (const use of files.values()) {
    if (!use.acted && use.mentions < 2) continue;
    const tools = [...use.tools].map(([tool, times]) => (times > 1 ? `${tool} ×${times}` : tool)).join(', ');
    const detail = use.acted ? ` — ${tools}` : ` — seen in results ×${use.mentions}`;
    const error = use.lastError === undefined ? '' : `${FILE_ERROR}${use.lastError}`;
    // A file the run changed stays worth knowing however long ago; one it only read falls to an old command's rank.
    const stale = (use.edited ? 0.09 : 10) * staleness(use.lastOrder);
    const priority = (use.edited ? 30 : use.acted ? 20 : 5) + Math.min(use.mentions, 10) / 10 - stale;
    candidates.push({ text: `- ${code(use.path)}${detail}${error}`, priority, order: use.firstOrder });
  }
  for (const use of commands.values()) {
    const times = use.times > 1 ? ` ×${use.times}` : '';
    const outcomes = { error: ` → error: ${use.error ?? ''}`, 'no result': ' → no result recorded', done: '' };
    // Later commands are the ones the agent builds on; failed ones say what not to repeat.
    const recency = use.lastOrder > 0 ? (use.lastOrder / lastOrder) * 10 : -staleness(use.lastOrder);
    const priority = 10 + recency + (use.outcome === 'error' ? 5 : 0);
    candidates.push({
      text: `- ${code(use.command)} (${use.tool}${times})${outcomes[use.outcome]}`,
      priority,
      order: 1e9 + use.lastOrder,
    });
  }
  if (otherTools.size > 0) {
    const listed = [...otherTools]
      .sort(([, a], [, b]) => a.order - b.order)
      .map(([name, use]) => `${name} ×${use.calls}${use.errors > 0 ? ` (${use.errors} looked like errors)` : ''}`)
      .join(', ');
    candidates.push({ text: `- Other tools called: ${clip(listed, 400)}`, priority: 15, order: 2e9 });
  }
  return candidates;
}
