// Sandbox-safe: the declarations of the built-in read-only tools, so workflow code can send and count them.
import type { ToolDeclaration } from '../counting/request-counter.js';

/** Names of the built-in tools (`fs_read`, `fs_list`, `grep`), each an activity of the same name. */
export const BUILT_IN_TOOL_NAMES = ['fs_read', 'fs_list', 'grep'] as const;
export type BuiltInToolName = (typeof BUILT_IN_TOOL_NAMES)[number];

/** A function declaration whose arguments are an object of `properties` and nothing else. */
export function declaration(
  name: string,
  description: string,
  properties: Record<string, unknown>,
  required?: string[],
): ToolDeclaration {
  const parameters = { type: 'object', properties, ...(required && { required }), additionalProperties: false };
  return { type: 'function', function: { name, description, parameters } };
}

/** Paths are relative to the worker's tool root. */
export const BUILT_IN_TOOLS: Readonly<Record<BuiltInToolName, ToolDeclaration>> = {
  fs_read: declaration(
    'fs_read',
    'Read a text file under the project root. Lines are numbered from 1. Use offset/limit for large files.',
    {
      path: { type: 'string', description: 'File path relative to the project root.' },
      offset: { type: 'integer', minimum: 1, description: 'First line to read (1-based). Default 1.' },
      limit: {
        type: 'integer',
        minimum: 1,
        description: 'Number of lines to read. Default: the whole file (up to the size cap).',
      },
    },
    ['path'],
  ),
  fs_list: declaration('fs_list', 'List a directory under the project root. Directories end with "/".', {
    path: { type: 'string', description: 'Directory relative to the project root. Default ".".' },
  }),
  grep: declaration(
    'grep',
    'Search files under the project root for a regular expression. Prints path:line: text per match.',
    {
      pattern: { type: 'string', description: 'JavaScript regular expression.' },
      path: { type: 'string', description: 'File or directory to search, relative to the project root. Default ".".' },
      ignoreCase: { type: 'boolean', description: 'Case-insensitive match. Default false.' },
      maxResults: {
        type: 'integer',
        minimum: 1,
        maximum: 1000,
        description: 'Stop after this many matches. Default 100.',
      },
    },
    ['pattern'],
  ),
};

export function isBuiltInToolName(name: string): name is BuiltInToolName {
  return BUILT_IN_TOOL_NAMES.some((builtIn) => builtIn === name);
}

/** The worker's activities that are not tools: a tool runs as the activity of its name, so none may be named so. */
export const INTERNAL_ACTIVITY_NAMES = [
  'summarize',
  'chat',
  'replayTool',
  'recordSession',
  'countTokens',
  'describeWorker',
  'restoreCompaction',
] as const;
export type InternalActivityName = (typeof INTERNAL_ACTIVITY_NAMES)[number];

export function isInternalActivityName(name: string): name is InternalActivityName {
  return INTERNAL_ACTIVITY_NAMES.some((internal) => internal === name);
}
