// The state agentRun carries across continue-as-new (src/core/agent/carried-state.ts): what a run
// recorded is accepted and handed back as the same objects (they go on byte for byte), and a
// hand-made one is refused naming the field and index, as a run's input is.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseCarriedState } from '../../src/core/agent/carried-state.js';
import { InvalidInputError } from '../../src/core/errors.js';

/** As much of a recorded history as this test reads: the input the run started with. */
interface RecordedHistory {
  events: Array<{ workflowExecutionStartedEventAttributes?: { input?: { payloads?: Array<{ data?: string }> } } }>;
}

/** The carried state a recorded run continued with (the first run of the history is a continued one). */
function recordedCarried(): Record<string, unknown> {
  const history = JSON.parse(
    readFileSync(
      new URL('../histories/agent-run-compactions-taubench_gpt4o_airline_task2_trial1.json', import.meta.url),
      'utf8',
    ),
  ) as RecordedHistory;
  const data = history.events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data ?? '';
  const input: unknown = JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
  const carried: unknown = typeof input === 'object' && input !== null ? Reflect.get(input, 'carried') : undefined;
  if (typeof carried !== 'object' || carried === null) throw new Error('the recorded history carries no state');
  return { ...carried };
}

/** A small valid state: one user message, counted in o200k_base. */
function small(): Record<string, unknown> {
  return {
    version: 1,
    live: [
      { id: 'm1', message: { role: 'user', content: 'hi' } },
      { id: 'm2', message: { role: 'assistant', content: 'hello' } },
    ],
    sessionLines: 2,
    compactions: { recent: [], totals: {}, usage: {}, undone: [] },
    rounds: 1,
    nextId: 3,
    counters: [null],
    pendingUserMessages: [],
    backendFallbacks: 0,
    backends: [{ label: 'replay:x', failedRounds: 0, restingUntilRound: null, restingUntilTime: null }],
    previousRequest: { ids: ['m1'], sizes: [30] },
    peakContextTokens: 12,
    continuedAsNew: 0,
    tokenCounts: { o200k_base: [1, null] },
    pins: { ids: [], facts: [] },
  };
}

/** What parseCarriedState names: the field and the reason, or 'ok'. */
function verdict(value: unknown): string {
  try {
    parseCarriedState(value);
    return 'ok';
  } catch (error) {
    if (error instanceof InvalidInputError) return error.message;
    throw error;
  }
}

describe('carried state (agentRun across continue-as-new)', () => {
  it('accepts the state a recorded run continued with, and returns the very same objects', () => {
    const carried = recordedCarried();
    expect(Array.isArray(carried.live) && carried.live.length > 0).toBe(true);
    const parsed = parseCarriedState(carried);
    expect(parsed).toBe(carried);
    expect(parsed.live).toBe(carried.live);
    expect(parsed.compactions).toBe(carried.compactions);
    expect(parsed.backends).toBe(carried.backends);
  });

  it('accepts a small state', () => {
    expect(verdict(small())).toBe('ok');
  });

  it('carries the workflow time of the last model call, for the cold-cache rule (docs/design.md#cold-cache)', () => {
    expect(verdict({ ...small(), lastModelCallAt: 1_765_000_000_000 })).toBe('ok');
    expect(verdict({ ...small(), lastModelCallAt: 'yesterday' })).toContain(
      'input.carried.lastModelCallAt: must be a workflow time in milliseconds',
    );
  });

  const cases: Array<[string, (state: Record<string, unknown>) => unknown, string]> = [
    ['not an object', () => 'resume', 'input.carried: is what a run carries'],
    ['a list', () => [], 'input.carried: is what a run carries'],
    ['another version', (state) => ({ ...state, version: 2 }), 'input.carried.version: must be 1'],
    ['no version', ({ version: _version, ...state }) => state, 'input.carried.version: must be 1'],
    ['live that is not a list', (state) => ({ ...state, live: 'x' }), 'input.carried.live: '],
    [
      'an entry without an id',
      (state) => ({ ...state, live: [{ message: { role: 'user', content: 'x' } }] }),
      'input.carried.live[0].id: required',
    ],
    [
      'two entries with one id',
      (state) => ({
        ...state,
        live: [
          { id: 'm1', message: { role: 'user', content: 'x' } },
          { id: 'm1', message: { role: 'user', content: 'y' } },
        ],
      }),
      'input.carried.live[1].id: must be a unique transcript id',
    ],
    [
      'a broken live message',
      (state) => ({
        ...state,
        live: [
          { id: 'm1', message: { role: 'user', content: 'x' } },
          { id: 'm2', message: { role: 'tool', content: 'x' } },
        ],
      }),
      'input.carried.live[1].message.tool_call_id: required for role "tool"',
    ],
    [
      'a broken pending message',
      (state) => ({ ...state, pendingUserMessages: [{ role: 'robot', content: 'x' }] }),
      'input.carried.pendingUserMessages[0].role: must be one of',
    ],
    ['a negative round count', (state) => ({ ...state, rounds: -1 }), 'input.carried.rounds: '],
    ['a fractional nextId', (state) => ({ ...state, nextId: 2.5 }), 'input.carried.nextId: '],
    [
      'compactions without totals',
      (state) => ({ ...state, compactions: { recent: [], usage: {} } }),
      'input.carried.compactions.totals: required',
    ],
    [
      'a backend status with failedRounds as text',
      (state) => ({
        ...state,
        backends: [{ label: 'x', failedRounds: 'two', restingUntilRound: null, restingUntilTime: null }],
      }),
      'input.carried.backends[0].failedRounds: ',
    ],
    ['a counter state that is a number', (state) => ({ ...state, counters: [3] }), 'input.carried.counters[0]: '],
    [
      'a previous request with a negative size',
      (state) => ({ ...state, previousRequest: { ids: ['m1', 'm2'], sizes: [30, -1] } }),
      'input.carried.previousRequest.sizes[1]: ',
    ],
    [
      'token counts as a list',
      (state) => ({ ...state, tokenCounts: [1, 2] }),
      'input.carried.tokenCounts: must be an object of count lists by encoding',
    ],
    [
      'token counts that do not match the conversation',
      (state) => ({ ...state, tokenCounts: { o200k_base: [1] } }),
      'input.carried.tokenCounts.o200k_base: must list a count or null for each of the 2 texts',
    ],
    [
      'a token count that is not one',
      (state) => ({ ...state, tokenCounts: { o200k_base: [1, 2], cl100k_base: [4, -3] } }),
      'input.carried.tokenCounts.cl100k_base[1]: must be a non-negative integer or null',
    ],
    ['no token counts', ({ tokenCounts: _counts, ...state }) => state, 'input.carried.tokenCounts: required'],
    ['no pins', ({ pins: _pins, ...state }) => state, 'input.carried.pins: required'],
    [
      'pins naming a message that is not live',
      (state) => ({ ...state, pins: { ids: ['m2', 'm7'], facts: [] } }),
      'input.carried.pins.ids[1]: no message with id "m7" in input.carried.live',
    ],
    [
      'pinned facts that are not text',
      (state) => ({ ...state, pins: { ids: [], facts: [3] } }),
      'input.carried.pins.facts',
    ],
  ];

  it('reads the pins as they were carried', () => {
    const pins = { ids: ['m2'], facts: ['Use pnpm'] };
    const current = { ...small(), pins };
    expect(verdict(current)).toBe('ok');
    expect(parseCarriedState(current).pins).toBe(pins);
  });

  it.each(cases)('refuses %s, naming the field', (_case, make, expected) => {
    expect(verdict(make(small()))).toContain(expected);
  });
});
