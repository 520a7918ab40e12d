// Node only (activities): the built-in read-only tools under a configured root, and the replay provider's `replayTool`.
import { constants } from 'node:fs';
import { open, opendir, realpath, stat } from 'node:fs/promises';
import { relative, resolve } from 'node:path';
import { Context } from '@temporalio/activity';
import type { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { FailureType } from '../core/errors.js';
import { failureMessage, nonRetryableFailure } from '../shared/failures.js';
import { capText } from '../core/compaction/transcript.js';
import type { ChatMessage } from '../core/types.js';
import { grepInThread, SearchSlots, type GrepOutcome } from './grep.js';
import { heartbeating } from './heartbeats.js';
import { secretRuleFor } from './secret-paths.js';
import { isInside, type TrajectoryStore } from './trajectories.js';

export interface BuiltInToolsOptions {
  /** The directory the tools may read (COMPACTOR_TOOLS_ROOT). Unset, every call is `Tool.NoRoot`. */
  root?: string;
  /** Secret files the tools may read after all (COMPACTOR_TOOLS_ALLOW): a rule's pattern or a path under the root. */
  allow?: readonly string[];
  /** Results longer than this are cut, with a marker saying how much. @default 100_000 characters */
  maxResultChars?: number;
  /** `grep`'s search thread is terminated after this long; the matches found by then are the result. @default 10 s */
  grepTimeoutMs?: number;
  /** Heap limit of `grep`'s search thread, in MiB. @default 64 */
  grepMemoryMb?: number;
  /** `grep` searches running at once (each a thread); more calls wait their turn. @default 2 */
  grepThreads?: number;
  /** `grep` searches at most this many files per call. @default 20,000 */
  grepMaxFiles?: number;
  /** `fs_read` reads at most this many bytes of a file (from its start), and says so when it stops. @default 10 MB */
  maxReadBytes?: number;
  /** `fs_list` lists at most this many entries of a directory, and says so when it stops. @default 10,000 */
  maxListEntries?: number;
}

export const DEFAULT_TOOL_RESULT_CHARS = 100_000;
const MAX_GREP_FILE_BYTES = 2_000_000;
export const MAX_GREP_PATTERN_CHARS = 1_000;
/** A matched line longer than this is shown as this many characters around its match (cut in the search thread). */
export const MAX_GREP_LINE_CHARS = 1_000;
/** Characters of a grep result kept for its closing note: the matches stop this short of `maxResultChars`. */
const GREP_NOTE_CHARS = 200;
const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules']);

/** `args` as `schema` reads them, else `Tool.InvalidArguments` naming the first issue's path under `arguments`. */
function parseArgs<T>(tool: string, schema: z.ZodType<T>, args: unknown): T {
  const parsed = schema.safeParse(args ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue === undefined ? 'arguments' : ['arguments', ...issue.path.map(String)].join('.');
  throw nonRetryableFailure(FailureType.Tool.InvalidArguments, `${tool}: ${field}: ${issue?.message ?? 'invalid'}`);
}

const readArgs = z.strictObject({
  path: z.string().min(1),
  offset: z.number().int().min(1).optional(),
  limit: z.number().int().min(1).optional(),
});
const listArgs = z.strictObject({ path: z.string().min(1).optional() });
const grepArgs = z.strictObject({
  pattern: z.string().min(1).max(MAX_GREP_PATTERN_CHARS),
  path: z.string().min(1).optional(),
  ignoreCase: z.boolean().optional(),
  maxResults: z.number().int().min(1).max(1000).optional(),
});

/** Opening a FIFO for reading waits for a writer; non-blocking, it returns at once. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

function notAFile(tool: string, path: string): ApplicationFailure {
  return nonRetryableFailure(
    FailureType.Tool.InvalidArguments,
    `${tool}: ${path} is not a regular file (a FIFO, socket or device is never read)`,
  );
}

async function readHead(path: string, shown: string, limit: number): Promise<{ text: string; size: number }> {
  const file = await open(path, READ_FLAGS);
  try {
    const stats = await file.stat();
    // Checked on the open file: a path swapped for a FIFO after the caller's stat is refused too.
    if (!stats.isFile()) throw notAFile('fs_read', shown);
    const { size } = stats;
    const buffer = Buffer.alloc(Math.min(size, limit));
    const { bytesRead } = await file.read(buffer, 0, buffer.length, 0);
    return { text: buffer.subarray(0, bytesRead).toString('utf8'), size };
  } finally {
    await file.close();
  }
}

/**
 * The built-in read-only tools. A path must stay inside `root`, before and after following symlinks
 * (`Tool.PathOutsideRoot`), and match no secret-file rule it is not allowed (`Tool.SecretPath`;
 * `grep` skips such files). Every failure is non-retryable: the agent loop hands it to the model.
 */
export function createBuiltInTools({
  root,
  allow = [],
  maxResultChars = DEFAULT_TOOL_RESULT_CHARS,
  grepTimeoutMs = 10_000,
  grepMemoryMb = 64,
  grepThreads = 2,
  grepMaxFiles = 20_000,
  maxReadBytes = 10_000_000,
  maxListEntries = 10_000,
}: BuiltInToolsOptions = {}) {
  const rootPath = root === undefined ? undefined : resolve(root);
  const allowed = [...allow];
  let realRoot: Promise<string> | undefined;
  const searchSlots = new SearchSlots(grepThreads);

  /** The real path of the root, or `Tool.NoRoot`; a failed look is not kept, so a root made later is found. */
  const baseFor = (tool: string): Promise<string> => {
    const noRoot = (why: string) => nonRetryableFailure(FailureType.Tool.NoRoot, `${tool}: ${why}`);
    if (rootPath === undefined)
      return Promise.reject(
        noRoot('this worker has no tool root (COMPACTOR_TOOLS_ROOT): the built-in tools read nothing'),
      );
    realRoot ??= realpath(rootPath).catch(() => {
      realRoot = undefined;
      throw noRoot(`the tool root ${rootPath} is not a directory this worker can read`);
    });
    return realRoot;
  };

  const locate = async (tool: string, path: string): Promise<{ real: string; base: string }> => {
    const base = await baseFor(tool);
    // Checked as asked, before looking (a secret file is refused whether or not it exists), then as
    // reached: a symlink inside the root may point outside it, or into a secret file.
    const admit = (at: string): string => {
      if (!isInside(base, at))
        throw nonRetryableFailure(
          FailureType.Tool.PathOutsideRoot,
          `${tool}: path "${path}" is outside the tool root ${rootPath ?? base}; use a path relative to the root`,
        );
      const rule = secretRuleFor(relative(base, at), allowed);
      if (rule === undefined) return at;
      throw nonRetryableFailure(
        FailureType.Tool.SecretPath,
        `${tool}: ${path} is not read: it matches the rule "${rule.pattern}" (${rule.holds}), files that may hold secrets; the worker's operator can allow it by name in COMPACTOR_TOOLS_ALLOW`,
      );
    };
    const real = await realpath(admit(resolve(base, path))).catch(() => {
      throw nonRetryableFailure(FailureType.Tool.NotFound, `${tool}: no such file or directory: ${path}`);
    });
    return { real: admit(real), base };
  };

  async function fs_read(args: unknown): Promise<string> {
    const { path, offset = 1, limit } = parseArgs('fs_read', readArgs, args);
    const { real } = await locate('fs_read', path);
    const kind = await stat(real);
    if (kind.isDirectory())
      throw nonRetryableFailure(FailureType.Tool.InvalidArguments, `fs_read: ${path} is a directory; use fs_list`);
    if (!kind.isFile()) throw notAFile('fs_read', path);
    const { text, size } = await readHead(real, path, maxReadBytes);
    const lines = text.split('\n');
    const selected = lines.slice(offset - 1, limit === undefined ? undefined : offset - 1 + limit);
    const numbered = selected.map((line, index) => `${String(offset + index).padStart(6)}\t${line}`).join('\n');
    const cut = size > maxReadBytes ? `\n[the file is ${size} bytes: read only its first ${maxReadBytes}]` : '';
    return capText(numbered + cut, maxResultChars);
  }

  async function fs_list(args: unknown): Promise<string> {
    const { path = '.' } = parseArgs('fs_list', listArgs, args);
    const { real } = await locate('fs_list', path);
    if (!(await stat(real)).isDirectory())
      throw nonRetryableFailure(FailureType.Tool.InvalidArguments, `fs_list: ${path} is not a directory; use fs_read`);
    const names: string[] = [];
    // Entry by entry, one past the limit (so a cut is known): a directory of a million files must not be read whole.
    for await (const entry of await opendir(real)) {
      names.push(entry.isDirectory() ? `${entry.name}/` : entry.name);
      if (names.length > maxListEntries) break;
    }
    const cut = names.length > maxListEntries ? `\n[stopped after ${maxListEntries} entries]` : '';
    return capText(names.slice(0, maxListEntries).sort().join('\n') + cut, maxResultChars);
  }

  async function grep(args: unknown): Promise<string> {
    const { pattern, path = '.', ignoreCase = false, maxResults = 100 } = parseArgs('grep', grepArgs, args);
    const flags = ignoreCase ? 'i' : '';
    try {
      // Compiling checks the syntax only: matching runs in the search thread.
      new RegExp(pattern, flags);
    } catch (error) {
      throw nonRetryableFailure(FailureType.Tool.InvalidArguments, `grep: arguments.pattern: ${failureMessage(error)}`);
    }
    const { real, base } = await locate('grep', path);
    const kind = await stat(real);
    if (!kind.isFile() && !kind.isDirectory()) throw notAFile('grep', path);
    const maxOutputChars = Math.max(MAX_GREP_LINE_CHARS, maxResultChars - GREP_NOTE_CHARS);
    // Always an activity: `heartbeating` runs each tool in the activity's context.
    const signal = Context.current().cancellationSignal;
    const { matches, stoppedAt } = await grepInThread(
      {
        pattern,
        flags,
        start: real,
        base,
        maxResults,
        maxFileBytes: MAX_GREP_FILE_BYTES,
        maxFiles: grepMaxFiles,
        skippedDirectories: [...SKIPPED_DIRECTORIES],
        allow: allowed,
        maxLineChars: MAX_GREP_LINE_CHARS,
        maxOutputChars,
      },
      { timeoutMs: grepTimeoutMs, memoryMb: grepMemoryMb, signal, slots: searchSlots },
    );
    const notes: Record<NonNullable<GrepOutcome['stoppedAt']>, string> = {
      results: `stopped after ${maxResults} matches`,
      output: `stopped at ${maxOutputChars} characters of matches: give a narrower path or a more specific pattern`,
      files: `stopped after searching ${grepMaxFiles} files: give a narrower path`,
      deadline: `stopped after ${grepTimeoutMs / 1000} s: the search took too long; simplify the pattern (nested repetition such as (a+)+ backtracks) or give a narrower path`,
      memory: 'stopped: the search went over its memory limit; give a narrower path',
    };
    const stopped = stoppedAt === undefined ? '' : `\n[${notes[stoppedAt]}]`;
    if (matches.length === 0) return `no matches for /${pattern}/ in ${path}${stopped}`;
    return capText(matches.join('\n') + stopped, maxResultChars);
  }

  // A grep over a large tree can take a while: the tools heartbeat, so a killed worker's call is retried elsewhere within seconds.
  return { fs_read: heartbeating(fs_read), fs_list: heartbeating(fs_list), grep: heartbeating(grep) };
}

type ReplayToolCall = { trajectory: string; toolCallId: string };

/** Creates `replayTool`: the recorded tool message that answers `toolCallId`, verbatim. */
export function createReplayTool(trajectories: TrajectoryStore) {
  return heartbeating(async function replayTool({ trajectory, toolCallId }: ReplayToolCall): Promise<ChatMessage> {
    const result = (await trajectories.load(trajectory)).results.get(toolCallId);
    if (result !== undefined) return result;
    throw nonRetryableFailure(
      FailureType.Replay.NotRecorded,
      `replay: trajectory "${trajectory}" has no result for tool call ${toolCallId}`,
    );
  });
}
