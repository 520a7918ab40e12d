// The pure parts of the agent loop: the input plan (defaults and field-named errors), the
// preflight (room per backend in its own units, the aim, the backend to call), the compaction
// table, and how a trajectory is cut into replayable turns.
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { BUILT_IN_TOOLS, isBuiltInToolName } from '../../src/core/agent/tool-declarations.js';
import { RECALL_TOOL_NAME } from '../../src/core/agent/recall.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { InvalidInputError, type ChatMessage, type CompactionRecord } from '../../src/index.js';
import { COMPACTION_TABLE_HEADER, renderCompactionTable } from '../../src/core/agent/compaction-history.js';
import { backendCounter, preflight, requestCounter } from '../../src/core/agent/preflight.js';
import { planAgentRun } from '../../src/core/agent/agent-input.js';
import { replayScript } from '../../src/core/agent/trajectory.js';
import { assistant, system, tool, user } from '../support/messages.js';

const replay = { provider: 'replay', trajectory: 't', contextWindow: 10_000, maxOutputTokens: 1_000 } as const;

function invalid(input: unknown): InvalidInputError {
  try {
    planAgentRun(input);
  } catch (error) {
    if (error instanceof InvalidInputError) return error;
    throw error;
  }
  throw new Error('expected InvalidInputError');
}

describe('planAgentRun', () => {
  it('applies the defaults: safety margin 5% for openai and 0 for replay, o200k, labels, 100 rounds', () => {
    const plan = planAgentRun({
      messages: [],
      model: [{ provider: 'openai', model: 'gpt-4o', contextWindow: 128_000, maxOutputTokens: 4_096 }, replay],
      compaction: {},
    });
    expect(
      plan.backends.map(({ index, label, safetyMargin, tokenizer }) => ({ index, label, safetyMargin, tokenizer })),
    ).toEqual([
      { index: 0, label: 'openai:gpt-4o', safetyMargin: 6_400, tokenizer: 'o200k_base' },
      { index: 1, label: 'replay:t', safetyMargin: 0, tokenizer: 'o200k_base' },
    ]);
    expect([plan.maxRounds, plan.searchAttributes, plan.continueAsNewAfterRounds]).toEqual([100, true, undefined]);
  });

  it('maps built-in tool names to their declarations and keeps declared tools', () => {
    const own = { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } } as const;
    expect(planAgentRun({ messages: [], model: replay, tools: ['grep', own], compaction: {} }).tools).toEqual([
      BUILT_IN_TOOLS.grep,
      own,
    ]);
  });

  it.each([
    [{ messages: [], model: replay, compaction: {}, tools: ['grep', 'grep'] }, 'input.tools[1].function.name'],
    [{ messages: [], model: { ...replay, contextWindow: 1_000 }, compaction: {} }, 'input.model.contextWindow'],
    [{ messages: [], model: [], compaction: {} }, 'input.model'],
    [{ messages: [], model: { ...replay, extra: 1 }, compaction: {} }, 'input.model.extra'],
    [{ messages: [], model: replay, compaction: { triggerRatio: 2 } }, 'input.compaction.triggerRatio'],
    [
      { messages: [], model: replay, compaction: {}, toolActivity: { maximumAttempts: 0 } },
      'input.toolActivity.maximumAttempts',
    ],
    ['not an object', 'input'],
  ])('%j → %s', (input, field) => {
    expect(invalid(input).field).toBe(field);
  });

  it('an input that is not an object: what it must be and the kind of value seen, not the value', () => {
    const shape = 'must be an object { messages, model, compaction, tools?, maxRounds? }';
    expect(invalid(null).message).toBe(`input: ${shape}, got null`);
    expect(invalid([{ role: 'user', content: 'x'.repeat(1_000) }]).message).toBe(`input: ${shape}, got a list`);
    expect(invalid('text').message).toBe(`input: ${shape}, got string`);
    expect(invalid(undefined).message).toBe('input: required');
  });
});

describe('planAgentRun: input a provider would reject', () => {
  const call = (id: string, args = '{}') => ({ id, type: 'function', function: { name: 'lookup', arguments: args } });
  const turn = (...calls: ReturnType<typeof call>[]) => ({ role: 'assistant', content: null, tool_calls: calls });
  const result = (id: string) => ({ role: 'tool', tool_call_id: id, content: 'ok' });
  const run = (messages: unknown[]) => ({ messages, model: replay, compaction: {} });

  it('accepts a conversation whose every call is answered right after its turn', () => {
    expect(() =>
      planAgentRun(run([user('go'), turn(call('a'), call('b')), result('b'), result('a'), user('next')])),
    ).not.toThrow();
  });

  it.each([
    [
      'an orphan tool result (no turn asked for it) (regression)',
      [user('go'), result('zz')],
      'messages[1].tool_call_id',
      'answers no tool call: a tool result must follow the assistant turn that asked for it (only other results in between)',
    ],
    [
      'a result that answers a call of another turn',
      [user('go'), turn(call('a')), result('a'), user('more'), result('a')],
      'messages[4].tool_call_id',
      'answers no tool call: a tool result must follow the assistant turn that asked for it (only other results in between)',
    ],
    [
      'a result for a call the turn before did not make',
      [user('go'), turn(call('a')), result('a'), result('b')],
      'messages[3].tool_call_id',
      '"b" answers no tool call of messages[1] (its calls: "a")',
    ],
    [
      'a call answered twice',
      [user('go'), turn(call('a')), result('a'), result('a')],
      'messages[3].tool_call_id',
      '"a" is answered twice (also messages[2])',
    ],
    [
      'a call left unanswered before the next message',
      [user('go'), turn(call('a'), call('b')), result('a'), user('next')],
      'messages[1].tool_calls[1].id',
      '"b" has no tool result: every call of a turn must be answered before the next message',
    ],
    [
      'a call left unanswered at the end',
      [user('go'), turn(call('a'))],
      'messages[1].tool_calls[0].id',
      '"a" has no tool result: every call of a turn must be answered before the next message',
    ],
    [
      'arguments that are not JSON',
      [user('go'), turn(call('a', '{"path": ')), result('a')],
      'messages[1].tool_calls[0].function.arguments',
      'must be a JSON object, got "{\\"path\\": " (not JSON)',
    ],
    [
      'arguments that are JSON but not an object',
      [user('go'), turn(call('a', '[1]')), result('a')],
      'messages[1].tool_calls[0].function.arguments',
      'must be a JSON object, got "[1]"',
    ],
  ])('%s', (_name, messages, field, reason) => {
    const error = invalid(run(messages));
    expect([error.field, error.reason]).toEqual([field, reason]);
  });

  it('leaves a continued run alone: its carried conversation is what the run itself built', () => {
    expect(() => planAgentRun({ ...run([]), carried: { version: 1 } })).not.toThrow();
  });
});

describe('planAgentRun: tool declarations', () => {
  const run = (tools: unknown[]) => ({ messages: [], model: replay, compaction: {}, tools });
  it.each([
    [
      'a declaration without type (regression)',
      [{ function: { name: 'lookup' } }],
      'input.tools[0].type',
      'must be "function", got undefined',
    ],
    [
      'another type',
      ['grep', { type: 'web_search', function: { name: 'lookup' } }],
      'input.tools[1].type',
      'must be "function", got "web_search"',
    ],
    ['no function', [{ type: 'function' }], 'input.tools[0].function', 'required'],
    [
      'a bad name',
      [{ type: 'function', function: { name: 'look up' } }],
      'input.tools[0].function.name',
      'must be 1-64 letters, digits, _ or -, got "look up"',
    ],
    [
      'parameters that are not a schema object (regression)',
      [{ type: 'function', function: { name: 'lookup', parameters: 'x' } }],
      'input.tools[0].function.parameters',
      'must be a JSON Schema object, got "x"',
    ],
    [
      'parameters of another type than object',
      [{ type: 'function', function: { name: 'lookup', parameters: { type: 'string' } } }],
      'input.tools[0].function.parameters.type',
      'must be "object" (a function takes named arguments), got "string"',
    ],
    [
      'properties that are not an object',
      [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: [] } } }],
      'input.tools[0].function.parameters.properties',
      'must be an object of property schemas, got a list',
    ],
    [
      'required that is not a list of names',
      [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', required: 'id' } } }],
      'input.tools[0].function.parameters.required',
      'must be a list of property names, got "id"',
    ],
    [
      'a description that is not text',
      [{ type: 'function', function: { name: 'lookup', description: 5 } }],
      'input.tools[0].function.description',
      'must be a string, got 5',
    ],
    [
      'strict that is not a boolean',
      [{ type: 'function', function: { name: 'lookup', strict: 'yes' } }],
      'input.tools[0].function.strict',
      'must be true, false or null, got "yes"',
    ],
    [
      'a declaration that is not an object',
      [7],
      'input.tools[0]',
      'must be a built-in tool name or { type: "function", function: { name, description?, parameters? } }, got 7',
    ],
  ])('%s', (_name, tools, field, reason) => {
    const error = invalid(run(tools));
    expect([error.field, error.reason]).toEqual([field, reason]);
  });

  describe("a tool named like one of the worker's own activities", () => {
    // The names as a worker registers them: a declared tool of one of these names would be
    // dispatched to that activity, so the model could call `chat`, `summarize`, ... at will.
    const registered = Object.keys(createActivities({ summarizer: createExtractiveSummarizer() }));
    const tools: string[] = registered.filter((name) => isBuiltInToolName(name) || name === RECALL_TOOL_NAME);
    const others = registered.filter((name) => !tools.includes(name));
    const declared = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object' } } });

    it('the worker registers activities besides its tools (the cases below test something)', () => {
      expect(others).toEqual(expect.arrayContaining(['chat', 'summarize', 'countTokens']));
      expect(tools.sort()).toEqual(['fs_list', 'fs_read', 'grep', 'recall']);
    });

    it.each(others)('"%s" is refused, naming the field', (name) => {
      const error = invalid(run(['grep', declared(name)]));
      expect([error.field, error.reason]).toEqual([
        'input.tools[1].function.name',
        `"${name}" is one of the worker's own activities, not a tool: the model could call it; name your tool otherwise`,
      ]);
    });

    it.each(tools)('"%s", a tool of ours, may be declared', (name) => {
      expect(planAgentRun(run([declared(name)])).tools.map((tool) => tool.function.name)).toEqual([name]);
    });
  });
});

describe('planAgentRun: activity settings the server or SDK would refuse at scheduling time (regression: the workflow task failed and retried forever)', () => {
  const run = (extra: Record<string, unknown>) => ({ messages: [], model: replay, compaction: {}, ...extra });
  it.each([
    [
      'a chat retry interval over the maximum',
      { chatActivity: { initialInterval: '1m' } },
      'input.chatActivity.initialInterval',
      'must be at most 30s (the longest wait between attempts), got "1m"',
    ],
    [
      'a tool retry interval over the maximum',
      { toolActivity: { initialInterval: 40_000 } },
      'input.toolActivity.initialInterval',
      'must be at most 30s (the longest wait between attempts), got 40000',
    ],
    [
      'a chat task queue name over the server limit',
      { chatActivity: { taskQueue: 'q'.repeat(1001) } },
      'input.chatActivity.taskQueue',
      'must be at most 1000 bytes, got 1001',
    ],
    [
      'a summarizer task queue name over the server limit',
      { compaction: { taskQueue: 'q'.repeat(1001) } },
      'input.compaction.taskQueue',
      'must be at most 1000 bytes, got 1001',
    ],
    [
      'a blank tool task queue',
      { toolActivity: { taskQueue: '  ' } },
      'input.toolActivity.taskQueue',
      'must not be blank or start or end with whitespace, got "  "',
    ],
  ])('%s', (_name, extra, field, reason) => {
    const error = invalid(run(extra));
    expect([error.field, error.reason]).toEqual([field, reason]);
  });
});

describe('preflight', () => {
  const conversation = (chars: number): ChatMessage[] => [system('You are an agent.'), user('x'.repeat(chars))];
  const plan = planAgentRun({
    messages: [],
    model: [
      { ...replay, label: 'small', contextWindow: 4_000 },
      { ...replay, label: 'large', contextWindow: 12_000 },
    ],
    tools: ['fs_read'],
    compaction: {},
  });
  const counters = plan.backends.map((backend) => backendCounter(backend, plan.tools));

  it('room = window − reserved output − safety margin − tool declarations, in the backend tokenizer', () => {
    const toolTokens = requestCounter('o200k_base', [BUILT_IN_TOOLS.fs_read]).toolTokens;
    expect(toolTokens).toBeGreaterThan(50);
    expect(counters.map((counter) => counter.room)).toEqual([4_000 - 1_000 - toolTokens, 12_000 - 1_000 - toolTokens]);
  });

  it('aims at the largest room and calls the first backend the conversation fits', () => {
    const small = conversation(100);
    expect(preflight(small, counters).aimAt.backend.label).toBe('large');
    expect(preflight(small, counters).fits?.backend.label).toBe('small');
    // "x" repeats encode about 8 characters per token: 40,000 characters do not fit 'small' but fit 'large'.
    const middle = conversation(40_000);
    expect(preflight(middle, counters).fits?.backend.label).toBe('large');
    expect(preflight(conversation(200_000), counters).fits).toBeUndefined();
    // Without the large backend (it failed this round), the aim is the small one's room.
    expect(preflight(middle, counters.slice(0, 1))).toMatchObject({ aim: counters[0]?.room, fits: undefined });
  });

  it('counts the conversation from billed usage once calibrated, minus the tool declarations it includes', () => {
    const counter = backendCounter(plan.backends[0]!, plan.tools);
    const sent = conversation(100);
    counter.usage.calibrate(sent, 1_000 + counter.toolTokens);
    expect(counter.conversation.count(sent)).toBe(1_000);
    expect(counter.conversation.count([...sent, assistant('ok')])).toBeGreaterThan(1_000);
    // A change below the calibrated prefix falls back to the estimator.
    expect(counter.conversation.count([sent[0]!, user('y')])).toBeLessThan(100);
  });
});

describe('renderCompactionTable', () => {
  it('one row per compaction, digits grouped, summary or trim in words', () => {
    const record = (overrides: Partial<CompactionRecord>): CompactionRecord => ({
      round: 12,
      backend: 'b',
      target: 9_000,
      tokensBefore: 30_512,
      tokensAfter: 9_876,
      dropped: 24,
      elided: 3,
      kind: 'summary',
      summaryChars: 1_234,
      fallback: false,
      exhausted: false,
      tokensReclaimed: 20_636,
      summarizerTokens: 3_000,
      cacheHitRate: 0.8149,
      billedInput: 104_332,
      ...overrides,
    });
    expect(
      renderCompactionTable([
        record({}),
        record({ round: 20, kind: 'trim', summaryChars: null, fallback: true }),
        record({ round: 30, kind: 'elision', summaryChars: null, dropped: 0, cacheHitRate: null, billedInput: null }),
      ]).split('\n'),
    ).toEqual([
      COMPACTION_TABLE_HEADER,
      '|--:|--:|--:|--:|--:|--:|---|---|---|--:|--:|',
      '| 1 | 12 | 30,512 → 9,876 | 20,636 | 24 | 3 | summary (1,234 chars) | no | no | 81% | 104,332 |',
      '| 2 | 20 | 30,512 → 9,876 | 20,636 | 24 | 3 | trim | yes | no | 81% | 104,332 |',
      '| 3 | 30 | 30,512 → 9,876 | 20,636 | 0 | 3 | elision only | no | no | — | — |',
    ]);
  });
});

describe('replayScript', () => {
  it('cuts a trajectory into its opening and assistant turns with their results, user replies and unanswered calls', () => {
    const trajectory = [
      system('policy'),
      user('task'),
      assistant(null, [
        ['c1', 'read', '{}'],
        ['c2', 'read', '{"a":1}'],
      ]),
      tool('c2', 'two'),
      tool('c1', 'one'),
      assistant('Done? Anything else?'),
      user('No, thanks.'),
      assistant(null, [['c3', 'submit', '{}']]),
    ];
    const script = replayScript(trajectory);
    expect(script.opening).toEqual(trajectory.slice(0, 2));
    expect(
      script.turns.map((turn) => [turn.message, [...turn.results.keys()], turn.userMessages, turn.unanswered]),
    ).toEqual([
      [trajectory[2], ['c2', 'c1'], [], []],
      [trajectory[5], [], [trajectory[6]], []],
      [trajectory[7], [], [], ['c3']],
    ]);
  });

  it('a trajectory without an assistant turn, or with a bad message, is refused naming the field', () => {
    expect(() => replayScript([user('only')])).toThrow('trajectory: has no assistant turn to replay');
    expect(() => replayScript([{ role: 'tool', content: 'x' }])).toThrow('messages[0].tool_call_id');
  });
});
