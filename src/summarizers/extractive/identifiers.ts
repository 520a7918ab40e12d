// Sandbox-safe: the identifiers line of an extractive summary — the paths, symbols and ids of the
// middle its sections did not copy, the likeliest to be named again first: an agent refers next to
// what it used last, what it used most, and what the files its task names say.
import { argumentValues, identifiersIn } from '../../core/compaction/coverage.js';
import { isStub } from '../../core/compaction/elision.js';
import { CAP_MARKER, renderContent } from '../../core/compaction/transcript.js';
import type { ChatMessage } from '../../core/types.js';
import { IDENTIFIERS_PREFIX } from './format.js';
import { argumentFields, pathsInCommand } from './text.js';
import type { Turns } from './turns.js';

/** The sections keep at least this much of the budget: the task and where the run stands come before any name. */
export const SECTIONS_FLOOR = 1000;

/** At most added for recency (the middle's last message), an earlier summary's line, a call's result on a task file. */
const RECENCY = 3;
const CARRIED = 4;
const TASK_FILE = RECENCY;

/** `[recall id: m14]`, `[recall ids: m3..m9]` on a stub or a summary. */
const RECALL_IDS = /\[recall ids?: [^\]\n]*\]/g;

/**
 * A message's text as the coverage check reads it: content and argument values (keys are the tool's
 * vocabulary), without what the harness wrote (stubs, recall ids, a cap's marker and the word it cut).
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

/** File names (last segment) the user's turns, earlier goals and the kept task name. */
function taskFiles(turns: Turns, task: string | undefined): Set<string> {
  const texts = [...turns.users.map((turn) => turn.text), ...turns.earlier.goals, task ?? ''];
  return new Set(texts.flatMap(pathsInCommand).map(fileName));
}

function fileName(path: string): string {
  return path.split('/').at(-1) ?? path;
}

/** Call ids whose arguments name one of `files`. */
function callsOnTaskFiles(turns: Turns, files: ReadonlySet<string>): Set<string> {
  if (files.size === 0) return new Set();
  const named = turns.calls.filter((call) =>
    Object.values(argumentFields(call.args)).some((value) =>
      pathsInCommand(value).some((path) => files.has(fileName(path))),
    ),
  );
  return new Set(named.map((call) => call.id));
}

/**
 * The identifiers of `middle`, the likeliest to be named again first: one per message that uses
 * it, plus its last use's recency, a task file's result, and its place on an earlier summary's
 * line. Ties: the later use first. System and developer messages do not count.
 */
export function rankedIdentifiers(middle: readonly ChatMessage[], turns: Turns, task?: string): string[] {
  const uses = new Map<string, { score: number; last: number }>();
  const add = (identifier: string, score: number, last: number): void => {
    const use = uses.get(identifier) ?? { score: 0, last };
    uses.set(identifier, { score: use.score + score, last: Math.max(use.last, last) });
  };
  const spoken = middle.filter((message) => message.role !== 'system' && message.role !== 'developer');
  const taskCalls = callsOnTaskFiles(turns, taskFiles(turns, task));
  spoken.forEach((message, index) => {
    const recency = (RECENCY * (index + 1)) / spoken.length;
    const onTaskFile = message.tool_call_id !== undefined && taskCalls.has(message.tool_call_id);
    const score = 1 + recency + (onTaskFile ? TASK_FILE : 0);
    // Each use adds 1; only the latest its recency.
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

/** The identifiers of `ranked` that `instructions` name (a coverage retry's, a caller's), in their order. */
export function namedIdentifiers(ranked: readonly string[], instructions: string | undefined): string[] {
  if (instructions === undefined) return [];
  const seen = new Set(ranked);
  return [...identifiersIn(instructions)].filter((identifier) => seen.has(identifier));
}

export function namedFirst(ranked: readonly string[], named: readonly string[]): string[] {
  const first = new Set(named);
  return [...named, ...ranked.filter((identifier) => !first.has(identifier))];
}

export function lineLength(identifiers: readonly string[]): number {
  return identifiers.reduce((length, identifier) => length + identifier.length + 2, IDENTIFIERS_PREFIX.length - 1);
}

/** Within `room` characters: the ranked identifiers `summary` does not name yet that fit; empty when none. */
export function identifiersLine(ranked: readonly string[], summary: string, room: number): string {
  const named = identifiersIn(summary);
  let line = IDENTIFIERS_PREFIX;
  for (const identifier of ranked) {
    if (named.has(identifier)) continue;
    const next = `${line}${line === IDENTIFIERS_PREFIX ? ' ' : ', '}${identifier}`;
    if (next.length <= room) line = next;
  }
  return line === IDENTIFIERS_PREFIX ? '' : line;
}
