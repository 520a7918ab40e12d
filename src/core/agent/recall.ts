// Sandbox-safe: recall (docs/design.md#recall): the `recall` tool's declaration, the bounds on the id
// a model passes, and the transcript ids a compaction's stubs and summary name.
import type { ToolDeclaration } from '../counting/request-counter.js';
import type { ChatMessage } from '../types.js';
import { onlyArgument } from './agent-tool.js';
import { declaration } from './tool-declarations.js';
import type { SessionEntry } from './session.js';

/** The name of the tool (and of the activity that answers it). */
export const RECALL_TOOL_NAME = 'recall';

export const MAX_RECALL_ID_CHARS = 64;
/** A recalled message is cut to this many characters, with the harness's cut marker. */
export const MAX_RECALL_CHARS = 20_000;

const RECALL_ID = /^m[1-9][0-9]{0,15}$/;

/** The declaration the run sends the model when `compaction.recall` is on. */
export const RECALL_TOOL: ToolDeclaration = declaration(
  RECALL_TOOL_NAME,
  'Get back a message the harness elided or summarized away, as it was: pass one id named by a "[recall id: m14]" stub or a "[recall ids: m3..m9, m12]" summary line ("a..b" is every id from a to b).',
  { id: { type: 'string', description: 'A transcript message id, such as "m14".' } },
  ['id'],
);

export function parseRecallArgs(args: unknown): { id: string } | { error: string } {
  const parsed = onlyArgument('recall', args, 'id', '{ id: string }');
  if ('error' in parsed) return parsed;
  const id = parsed.value;
  if (typeof id !== 'string') return { error: 'recall: arguments.id must be a string, such as "m14"' };
  if (id.length > MAX_RECALL_ID_CHARS)
    return { error: `recall: arguments.id is ${id.length} characters; an id has at most ${MAX_RECALL_ID_CHARS}` };
  if (!RECALL_ID.test(id))
    return {
      error: `recall: no message with id ${JSON.stringify(id)}: ids are "m" and a number, as the stubs and summaries name them`,
    };
  return { id };
}

export function unknownRecallId(id: string): string {
  return `recall: no message with id "${id}" in this run's transcript`;
}

export function recallStubSuffix(id: string): string {
  return ` [recall id: ${id}]`;
}

/** A summary's closing line: the ids it replaced. */
const RECALL_IDS_LINE = /\n\n\[recall ids: ([^\]\n]*)\]$/;

/** The numbers of the ids a summary's `[recall ids: ...]` line names. */
function namedNumbers(message: ChatMessage): number[] {
  if (typeof message.content !== 'string') return [];
  const list = RECALL_IDS_LINE.exec(message.content)?.[1];
  if (list === undefined) return [];
  return list.split(', ').flatMap((range) => {
    const match = /^m(\d+)(?:\.\.m(\d+))?$/.exec(range);
    if (match === null) return [];
    const low = Number(match[1]);
    const high = Number(match[2] ?? match[1]);
    // A line of this module's own making; anything else is not expanded (a range is never longer than a run).
    if (!Number.isSafeInteger(low) || !Number.isSafeInteger(high) || high < low || high - low > 1_000_000) return [];
    return Array.from({ length: high - low + 1 }, (_, offset) => low + offset);
  });
}

/** `m3..m9, m12`: the ids, sorted, consecutive ones as ranges. */
export function recallIdList(numbers: Iterable<number>): string {
  const sorted = [...new Set(numbers)].sort((left, right) => left - right);
  const ranges: string[] = [];
  for (let start = 0; start < sorted.length;) {
    let end = start;
    while (end + 1 < sorted.length && sorted[end + 1] === (sorted[end] ?? 0) + 1) end += 1;
    ranges.push(start === end ? `m${sorted[start]}` : `m${sorted[start]}..m${sorted[end]}`);
    start = end + 1;
  }
  return ranges.join(', ');
}

/** The numbers an entry stands for: its own (`m14` → 14), or those its `[recall ids: ...]` line names. */
function numbersOf(entry: SessionEntry): number[] {
  const match = /^m(\d+)$/.exec(entry.id);
  return match === null ? namedNumbers(entry.message) : [Number(match[1])];
}

/** The closing line of a summary (or a trim's marker) that replaced `entries`; '' when they name no id. */
export function recallIdsLine(entries: readonly SessionEntry[]): string {
  const numbers = entries.flatMap(numbersOf);
  return numbers.length === 0 ? '' : `\n\n[recall ids: ${recallIdList(numbers)}]`;
}

/** A reviewer's edited summary with the proposal's `[recall ids: ...]` line: the ids are not the person's to change. */
export function withRecallLine(edited: string, proposed: string | null): string {
  const line = proposed === null ? undefined : RECALL_IDS_LINE.exec(proposed)?.[0];
  if (line === undefined) return edited;
  return `${edited.trim().replace(RECALL_IDS_LINE, '').trim()}${line}`;
}

/** The engine's `nameReplaced` hook: ` [recall id: m14]` for a stub, a `[recall ids: …]` line for a summary or trim. */
export function recallNamer(
  entries: readonly SessionEntry[],
): (kind: 'stub' | 'summary' | 'trim', indices: readonly number[]) => string {
  return (kind, indices) => {
    const replaced = indices.flatMap((index) => entries[index] ?? []);
    if (kind !== 'stub') return recallIdsLine(replaced);
    const id = replaced[0]?.id;
    return id === undefined ? '' : recallStubSuffix(id);
  };
}
