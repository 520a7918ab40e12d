// Sandbox-safe: the identifiers line of an extractive summary — the paths, symbols and ids of the
// middle that its sections did not copy, within a share of the budget, the likeliest to be named
// again first. The sections copy whole lines and let most names go; an agent refers next to what
// it used last, what it used most, and what the files its task names say.
import { argumentValues, identifiersIn } from '../../core/compaction/coverage.js';
import { isStub } from '../../core/compaction/elision.js';
import { CAP_MARKER, renderContent } from '../../core/compaction/transcript.js';
import type { ChatMessage } from '../../core/types.js';
import { IDENTIFIERS_PREFIX } from './format.js';
import { argumentFields, pathsInCommand } from './text.js';
import type { Turns } from './turns.js';

/** The sections keep at least this much of a summary's budget: the task and where the run stands come before any name. */
export const SECTIONS_FLOOR = 1000;

/** What recency is worth at most: the last message of the middle adds this to an identifier's uses. */
const RECENCY = 3;
/** What an earlier summary's line is worth at most: its first identifier adds this, its last nearly none. */
const CARRIED = 4;
/** What being in the result of a call on a file the user named is worth: as much as the latest message. */
const TASK_FILE = RECENCY;

interface Use {
  score: number;
  last: number;
}

/** The recall ids the harness names on a stub or a summary (`[recall id: m14]`, `[recall ids: m3..m9]`): its own, not the run's. */
const RECALL_IDS = /\[recall ids?: [^\]\n]*\]/g;

/**
 * The text a message's identifiers are read from, as the coverage check reads it: its content and
 * the values of its calls' arguments (not their keys: `file_path` is the tool's vocabulary, not the
 * run's). Without what the harness wrote: an elision's stub (`779-char` is no identifier), recall
 * ids, a cap's marker and the word the cap cut through.
 */
function factText(message: ChatMessage): string {
  if (message.role === 'tool' && isStub(message)) return '';
  let text = renderContent(message.content).replace(RECALL_IDS, ' ');
  if (message.role === 'tool' && CAP_MARKER.test(text)) text = text.replace(CAP_MARKER, '').replace(/\S*$/, '');
  const values = (message.tool_calls ?? []).flatMap(({ function: { arguments: args } }) => {
    const read = argumentValues(args);
    // The last value of arguments the cap cut ends in the word it cut through.
    if (CAP_MARKER.test(args) && read.length > 0) read.push((read.pop() ?? '').replace(/\S*$/, ''));
    return read;
  });
  return [text, ...values].join('\n');
}

/**
 * File names (last path segment) the user's turns, earlier summaries' goals and the task kept in
 * place (`request.task`, docs/design.md#task-survives) name: the task's files.
 */
function taskFiles(turns: Turns, task: string | undefined): Set<string> {
  const names = new Set<string>();
  const texts = [
    ...turns.users.map((turn) => turn.text),
    ...turns.earlier.goals,
    ...(task === undefined ? [] : [task]),
  ];
  for (const text of texts) for (const path of pathsInCommand(text)) names.add(path.split('/').at(-1) ?? path);
  return names;
}

/** Call ids whose arguments name one of `files`: their results are the task's material. */
function callsOnTaskFiles(turns: Turns, files: ReadonlySet<string>): Set<string> {
  const ids = new Set<string>();
  if (files.size === 0) return ids;
  for (const call of turns.calls) {
    const paths = Object.values(argumentFields(call.args)).flatMap(pathsInCommand);
    if (paths.some((path) => files.has(path.split('/').at(-1) ?? path))) ids.add(call.id);
  }
  return ids;
}

/**
 * The identifiers of `middle` (`turns` read from it), the likeliest to be named again first. An
 * identifier scores one per message that uses it, up to {@link RECENCY} more by how late its last
 * use is, {@link TASK_FILE} more when a result of a call on a file the user (or the kept `task`) named holds it, and up
 * to {@link CARRIED} more when an earlier summary's identifiers line listed it (by its place
 * there). Ties: the later use first. System and developer messages do not count.
 */
export function rankedIdentifiers(middle: readonly ChatMessage[], turns: Turns, task?: string): string[] {
  const uses = new Map<string, Use>();
  const add = (identifier: string, score: number, last: number): void => {
    const use = uses.get(identifier);
    if (use === undefined) uses.set(identifier, { score, last });
    else {
      use.score += score;
      use.last = Math.max(use.last, last);
    }
  };
  const spoken = middle.filter((message) => message.role !== 'system' && message.role !== 'developer');
  const taskCalls = callsOnTaskFiles(turns, taskFiles(turns, task));
  spoken.forEach((message, index) => {
    const recency = (RECENCY * (index + 1)) / spoken.length;
    const onTaskFile = message.tool_call_id !== undefined && taskCalls.has(message.tool_call_id);
    const score = 1 + recency + (onTaskFile ? TASK_FILE : 0);
    // The recency of an identifier is that of its latest use: each use adds 1, only the latest its recency.
    for (const identifier of identifiersIn(factText(message))) {
      const use = uses.get(identifier);
      if (use !== undefined) use.score -= (RECENCY * (use.last + 1)) / spoken.length;
      add(identifier, score, index);
    }
  });
  const carried = turns.earlier.identifiers;
  carried.forEach((identifier, rank) => add(identifier, (CARRIED * (carried.length - rank)) / carried.length, -1));
  return [...uses]
    .sort(([, left], [, right]) => right.score - left.score || right.last - left.last)
    .map(([identifier]) => identifier);
}

/**
 * The identifiers of the middle that `instructions` name, in the order they name them: a coverage
 * retry names what the summary must keep (`Keep these identifiers: …`), and so may a caller's
 * `summaryInstructions`. Only identifiers of the middle (`ranked`): the line says what was seen.
 */
export function namedIdentifiers(ranked: readonly string[], instructions: string | undefined): string[] {
  if (instructions === undefined) return [];
  const seen = new Set(ranked);
  return [...identifiersIn(instructions)].filter((identifier) => seen.has(identifier));
}

/** `ranked` with `named` first: what the instructions name is listed before anything else. */
export function namedFirst(ranked: readonly string[], named: readonly string[]): string[] {
  if (named.length === 0) return [...ranked];
  const first = new Set(named);
  return [...named, ...ranked.filter((identifier) => !first.has(identifier))];
}

/** The length of a line that lists `identifiers`. */
export function lineLength(identifiers: readonly string[]): number {
  return identifiers.reduce((length, identifier) => length + identifier.length + 2, IDENTIFIERS_PREFIX.length - 1);
}

/**
 * The identifiers line within `room` characters: the ranked identifiers `summary` does not name
 * yet, as many as fit, in rank order. Empty when none fits.
 */
export function identifiersLine(ranked: readonly string[], summary: string, room: number): string {
  const named = identifiersIn(summary);
  let line = IDENTIFIERS_PREFIX;
  let listed = 0;
  for (const identifier of ranked) {
    if (named.has(identifier)) continue;
    const next = `${line}${listed === 0 ? ' ' : ', '}${identifier}`;
    if (next.length > room) continue;
    line = next;
    listed += 1;
  }
  return listed === 0 ? '' : line;
}
