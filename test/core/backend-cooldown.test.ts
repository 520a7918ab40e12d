// A backend that failed a round rests (src/core/agent/backend-cooldown.ts): for the cooldown's
// rounds, or until its time when it has one, whichever ends first; with 0 rounds it never rests.
import { describe, expect, it } from 'vitest';
import { freshBackendStatus, isResting, restingNote, startRest } from '../../src/core/agent/backend-cooldown.js';

const at = (time: number) => () => time;

describe('backend cooldown', () => {
  it('rests for the cooldown rounds after the round it failed', () => {
    const status = freshBackendStatus('openai:gpt-4o');
    startRest(status, { rounds: 5, timeMs: undefined }, 3, at(0));
    expect(status).toEqual({ label: 'openai:gpt-4o', failedRounds: 1, restingUntilRound: 8, restingUntilTime: null });
    expect([4, 7, 8, 9].map((round) => isResting(status, round, at(0)))).toEqual([true, true, false, false]);
  });

  it('with a time as well, ends at whichever comes first', () => {
    const status = freshBackendStatus('a');
    startRest(status, { rounds: 5, timeMs: 60_000 }, 1, at(1_000));
    expect(status.restingUntilTime).toBe(61_000);
    expect(isResting(status, 2, at(60_999))).toBe(true);
    expect(isResting(status, 2, at(61_000))).toBe(false);
    expect(isResting(status, 6, at(2_000))).toBe(false);
  });

  it('with 0 rounds counts the failure but never rests', () => {
    const status = freshBackendStatus('a');
    startRest(status, { rounds: 0, timeMs: 60_000 }, 1, at(0));
    expect(status).toEqual({ label: 'a', failedRounds: 1, restingUntilRound: null, restingUntilTime: null });
    expect(isResting(status, 1, at(0))).toBe(false);
  });

  it('notes the resting backends for the current details', () => {
    const a = { label: 'a', failedRounds: 1, restingUntilRound: 7, restingUntilTime: null };
    const b = { label: 'b', failedRounds: 2, restingUntilRound: 9, restingUntilTime: null };
    expect(restingNote([])).toBe('');
    expect(restingNote([a, b])).toBe('Resting: a until round 7 (1 failed round), b until round 9 (2 failed rounds)');
  });
});
