// Node only (activities): the agent loop's tools — the built-in read-only `fs_read`, `fs_list` and
// `grep` under a configured root, and `replayTool`, which returns a trajectory's recorded result.
import type { Dirent } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { ReplayFailureType, ToolFailureType } from '../core/agent/agent-errors.js';
import { capText } from '../core/compaction/transcript.js';
import type { ChatMessage } from '../core/types.js';
import { heartbeating } from './heartbeats.js';
import type { TrajectoryStore } from './trajectories.js';

/** A tool activity: parsed JSON arguments in, the result the model reads out (a string, or JSON it is shown as). */
export type ToolActivity = (args: unknown) => Promise<unknown>;

export interface BuiltInToolsOptions {
  /** The directory the tools may read; paths resolving outside it are refused. @default the current directory (workers of `compactorPlugin`, `createWorker` and the CLI pass COMPACTOR_TOOLS_ROOT) */
  root?: string;
  /** Results longer than this are cut, with a marker saying how much. @default 100_000 characters */
  maxResultChars?: number;
}

/** @default 100_000 characters of one tool result */
export const DEFAULT_TOOL_RESULT_CHARS = 100_000;
const MAX_GREP_FILE_BYTES = 2_000_000;
const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules']);

function invalidArguments(tool: string, error: z.ZodError): ApplicationFailure {
  const issue = error.issues[0];
  const field = issue === undefined ? 'arguments' : ['arguments', ...issue.path.map(String)].join('.');
  return ApplicationFailure.create({
    type: ToolFailureType.InvalidArguments,
    message: `${tool}: ${field}: ${issue?.message ?? 'invalid'}`,
    nonRetryable: true,
  });
}

function parseArgs<T>(tool: string, schema: z.ZodType<T>, args: unknown): T {
  const parsed = schema.safeParse(args ?? {});
  if (!parsed.success) throw invalidArguments(tool, parsed.error);
  return parsed.data;
}

function outsideRoot(tool: string, path: string, root: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: ToolFailureType.PathOutsideRoot,
    message: `${tool}: path "${path}" is outside the tool root ${root}; use a path relative to the root`,
    nonRetryable: true,
  });
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

const readArgs = z.strictObject({
  path: z.string().min(1),
  offset: z.number().int().min(1).optional(),
  limit: z.number().int().min(1).optional(),
});
const listArgs = z.strictObject({ path: z.string().min(1).optional() });
const grepArgs = z.strictObject({
  pattern: z.string().min(1),
  path: z.string().min(1).optional(),
  ignoreCase: z.boolean().optional(),
  maxResults: z.number().int().min(1).max(1000).optional(),
});

/**
 * Creates the built-in read-only tools. Every path is resolved against `root` and, after
 * following symlinks, must stay inside it; otherwise the tool fails with a non-retryable
 * `Tool.PathOutsideRoot` that says so. Bad arguments fail with `Tool.InvalidArguments`, missing
 * files with `Tool.NotFound`; the agent loop hands any tool failure to the model as the result.
 */
export function createBuiltInTools({
  root = process.cwd(),
  maxResultChars = DEFAULT_TOOL_RESULT_CHARS,
}: BuiltInToolsOptions = {}) {
  const rootPath = resolve(root);
  let realRoot: Promise<string> | undefined;

  /** The real path of `path` under the root, or a clear failure. */
  const locate = async (tool: string, path: string): Promise<{ real: string; shown: string }> => {
    realRoot ??= realpath(rootPath);
    const base = await realRoot;
    const target = resolve(base, path);
    if (!isInside(base, target)) throw outsideRoot(tool, path, rootPath);
    let real: string;
    try {
      real = await realpath(target);
    } catch {
      throw ApplicationFailure.create({
        type: ToolFailureType.NotFound,
        message: `${tool}: no such file or directory: ${path}`,
        nonRetryable: true,
      });
    }
    // A symlink inside the root may point outside it.
    if (!isInside(base, real)) throw outsideRoot(tool, path, rootPath);
    return { real, shown: relative(base, real) || '.' };
  };

  async function fs_read(args: unknown): Promise<string> {
    const { path, offset = 1, limit } = parseArgs('fs_read', readArgs, args);
    const { real } = await locate('fs_read', path);
    if ((await stat(real)).isDirectory()) {
      throw ApplicationFailure.create({
        type: ToolFailureType.InvalidArguments,
        message: `fs_read: ${path} is a directory; use fs_list`,
        nonRetryable: true,
      });
    }
    const lines = (await readFile(real, 'utf8')).split('\n');
    const selected = lines.slice(offset - 1, limit === undefined ? undefined : offset - 1 + limit);
    const numbered = selected.map((line, index) => `${String(offset + index).padStart(6)}\t${line}`).join('\n');
    return capText(numbered, maxResultChars);
  }

  async function fs_list(args: unknown): Promise<string> {
    const { path = '.' } = parseArgs('fs_list', listArgs, args);
    const { real } = await locate('fs_list', path);
    if (!(await stat(real)).isDirectory()) {
      throw ApplicationFailure.create({
        type: ToolFailureType.InvalidArguments,
        message: `fs_list: ${path} is not a directory; use fs_read`,
        nonRetryable: true,
      });
    }
    const entries = await readdir(real, { withFileTypes: true });
    const names = entries.map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name)).sort();
    return capText(names.join('\n'), maxResultChars);
  }

  async function grep(args: unknown): Promise<string> {
    const { pattern, path = '.', ignoreCase = false, maxResults = 100 } = parseArgs('grep', grepArgs, args);
    let regex: RegExp;
    try {
      regex = new RegExp(pattern, ignoreCase ? 'i' : '');
    } catch (error) {
      throw ApplicationFailure.create({
        type: ToolFailureType.InvalidArguments,
        message: `grep: arguments.pattern: ${error instanceof Error ? error.message : String(error)}`,
        nonRetryable: true,
      });
    }
    const { real } = await locate('grep', path);
    realRoot ??= realpath(rootPath);
    const base = await realRoot;
    const matches: string[] = [];
    const searchFile = async (file: string): Promise<void> => {
      if ((await stat(file)).size > MAX_GREP_FILE_BYTES) return;
      const text = await readFile(file, 'utf8');
      if (text.includes('\u0000')) return;
      const lines = text.split('\n');
      for (let index = 0; index < lines.length && matches.length < maxResults; index += 1) {
        const line = lines[index] ?? '';
        if (regex.test(line)) matches.push(`${relative(base, file)}:${index + 1}: ${line}`);
      }
    };
    const walk = async (directory: string): Promise<void> => {
      let entries: Dirent[];
      try {
        entries = await readdir(directory, { withFileTypes: true });
      } catch {
        return;
      }
      entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
      for (const entry of entries) {
        if (matches.length >= maxResults) return;
        const child = join(directory, entry.name);
        // Symlinks are not followed while walking: they could lead outside the root.
        if (entry.isDirectory() && !SKIPPED_DIRECTORIES.has(entry.name)) await walk(child);
        else if (entry.isFile()) await searchFile(child);
      }
    };
    if ((await stat(real)).isDirectory()) await walk(real);
    else await searchFile(real);
    if (matches.length === 0) return `no matches for /${pattern}/ in ${path}`;
    const more = matches.length >= maxResults ? `\n[stopped after ${maxResults} matches]` : '';
    return capText(matches.join('\n') + more, maxResultChars);
  }

  // A grep over a large tree can take a while: the tools heartbeat, so a killed worker's call is retried elsewhere within seconds.
  return { fs_read: heartbeating(fs_read), fs_list: heartbeating(fs_list), grep: heartbeating(grep) };
}

/** Input of `replayTool`: which recorded result to return. */
export interface ReplayToolInput {
  trajectory: string;
  toolCallId: string;
}

/** Creates `replayTool`: the recorded tool message that answers `toolCallId`, verbatim. */
export function createReplayTool(trajectories: TrajectoryStore) {
  return heartbeating(async function replayTool({ trajectory, toolCallId }: ReplayToolInput): Promise<ChatMessage> {
    const script = await trajectories.load(trajectory);
    const result = script.results.get(toolCallId);
    if (result === undefined) {
      throw ApplicationFailure.create({
        type: ReplayFailureType.NotRecorded,
        message: `replay: trajectory "${trajectory}" has no result for tool call ${toolCallId}`,
        nonRetryable: true,
      });
    }
    return result;
  });
}
