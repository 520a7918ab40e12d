import { describe, expect, it } from 'vitest';
import { LruMap } from '../../src/payloads/lru-map.js';

describe('LruMap', () => {
  const sized = (budget: number) => new LruMap<string>(budget, (value) => value.length);

  it('forgets the least recently used entries once the weights pass the budget', () => {
    const map = sized(10);
    map.set('a', 'aaaa');
    map.set('b', 'bbbb');
    expect(map.get('a')).toBe('aaaa'); // a is now the most recently used
    map.set('c', 'cccc');
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual(['aaaa', undefined, 'cccc']);
  });

  it('does not keep a value heavier than the whole budget, and keeps what it had', () => {
    const map = sized(4);
    map.set('a', 'aaaa');
    map.set('big', 'xxxxx');
    expect([map.get('big'), map.get('a')]).toEqual([undefined, 'aaaa']);
  });

  it('counts a replaced value once, and forgets the least recently used first', () => {
    const map = sized(8);
    map.set('a', 'aaaa');
    map.set('a', 'AAAA');
    map.set('b', 'bbbb');
    expect([map.get('a'), map.get('b')]).toEqual(['AAAA', 'bbbb']);
    map.set('c', 'cccc');
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([undefined, 'bbbb', 'cccc']);
  });
});
