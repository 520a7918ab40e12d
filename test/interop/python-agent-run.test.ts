// The Python caller's types and names (interop/python/agent_run.py) against the TypeScript
// definitions they mirror: the update name, the failure type and its reasons, the agent's tool name,
// the fields of the undo's argument and of the agent tool's option; the module parses as Python.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { COMPACT_CONTEXT_TOOL_NAME } from '../../src/core/agent/agent-tool.js';
import { FailureType, type UndoRefusal } from '../../src/core/errors.js';
import { agentRunUpdates } from '../../src/shared/agent-run.js';

const MODULE = fileURLToPath(new URL('../../interop/python/agent_run.py', import.meta.url));
const source = readFileSync(MODULE, 'utf8');

/** The string a module-level `NAME = "..."` assigns. */
function constant(name: string): string | undefined {
  return new RegExp(`^${name} = "([^"]*)"$`, 'm').exec(source)?.[1];
}

describe('interop/python/agent_run.py', () => {
  it('names what the TypeScript side names', () => {
    expect(constant('UNDO_COMPACTION_UPDATE')).toBe(agentRunUpdates.undoCompaction.name);
    expect(constant('UNDO_REFUSED')).toBe(FailureType.Compaction.UndoRefused);
    expect(constant('COMPACT_CONTEXT_TOOL')).toBe(COMPACT_CONTEXT_TOOL_NAME);
    const reasons: UndoRefusal[] = ['window', 'later-compactions', 'undone', 'none', 'transcript'];
    expect(source).toContain(`UNDO_REFUSALS = (${reasons.map((reason) => `"${reason}"`).join(', ')})`);
    expect(source).toMatch(/class UndoCompactionInput\(TypedDict, total=False\):[^]*?\n {4}compactionId: int\n/);
    expect(source).toMatch(
      /class AgentToolOptions\(TypedDict, total=False\):[^]*?cooldownRounds: int\n {4}minReclaim: int\n/,
    );
  });

  it('parses as Python', () => {
    const parsed = spawnSync('python3', ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read())', MODULE], {
      encoding: 'utf8',
    });
    expect(parsed.stderr).toBe('');
    expect(parsed.status).toBe(0);
  });
});
