// Steering a running agentRun (src/core/agent/steering.ts): the `compact`, `pin` and `unpin`
// arguments refused naming the field or id, what a pin changes, the pin transcript line replaying
// to the live conversation, and the summary instructions a compaction of the run is asked with.
import { describe, expect, it } from 'vitest';
import { applySessionLine, replaySession, type SessionEntry, type SessionLine } from '../../src/core/agent/session.js';
import {
  MAX_COMPACT_INSTRUCTIONS_CHARS,
  MAX_PIN_FACT_CHARS,
  MAX_PIN_FACTS,
  MAX_PINNED_MESSAGES,
  noPins,
  parseCompactInput,
  parseReviewInput,
  proposalOf,
  withEditedSummary,
  type CompactionProposal,
  parsePinInput,
  pinChange,
  pinDetails,
  steeredInstructions,
  unpinChange,
  type Pins,
} from '../../src/core/agent/steering.js';
import { describeSessionLine } from '../../src/cli/commands/session.js';
import { planAgentRun } from '../../src/core/agent/agent-input.js';
import { compactionSteps } from '../../src/core/compaction/engine.js';
import { runCompactionSteps } from '../../corpus/fake-summarizer.js';
import { resolveOptions } from '../../src/core/compaction/options.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { toProviderMessages } from '../../src/core/schema.js';

/** The error's `field: reason`, or 'ok'. */
function verdict(check: () => unknown): string {
  try {
    check();
    return 'ok';
  } catch (error) {
    if (error instanceof InvalidInputError) return error.message;
    throw error;
  }
}

const entries: SessionEntry[] = [
  { id: 'm1', message: { role: 'system', content: 'You are an agent.' } },
  { id: 'm2', message: { role: 'user', content: 'Fix the failing test.', sticky: true } },
  { id: 'm3', message: { role: 'assistant', content: 'The failure is in parser.ts line 12.' } },
  { id: 'm4', message: { role: 'user', content: 'Go on.' } },
];

describe('the compact update argument', () => {
  it('takes nothing, an empty object, or instructions; blank instructions are none', () => {
    expect(parseCompactInput(undefined)).toEqual({});
    expect(parseCompactInput({})).toEqual({});
    expect(parseCompactInput({ instructions: 'keep the failing test names' })).toEqual({
      instructions: 'keep the failing test names',
    });
    expect(parseCompactInput({ instructions: '  ' })).toEqual({});
  });

  it.each([
    ['a string', 'now', 'compact: must be an object { instructions?: string } or left out, got "now"'],
    ['instructions that are not text', { instructions: 3 }, 'compact.instructions: must be a string, got 3'],
    [
      'instructions over the bound',
      { instructions: 'x'.repeat(MAX_COMPACT_INSTRUCTIONS_CHARS + 1) },
      `compact.instructions: must be at most ${MAX_COMPACT_INSTRUCTIONS_CHARS} characters, got ${MAX_COMPACT_INSTRUCTIONS_CHARS + 1}`,
    ],
    ['an unknown key', { instruction: 'x' }, 'compact.instruction: unknown field; did you mean instructions?'],
  ])('refuses %s, naming the field', (_case, value, message) => {
    expect(verdict(() => parseCompactInput(value))).toBe(message);
  });
});

describe('the pin and unpin update arguments', () => {
  it.each([
    ['nothing', undefined, 'pin: must be an object { ids: string[] } or { fact: string }'],
    ['neither ids nor a fact', {}, 'pin: must name message ids'],
    ['ids that are not a list', { ids: 'm3' }, 'pin.ids: must be a list of message ids'],
    ['an id that is not text', { ids: ['m3', 4] }, 'pin.ids[1]: must be a message id such as "m12"'],
    [
      'too many ids',
      { ids: Array.from({ length: MAX_PINNED_MESSAGES + 1 }, (_, i) => `m${i}`) },
      `pin.ids: must be at most ${MAX_PINNED_MESSAGES} ids, got ${MAX_PINNED_MESSAGES + 1}`,
    ],
    ['a blank fact', { fact: ' ' }, 'pin.fact: must be a non-empty string'],
    [
      'a fact over the bound',
      { fact: 'x'.repeat(MAX_PIN_FACT_CHARS + 1) },
      `pin.fact: must be at most ${MAX_PIN_FACT_CHARS} characters`,
    ],
    ['an unknown key', { id: ['m3'] }, 'pin.id: unknown field; did you mean ids?'],
  ])('refuses %s, naming the field', (_case, value, message) => {
    expect(verdict(() => parsePinInput(value, 'pin'))).toContain(message);
  });

  it('names the update it checks', () => {
    expect(verdict(() => parsePinInput({ ids: [7] }, 'unpin'))).toContain('unpin.ids[0]: ');
  });
});

describe('what pin and unpin change', () => {
  it('pins a message of the live conversation and a fact; a message sticky already is left as it is', () => {
    const change = pinChange({ ids: ['m3', 'm2', 'm1', 'm3'], fact: 'The bug is in parser.ts' }, entries, noPins());
    expect(change).toEqual({ ids: ['m3'], pins: { ids: ['m3'], facts: ['The bug is in parser.ts'] } });
  });

  it('refuses an id that is not in the live conversation, naming it', () => {
    expect(verdict(() => pinChange({ ids: ['m3', 'm9'] }, entries, noPins()))).toBe(
      'pin.ids[1]: no message with id "m9" in the live conversation (the conversationEntries query lists them)',
    );
  });

  it('holds at most so many pinned messages and facts', () => {
    const full: Pins = { ids: Array.from({ length: MAX_PINNED_MESSAGES }, (_, i) => `x${i}`), facts: [] };
    expect(verdict(() => pinChange({ ids: ['m3'] }, entries, full))).toContain(
      `pin.ids: a run holds at most ${MAX_PINNED_MESSAGES} pinned messages`,
    );
    const facts: Pins = { ids: [], facts: Array.from({ length: MAX_PIN_FACTS }, (_, i) => `fact ${i}`) };
    expect(verdict(() => pinChange({ ids: [], fact: 'one more' }, entries, facts))).toContain(
      `pin.fact: a run holds at most ${MAX_PIN_FACTS} facts`,
    );
    // The same fact again is no new fact.
    expect(pinChange({ ids: [], fact: 'fact 3' }, entries, facts).pins).toEqual(facts);
  });

  it('unpins only what pin pinned, naming what is not pinned', () => {
    const pins: Pins = { ids: ['m3', 'm4'], facts: ['A', 'B'] };
    expect(unpinChange({ ids: ['m4'], fact: 'A' }, pins)).toEqual({ ids: ['m4'], pins: { ids: ['m3'], facts: ['B'] } });
    expect(verdict(() => unpinChange({ ids: ['m2'] }, pins))).toBe(
      'unpin.ids[0]: "m2" is not pinned (only messages pinned by the pin update can be unpinned; pinned: m3, m4)',
    );
    expect(verdict(() => unpinChange({ ids: [], fact: 'C' }, pins))).toBe(
      'unpin.fact: is not a pinned fact (pinned: 2)',
    );
  });
});

describe('the pin transcript line', () => {
  it('marks the messages sticky and unmarks them, replaying to the live conversation; the flag never reaches a provider', () => {
    const pinned = applySessionLine(entries, { type: 'pin', ids: ['m3'], pinned: true });
    expect(pinned[2]).toEqual({ id: 'm3', message: { ...entries[2]?.message, sticky: true } });
    expect(toProviderMessages(pinned.map((entry) => entry.message))).toEqual(
      toProviderMessages(entries.map((entry) => entry.message)),
    );
    const unpinned = applySessionLine(pinned, { type: 'pin', ids: ['m3'], pinned: false });
    expect(unpinned).toEqual(entries);
    const lines: SessionLine[] = [
      ...entries.map((entry): SessionLine => ({ type: 'message', ...entry })),
      { type: 'pin', ids: ['m3'], pinned: true },
    ];
    expect(replaySession(lines)).toEqual(pinned.map((entry) => entry.message));
    expect(replaySession(lines.map((line) => JSON.stringify(line)).join('\n'))).toEqual(
      pinned.map((entry) => entry.message),
    );
  });

  it('a pinned message survives a compaction line that replaces everything before the window', () => {
    const pinned = applySessionLine(entries, { type: 'pin', ids: ['m3'], pinned: true });
    const compacted = applySessionLine(pinned, {
      type: 'compaction',
      replacesThroughId: 'm4',
      summary: 'Summary.',
      dropped: 1,
      tokensBefore: 100,
      tokensAfter: 50,
      fallback: false,
      exhausted: false,
    });
    expect(compacted.map((entry) => entry.id)).toEqual(['m1', 'm2', 'm3', 'summary:m4']);
  });

  it('reads in the CLI session listing as what it did, naming the ids', () => {
    expect(describeSessionLine({ type: 'pin', ids: ['m3', 'summary:m9'], pinned: true })).toBe(
      '── pinned m3, summary:m9',
    );
    expect(describeSessionLine({ type: 'pin', ids: ['m3'], pinned: false })).toBe('── unpinned m3');
  });

  it('refuses a pin line naming an id that is not there', () => {
    expect(verdict(() => applySessionLine(entries, { type: 'pin', ids: ['m9'], pinned: true }, 7))).toBe(
      'lines[7].ids[0]: no message with id "m9" in the conversation at this point',
    );
  });
});

describe('the summary instructions of a compaction of the run', () => {
  it('are none when the run is not steered, so its compactions ask what they asked before', () => {
    expect(steeredInstructions(undefined, [], undefined)).toBeUndefined();
    expect(steeredInstructions('', [], ' ')).toBeUndefined();
  });

  it("hold the run's own, the compact update's, then the pinned facts to keep", () => {
    expect(
      steeredInstructions(
        'Focus on the code.',
        ['The bug is in parser.ts', 'Use pnpm'],
        'Keep the failing test names.',
      ),
    ).toBe(
      'Focus on the code.\n\nKeep the failing test names.\n\nKeep these facts, word for word:\n- The bug is in parser.ts\n- Use pnpm',
    );
    expect(steeredInstructions(undefined, [], 'Keep the failing test names.')).toBe('Keep the failing test names.');
  });

  it('show in the current details as lines', () => {
    expect(pinDetails(noPins())).toEqual([]);
    expect(pinDetails({ ids: ['m3', 'summary:m9'], facts: ['Use pnpm'] })).toEqual([
      'Pinned messages: m3, summary:m9',
      'Pinned facts (kept by every summary): “Use pnpm”',
    ]);
  });
});

describe('review before apply', () => {
  const long = (text: string) => `${text} ${'More detail on the same. '.repeat(40)}`;
  const live: SessionEntry[] = [
    ...entries,
    { id: 'm5', message: { role: 'assistant', content: long('Tried the empty case.') } },
    { id: 'm6', message: { role: 'user', content: long('Keep going.') } },
    { id: 'm7', message: { role: 'assistant', content: 'Done reading.' } },
    { id: 'm8', message: { role: 'user', content: 'Now fix it.' } },
  ];
  const compacted = runCompactionSteps(
    compactionSteps(
      live.map((entry) => entry.message),
      resolveOptions({ contextBudget: 100_000, keepRecent: 2 }),
    ),
    () => ({ kind: 'summary', text: 'The failure is in parser.ts line 12.' }),
  );
  const proposal = proposalOf(live, compacted, { round: 4, backend: 'openai:x', applyAt: 1_000 });

  it('a proposal names the messages a compaction would drop, by transcript id, and applies nothing', () => {
    expect(proposal).toEqual({
      round: 4,
      backend: 'openai:x',
      applyAt: 1_000,
      kind: 'summary',
      tokensBefore: compacted.tokensBefore,
      tokensAfter: compacted.tokensAfter,
      dropped: ['m3', 'm4', 'm5', 'm6'],
      elided: [],
      summary: '[Summary by the harness of 4 earlier messages]\n\nThe failure is in parser.ts line 12.',
    });
    expect(live).toHaveLength(8);
  });

  it("edit puts the person's summary under the harness's header and counts the tokens again", () => {
    const edited = withEditedSummary(compacted, 'Bug: parser.ts line 12.', defaultCounter);
    const summary = '[Summary by the harness of 4 earlier messages]\n\nBug: parser.ts line 12.';
    expect(edited.summary).toBe(summary);
    expect(edited.messages[2]).toEqual({ role: 'user', content: summary });
    expect(edited.messages.filter((message) => message.content === compacted.summary)).toEqual([]);
    expect(edited.tokensAfter).toBe(defaultCounter.count(edited.messages));
    // The transcript of the edited result replays to it: what the run records.
    const lines: SessionLine[] = [
      ...live.map((entry): SessionLine => ({ type: 'message', ...entry })),
      {
        type: 'compaction',
        replacesThroughId: 'm6',
        summary,
        dropped: 4,
        tokensBefore: edited.tokensBefore,
        tokensAfter: edited.tokensAfter,
        fallback: false,
        exhausted: false,
      },
    ];
    expect(replaySession(lines)).toEqual(edited.messages);
  });

  it.each([
    ['no proposal', { decision: 'apply' }, undefined, 'reviewCompaction: no compaction is waiting for review'],
    [
      'a decision that is not one',
      { decision: 'maybe' },
      proposal,
      'reviewCompaction.decision: must be "apply", "reject" or "edit", got "maybe"',
    ],
    [
      'a summary without edit',
      { decision: 'apply', summary: 'x' },
      proposal,
      'reviewCompaction.summary: is only taken with decision "edit"',
    ],
    [
      'edit without a summary',
      { decision: 'edit' },
      proposal,
      'reviewCompaction.summary: must be the summary to apply',
    ],
    [
      'edit of a trim',
      { decision: 'edit', summary: 'x' },
      { ...proposal, kind: 'trim', summary: null } satisfies CompactionProposal,
      'reviewCompaction.decision: "edit" needs a proposal with a summary; this one is a trim',
    ],
    [
      'an unknown key',
      { decison: 'apply' },
      proposal,
      'reviewCompaction.decison: unknown field; did you mean decision?',
    ],
  ])('reviewCompaction refuses %s, naming the field', (_case, value, pending, message) => {
    expect(verdict(() => parseReviewInput(value, pending))).toContain(message);
  });

  it('reviewCompaction takes apply, reject, and edit with a summary', () => {
    expect(parseReviewInput({ decision: 'reject' }, proposal)).toEqual({ decision: 'reject' });
    expect(parseReviewInput({ decision: 'edit', summary: 'S' }, proposal)).toEqual({ decision: 'edit', summary: 'S' });
  });

  const run = (compaction: Record<string, unknown>) =>
    planAgentRun({
      messages: [{ role: 'user', content: 'x' }],
      model: { provider: 'replay', trajectory: 't', contextWindow: 10_000, maxOutputTokens: 100 },
      compaction,
    });

  it("the run's review options: off by default, kept out of the compaction options", () => {
    expect(run({}).review).toEqual({ mode: 'auto', timeoutMs: 3_600_000 });
    const plan = run({ keepRecent: 3, review: 'approve', reviewTimeout: '5m' });
    expect(plan.review).toEqual({ mode: 'approve', timeoutMs: 300_000 });
    expect(plan.compaction.options.keepRecent).toBe(3);
    expect(plan.compaction.options).not.toHaveProperty('review');
    expect(plan.compaction.options).not.toHaveProperty('reviewTimeout');
    expect(verdict(() => run({ review: 'ask' }))).toBe(
      'input.compaction.review: must be one of "auto", "approve", "manual", got "ask"',
    );
    expect(verdict(() => run({ reviewTimeout: 0 }))).toBe(
      'input.compaction.reviewTimeout: must be longer than zero, got 0',
    );
    expect(verdict(() => run({ reviw: 'approve' }))).toContain(
      'input.compaction.reviw: unknown option; did you mean review?',
    );
  });
});
