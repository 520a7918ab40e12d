// Sandbox-safe and pure: the built-in offline summarizer. No model, no I/O, no clock: it copies
// lines out of the transcript the compactor renders (src/core/compaction/transcript.ts) into the four sections.
import { isSummaryMessage } from '../core/compaction/transcript.js';
import { contentText } from '../core/counting/tokens.js';
import type { ChatMessage, SummarizeRequest, SummarizeResponse, Summarizer } from '../core/types.js';
import { assertKnownKeys, keysOf } from '../core/unknown-keys.js';

/** Options of {@link createExtractiveSummarizer}. */
export interface ExtractiveSummarizerOptions {
  /**
   * Upper bound on the summary's length in characters.
   * @default 6000 (about 1,500 tokens: the size of a typical model-written summary)
   */
  maxChars?: number;
  /**
   * The summary is at most this fraction of the transcript's length, so it always compacts;
   * never below {@link MIN_EXTRACTIVE_SUMMARY_CHARS}, the room the four headings need.
   * `Infinity` bounds the summary by `maxChars` alone.
   * @default 0.15
   */
  maxRatio?: number;
}

/** The first line of every extractive summary: whoever reads it must know no model wrote it. */
export const EXTRACTIVE_SUMMARY_NOTICE =
  '_Offline extractive summary: lines copied from the transcript, not written by a model._';

/** @default 6000 characters */
export const DEFAULT_EXTRACTIVE_MAX_CHARS = 6000;
/** @default 0.15 of the transcript */
export const DEFAULT_EXTRACTIVE_MAX_RATIO = 0.15;
/** The smallest budget the ratio may produce: the notice, four headings and a line or two each. */
export const MIN_EXTRACTIVE_SUMMARY_CHARS = 400;

/** The four sections in the order the instruction asks for them. */
const SECTIONS = [
  ['goals', '## Goals'],
  ['decisions', '## Decisions'],
  ['files', '## Files and commands'],
  ['unresolved', '## Unresolved'],
] as const;
const NOTHING = '- nothing recorded';

/**
 * A {@link Summarizer} that needs no model: deterministic and extractive. It parses the
 * transcript in the request's user message and fills the four sections the instruction asks for
 * with copied material only — the first lines of user turns (Goals), sentences of assistant
 * turns that carry decision words or open a turn (Decisions), file paths and commands found in
 * tool-call arguments and results, with the tool and whether the result looked like an error
 * (Files and commands), and the latest user request plus errors in the latest tool results
 * (Unresolved). Its first line says it is an offline extractive summary.
 *
 * A summary of a summary merges: an earlier summary in the transcript (the engine's synthetic
 * message, `isSummaryMessage`) is not a user turn but the older part of the run, and its sections
 * are read back into the new ones — see {@link extractiveSummary} for what a merge keeps.
 *
 * The output is bounded by `maxChars` and `maxRatio` of the transcript, and by the limit the
 * too-long retry states (`under N characters`), so it is much shorter than its input. Unknown
 * transcript formats get a best effort on the raw text. Never fails except when `signal` is
 * already aborted (it then rejects with the signal's reason).
 *
 * @example
 * const compactor = new Compactor({ summarizer: createExtractiveSummarizer(), contextBudget: 128_000 });
 */
export function createExtractiveSummarizer(options: ExtractiveSummarizerOptions = {}): Summarizer {
  assertKnownKeys(options, keysOf<ExtractiveSummarizerOptions>({ maxChars: true, maxRatio: true }), 'options');
  const resolved = resolveExtractiveOptions(options);
  return {
    async summarize(request: SummarizeRequest, callOptions?: { signal?: AbortSignal }): Promise<SummarizeResponse> {
      const signal = callOptions?.signal;
      if (signal?.aborted) throw abortReason(signal);
      return { text: extractiveSummary(request, resolved) };
    },
  };
}

function abortReason(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason;
  return reason;
}

interface ResolvedExtractiveOptions {
  maxChars: number;
  maxRatio: number;
}

function resolveExtractiveOptions({
  maxChars = DEFAULT_EXTRACTIVE_MAX_CHARS,
  maxRatio = DEFAULT_EXTRACTIVE_MAX_RATIO,
}: ExtractiveSummarizerOptions): ResolvedExtractiveOptions {
  if (!Number.isInteger(maxChars) || maxChars < MIN_EXTRACTIVE_SUMMARY_CHARS) {
    throw new RangeError(
      `createExtractiveSummarizer: maxChars must be an integer of at least ${MIN_EXTRACTIVE_SUMMARY_CHARS}, got ${maxChars}`,
    );
  }
  if (Number.isNaN(maxRatio) || maxRatio <= 0) {
    throw new RangeError(`createExtractiveSummarizer: maxRatio must be a positive number, got ${maxRatio}`);
  }
  return { maxChars, maxRatio };
}

/**
 * The extractive summary of one summarizer request, as `createExtractiveSummarizer` writes it.
 * Pure and synchronous: the same request and options always give the same string.
 *
 * Its length is at most `min(maxChars, max(MIN_EXTRACTIVE_SUMMARY_CHARS, maxRatio × transcript))`
 * characters, and under the limit a tighter retry states. That bound holds for every summary of a
 * run, the hundredth as the first: what earlier summaries carry competes for the same room.
 *
 * When the transcript holds earlier summaries (a run that compacted before), their sections are
 * merged into the new ones as if their lines had been read from the older part of the run:
 * - Goals: one list, older goals first. The run's first request keeps the first place and the
 *   latest request the second; the others compete for room as in a single summary.
 * - Decisions: earlier decisions rank below new ones of the same strength and are let go oldest
 *   first when the section is full.
 * - Files and commands: one line per file and per command across all summaries; a file or command
 *   used again has its counts summed and its latest outcome. Files and commands not used again
 *   rank below new ones of the same kind and are let go oldest first.
 * - Unresolved: the latest user request and the agent's last words carry over until newer ones
 *   replace them. An earlier open failure carries over while the new part holds fewer tool
 *   results than Unresolved looks back over (six) and no later call of the same command or file
 *   superseded it; the failure stays in Files and commands either way.
 * - `(N more not shown)` in Goals, Decisions and Files and commands counts what this summary and
 *   the earlier ones left out (an item left out once and seen again later may count twice).
 * The earlier summaries' headers and notice lines are never copied, so summaries do not nest.
 */
export function extractiveSummary(request: SummarizeRequest, options: ExtractiveSummarizerOptions = {}): string {
  const { maxChars, maxRatio } = resolveExtractiveOptions(options);
  const transcript = transcriptText(request.messages);
  const statedLimit = statedCharLimit(request.messages);
  const byRatio = Math.max(MIN_EXTRACTIVE_SUMMARY_CHARS, Math.floor(transcript.length * maxRatio));
  const budget = Math.min(maxChars, byRatio, statedLimit ?? Number.POSITIVE_INFINITY);
  const parsed = parseTranscript(transcript);
  return renderSummary(buildSections(parsed), budget, parsed.earlier.omitted);
}

// ---------------------------------------------------------------------------------------------
// Reading the request

/** The transcript: the user message's text without the renderer's first line. */
function transcriptText(messages: readonly ChatMessage[]): string {
  const userMessages = messages.filter((message) => message.role === 'user');
  const source =
    userMessages.length > 0
      ? userMessages
      : messages.filter((message) => message.role !== 'system' && message.role !== 'developer');
  const text = source.map((message) => contentText(message.content)).join('\n\n');
  return text.replace(/^Transcript to summarize \(\d+ messages?\):\r?\n(?:\r?\n)?/, '');
}

/**
 * The largest length the instruction allows, from the too-long retry's "under N characters"
 * (`tooLongInstruction`); "at most N characters" is read too. `undefined` when none is stated.
 */
function statedCharLimit(messages: readonly ChatMessage[]): number | undefined {
  let limit: number | undefined;
  for (const message of messages) {
    if (message.role !== 'system' && message.role !== 'developer') continue;
    const text = contentText(message.content);
    for (const match of text.matchAll(
      /\b(under|fewer than|less than|at most|no more than)\s+([\d,_]+)\s+characters\b/gi,
    )) {
      const amount = Number((match[2] ?? '').replace(/[,_]/g, ''));
      if (!Number.isFinite(amount)) continue;
      const allowed = /^(under|fewer than|less than)$/i.test(match[1] ?? '') ? amount - 1 : amount;
      limit = limit === undefined ? allowed : Math.min(limit, allowed);
    }
  }
  return limit === undefined ? undefined : Math.max(0, limit);
}

// ---------------------------------------------------------------------------------------------
// Parsing the transcript (`[user]`, `[assistant]`, `[tool result NAME (id)]`, `-> call NAME (id) ARGS`)

interface ParsedCall {
  name: string;
  id: string;
  /** The argument string as rendered (possibly capped, so possibly not valid JSON). */
  args: string;
  /** Position of the call among all blocks and calls, for ordering. */
  order: number;
  result?: ParsedResult;
}

interface ParsedResult {
  text: string;
  /** The line that made the result look like an error, if one did. */
  error: string | undefined;
  order: number;
}

interface ParsedTranscript {
  /** False when no block header was found: everything else is a best effort on raw text. */
  structured: boolean;
  /** User turns, without the engine's earlier summaries (those are in `earlier`). */
  users: Array<{ text: string; order: number }>;
  assistants: Array<{ text: string; order: number }>;
  /** What earlier summaries in the transcript carry over. */
  earlier: EarlierSummaries;
  calls: ParsedCall[];
  /** Tool results in transcript order (answered or not). */
  results: Array<{ name: string | undefined; call: ParsedCall | undefined; result: ParsedResult }>;
  raw: string;
}

const BLOCK_HEADER = /^\[(user|assistant|system|developer|tool result(?: (.+?))? \((.*)\)|tool)\]$/;
const CALL_LINE = /^-> call (\S+) \(([^()]*)\) ?(.*)$/;
const HARNESS_CUT = /» \[truncated by the harness: \d+ more characters\]$/;

function parseTranscript(raw: string): ParsedTranscript {
  const parsed: ParsedTranscript = {
    structured: false,
    users: [],
    assistants: [],
    earlier: readEarlierSummaries([]),
    calls: [],
    results: [],
    raw,
  };
  const lines = raw.split(/\r?\n/);
  const blocks: Array<{ header: RegExpExecArray; body: string[] }> = [];
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index] ?? '';
    // The renderer joins blocks with a blank line: a header only counts after one, so a line
    // such as `[user]` inside a tool result does not split it.
    const header = index === 0 || lines[index - 1] === '' ? BLOCK_HEADER.exec(line) : null;
    if (header !== null) {
      const previous = blocks.at(-1);
      if (previous !== undefined && previous.body.at(-1) === '') previous.body.pop();
      blocks.push({ header, body: [] });
    } else {
      blocks.at(-1)?.body.push(line);
    }
  }
  if (blocks.length === 0) return parsed;
  parsed.structured = true;

  const callsById = new Map<string, ParsedCall>();
  const summaries: string[] = [];
  let order = 0;
  for (const { header, body } of blocks) {
    order += 1;
    const label = header[1] ?? '';
    if (label === 'user') {
      // The engine's own test for its synthetic message, so the two cannot drift apart.
      const text = body.join('\n');
      if (isSummaryMessage({ role: 'user', content: text })) summaries.push(text);
      else parsed.users.push({ text, order });
    } else if (label === 'assistant') {
      const textLines: string[] = [];
      let current: ParsedCall | undefined;
      for (const line of body) {
        const call = CALL_LINE.exec(line);
        if (call !== null) {
          order += 1;
          current = { name: call[1] ?? '', id: call[2] ?? '', args: call[3] ?? '', order };
          parsed.calls.push(current);
          callsById.set(current.id, current);
        } else if (current !== undefined) current.args += `\n${line}`;
        else textLines.push(line);
      }
      parsed.assistants.push({ text: textLines.join('\n'), order });
    } else if (label.startsWith('tool')) {
      const id = header[3];
      const call = id === undefined ? undefined : callsById.get(id);
      const text = body.join('\n');
      const result: ParsedResult = { text, error: errorLine(text), order };
      if (call !== undefined && call.result === undefined) call.result = result;
      parsed.results.push({ name: header[2] ?? call?.name, call, result });
    }
  }
  parsed.earlier = readEarlierSummaries(summaries);
  return parsed;
}

// ---------------------------------------------------------------------------------------------
// Reading earlier summaries back (a summary of a summary merges, it does not nest)

/** The sections of the engine's earlier summaries, oldest first, as lines ready to be reused. */
interface EarlierSummaries {
  /** Goal items (a head line and its `  - ` continuation lines). */
  goals: string[];
  decisions: string[];
  /** File, command and other-tool lines, parsed again when the new ones are built. */
  files: string[];
  /** Open items other than the latest request: failures, calls without results, the agent's last words. */
  unresolved: string[];
  /** The text after `Latest user request: ` in the newest earlier summary that had one. */
  latestRequest: string | undefined;
  /** The `N` of each section's `(N more not shown)`, summed over the earlier summaries (0 for Unresolved). */
  omitted: Record<SectionName, number>;
}

type SectionName = (typeof SECTIONS)[number][0];

const LATEST_REQUEST = 'Latest user request: ';
/** The notice without its emphasis marks: found however an item quoted it. */
const NOTICE_WORDS = EXTRACTIVE_SUMMARY_NOTICE.replace(/^_|_$/g, '');
const LAST_AGENT_MESSAGE = 'Last agent message: ';
const OMITTED_LINE = /^- \((\d+) more not shown\)$/;

/**
 * A heading of one of the four sections, as we write it (`## Goals`) or as a model may
 * (`### Goals`, `**Goals:**`, `Goals:`). A bare `Goals` line is not taken for a heading.
 */
function sectionOfHeading(line: string): SectionName | undefined {
  const trimmed = line.trim();
  if (!/^(?:#{1,6}\s|\*\*)/.test(trimmed) && !trimmed.endsWith(':')) return undefined;
  const name = trimmed
    .replace(/^#{1,6}\s+/, '')
    .replace(/\*\*/g, '')
    .replace(/:$/, '')
    .trim()
    .toLowerCase();
  return SECTIONS.find(([, heading]) => heading.slice(3).toLowerCase() === name)?.[0];
}

/**
 * Lines a summary must never copy from an earlier one: the engine's header, the notice, and the
 * section names that summaries written before merging existed copied into their Goals as items.
 */
function isScaffolding(line: string): boolean {
  const text = withoutMarker(line.trim());
  if (isSummaryMessage({ role: 'user', content: `${text}\n\n` })) return true;
  if (text.includes(NOTICE_WORDS)) return true;
  return SECTIONS.some(([, heading]) => heading.slice(3) === text);
}

/** Reads each earlier summary's sections; the newest one's latest request wins. */
function readEarlierSummaries(texts: readonly string[]): EarlierSummaries {
  const earlier: EarlierSummaries = {
    goals: [],
    decisions: [],
    files: [],
    unresolved: [],
    latestRequest: undefined,
    omitted: { goals: 0, decisions: 0, files: 0, unresolved: 0 },
  };
  for (const text of texts) {
    for (const { section, lines } of summaryItems(text)) {
      const head = lines[0] ?? '';
      const omitted = OMITTED_LINE.exec(head);
      if (head === NOTHING) continue;
      if (omitted !== null) {
        // Unresolved lets go of what is no longer recent rather than what does not fit: nothing to count.
        if (section !== 'unresolved') earlier.omitted[section] += Number(omitted[1]);
        continue;
      }
      const body = head.slice(2);
      if (section === 'unresolved' && body.startsWith(LATEST_REQUEST))
        earlier.latestRequest = body.slice(LATEST_REQUEST.length);
      else earlier[section].push(lines.join('\n'));
    }
  }
  return earlier;
}

/**
 * The items of one earlier summary by section: a `- ` line with the indented lines under it.
 * Other lines (a model's prose) are items of their own; lines before the first heading count as
 * Decisions. Scaffolding is dropped, and the lines under a scaffolding item (a summary nested by
 * a version of this summarizer that did not merge) become items of their own: they are the facts.
 */
function summaryItems(text: string): Array<{ section: SectionName; lines: string[] }> {
  const items: Array<{ section: SectionName; lines: string[] }> = [];
  let section: SectionName = 'decisions';
  let current: { section: SectionName; lines: string[] } | undefined;
  let underScaffolding = false;
  // The first line is the engine's header (the caller checked it with `isSummaryMessage`).
  for (const line of text.split(/\r?\n/).slice(1)) {
    const heading = sectionOfHeading(line);
    if (line.trim() === '' || heading !== undefined) {
      section = heading ?? section;
      current = undefined;
      underScaffolding = false;
      continue;
    }
    const indented = /^\s/.test(line);
    if (isScaffolding(line)) {
      if (!indented || current === undefined) {
        current = undefined;
        underScaffolding = true;
      }
      continue;
    }
    // Our own lines are far shorter; the cap only bounds a model's paragraphs.
    const copied = clip(withoutMarker(line.trim()), 600);
    if (copied === '') continue;
    if (indented && current !== undefined) {
      current.lines.push(`  - ${copied}`);
      continue;
    }
    if (indented && underScaffolding) {
      items.push({ section, lines: [`- ${copied}`] });
      continue;
    }
    const trimmed = line.trim();
    current = { section, lines: [OMITTED_LINE.test(trimmed) || trimmed === NOTHING ? trimmed : `- ${copied}`] };
    underScaffolding = false;
    items.push(current);
  }
  return items;
}

// ---------------------------------------------------------------------------------------------
// Small extractors

/** Lines worth reading: trimmed, not blank, outside fenced code blocks. */
function proseLines(text: string): string[] {
  const lines: string[] = [];
  let inFence = false;
  for (const line of text.split(/\r?\n/)) {
    if (/^\s*(```|~~~)/.test(line)) {
      inFence = !inFence;
      continue;
    }
    const trimmed = line.trim();
    if (!inFence && trimmed !== '') lines.push(trimmed);
  }
  return lines;
}

/** Cuts copied text to `max` characters, marking the cut with an ellipsis. */
function clip(text: string, max: number): string {
  const trimmed = text.trim().replace(HARNESS_CUT, '').trimEnd();
  return trimmed.length <= max ? trimmed : `${trimmed.slice(0, max - 1).trimEnd()}…`;
}

/** Markdown list and heading markers removed, so a copied line can sit in our own list. */
function withoutMarker(line: string): string {
  return line.replace(/^(?:#{1,6}\s+|[-*+•]\s+|\d{1,3}[.)]\s+|>\s*)+/, '').trim();
}

function sentencesOf(line: string): string[] {
  return line
    .split(/(?<=[.!?])\s+(?=[A-Z`"'([])/)
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence !== '');
}

const STRONG_DECISION =
  /\b(decid\w*|chose|choos\w*|instead|because|root cause|the (?:issue|problem|bug|cause|fix) (?:is|was)|turns out|confirm\w*|conclu\w*|ruled out|doesn't work|does not work|won't work|works now|fixed|resolved|the fix)\b/i;
const WEAK_DECISION =
  /\b(found|fix(?:es)?|works?|worked|should|need to|must|approach|plan|so that|therefore|caus\w*|problem|issue|will)\b/i;

function decisionScore(sentence: string): number {
  if (STRONG_DECISION.test(sentence)) return 3;
  if (WEAK_DECISION.test(sentence)) return 2;
  return 0;
}

const ERROR_PATTERNS: ReadonlyArray<{ pattern: RegExp; rank: number }> = [
  // Most specific first: the exception line a traceback ends with.
  { pattern: /^(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit)\b(?::|$)/, rank: 5 },
  {
    pattern:
      /<tool_use_error>|\bsyntax error\b|\bNo such file or directory\b|\bcommand not found\b|\bPermission denied\b/i,
    rank: 4,
  },
  {
    pattern: /^(?:ERROR|Error|error(?:\[\w+\])?|fatal|FAILED|FAIL)\b:?|^E {2,}\S|\b[1-9]\d* (?:failed|errors?)\b/,
    rank: 3,
  },
  { pattern: /^Exit code [1-9]\d*\b|^Traceback \(most recent call last\):/, rank: 1 },
];

/** The most telling line of a result that looks like an error, or `undefined` when none does. */
function errorLine(text: string): string | undefined {
  let best: { line: string; rank: number } | undefined;
  for (const rawLine of text.split(/\r?\n/)) {
    // Tool output prefixes ("OBSERVATION:", "Observation: ") are the harness's, not the error's.
    const line = rawLine.replace(/^(?:OBSERVATION|Observation):\s*/, '').trimEnd();
    if (line === '') continue;
    for (const { pattern, rank } of ERROR_PATTERNS) {
      // A later exception line of the same rank wins: a traceback ends with its cause.
      if (pattern.test(line) && (best === undefined || rank > best.rank || (rank === 5 && best.rank === 5))) {
        best = { line: line.trim(), rank };
        break;
      }
    }
  }
  return best === undefined ? undefined : clip(best.line.replace(/<\/?tool_use_error>/g, ''), 160);
}

/** Parses call arguments; capped arguments are no longer JSON, so fields fall back to a regex. */
function argumentFields(args: string): Record<string, string> {
  const fields: Record<string, string> = {};
  try {
    const value: unknown = JSON.parse(args);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const [key, field] of Object.entries(value)) if (typeof field === 'string') fields[key] = field;
      return fields;
    }
  } catch {
    // fall through to the regex
  }
  for (const match of args.matchAll(/"([\w-]+)"\s*:\s*"((?:[^"\\]|\\.)*)(?:"|$)/g)) {
    const key = match[1];
    const body = match[2];
    if (key === undefined || body === undefined || key in fields) continue;
    try {
      fields[key] = String(JSON.parse(`"${body.replace(/\\$/, '')}"`));
    } catch {
      fields[key] = body;
    }
  }
  return fields;
}

const PATH_KEYS = ['path', 'file_path', 'filepath', 'filename', 'file', 'notebook_path', 'directory', 'dir'];
const COMMAND_KEYS = ['command', 'cmd', 'script'];
const SHELL_TOOLS =
  /^(bash|shell|sh|zsh|terminal|execute_bash|run_command|run_shell_command|exec|execute_command|run)$/i;

const PATH_PATTERN = /(?<![\w./:~-])((?:\.{1,2}\/|\/|~\/)?(?:[\w@+-][\w.@+-]*\/)+[\w@+-][\w.@+-]*)/g;
const BARE_FILE_PATTERN =
  /(?<![\w./-])([\w-][\w.-]*\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|java|kt|go|rs|rb|php|c|cc|cpp|h|hpp|cs|swift|scala|sh|json|ya?ml|toml|ini|cfg|md|rst|txt|html|css|sql|xml|gradle|lock))\b/g;

/** Paths every shell transcript mentions and no summary needs. */
const NOISE_PATHS = new Set(['/dev/null', '/bin/bash', '/bin/sh', '/usr/bin/env', '/dev/stdout', '/dev/stderr']);

function looksLikePath(candidate: string): boolean {
  if (NOISE_PATHS.has(candidate)) return false;
  const last = candidate.split('/').at(-1) ?? '';
  if (!/[A-Za-z]/.test(candidate)) return false;
  if (/\.[A-Za-z][A-Za-z0-9]{0,7}$/.test(last)) return true;
  // An absolute path of two or more segments names a place even without an extension.
  return candidate.startsWith('/') && candidate.split('/').filter((segment) => segment !== '').length >= 2;
}

/** Paths with a slash (`src/x.py`, `/a/b.c`, `/testbed/moto`) found in `text`. */
function pathsIn(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(PATH_PATTERN)) {
    const candidate = (match[1] ?? '').replace(/[.,:;]+$/, '');
    if (looksLikePath(candidate)) found.push(candidate);
  }
  return found;
}

/** Paths in a command line, and file names with a known extension (`python reproduce.py`). */
function pathsInCommand(command: string): string[] {
  const found = pathsIn(command);
  for (const match of command.matchAll(BARE_FILE_PATTERN)) {
    const name = match[1] ?? '';
    if (!found.some((path) => path.endsWith(`/${name}`) || path === name)) found.push(name);
  }
  return found;
}

function firstLine(text: string): string {
  return text.split(/\r?\n/).find((line) => line.trim() !== '') ?? '';
}

/** Inline code that survives backticks inside it. */
function code(text: string): string {
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
}

// ---------------------------------------------------------------------------------------------
// The four sections

/** One line the summary may hold: higher `priority` is kept first, `order` sorts what is kept. */
interface Candidate {
  text: string;
  priority: number;
  order: number;
}

interface Sections {
  goals: Candidate[];
  decisions: Candidate[];
  files: Candidate[];
  unresolved: Candidate[];
}

function buildSections(transcript: ParsedTranscript): Sections {
  if (!transcript.structured) return rawTextSections(transcript.raw);
  return {
    goals: goalCandidates(transcript),
    decisions: decisionCandidates(transcript.assistants, transcript.earlier.decisions),
    files: fileAndCommandCandidates(transcript),
    unresolved: unresolvedCandidates(transcript),
  };
}

/**
 * The opening of a user turn: its first line, and when that line is short (an introduction such
 * as "Fix this bug ...:" or a bare path), the few lines after it, up to about 400 characters.
 * Lines that are only a markup tag (`<uploaded_files>`) carry nothing and are skipped.
 */
function goalLines(text: string): string[] {
  const lines = proseLines(text).filter((line) => !/^<\/?[\w-]+>$/.test(line));
  const first = lines[0];
  if (first === undefined) return [];
  if (first.length >= 120) return [clip(withoutMarker(first), 240)];
  const picked: string[] = [];
  let used = 0;
  for (const line of lines.slice(0, 5)) {
    const copied = clip(withoutMarker(line), 200);
    if (copied === '' || (picked.length > 0 && used + copied.length > 400)) break;
    picked.push(copied);
    used += copied.length;
  }
  return picked;
}

/** An item's lines without our list markers (`- `, `  - `). */
function itemLines(item: string): string[] {
  return item.split('\n').map((line) => line.replace(/^\s*- /, ''));
}

function goalCandidates(transcript: ParsedTranscript): Candidate[] {
  const candidates: Candidate[] = [];
  const seen = new Set<string>();
  // Earlier summaries' goals stand for the older user turns: one list, oldest first, so the run's
  // first request keeps its place however many summaries ago it was made.
  const carried = transcript.earlier.goals;
  const turns = [
    ...carried.map((item, index) => {
      const [head = '', ...rest] = itemLines(item);
      return { lines: [clip(head, 240), ...rest.map((line) => clip(line, 200))], order: index - carried.length };
    }),
    ...transcript.users.map((turn) => ({ lines: goalLines(turn.text), order: turn.order })),
  ];
  const last = turns.length - 1;
  turns.forEach((turn, index) => {
    const [head, ...rest] = turn.lines;
    if (head === undefined || seen.has(head)) return;
    seen.add(head);
    // The first request sets the task and the latest one is where the run stands; of the others
    // the newer rank higher, so a long run's goals follow what the user asked for lately.
    const priority = index === 0 ? 100 : index === last ? 90 : 10 + (40 * index) / Math.max(1, last);
    const text = [`- ${head}`, ...rest.map((line) => `  - ${line}`)].join('\n');
    candidates.push({ text, priority, order: turn.order });
  });
  return candidates;
}

/** Decision sentences of the assistant turns, then those of earlier summaries (`carried`, oldest first). */
function decisionCandidates(assistants: ParsedTranscript['assistants'], carried: readonly string[] = []): Candidate[] {
  const candidates: Candidate[] = [];
  const seen = new Set<string>();
  assistants.forEach((turn, turnIndex) => {
    const sentences = proseLines(turn.text)
      .filter((line) => !line.startsWith('|'))
      .flatMap((line) => sentencesOf(withoutMarker(line)));
    sentences.forEach((sentence, sentenceIndex) => {
      const score = decisionScore(sentence);
      if (score === 0 && sentenceIndex > 0) return;
      if (sentence.length < 12) return;
      const copied = clip(sentence, 240);
      const key = copied.toLowerCase().replace(/\s+/g, ' ');
      if (seen.has(key)) return;
      seen.add(key);
      // Recent reasoning matters most to an agent that continues; ties go to the later turn.
      const recency = turnIndex / Math.max(1, assistants.length);
      candidates.push({
        text: `- ${copied}`,
        priority: (score === 0 ? 1 : score) + recency,
        order: turn.order + sentenceIndex / 1000,
      });
    });
  });
  // Earlier decisions are older than every turn here: the same strength ranks them lower, in
  // [-1, 0) by age, so a full section lets go of the oldest first. A repeat of a new one is dropped.
  const lines = carried.flatMap(itemLines).map((line) => clip(line, 240));
  lines.forEach((line, index) => {
    const key = line.toLowerCase().replace(/\s+/g, ' ');
    if (line === '' || seen.has(key)) return;
    seen.add(key);
    const score = decisionScore(line);
    candidates.push({
      text: `- ${line}`,
      priority: (score === 0 ? 1 : score) + (index - lines.length) / lines.length,
      order: index - lines.length,
    });
  });
  return candidates;
}

interface FileUse {
  path: string;
  tools: Map<string, number>;
  firstOrder: number;
  /** Order of the latest call or result that named it: negative while only earlier summaries did. */
  lastOrder: number;
  lastError: string | undefined;
  /** Named in a call's arguments (acted on) rather than only seen in a result. */
  acted: boolean;
  edited: boolean;
  mentions: number;
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

/** `name ×3` → [name, 3]; a name without a count was used once. */
function countedName(text: string): [string, number] {
  const match = /^(.+?)(?: ×(\d+))?$/.exec(text.trim());
  return [match?.[1] ?? text.trim(), Number(match?.[2] ?? 1)];
}

/**
 * The files, commands and other tools of earlier summaries, read back from the lines this
 * summarizer writes, so the new transcript's uses add to them. Orders are negative (older than
 * every block of the transcript), oldest lowest. Lines in another format come back as `verbatim`.
 */
function earlierUses(lines: readonly string[]): {
  files: Map<string, FileUse>;
  commands: Map<string, CommandUse>;
  otherTools: Map<string, ToolUse>;
  verbatim: Candidate[];
} {
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
      const key = `${tool}\u0000${fromCode(span)}`;
      const earlierUse = commands.get(key);
      commands.set(key, {
        command: fromCode(span),
        tool,
        times: (earlierUse?.times ?? 0) + Number(times ?? 1),
        lastOrder: order,
        outcome: error !== undefined ? 'error' : noResult !== undefined ? 'no result' : 'done',
        error,
      });
    } else if (file !== null) {
      const [, span = '', detail = ''] = file;
      const path = fromCode(span);
      const cut = detail.indexOf(FILE_ERROR);
      const toolList = cut < 0 ? detail : detail.slice(0, cut);
      const seen = /^(?:seen in results|mentioned) ×(\d+)$/.exec(toolList);
      const use = files.get(path) ?? {
        path,
        tools: new Map(),
        firstOrder: order,
        lastOrder: order,
        lastError: undefined,
        acted: false,
        edited: false,
        mentions: 0,
      };
      use.lastOrder = order;
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
      files.set(path, use);
    } else if (others !== null) {
      for (const match of (others[1] ?? '').matchAll(
        /(?:^|, )([^,]+?) ×(\d+)(?: \((\d+) looked like errors\))?(?=, |…?$)/g,
      )) {
        const name = match[1] ?? '';
        const use = otherTools.get(name) ?? { calls: 0, errors: 0, order };
        use.calls += Number(match[2]);
        use.errors += Number(match[3] ?? 0);
        otherTools.set(name, use);
      }
    } else {
      verbatim.push({ text: line, priority: 4 + (index + 1) / (lines.length + 1), order });
    }
  });
  return { files, commands, otherTools, verbatim };
}

/**
 * How far an earlier-only use ranks below a new one: in [0.5, 1) by where the earlier summary
 * listed it (its last line nearest 0.5), so a full section lets go of the oldest first. 0 for a
 * use the transcript has.
 */
function staleness(lastOrder: number): number {
  return lastOrder < 0 ? 1 - 1 / (1 - lastOrder) : 0;
}

function fileAndCommandCandidates(transcript: ParsedTranscript): Candidate[] {
  const { files, commands, otherTools, verbatim } = earlierUses(transcript.earlier.files);

  const useFile = (path: string, order: number, acted: boolean): FileUse => {
    const existing = files.get(path);
    if (existing !== undefined) {
      existing.acted ||= acted;
      existing.mentions += 1;
      existing.lastOrder = order;
      return existing;
    }
    const created: FileUse = {
      path,
      tools: new Map(),
      firstOrder: order,
      lastOrder: order,
      lastError: undefined,
      acted,
      edited: false,
      mentions: 1,
    };
    files.set(path, created);
    return created;
  };

  for (const call of transcript.calls) {
    const fields = argumentFields(call.args);
    const subcommand = COMMAND_KEYS.map((key) => fields[key]).find(
      (value) => value !== undefined && value.trim() !== '',
    );
    const isCommandLine = subcommand !== undefined && (SHELL_TOOLS.test(call.name) || /\s/.test(subcommand.trim()));
    const argPaths = PATH_KEYS.map((key) => fields[key]).filter(
      (value): value is string => value !== undefined && value.trim() !== '',
    );
    const paths = [...argPaths.map((path) => path.trim()), ...(isCommandLine ? pathsInCommand(subcommand) : [])];
    const error = call.result?.error;
    // str_replace_editor's `command` is a sub-action (`view`, `create`), not a shell command.
    const action = subcommand !== undefined && !isCommandLine ? `${call.name} ${subcommand.trim()}` : call.name;

    for (const path of new Set(paths)) {
      const use = useFile(path, call.order, true);
      use.tools.set(action, (use.tools.get(action) ?? 0) + 1);
      use.lastError = error;
      use.edited ||= EDIT_TOOLS.test(action);
    }
    if (isCommandLine) {
      const line = firstLine(subcommand).trim();
      const command = clip(line, 160) + (subcommand.trim() !== line ? ' …' : '');
      const key = `${call.name}\u0000${command}`;
      const use = commands.get(key) ?? {
        command,
        tool: call.name,
        times: 0,
        lastOrder: call.order,
        outcome: 'done',
        error: undefined,
      };
      use.times += 1;
      use.lastOrder = call.order;
      use.outcome = call.result === undefined ? 'no result' : error === undefined ? 'done' : 'error';
      use.error = error;
      commands.set(key, use);
    }
    if (!isCommandLine && paths.length === 0) {
      const use = otherTools.get(call.name) ?? { calls: 0, errors: 0, order: call.order };
      use.calls += 1;
      if (error !== undefined) use.errors += 1;
      otherTools.set(call.name, use);
    }
  }
  for (const { result } of transcript.results) {
    for (const path of pathsIn(result.text)) useFile(path, result.order, false);
  }

  const candidates: Candidate[] = [...verbatim];
  const lastOrder = Math.max(1, ...transcript.calls.map((call) => call.order));
  for (const use of files.values()) {
    if (!use.acted && use.mentions < 2) continue;
    const tools = [...use.tools].map(([tool, times]) => (times > 1 ? `${tool} ×${times}` : tool)).join(', ');
    const detail = use.acted ? ` — ${tools}` : ` — seen in results ×${use.mentions}`;
    const error = use.lastError === undefined ? '' : `${FILE_ERROR}${use.lastError}`;
    // A file the run changed stays worth knowing however long ago (staleness only breaks ties
    // between mention counts); one it only read or saw falls to the rank of an old command.
    const stale = (use.edited ? 0.09 : 10) * staleness(use.lastOrder);
    const priority = (use.edited ? 30 : use.acted ? 20 : 5) + Math.min(use.mentions, 10) / 10 - stale;
    candidates.push({ text: `- ${code(use.path)}${detail}${error}`, priority, order: use.firstOrder });
  }
  for (const use of commands.values()) {
    const times = use.times > 1 ? ` ×${use.times}` : '';
    const outcome =
      use.outcome === 'error'
        ? ` → error: ${use.error ?? ''}`
        : use.outcome === 'no result'
          ? ' → no result recorded'
          : '';
    // Later commands are the ones the agent builds on; failed ones say what not to repeat.
    const recency = use.lastOrder > 0 ? (use.lastOrder / lastOrder) * 10 : -staleness(use.lastOrder);
    const priority = 10 + recency + (use.outcome === 'error' ? 5 : 0);
    candidates.push({
      text: `- ${code(use.command)} (${use.tool}${times})${outcome}`,
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

/** Unresolved looks for errors among this many of the latest tool results. */
const RECENT_RESULTS = 6;

function unresolvedCandidates(transcript: ParsedTranscript): Candidate[] {
  const candidates: Candidate[] = [];
  const { earlier } = transcript;
  const latestUser = transcript.users.at(-1);
  const opening = latestUser === undefined ? [] : goalLines(latestUser.text);
  // No user turn since the earlier summary: the request it recorded is still the latest.
  const request = opening.find((line) => line.length >= 20) ?? opening[0] ?? earlier.latestRequest;
  if (request !== undefined) candidates.push({ text: `- ${LATEST_REQUEST}${request}`, priority: 100, order: -1 });

  // Errors among the latest tool results that no later identical call cleared.
  const recent = transcript.results.slice(-RECENT_RESULTS);
  for (const [index, { name, call, result }] of recent.entries()) {
    if (result.error === undefined) continue;
    const identity = call === undefined ? undefined : `${call.name}\u0000${call.args}`;
    const clearedLater = recent
      .slice(index + 1)
      .some(
        (later) =>
          later.call !== undefined &&
          `${later.call.name}\u0000${later.call.args}` === identity &&
          later.result.error === undefined,
      );
    if (clearedLater) continue;
    const subject = call === undefined ? (name ?? 'a tool') : callSubject(call);
    candidates.push({ text: `- ${subject} failed: ${result.error}`, priority: 80 + index, order: result.order });
  }
  for (const call of transcript.calls.filter((item) => item.result === undefined).slice(-3)) {
    candidates.push({ text: `- No result recorded for ${callSubject(call)}`, priority: 70, order: call.order });
  }

  // The agent's last words say where it stood; skip headings and one-word lines ("Perfect!").
  let lastWords = false;
  for (const turn of [...transcript.assistants].reverse()) {
    const line = proseLines(turn.text)
      .map(withoutMarker)
      .find((candidate) => candidate.length >= 20);
    if (line === undefined) continue;
    candidates.push({ text: `- ${LAST_AGENT_MESSAGE}${clip(line, 200)}`, priority: 60, order: turn.order });
    lastWords = true;
    break;
  }

  // Earlier open items are older than every result here: they are still among the latest
  // results only while there are fewer than RECENT_RESULTS new ones, and a later call of the
  // same command, file or tool says how that went instead. Earlier last words last until new ones.
  const subjects = new Set(transcript.calls.map(callSubject));
  const open = earlier.unresolved.filter((item) => {
    if (item.startsWith(`- ${LAST_AGENT_MESSAGE}`)) return !lastWords;
    if (transcript.results.length >= RECENT_RESULTS) return false;
    const subject = /^- (.+?) failed: /.exec(item)?.[1] ?? /^- No result recorded for (.+)$/.exec(item)?.[1];
    return subject === undefined || !subjects.has(subject);
  });
  open.forEach((item, index) => {
    const rank = (index + 1) / (open.length + 1);
    candidates.push({
      text: item,
      priority: item.startsWith(`- ${LAST_AGENT_MESSAGE}`) ? 60 : 65 + rank,
      order: -1 + rank,
    });
  });
  return candidates;
}

/** How a call is named in a line: its command, else its path, else its tool name. */
function callSubject(call: ParsedCall): string {
  const fields = argumentFields(call.args);
  const command = COMMAND_KEYS.map((key) => fields[key]).find(
    (value) => value !== undefined && /\s/.test(value.trim()),
  );
  if (command !== undefined) return `${code(clip(firstLine(command), 120))} (${call.name})`;
  const path = PATH_KEYS.map((key) => fields[key]).find((value) => value !== undefined && value.trim() !== '');
  if (path !== undefined) return `${call.name} ${code(path.trim())}`;
  return call.name;
}

/** Best effort on text that is not our transcript format: decision sentences, paths, error lines. */
function rawTextSections(raw: string): Sections {
  const lines = proseLines(raw);
  const goals = lines
    .slice(0, 1)
    .map((line, order) => ({ text: `- ${clip(withoutMarker(line), 240)}`, priority: 100, order }));
  const decisions = decisionCandidates([{ text: raw, order: 0 }]).filter((candidate) => candidate.priority >= 2);
  const counts = new Map<string, number>();
  for (const path of pathsIn(raw)) counts.set(path, (counts.get(path) ?? 0) + 1);
  const files = [...counts].map(([path, times], order) => ({
    text: `- ${code(path)}${times > 1 ? ` — mentioned ×${times}` : ''}`,
    priority: times,
    order,
  }));
  for (const [order, line] of lines.entries()) {
    const command = /^\$ (.+)$/.exec(line)?.[1];
    if (command !== undefined) files.push({ text: `- ${code(clip(command, 160))}`, priority: 5, order: 1e9 + order });
  }
  const errors = lines.map((line) => errorLine(line)).filter((line): line is string => line !== undefined);
  const unresolved = errors
    .slice(-3)
    .map((line, order) => ({ text: `- Error seen: ${line}`, priority: 50 + order, order }));
  return { goals, decisions, files, unresolved };
}

// ---------------------------------------------------------------------------------------------
// Fitting the sections into the budget

/**
 * A section's body within `allowance` characters: the highest-priority candidates that fit (an
 * item of several lines by its first lines alone if need be), in transcript order, and a line
 * counting the ones that did not plus the `earlierOmitted` that earlier summaries did not show.
 * Never empty: `NOTHING` when the section has no candidates and nothing was left out, the count
 * alone when none fits.
 */
function sectionBody(candidates: readonly Candidate[], allowance: number, earlierOmitted = 0): string {
  if (candidates.length === 0) return earlierOmitted > 0 ? omittedLine(earlierOmitted) : NOTHING;
  const ordered = [...candidates].sort((a, b) => a.order - b.order).map((candidate) => candidate.text);
  if (earlierOmitted > 0) ordered.push(omittedLine(earlierOmitted));
  const all = ordered.reduce((sum, line) => sum + line.length + 1, -1);
  if (all <= allowance) return ordered.join('\n');
  const ranked = [...candidates].sort((a, b) => b.priority - a.priority || a.order - b.order);
  const room = allowance - omittedLine(candidates.length + earlierOmitted).length;
  const kept: Candidate[] = [];
  let used = 0;
  for (const candidate of ranked) {
    // An item with lines under it (a goal's opening) that does not fit whole keeps the first lines
    // that do: the run's first request must not vanish because its details are long.
    const lines = candidate.text.split('\n');
    const fitting = lines
      .map((_, index) => lines.slice(0, lines.length - index).join('\n'))
      .find((text) => used + text.length + 1 <= room);
    if (fitting === undefined) continue;
    kept.push({ ...candidate, text: fitting });
    used += fitting.length + 1;
  }
  kept.sort((a, b) => a.order - b.order);
  return [
    ...kept.map((candidate) => candidate.text),
    omittedLine(candidates.length - kept.length + earlierOmitted),
  ].join('\n');
}

function omittedLine(omitted: number): string {
  return `- (${omitted} more not shown)`;
}

/** The order sections get room in, and their shares of it: what an agent needs to continue first. */
const FILL_ORDER: ReadonlyArray<readonly [keyof Sections, number]> = [
  ['unresolved', 0.2],
  ['goals', 0.2],
  ['files', 0.3],
  ['decisions', 0.3],
];

/**
 * Lays out the notice and the four sections within `budget` characters. Each section first gets
 * its share of the room; room a section does not need then goes to the others, in fill order.
 * When even the bare skeleton does not fit, the skeleton is returned (the engine then rejects it
 * as too long and falls back to the hard trim).
 */
function renderSummary(sections: Sections, budget: number, omitted: Readonly<Record<SectionName, number>>): string {
  const layout = (bodies: Record<keyof Sections, string>): string =>
    [EXTRACTIVE_SUMMARY_NOTICE, ...SECTIONS.map(([name, heading]) => `${heading}\n${bodies[name]}`)].join('\n\n');
  const body = (name: SectionName, allowance: number): string => sectionBody(sections[name], allowance, omitted[name]);
  const bodies: Record<keyof Sections, string> = {
    goals: body('goals', 0),
    decisions: body('decisions', 0),
    files: body('files', 0),
    unresolved: body('unresolved', 0),
  };
  const extra = budget - layout(bodies).length;
  if (extra <= 0) return layout(bodies);

  let spare = extra;
  for (const [name, share] of FILL_ORDER) {
    const before = bodies[name].length;
    bodies[name] = body(name, before + Math.floor(extra * share));
    spare -= bodies[name].length - before;
  }
  for (const [name] of FILL_ORDER) {
    const before = bodies[name].length;
    bodies[name] = body(name, before + spare);
    spare -= bodies[name].length - before;
  }
  return layout(bodies);
}
