// Sandbox-safe: the small extractors of the extractive summarizer — prose lines, sentences and how
// decided they sound, error lines, tool-call argument fields, file paths and commands.
import { CAP_MARKER } from '../../core/compaction/transcript.js';

/** Lines worth reading: trimmed, not blank, outside fenced code blocks. */
export function proseLines(text: string): string[] {
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

/** At most `max` characters, a cut marked with an ellipsis. */
export function clip(text: string, max: number): string {
  const trimmed = text.trim().replace(CAP_MARKER, '').trimEnd();
  return trimmed.length <= max ? trimmed : `${trimmed.slice(0, max - 1).trimEnd()}…`;
}

/** Without Markdown list and heading markers, and a file viewer's line number (`  30→`, `    5\t`). */
export function withoutMarker(line: string): string {
  return line
    .replace(/^\s*\d{1,7}(?:→|\t)/, '')
    .replace(/^(?:#{1,6}\s+|[-*+•]\s+|\d{1,3}[.)]\s+|>\s*)+/, '')
    .trim();
}

export function sentencesOf(line: string): string[] {
  return line
    .split(/(?<=[.!?])\s+(?=[A-Z`"'([])/)
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence !== '');
}

const STRONG_DECISION =
  /\b(decid\w*|chose|choos\w*|instead|because|root cause|the (?:issue|problem|bug|cause|fix) (?:is|was)|turns out|confirm\w*|conclu\w*|ruled out|doesn't work|does not work|won't work|works now|fixed|resolved|the fix)\b/i;
const WEAK_DECISION =
  /\b(found|fix(?:es)?|works?|worked|should|need to|must|approach|plan|so that|therefore|caus\w*|problem|issue|will)\b/i;

export function decisionScore(sentence: string): number {
  return STRONG_DECISION.test(sentence) ? 3 : WEAK_DECISION.test(sentence) ? 2 : 0;
}

/** Patterns of error lines and their rank: most specific first, the exception line a traceback ends with. */
const ERROR_PATTERNS: ReadonlyArray<readonly [RegExp, number]> = [
  [/^(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit)\b(?::|$)/, 5],
  [/<tool_use_error>|\bsyntax error\b|\bNo such file or directory\b|\bcommand not found\b|\bPermission denied\b/i, 4],
  [/^(?:ERROR|Error|error(?:\[\w+\])?|fatal|FAILED|FAIL)\b:?|^E {2,}\S|\b[1-9]\d* (?:failed|errors?)\b/, 3],
  [/^Exit code [1-9]\d*\b|^Traceback \(most recent call last\):/, 1],
];

/** A line that only labels the next (`ERROR:`, `FAILED`). */
const BARE_LABEL = /^(?:ERROR|Error|error|FAILED|FAIL|fatal):?$/;

/** The most telling line of a result that looks like an error, or `undefined` when none does. */
export function errorLine(text: string): string | undefined {
  let best: { line: string; rank: number; index: number } | undefined;
  const lines = text.split(/\r?\n/).map((rawLine) => rawLine.replace(/^(?:OBSERVATION|Observation):\s*/, '').trimEnd());
  lines.forEach((line, index) => {
    // The patterns go from the highest rank down: the first that matches ranks the line.
    const rank = line === '' ? undefined : ERROR_PATTERNS.find(([pattern]) => pattern.test(line))?.[1];
    // A later exception line of the same rank wins: a traceback ends with its cause.
    if (rank !== undefined && (best === undefined || rank > best.rank || (rank === 5 && best.rank === 5)))
      best = { line, rank, index };
  });
  if (best === undefined) return undefined;
  let found = best.line.replace(/<\/?tool_use_error>/g, '').trim();
  if (BARE_LABEL.test(found)) {
    const next = lines.slice(best.index + 1).find((line) => line.trim() !== '');
    if (next !== undefined) found = `${found.replace(/:$/, '')}: ${next.trim()}`;
  }
  return clip(found, 160);
}

/** Capped arguments are no longer JSON: their fields fall back to a regex. */
export function argumentFields(args: string): Record<string, string> {
  const fields: Record<string, string> = {};
  try {
    const value: unknown = JSON.parse(args);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const [key, field] of Object.entries(value)) if (typeof field === 'string') fields[key] = field;
      return fields;
    }
  } catch {
    // capped
  }
  for (const [, key, body] of args.matchAll(/"([\w-]+)"\s*:\s*"((?:[^"\\]|\\.)*)(?:"|$)/g)) {
    if (key === undefined || body === undefined || key in fields) continue;
    try {
      fields[key] = String(JSON.parse(`"${body.replace(/\\$/, '')}"`));
    } catch {
      fields[key] = body;
    }
  }
  return fields;
}

export const PATH_KEYS = ['path', 'file_path', 'filepath', 'filename', 'file', 'notebook_path', 'directory', 'dir'];
export const COMMAND_KEYS = ['command', 'cmd', 'script'];
export const SHELL_TOOLS =
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
  return candidate.startsWith('/') && candidate.split('/').filter((segment) => segment !== '').length >= 2;
}

/** Paths with a slash (`src/x.py`, `/a/b.c`, `/testbed/moto`) found in `text`. */
export function pathsIn(text: string): string[] {
  return [...text.matchAll(PATH_PATTERN)]
    .map((match) => (match[1] ?? '').replace(/[.,:;]+$/, ''))
    .filter(looksLikePath);
}

/** Paths in a command line, and file names with a known extension (`python reproduce.py`). */
export function pathsInCommand(command: string): string[] {
  const found = pathsIn(command);
  for (const match of command.matchAll(BARE_FILE_PATTERN)) {
    const name = match[1] ?? '';
    if (!found.some((path) => path.endsWith(`/${name}`) || path === name)) found.push(name);
  }
  return found;
}

export function firstLine(text: string): string {
  return text.split(/\r?\n/).find((line) => line.trim() !== '') ?? '';
}

/** Inline code that survives backticks inside it. */
export function code(text: string): string {
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
}
