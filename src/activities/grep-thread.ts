// Node only, in a worker thread: `grep`'s search. A pattern may backtrack for minutes on one line
// (`(a+)+$`); here that costs this thread alone, which grep.ts terminates at its deadline. Node
// built-ins and secret-paths.ts only: this file is loaded by path, with that one module beside it.
import { closeSync, constants, fstatSync, openSync, readdirSync, readSync, statSync, type Dirent } from 'node:fs';
import { constants as osConstants, setPriority } from 'node:os';
import { join, relative } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { allowsBeneath, secretRuleFor } from './secret-paths.js';

export interface GrepThreadInput {
  pattern: string;
  flags: string;
  /** The real path to search (a file or a directory), already checked to be inside `base`. */
  start: string;
  /** The real tool root: matches are shown relative to it. */
  base: string;
  maxResults: number;
  /** Files larger than this are skipped; the walk stops after `maxFiles` files. */
  maxFileBytes: number;
  maxFiles: number;
  skippedDirectories: string[];
  /** What the worker allows of the secret files (COMPACTOR_TOOLS_ALLOW); the others are skipped. */
  allow: string[];
  /** A matched line longer than this is shown as this many characters around its first match. */
  maxLineChars: number;
  /** The search stops before the matched lines it posted (a newline each) would pass this many characters. */
  maxOutputChars: number;
}

export type GrepThreadStop = 'results' | 'files' | 'output';

/** What the thread posts: each match as it is found (so a terminated search keeps them), then how it ended. */
export type GrepThreadMessage =
  { kind: 'match'; line: string } | { kind: 'done'; filesSearched: number; stoppedAt: GrepThreadStop | undefined };

/**
 * `line`, or `max` characters of it from a little before the match at `at`, saying what was left out.
 * Cut here, so that a 2 MB line of minified code never crosses to the worker's thread.
 */
function shownLine(line: string, at: number, max: number): string {
  if (line.length <= max) return line;
  const start = Math.max(0, Math.min(at - Math.floor(max / 4), line.length - max));
  const end = start + max;
  const before = start > 0 ? `[… ${start} characters] ` : '';
  const after = end < line.length ? ` [… ${line.length - end} more characters of this line]` : '';
  return `${before}${line.slice(start, end)}${after}`;
}

function search(input: GrepThreadInput, post: (message: GrepThreadMessage) => void): void {
  const regex = new RegExp(input.pattern, input.flags);
  const skipped = new Set(input.skippedDirectories);
  let matches = 0;
  let files = 0;
  let outputChars = 0;
  let stoppedAt: GrepThreadStop | undefined;
  /** Keeps the first limit reached. */
  const stop = (at: GrepThreadStop): void => {
    stoppedAt ??= at;
  };

  const searchFile = (file: string): void => {
    if (files >= input.maxFiles) return stop('files');
    // A secret file is never read, not even to look for a match.
    if (secretRuleFor(relative(input.base, file), input.allow) !== undefined) return;
    files += 1;
    let text: string | undefined;
    try {
      text = readSmall(file, input.maxFileBytes);
    } catch {
      return;
    }
    if (text === undefined || text.includes('\u0000')) return;
    const lines = text.split('\n');
    for (let index = 0; index < lines.length; index += 1) {
      if (matches >= input.maxResults) return stop('results');
      const line = lines[index] ?? '';
      const found = regex.exec(line);
      if (found !== null) {
        const shown = `${relative(input.base, file)}:${index + 1}: ${shownLine(line, found.index, input.maxLineChars)}`;
        // The first match is always kept: a result that found one must not read "no matches".
        if (matches > 0 && outputChars + shown.length + 1 > input.maxOutputChars) return stop('output');
        outputChars += shown.length + 1;
        matches += 1;
        post({ kind: 'match', line: shown });
      }
    }
  };
  /** A secret directory is entered only for what the worker allows beneath it. */
  const enters = (directory: string): boolean => {
    const path = relative(input.base, directory);
    return secretRuleFor(path, input.allow) === undefined || allowsBeneath(path, input.allow);
  };
  const walk = (directory: string): void => {
    let entries: Dirent[];
    try {
      entries = readdirSync(directory, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
    for (const entry of entries) {
      if (matches >= input.maxResults || stoppedAt !== undefined) return;
      const child = join(directory, entry.name);
      // Symlinks are not followed while walking: they could lead outside the root, or into a secret file.
      if (entry.isDirectory() && !skipped.has(entry.name) && enters(child)) walk(child);
      else if (entry.isFile()) searchFile(child);
    }
  };
  if (statSync(input.start).isDirectory()) walk(input.start);
  else searchFile(input.start);
  if (matches >= input.maxResults && stoppedAt !== 'output') stoppedAt = 'results';
  post({ kind: 'done', filesSearched: files, stoppedAt });
}

/**
 * A regular file of at most `limit` bytes as UTF-8, else undefined. Opened non-blocking and checked
 * on the descriptor: a FIFO (a wait for a writer no deadline can end) or a device is never read.
 */
function readSmall(file: string, limit: number): string | undefined {
  // Not through a symlink either: an entry the walk saw as a file may have been swapped for one since.
  const descriptor = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  try {
    const stats = fstatSync(descriptor);
    if (!stats.isFile() || stats.size > limit) return undefined;
    const buffer = Buffer.alloc(stats.size);
    const read = readSync(descriptor, buffer, 0, buffer.length, 0);
    return buffer.subarray(0, read).toString('utf8');
  } finally {
    closeSync(descriptor);
  }
}

if (parentPort !== null) {
  const port = parentPort;
  // Nice 19 for this thread alone: a backtracking pattern must not take its core from the event loop.
  // Only on Linux does setpriority(0) apply to the calling thread; elsewhere it would renice the worker.
  if (process.platform === 'linux') {
    try {
      setPriority(osConstants.priority.PRIORITY_LOW);
    } catch {
      // Not allowed here (a sandbox): the deadline and the caller's slots still bound the search.
    }
  }
  search(workerData as GrepThreadInput, (message) => port.postMessage(message));
}
