// The built-in tools under what a model may ask of them (issue: model output is untrusted input):
// a catastrophically backtracking grep pattern costs a search thread, never the worker's event loop,
// and every tool stops at its documented bounds with a note the model reads.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { grepInThread, SearchSlots } from '../../src/activities/grep.js';
import { createBuiltInTools, MAX_GREP_LINE_CHARS, MAX_GREP_PATTERN_CHARS } from '../../src/activities/tools.js';
import { FailureType } from '../../src/index.js';

const run = <T>(fn: (args: unknown) => Promise<T>, args: unknown): Promise<T> =>
  new MockActivityEnvironment().run(fn, args);

async function failureOf(call: () => Promise<unknown>): Promise<ApplicationFailure> {
  try {
    const output = await call();
    throw new Error(`expected a failure, got ${JSON.stringify(output).slice(0, 200)}`);
  } catch (error) {
    if (!(error instanceof ApplicationFailure)) throw error;
    return error;
  }
}

/**
 * The threads of this process at the lowest priority (nice 19), grep's search threads on Linux,
 * with the CPU time each has used (clock ticks, user and system), by thread id.
 */
function nicedThreadTicks(): Map<string, number> {
  const ticks = new Map<string, number>();
  for (const task of readdirSync(`/proc/${process.pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${process.pid}/task/${task}/stat`, 'utf8');
      // Fields after the command's closing parenthesis: utime, stime and nice are the 14th, 15th
      // and 19th fields of the line.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[16] === '19') ticks.set(task, Number(fields[11]) + Number(fields[12]));
    } catch {
      // The thread ended while we looked.
    }
  }
  return ticks;
}

const nicedThreads = (): number => nicedThreadTicks().size;

/** A search of evil.txt under `base` for the pattern that backtracks until its deadline. */
const evilSearch = (base: string): Parameters<typeof grepInThread>[0] => ({
  pattern: '(a+)+$',
  flags: '',
  start: join(base, 'evil.txt'),
  base,
  maxResults: 10,
  maxFileBytes: 1_000_000,
  maxFiles: 10,
  skippedDirectories: [],
  allow: [],
  maxLineChars: MAX_GREP_LINE_CHARS,
  maxOutputChars: 100_000,
});

const onLinux = process.platform === 'linux';
if (!onLinux) console.log("skipped: the search threads' priority is read from /proc (Linux only)");

describe('built-in tools stay bounded whatever the model asks', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'compactor-bounds-'));
    // 42 `a`s and a `!`: `(a+)+$` backtracks through 2^42 ways to split them on the main thread.
    writeFileSync(join(root, 'evil.txt'), `${'a'.repeat(42)}!\nfine line\n`);
    mkdirSync(join(root, 'many'));
    for (let index = 0; index < 30; index += 1)
      writeFileSync(join(root, 'many', `f${String(index).padStart(2, '0')}.txt`), 'x\n');
    writeFileSync(join(root, 'big.txt'), `${'line\n'.repeat(1000)}`);
    writeFileSync(join(root, 'a-first.txt'), 'x\n');
    // A FIFO: opening it for reading waits for a writer that never comes.
    mkdirSync(join(root, 'special'));
    execFileSync('mkfifo', [join(root, 'special', 'pipe')]);
    writeFileSync(join(root, 'special', 'plain.txt'), 'x\n');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('a catastrophic grep pattern ends at its deadline with a note, while the event loop keeps running', async () => {
    const tools = createBuiltInTools({ root, grepTimeoutMs: 1500 });
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 50);
    try {
      const result = await run(tools.grep, { pattern: '(a+)+$', path: 'evil.txt' });
      expect(result).toMatch(
        /^no matches for \/\(a\+\)\+\$\/ in evil\.txt\n\[stopped after 1\.5 s: the search took too long;/,
      );
    } finally {
      clearInterval(ticker);
    }
    // Had the pattern run on this thread, no timer could have fired until it ended.
    expect(ticks).toBeGreaterThanOrEqual(5);
  });

  it.runIf(onLinux)('keeps the matches found before the deadline', { timeout: 150_000 }, async () => {
    const tools = createBuiltInTools({ root, grepTimeoutMs: 1500 });
    // The deadline is a timer of this thread, faked: it fires once the search is surely past
    // a-first.txt, however slowly a thread at nice 19 runs on a busy machine. The walk is
    // alphabetical: a-first.txt matches, big.txt is read, then evil.txt holds the search.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const earlier = new Set(nicedThreadTicks().keys());
      const pending = run(tools.grep, { pattern: '^(x|(a+)+$)' });
      // Half a second of the new search thread's CPU is far more than starting it and reading two
      // small files take: by then it is backtracking in evil.txt.
      const busy = () => [...nicedThreadTicks()].some(([task, ticks]) => !earlier.has(task) && ticks >= 50);
      const limit = Date.now() + 120_000;
      while (!busy() && Date.now() < limit) await sleep(20);
      vi.advanceTimersByTime(1500);
      const result = await pending;
      expect(result.startsWith('a-first.txt:1: x\n')).toBe(true);
      expect(result).not.toContain('many/');
      expect(result).toMatch(/\[stopped after 1\.5 s/);
    } finally {
      vi.useRealTimers();
    }
  });

  it('stops after its file limit, and says so', async () => {
    const tools = createBuiltInTools({ root, grepMaxFiles: 5 });
    const result = await run(tools.grep, { pattern: '^x$', path: 'many' });
    expect(result.split('\n').filter((line) => line.endsWith(': x'))).toHaveLength(5);
    expect(result).toContain('[stopped after searching 5 files: give a narrower path]');
  });

  describe("what a search hands the worker's thread is bounded, line by line and in all", () => {
    /** Runs `search` and counts the bytes of every message the search thread posted (as JSON). */
    async function bytesCrossing(search: () => Promise<unknown>): Promise<number> {
      let bytes = 0;
      const emit = Worker.prototype.emit;
      Worker.prototype.emit = function (this: Worker, event: string | symbol, ...args: unknown[]): boolean {
        if (event === 'message') bytes += Buffer.byteLength(JSON.stringify(args[0]));
        return emit.call(this, event, ...args);
      };
      try {
        await search();
      } finally {
        Worker.prototype.emit = emit;
      }
      return bytes;
    }

    beforeAll(() => {
      // Twelve files of 19 lines of 100,000 characters (1.9 MB, under grep's 2 MB file limit): 23 MB
      // of matching text in 228 lines.
      mkdirSync(join(root, 'long-lines'));
      for (let index = 0; index < 12; index += 1)
        writeFileSync(join(root, 'long-lines', `min${index}.js`), `${'a'.repeat(99_999)}\n`.repeat(19));
    });

    it('grep: each matched line cut around its match, and the search stopped once a result of matches was found', async () => {
      const tools = createBuiltInTools({ root, maxResultChars: 20_000 });
      let result = '';
      const crossed = await bytesCrossing(async () => {
        result = await run(tools.grep, { pattern: 'a', path: 'long-lines', maxResults: 1000 });
      });
      // At most the result's 20,000 characters, plus each message's envelope (about 40 bytes).
      expect(crossed).toBeLessThan(20_000 + 1_000);
      expect(result.length).toBeLessThanOrEqual(20_000);
      const lines = result.split('\n');
      expect(lines[0]).toMatch(/^long-lines\/min0\.js:1: a{1000} \[… 98999 more characters of this line\]$/);
      expect(lines.at(-1)).toBe(
        '[stopped at 19800 characters of matches: give a narrower path or a more specific pattern]',
      );
    });

    it('grep: a first match longer than what a small result holds is kept, never "no matches"', async () => {
      const tools = createBuiltInTools({ root, maxResultChars: 300 });
      const result = await run(tools.grep, { pattern: 'a', path: 'long-lines' });
      expect(result).toMatch(/^long-lines\/min0\.js:1: a{278}» \[truncated by the harness: \d+ more characters\]$/);
    });

    it('grepInThread: a match far into a long line is shown with the text around it', async () => {
      const base = realpathSync(root);
      writeFileSync(join(root, 'needle.js'), `${'x'.repeat(1_000_000)}NEEDLE${'y'.repeat(900_000)}\n`);
      let outcome: Awaited<ReturnType<typeof grepInThread>> | undefined;
      const crossed = await bytesCrossing(async () => {
        outcome = await grepInThread(
          {
            ...evilSearch(base),
            pattern: 'NEEDLE',
            start: join(base, 'needle.js'),
            maxResults: 10,
            maxFileBytes: 2_000_000,
          },
          { timeoutMs: 60_000, memoryMb: 64 },
        );
      });
      expect(crossed).toBeLessThan(MAX_GREP_LINE_CHARS + 1_000);
      const [line] = outcome?.matches ?? [];
      expect(line).toMatch(
        /^needle\.js:1: \[… 999750 characters\] x{250}NEEDLEy{744} \[… 899256 more characters of this line\]$/,
      );
    });
  });

  it("grepMemoryMb is the search thread's heap limit: a thread over it stops with the note the model reads", async () => {
    const search = { pattern: 'line', path: 'big.txt' };
    const roomy = (await run(createBuiltInTools({ root }).grep, search)) as string;
    expect(roomy).not.toContain('memory limit');
    const tight = (await run(createBuiltInTools({ root, grepMemoryMb: 1 }).grep, search)) as string;
    expect(tight).toContain('[stopped: the search went over its memory limit; give a narrower path]');
  });

  it('refuses a pattern longer than its limit, and one with bad syntax, as arguments the model reads', async () => {
    const tools = createBuiltInTools({ root });
    const long = await failureOf(() => run(tools.grep, { pattern: 'a'.repeat(MAX_GREP_PATTERN_CHARS + 1) }));
    expect([long.type, long.nonRetryable]).toEqual([FailureType.Tool.InvalidArguments, true]);
    expect(long.message).toContain('arguments.pattern');
    const syntax = await failureOf(() => run(tools.grep, { pattern: '(?<=' }));
    expect(syntax.type).toBe(FailureType.Tool.InvalidArguments);
  });

  it('fs_read reads at most maxReadBytes of a file and says how big it was', async () => {
    const tools = createBuiltInTools({ root, maxReadBytes: 12 });
    expect(await run(tools.fs_read, { path: 'big.txt' })).toBe(
      '     1\tline\n     2\tline\n     3\tli\n[the file is 5000 bytes: read only its first 12]',
    );
  });

  it('fs_list lists at most maxListEntries entries and says it stopped', async () => {
    const tools = createBuiltInTools({ root, maxListEntries: 4 });
    const listed = await run(tools.fs_list, { path: 'many' });
    expect(listed.split('\n')).toHaveLength(5);
    expect(listed).toMatch(/\n\[stopped after 4 entries\]$/);
  });

  it('never opens a FIFO: fs_read and grep refuse one by name, and a grep over its directory skips it', async () => {
    const tools = createBuiltInTools({ root });
    const read = await failureOf(() => run(tools.fs_read, { path: 'special/pipe' }));
    expect([read.type, read.message]).toEqual([
      FailureType.Tool.InvalidArguments,
      'fs_read: special/pipe is not a regular file (a FIFO, socket or device is never read)',
    ]);
    const grepped = await failureOf(() => run(tools.grep, { pattern: 'x', path: 'special/pipe' }));
    expect([grepped.type, grepped.message]).toEqual([
      FailureType.Tool.InvalidArguments,
      'grep: special/pipe is not a regular file (a FIFO, socket or device is never read)',
    ]);
    expect(await run(tools.grep, { pattern: 'x', path: 'special' })).toBe('special/plain.txt:1: x');
  });

  it('a search keeps its slot until its thread has exited, not only until its result came back', async () => {
    const slots = new SearchSlots(1);
    const base = realpathSync(root);
    const outcome = await grepInThread(evilSearch(base), { timeoutMs: 200, memoryMb: 64, slots });
    expect(outcome.stoppedAt).toBe('deadline');
    // The thread was told to stop when the deadline came; it has not exited yet, so no other search
    // may start beside it.
    expect(slots.load.running).toBe(1);
    await vi.waitFor(() => expect(slots.load.running).toBe(0), { timeout: 10_000 });
  });

  it.runIf(onLinux)(
    'a search thread runs at the lowest priority (nice 19)',
    async () => {
      // A deadline far away and a cancellation once the thread was seen: the thread is seen however
      // long a loaded machine takes to start it (with a short deadline it can end before it lowers its priority).
      const base = realpathSync(root);
      const controller = new AbortController();
      const search = grepInThread(evilSearch(base), { timeoutMs: 120_000, memoryMb: 64, signal: controller.signal });
      const outcome = search.then(
        () => 'finished',
        (error: unknown) => String(error),
      );
      try {
        await vi.waitFor(() => expect(nicedThreads()).toBe(1), { timeout: 60_000, interval: 25 });
      } finally {
        controller.abort(new Error('seen at nice 19'));
      }
      expect(await outcome).toBe('Error: seen at nice 19');
    },
    90_000,
  );

  it.runIf(onLinux)(
    'searches at most grepThreads at once: a turn of catastrophic patterns burns one core, not one per call',
    async () => {
      // A thread of an earlier test (one stopped by its signal) may still be on its way out.
      await vi.waitFor(() => expect(nicedThreads()).toBe(0), { timeout: 30_000, interval: 25 });
      const tools = createBuiltInTools({ root, grepTimeoutMs: 1500, grepThreads: 1 });
      let most = 0;
      const sampler = setInterval(() => (most = Math.max(most, nicedThreads())), 25);
      try {
        const results = await Promise.all(
          [1, 2, 3].map(() => run(tools.grep, { pattern: '(a+)+$', path: 'evil.txt' })),
        );
        for (const result of results) expect(result).toMatch(/\[stopped after 1\.5 s: the search took too long/);
      } finally {
        clearInterval(sampler);
      }
      // Never two search threads at a time. (That each runs at nice 19 is the test above: on a loaded
      // machine a thread can reach its deadline before it lowered its priority, and go unseen here.)
      expect(most).toBeLessThanOrEqual(1);
    },
  );
});

describe('SearchSlots', () => {
  it('lets `limit` searches run, queues the rest in order, and passes a freed slot on', async () => {
    const slots = new SearchSlots(2);
    const first = await slots.acquire();
    const second = await slots.acquire();
    const order: string[] = [];
    const third = slots.acquire().then((release) => (order.push('third'), release));
    const fourth = slots.acquire().then((release) => (order.push('fourth'), release));
    expect(slots.load).toEqual({ running: 2, waiting: 2 });
    first();
    first(); // a second release of one slot changes nothing
    const releaseThird = await third;
    expect(order).toEqual(['third']);
    expect(slots.load).toEqual({ running: 2, waiting: 1 });
    second();
    (await fourth)();
    releaseThird();
    expect(slots.load).toEqual({ running: 0, waiting: 0 });
  });

  it('a search cancelled while it waits leaves the queue', async () => {
    const slots = new SearchSlots(1);
    const held = await slots.acquire();
    const controller = new AbortController();
    const waiting = slots.acquire(controller.signal);
    controller.abort(new Error('cancelled by the workflow'));
    await expect(waiting).rejects.toThrow('cancelled by the workflow');
    expect(slots.load).toEqual({ running: 1, waiting: 0 });
    held();
    expect(slots.load).toEqual({ running: 0, waiting: 0 });
    expect(() => new SearchSlots(0)).toThrow('grepThreads: expected a positive integer, got 0');
  });
});
