// Sandbox-safe: how the extractive summarizer honours the caller's `summaryInstructions`
// (docs/design.md#summary-instructions): matching lines are kept first, and matching lines of the
// middle no section copied are added.
import { isSummaryMessage, renderContent } from '../../core/compaction/transcript.js';
import type { ChatMessage } from '../../core/types.js';
import { callLine } from './calls.js';
import { bySection, type Candidate, type Sections } from './format.js';
import { clip, proseLines, withoutMarker } from './text.js';

/** Added to a matching candidate's priority: above every priority a section gives (at most ~100). */
const INSTRUCTED_PRIORITY = 1000;
/** At most this many lines of the middle are added (each ≤ 240 characters). */
const MAX_INSTRUCTED_LINES = 40;

/** Words of an instruction that say how to summarize, not what: they match nothing. */
const STOPWORDS = new Set(
  (
    'about above after again also always any are around because been before being below between both but can could ' +
    'detail details did does doing each else ensure especially every exact exactly few focus for from have having here ' +
    'how important include including into its just keep kept least less list make many mention more most much must name ' +
    'names never note only other over please preserve record remember same should some still such summary summarize ' +
    'than that the their them then there these they this those through too under until very want what when where which ' +
    'while who whom why will with without would your'
  ).split(' '),
);

/** An identifier (matched as written, any case) or a word's stem (matched at a word start). */
interface InstructionTerm {
  text: string;
  pattern: RegExp;
}

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `failing` → `fail`, `tests` → `test`; never under four letters. */
function stem(word: string): string {
  const suffix = ['ing', 'ed', 'es', 's'].find((end) => word.endsWith(end) && word.length - end.length >= 4);
  return suffix === undefined ? word : word.slice(0, -suffix.length);
}

/** Quoted phrases and identifiers (paths, dotted or snake_case names, with a digit) as written; other words, not stopwords, by stem. */
export function instructionTerms(instructions: string | undefined): InstructionTerm[] {
  if (instructions === undefined) return [];
  const terms = new Map<string, InstructionTerm>();
  const add = (text: string, pattern: RegExp): void => {
    if (!terms.has(text)) terms.set(text, { text, pattern });
  };
  const unquoted = instructions.replace(/["`'“]([^"`'”\n]{3,80})["`'”]/g, (_, phrase: string) => {
    add(phrase.toLowerCase(), new RegExp(escaped(phrase), 'i'));
    return ' ';
  });
  for (const raw of unquoted.match(/[\p{L}\p{N}_./:#@-]+/gu) ?? []) {
    const token = raw.replace(/^[.:/#@-]+|[.:/#@-]+$/g, '');
    if (token.length < 3) continue;
    if (/[\d_./:#@]|[a-z][A-Z]/.test(token)) add(token.toLowerCase(), new RegExp(escaped(token), 'i'));
    else {
      const word = token.toLowerCase();
      if (word.length < 4 || STOPWORDS.has(word)) continue;
      const root = stem(word);
      add(root, new RegExp(`(?<![\\p{L}\\p{N}])${escaped(root)}`, 'iu'));
    }
  }
  return [...terms.values()];
}

/** One pattern for all the terms: most lines match none. */
const anyTermMemo = new WeakMap<readonly InstructionTerm[], RegExp>();

function matchCount(text: string, terms: readonly InstructionTerm[]): number {
  const any = anyTermMemo.get(terms) ?? new RegExp(terms.map((term) => term.pattern.source).join('|'), 'iu');
  anyTermMemo.set(terms, any);
  return any.test(text) ? terms.filter((term) => term.pattern.test(text)).length : 0;
}

/** Matching candidates ranked above the rest (more terms first); matching lines of the middle no candidate holds added to Decisions. */
export function honourInstructions(
  sections: Sections,
  terms: readonly InstructionTerm[],
  middle: readonly ChatMessage[],
): Sections {
  if (terms.length === 0) return sections;
  const boost = (candidates: Candidate[]): Candidate[] =>
    candidates.map((candidate) => {
      const matched = matchCount(candidate.text, terms);
      return matched === 0 ? candidate : { ...candidate, priority: candidate.priority + INSTRUCTED_PRIORITY + matched };
    });
  const boosted = bySection((name) => boost(sections[name]));
  const held = Object.values(boosted)
    .flatMap((candidates) => candidates.map((candidate) => candidate.text))
    .join('\n');
  boosted.decisions.push(...instructedLines(middle, terms, held));
  return boosted;
}

/** Lines of the middle (not earlier summaries) that match the terms and no candidate holds. */
function instructedLines(middle: readonly ChatMessage[], terms: readonly InstructionTerm[], held: string): Candidate[] {
  const lines: Candidate[] = [];
  const seen = new Set<string>();
  let order = 0;
  for (const message of middle) {
    order += 1;
    if (message.role === 'system' || message.role === 'developer' || isSummaryMessage(message)) continue;
    // A call as the line it becomes, a line of JSON as its fields.
    const texts = [
      ...proseLines(renderContent(message.content)).map(flatJson),
      ...(message.tool_calls ?? []).map((call) => callLine(call.function.name, call.function.arguments)),
    ];
    for (const line of texts) {
      const matched = matchCount(line, terms);
      if (matched === 0) continue;
      const copied = clip(withoutMarker(line), 240);
      const key = copied.toLowerCase();
      if (copied.length < 4 || seen.has(key) || held.includes(copied)) continue;
      seen.add(key);
      lines.push({ text: `- ${copied}`, priority: INSTRUCTED_PRIORITY + matched, order: order + lines.length / 1e4 });
    }
  }
  return lines.sort((a, b) => b.priority - a.priority || b.order - a.order).slice(0, MAX_INSTRUCTED_LINES);
}

/** A field of a JSON object: its key and its value when that is a string, a number, true, false or null. */
const JSON_FIELD = /"([^"\\]{1,60})"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*|true|false|null)/g;

/** A line of JSON as `key: value` pairs, in order; any other line as it is. */
function flatJson(line: string): string {
  if (!/^[[{]\s*"/.test(line)) return line;
  const pairs = [...line.matchAll(JSON_FIELD)].map(([, key = '', value = '']) => {
    if (!value.startsWith('"')) return `${key}: ${value}`;
    try {
      return `${key}: ${String(JSON.parse(value))}`;
    } catch {
      return `${key}: ${value.slice(1, -1)}`;
    }
  });
  return pairs.length === 0 ? line : pairs.join(', ');
}

/** The room a section's matching candidates need. */
export function instructedRoom(candidates: readonly Candidate[]): number {
  return candidates
    .filter((candidate) => candidate.priority >= INSTRUCTED_PRIORITY)
    .reduce((sum, candidate) => sum + candidate.text.length + 1, 0);
}
