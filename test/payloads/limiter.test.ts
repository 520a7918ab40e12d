import { describe, expect, it } from 'vitest';
import { Limiter } from '../../src/payloads/limiter.js';

describe('Limiter', () => {
  it('runs at most `limit` operations at once and returns each one its own result', async () => {
    const limiter = new Limiter(2);
    let running = 0;
    let most = 0;
    const releases: Array<() => void> = [];
    const results = Promise.all(
      [1, 2, 3, 4, 5].map((value) =>
        limiter.run(async () => {
          running += 1;
          most = Math.max(most, running);
          await new Promise<void>((resolve) => releases.push(resolve));
          running -= 1;
          return value * 10;
        }),
      ),
    );
    // Release the operations one at a time, as they start: each release lets one waiting caller in.
    for (let released = 0; released < 5; released += 1) {
      await new Promise((resolve) => setImmediate(resolve));
      expect(running).toBeLessThanOrEqual(2);
      releases.shift()?.();
    }
    expect(await results).toEqual([10, 20, 30, 40, 50]);
    expect(most).toBe(2);
  });

  it('frees the slot of an operation that failed', async () => {
    const limiter = new Limiter(1);
    await expect(limiter.run(() => Promise.reject(new Error('backend down')))).rejects.toThrow('backend down');
    expect(await limiter.run(() => Promise.resolve('next'))).toBe('next');
  });
});
