// Sandbox-safe: the declarations of the built-in read-only tools, so workflow code can send and count them.
import type { ToolDeclaration } from '../counting/request-counter.js';

/** Names of the built-in tools (`fs_read`, `fs_list`, `grep`), each an activity of the same name. */
export const BUILT_IN_TOOL_NAMES = ['fs_read', 'fs_list', 'grep'] as const;
export type BuiltInToolName = (typeof BUILT_IN_TOOL_NAMES)[number];

/** Paths are relative to the worker's tool root. */
export const BUILT_IN_TOOLS: Readonly<Record<BuiltInToolName, ToolDeclaration>> = {
  fs_read: {
    type: 'function',
    function: {
      name: 'fs_read',
      description:
        'Read a text file under the project root. Lines are numbered from 1. Use offset/limit for large files.',
      parameters: {
        type: 'object',
        properties: {
          path: { type: 'string', description: 'File path relative to the project root.' },
          offset: { type: 'integer', minimum: 1, description: 'First line to read (1-based). Default 1.' },
          limit: {
            type: 'integer',
            minimum: 1,
            description: 'Number of lines to read. Default: the whole file (up to the size cap).',
          },
        },
        required: ['path'],
        additionalProperties: false,
      },
    },
  },
  fs_list: {
    type: 'function',
    function: {
      name: 'fs_list',
      description: 'List a directory under the project root. Directories end with "/".',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string', description: 'Directory relative to the project root. Default ".".' } },
        additionalProperties: false,
      },
    },
  },
  grep: {
    type: 'function',
    function: {
      name: 'grep',
      description: 'Search files under the project root for a regular expression. Prints path:line: text per match.',
      parameters: {
        type: 'object',
        properties: {
          pattern: { type: 'string', description: 'JavaScript regular expression.' },
          path: {
            type: 'string',
            description: 'File or directory to search, relative to the project root. Default ".".',
          },
          ignoreCase: { type: 'boolean', description: 'Case-insensitive match. Default false.' },
          maxResults: {
            type: 'integer',
            minimum: 1,
            maximum: 1000,
            description: 'Stop after this many matches. Default 100.',
          },
        },
        required: ['pattern'],
        additionalProperties: false,
      },
    },
  },
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
