// The agent's own compaction tool (docs/design.md#agent-tool): `compaction.agentTool` declares
// `compact_context` (a reserved name), and a call is accepted or refused by the bounds — the
// cooldown after a compaction and the minimum reclaim — with the answer the model reads.
import { describe, expect, it } from 'vitest';
import { planAgentRun } from '../../src/core/agent/agent-input.js';
import {
  COMPACT_CONTEXT_TOOL_NAME,
  decideAgentTool,
  parseAgentToolOption,
  type AgentToolContext,
} from '../../src/core/agent/agent-tool.js';
import { InvalidInputError, type CompactionRecord } from '../../src/index.js';
import { compactionLine, renderCompactionTable } from '../../src/core/agent/compaction-history.js';
import { assistant, charCounter, system, tool, user } from '../support/messages.js';

const replay = { provider: 'replay', trajectory: 't', contextWindow: 10_000, maxOutputTokens: 1_000 } as const;

/** A system prompt, the task, then `rounds` tool rounds of 500-character results. */
function conversation(rounds: number) {
  const messages = [system('You are an agent.'), user('Fix the bug.', { sticky: true })];
  for (let round = 0; round < rounds; round += 1)
    messages.push(
      assistant('Reading.', [[`c${round}`, 'fs_read', '{"path":"a.py"}']]),
      tool(`c${round}`, 'x'.repeat(500)),
    );
  return messages;
}

const context = (extra: Partial<AgentToolContext> = {}): AgentToolContext => ({
  bounds: { cooldownRounds: 3, minReclaim: 1_000 },
  round: 10,
  lastCompactionRound: undefined,
  messages: conversation(6),
  keepRecent: 4,
  counter: charCounter,
  budget: 50_000,
  ...extra,
});

describe('compaction.agentTool', () => {
  it('declares compact_context to the model; off, it is not declared', () => {
    const on = planAgentRun({ messages: [], model: replay, compaction: { agentTool: true } });
    expect(on.tools.map((declared) => declared.function.name)).toEqual([COMPACT_CONTEXT_TOOL_NAME]);
    expect(on.agentTool).toEqual({ cooldownRounds: 3, minReclaim: undefined });
    const off = planAgentRun({ messages: [], model: replay, compaction: {} });
    expect(off.tools).toEqual([]);
    expect(off.agentTool).toBeUndefined();
    expect(
      planAgentRun({ messages: [], model: replay, compaction: { agentTool: { cooldownRounds: 5, minReclaim: 800 } } })
        .agentTool,
    ).toEqual({ cooldownRounds: 5, minReclaim: 800 });
  });

  it('reserves the name: a tool of the input named compact_context is refused, on or off', () => {
    for (const agentTool of [true, false]) {
      expect(() =>
        planAgentRun({
          messages: [],
          model: replay,
          tools: [{ type: 'function', function: { name: COMPACT_CONTEXT_TOOL_NAME, parameters: { type: 'object' } } }],
          compaction: { agentTool },
        }),
      ).toThrow(
        new InvalidInputError(
          'input.tools[0].function.name',
          '"compact_context" is reserved for the run\'s own compaction tool (compaction.agentTool): name yours otherwise',
        ),
      );
    }
  });

  it('names a bad option', () => {
    expect(() => parseAgentToolOption('yes')).toThrow(
      new InvalidInputError(
        'input.compaction.agentTool',
        'must be true, false or { cooldownRounds?, minReclaim? }, got "yes"',
      ),
    );
    expect(() => parseAgentToolOption({ cooldown: 2 })).toThrow(
      new InvalidInputError(
        'input.compaction.agentTool.cooldown',
        'unknown option; the options are cooldownRounds, minReclaim',
      ),
    );
    expect(() => parseAgentToolOption({ minReclaim: -1 })).toThrow(
      new InvalidInputError('input.compaction.agentTool.minReclaim', 'must be a whole number from 0, got -1'),
    );
  });
});

describe('a compaction the agent asked for', () => {
  it('says so in the history table and the UI details', () => {
    const record: CompactionRecord = {
      round: 9,
      backend: 'openai:m',
      target: 5_000,
      tokensBefore: 2_039,
      tokensAfter: 842,
      dropped: 18,
      elided: 0,
      kind: 'summary',
      summaryChars: 900,
      fallback: false,
      exhausted: false,
      tokensReclaimed: 1_197,
      summarizerTokens: 0,
      cacheHitRate: null,
      billedInput: null,
      askedBy: 'agent',
    };
    expect(renderCompactionTable([record])).toContain('| summary (900 chars), asked by the agent |');
    expect(compactionLine(record, 1)).toBe('#1 round 9 · 2,039 → 842 · summary of 18, asked by the agent');
  });
});

describe('a compact_context call', () => {
  it('is accepted with its focus when the bounds allow it', () => {
    expect(decideAgentTool({ focus: 'Keep the failing test.' }, context())).toEqual({
      accepted: true,
      focus: 'Keep the failing test.',
    });
    expect(decideAgentTool({}, context({ lastCompactionRound: 7 }))).toEqual({ accepted: true, focus: undefined });
  });

  it('is refused in the cooldown after a compaction, saying when to ask again', () => {
    expect(decideAgentTool({}, context({ lastCompactionRound: 9 }))).toEqual({
      accepted: false,
      answer:
        'compact_context: refused; your context was compacted 1 round ago; ask again in 2 rounds at the earliest. Go on with your task.',
    });
    expect(decideAgentTool({}, context({ lastCompactionRound: 10 }))).toMatchObject({
      answer: expect.stringMatching(
        /^compact_context: refused; your context was compacted this round; ask again in 3 rounds/,
      ),
    });
  });

  it('is refused when the middle a summary would replace holds less than minReclaim', () => {
    // Six rounds, four recent messages: the middle is four rounds of 530 characters (the turn, its call and a 500-character result).
    expect(decideAgentTool({}, context({ bounds: { cooldownRounds: 3, minReclaim: 3_000 } }))).toEqual({
      accepted: false,
      answer:
        'compact_context: refused; a compaction now would reclaim at most about 2,120 tokens, less than the 3,000 it must; your context is small enough. Go on with your task.',
    });
    // Unset, the minimum is a tenth of the budget.
    expect(
      decideAgentTool({}, context({ bounds: { cooldownRounds: 3, minReclaim: undefined }, budget: 30_000 })),
    ).toMatchObject({
      answer: expect.stringContaining('less than the 3,000 it must'),
    });
  });

  it('with bad arguments is answered with an error the model reads', () => {
    expect(decideAgentTool({ focus: 3 }, context())).toEqual({
      accepted: false,
      answer: 'Error: compact_context: arguments.focus must be a string',
    });
    expect(decideAgentTool({ topic: 'x' }, context())).toEqual({
      accepted: false,
      answer: 'Error: compact_context: unknown argument "topic" (it takes only focus)',
    });
  });
});
