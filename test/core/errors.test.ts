// The failure types: one object grouped by prefix, each path naming its string, and the table of
// docs/design.md#failure-types listing exactly these.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FailureType, SummarizerError } from '../../src/core/errors.js';

const leaves = Object.entries(FailureType).flatMap(([group, types]) =>
  Object.entries(types).map(([name, type]) => ({ path: `${group}.${name}`, type })),
);

describe('FailureType', () => {
  it('names each string by its path: FailureType.Chat.Rejected is "Chat.Rejected"', () => {
    expect(leaves.length).toBeGreaterThan(0);
    for (const { path, type } of leaves) expect(type, path).toBe(path);
  });

  it('is what docs/design.md#failure-types lists, row for row', () => {
    const design = readFileSync(new URL('../../docs/design.md', import.meta.url), 'utf8');
    const section = design.slice(
      design.indexOf('<a id="failure-types"></a>'),
      design.indexOf('<a id="transcript-format"></a>'),
    );
    const documented = [...section.matchAll(/^\| `([A-Za-z]+\.[A-Za-z]+)` \|/gm)].map((match) => match[1]);
    expect(documented.sort()).toEqual(leaves.map((leaf) => leaf.type).sort());
  });

  it('gives a SummarizerError the type of its kind', () => {
    expect(new SummarizerError('no', 'rejected').type).toBe(FailureType.Summarizer.Rejected);
    expect(new SummarizerError('no', 'empty').type).toBe(FailureType.Summarizer.Empty);
    expect(new SummarizerError('no', 'transient').type).toBe(FailureType.Summarizer.Transient);
  });
});
