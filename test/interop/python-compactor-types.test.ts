// interop/python/compactor_types.py against what the workflows take and give: Python reads the
// TypedDicts' keys itself (typing.get_type_hints), and they must be the keys of the JSON Schemas
// of compactConversation and of agentRun's compaction options, no more and no fewer.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolvePythonSdk } from '../../scripts/python-sdk.mjs';
import { AGENT_COMPACTION_KEYS } from '../../src/core/agent/agent-input.js';
import { compactConversationJsonSchemas } from '../../scripts/compact-conversation-schemas.js';

const TYPES = fileURLToPath(new URL('../../interop/python/', import.meta.url));

const READ_KEYS = `
import json, sys, typing
sys.path.insert(0, sys.argv[1])
import compactor_types as t
names = ["CompactionOptions", "CompactConversationOptions", "CompactConversationInput", "CompactionResult", "AgentCompactionOptions"]
print(json.dumps({name: sorted(typing.get_type_hints(getattr(t, name))) for name in names}))
`;

/** The value at `key` of an object; undefined for anything else. */
function at(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? Reflect.get(value, key) : undefined;
}

/** The property names of a JSON Schema object, sorted. */
function propertiesOf(schema: unknown): string[] {
  const properties = at(schema, 'properties');
  return typeof properties === 'object' && properties !== null ? Object.keys(properties).sort() : [];
}

describe('Python caller types (interop/python/compactor_types.py)', () => {
  let python: string;
  beforeAll(async () => {
    python = await resolvePythonSdk();
  });
  it('hold exactly the fields of compactConversation and of agentRun compaction options', () => {
    const keys: Record<string, string[]> = JSON.parse(
      execFileSync(python, ['-c', READ_KEYS, TYPES], { encoding: 'utf8' }),
    );
    const schemas = compactConversationJsonSchemas();
    const input = schemas['compact-conversation.input.schema.json'];
    const options = propertiesOf(at(at(input, 'properties'), 'options'));
    expect(keys.CompactConversationInput).toEqual(propertiesOf(input));
    expect(keys.CompactConversationOptions).toEqual(options);
    expect(keys.CompactionResult).toEqual(propertiesOf(schemas['compact-conversation.result.schema.json']));
    // compaction.keepTask is known to agentRun only to be refused with a pointer to input.keepTask.
    expect(keys.AgentCompactionOptions).toEqual([...AGENT_COMPACTION_KEYS].filter((key) => key !== 'keepTask').sort());
    expect(keys.CompactionOptions).toEqual(expect.arrayContaining(['keepUserMessages', 'keepUserMessagesShare']));
    expect(keys.AgentCompactionOptions).toEqual(expect.arrayContaining(['cacheTtl', 'coldTrigger']));
  });
});
