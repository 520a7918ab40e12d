// agentRun's updates and queries as callers hold them: each under its Temporal name, and the names
// those that docs/compatibility.md keeps stable.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { agentRunQueries, agentRunUpdates } from '../../src/shared/agent-run.js';

/** The backticked names of the list that follows `label` in docs/compatibility.md's "Names". */
function stableNames(label: 'the updates' | 'the queries'): string[] {
  const text = readFileSync(new URL('../../docs/compatibility.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
  const list = new RegExp(`${label} \\(([^)]*)\\)`).exec(text)?.[1];
  if (list === undefined) throw new Error(`docs/compatibility.md lists no ${label}`);
  return [...list.matchAll(/`(\w+)`/g)].map((match) => match[1] ?? '');
}

describe('agentRunUpdates and agentRunQueries', () => {
  it.each([
    ['updates', agentRunUpdates],
    ['queries', agentRunQueries],
  ] as const)('%s: each definition is under its Temporal name', (_kind, definitions) => {
    for (const [key, definition] of Object.entries(definitions)) expect(definition.name, key).toBe(key);
  });

  it('hold exactly the names docs/compatibility.md keeps stable', () => {
    expect(Object.keys(agentRunUpdates).sort()).toEqual(stableNames('the updates').sort());
    expect(Object.keys(agentRunQueries).sort()).toEqual(stableNames('the queries').sort());
  });
});
