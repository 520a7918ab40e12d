// The conventions of the `temporal-compactor` command line (issue 18 item 5): --help on every
// command (exit 0, stdout, at most 100 columns), --version, our own message for an unknown flag,
// compaction options on `compact`, `-` for standard input, a reader that goes away (EPIPE), and a
// summarizer failure named on stderr with its own exit code.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commands, main, type CliIo } from '../../src/cli/main.js';
import { COMPACTION_DEFAULTS } from '../../src/core/compaction/defaults.js';
import { Compactor } from '../../src/compactor.js';
import type { ChatMessage } from '../../src/core/types.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { runCli, spawnCli } from '../support/cli-process.js';
import { closedPort } from '../support/closed-port.js';
import { dataUrl, pngBytes } from '../support/images.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';

const TRAJECTORY = fileURLToPath(
  new URL('../../examples/trajectories/taubench_gpt4o_airline_task2_trial1.json', import.meta.url),
);
/** The largest bundled trajectory: printed whole, it is far over a pipe's buffer. */
const LARGE = fileURLToPath(
  new URL('../../examples/trajectories/swesmith_claude37_getmoto__moto-pr_6055.json', import.meta.url),
);
const trajectory = (): ChatMessage[] => JSON.parse(readFileSync(TRAJECTORY, 'utf8'));
const packageVersion: unknown = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
).version;

function capture(
  env: Record<string, string | undefined> = {},
  stdin?: string,
): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (text) => (out += text),
    stderr: (text) => (err += text),
    env,
    ...(stdin === undefined ? {} : { readStdin: () => Promise.resolve(stdin) }),
    out: () => out,
    err: () => err,
  };
}

describe('temporal-compactor conventions', { timeout: 60_000 }, () => {
  describe('--help', () => {
    const helpCalls: string[][] = [
      ['--help'],
      ['-h'],
      ['help'],
      ...Object.keys(commands).flatMap((name) => [
        [name, '--help'],
        [name, '-h'],
        ['help', name],
      ]),
    ];
    it.each(helpCalls.map((argv) => ({ argv, line: argv.join(' ') })))(
      '$line: exit 0, the text on stdout, no line over 100 columns',
      async ({ argv }) => {
        const io = capture();
        expect(await main(argv, io)).toBe(0);
        expect(io.err()).toBe('');
        expect(io.out()).toMatch(/^usage: temporal-compactor /);
        const long = io
          .out()
          .split('\n')
          .filter((line) => line.length > 100);
        expect(long).toEqual([]);
      },
    );

    it('lists every command at the top, and each command its own options', async () => {
      const top = capture();
      await main(['--help'], top);
      for (const name of Object.keys(commands)) expect(top.out()).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
      expect(top.out()).toMatch(/^ {2}--temporal-address +TEMPORAL_ADDRESS$/m);
      const compact = capture();
      await main(['compact', '--help'], compact);
      for (const flag of [
        '--budget N',
        '--target N',
        '--keep-recent N',
        '--age-observations',
        '--keep-images N',
        '--trigger-ratio R',
        '--target-ratio R',
        '--out FILE',
        '--via-workflow',
      ]) {
        expect(compact.out()).toMatch(new RegExp(`^  ${flag} +\\S`, 'm'));
      }
    });

    it('docs/cli.md has a section for every command and names each of its options', () => {
      const reference = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8');
      for (const command of Object.values(commands)) {
        expect(reference).toContain(`## ${command.name}\n`);
        expect(reference).toContain(`temporal-compactor ${command.name} ${command.usage}\n`);
        for (const option of Object.keys(command.options ?? {}))
          expect(reference, `${command.name} --${option}`).toContain(`--${option}`);
      }
    });

    it('--help wins over a missing argument: it is not a usage mistake', async () => {
      const io = capture();
      expect(await main(['history', '--help'], io)).toBe(0);
      expect(io.out()).toContain('usage: temporal-compactor history <workflowId>');
    });
  });

  it('--version prints the version of package.json, in this process and run as a command', async () => {
    const io = capture();
    expect(await main(['--version'], io)).toBe(0);
    expect(io.out()).toBe(`${String(packageVersion)}\n`);
    const run = await runCli(['--version'], {});
    expect([run.code, run.stdout, run.stderr]).toEqual([0, `${String(packageVersion)}\n`, '']);
  });

  it('an unknown flag or command, or a bad --query-timeout, exits 2 with a short usage on stderr naming it, not the parser message', async () => {
    const run = await runCli(['session', 'some-id', '--jsonlines'], {});
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'temporal-compactor session: unknown option --jsonlines; did you mean --jsonl?\n' +
        'usage: temporal-compactor session <workflowId> [--jsonl] [--query-timeout 15s]\n' +
        '(temporal-compactor session --help for more)\n',
    );
    const short = capture();
    expect(await main(['gc', '-x'], short)).toBe(2);
    expect(short.err()).toContain('unknown option -x');
    expect(short.err()).not.toMatch(/To specify a positional argument/);
    const before = capture();
    expect(await main(['--keep-recent', '3', 'compact'], before)).toBe(2);
    expect(before.err()).toContain('unknown option --keep-recent: options come after the command');
    const timeout = capture();
    expect(await main(['history', 'some-id', '--query-timeout', 'soon'], timeout)).toBe(2);
    expect(timeout.err()).toContain('--query-timeout takes a duration such as 15s, 500ms or 2m, got "soon"');
    const zero = capture();
    expect(await main(['session', 'some-id', '--query-timeout', '0'], zero)).toBe(2);
    expect(zero.err()).toContain('--query-timeout must be longer than zero');
    // A number too large to be finite is no duration either (a timer would fire at once).
    const endless = capture();
    expect(await main(['history', 'some-id', '--query-timeout', `${'9'.repeat(320)}s`], endless)).toBe(2);
    expect(endless.err()).toContain('--query-timeout takes a duration such as 15s, 500ms or 2m, got "999');
    const bare = capture();
    expect(await main([], bare)).toBe(2);
    expect([bare.out(), bare.err()]).toEqual([
      '',
      expect.stringContaining('usage: temporal-compactor <command> [options]'),
    ]);
  });

  describe('compact', () => {
    it('--keep-recent and --age-observations reach the engine: the same messages as the Compactor with them', async () => {
      const messages = trajectory();
      const budget = 6000;
      const withFlags = capture();
      expect(
        await main(
          ['compact', TRAJECTORY, '--budget', String(budget), '--keep-recent', '2', '--age-observations'],
          withFlags,
        ),
      ).toBe(0);
      const expected = await new Compactor({
        keepTask: COMPACTION_DEFAULTS.keepTask, // the command's own: src/core/compaction/defaults.ts
        summarizer: createExtractiveSummarizer(),
        contextBudget: budget,
        keepRecent: 2,
        ageObservations: true,
      }).compact(messages);
      expect(JSON.parse(withFlags.out())).toEqual(expected.messages);
      expect(expected.messages.slice(-2)).toEqual(messages.slice(-2));
      expect(withFlags.err()).toContain('Options: --keep-recent 2 --age-observations.');
      // Without the flags the window is the default 8: a different conversation.
      const defaults = capture();
      expect(await main(['compact', TRAJECTORY, '--budget', String(budget)], defaults)).toBe(0);
      expect(defaults.out()).not.toBe(withFlags.out());
      expect(defaults.err()).not.toContain('Options:');
    });

    it('--keep-images reaches the engine: older screenshots become stubs, as with the Compactor and keepImages', async () => {
      const shot = dataUrl(pngBytes(1280, 800), 'image/png', 4000);
      const messages: ChatMessage[] = [{ role: 'user', content: 'Find the cheapest flight.' }];
      for (let turn = 0; turn < 8; turn += 1) {
        messages.push({
          role: 'user',
          content: [
            { type: 'text', text: `screen ${turn}` },
            { type: 'image_url', image_url: { url: shot } },
          ],
        });
        messages.push({ role: 'assistant', content: `clicked ${turn}` });
      }
      const file = join(mkdtempSync(join(tmpdir(), 'keep-images-')), 'browse.json');
      writeFileSync(file, JSON.stringify(messages));
      const io = capture();
      expect(await main(['compact', file, '--budget', '9000', '--keep-recent', '2', '--keep-images', '1'], io)).toBe(0);
      const expected = await new Compactor({
        keepTask: COMPACTION_DEFAULTS.keepTask, // the command's own: src/core/compaction/defaults.ts
        summarizer: createExtractiveSummarizer(),
        contextBudget: 9000,
        keepRecent: 2,
        keepImages: 1,
      }).compact(messages);
      expect(expected.elisions.length).toBeGreaterThan(0);
      expect(JSON.parse(io.out())).toEqual(expected.messages);
      expect(io.out()).toContain('[image elided: 1280×800 png, ~1,105 tokens]');
      expect(io.err()).toContain('--keep-images 1');
      const bad = capture();
      expect(await main(['compact', file, '--keep-images', '-1'], bad)).toBe(2);
      expect(bad.err()).toContain('--keep-images');
      rmSync(dirname(file), { recursive: true, force: true });
    });

    it('--target aims the hard trim and --target-ratio moves the low-water mark', async () => {
      const messages = trajectory();
      const io = capture();
      expect(
        await main(['compact', TRAJECTORY, '--budget', '6000', '--target', '1500', '--target-ratio', '0.4'], io),
      ).toBe(0);
      const expected = await new Compactor({
        keepTask: COMPACTION_DEFAULTS.keepTask, // the command's own: src/core/compaction/defaults.ts
        summarizer: createExtractiveSummarizer(),
        contextBudget: 6000,
        targetRatio: 0.4,
      }).compact(messages, { target: 1500 });
      expect(JSON.parse(io.out())).toEqual(expected.messages);
      expect(io.err()).toContain('low-water mark 1,500 (--target 1,500)');
    });

    it('- reads the conversation from standard input, in this process and as a command', async () => {
      const text = readFileSync(TRAJECTORY, 'utf8');
      const fromFile = capture();
      expect(await main(['compact', TRAJECTORY, '--budget', '6000'], fromFile)).toBe(0);
      const fromStdin = capture({}, text);
      expect(await main(['compact', '-', '--budget', '6000'], fromStdin)).toBe(0);
      expect(fromStdin.out()).toBe(fromFile.out());
      expect(fromStdin.err()).toContain('compact <stdin>: 62 messages (JSON array)');
      const outDash = capture({}, text);
      expect(await main(['compact', '-', '--budget', '6000', '--out', '-'], outDash)).toBe(0);
      expect(outDash.out()).toBe(fromFile.out());
      const run = await runCli(['compact', '-', '--budget', '6000'], {}, text);
      expect([run.code, run.stdout]).toEqual([0, fromFile.out()]);
      const empty = await runCli(['compact', '-'], {}, '');
      expect([empty.code, empty.stderr]).toEqual([
        1,
        'temporal-compactor compact: <stdin>: is empty: expected a JSON array of chat messages\n',
      ]);
    });

    it('a reader that goes away (| head -1) ends it quietly with exit 0', async () => {
      // The whole conversation (nothing to compact in front of a window this long) is far over a pipe's buffer.
      const child = spawnCli(['compact', LARGE, '--budget', '100000000', '--keep-recent', '100000'], {});
      child.stdin.end();
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.stdout.once('data', () => child.stdout.destroy());
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(code, stderr).toBe(0);
      expect(stderr).not.toMatch(/EPIPE|Error|at .*\.ts:\d+/);
    });

    describe('a summarizer that fails is named on stderr; the hard trim is written and the exit code is 3', () => {
      let fake: FakeOpenAI;
      beforeAll(async () => {
        fake = await startFakeOpenAI();
      });
      afterAll(() => fake.close());

      it('connection refused (OPENAI_BASE_URL at a closed port)', async () => {
        const messages = trajectory();
        const io = capture({ OPENAI_BASE_URL: `http://127.0.0.1:${await closedPort()}/v1` });
        expect(await main(['compact', TRAJECTORY, '--budget', '6000', '--retry-backoff', '1ms'], io)).toBe(3);
        const trimmed = await new Compactor({
          keepTask: COMPACTION_DEFAULTS.keepTask, // the command's own: src/core/compaction/defaults.ts
          summarizer: { summarize: () => Promise.reject(new Error('down')) },
          contextBudget: 6000,
          retryBackoff: 1,
        }).compact(messages);
        expect(trimmed.fallback).toBe(true);
        expect(JSON.parse(io.out())).toEqual(trimmed.messages);
        expect(io.err()).toMatch(
          /Hard trim because the summarizer failed: summarizer: .*ECONNREFUSED 127\.0\.0\.1:\d+.* \(3 attempts failed\)\n/,
        );
        expect(io.err()).toMatch(
          /warning: the summarizer failed \(why: above\), so the output is the hard trim; exit code 3\n$/,
        );
      });

      it('401 from the provider: refused at once, and said so', async () => {
        fake.setDefault({ kind: 'status', status: 401 });
        const before = fake.requests.length;
        const io = capture({ OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'sk-wrong' });
        expect(await main(['compact', TRAJECTORY, '--budget', '6000', '--retry-backoff', '1ms'], io)).toBe(3);
        expect(fake.requests.length - before).toBe(1);
        expect(io.err()).toMatch(/Hard trim because the summarizer failed: summarizer: .*401.*\n/);
        expect(io.err()).not.toContain('sk-wrong');
      });

      it('a trim because no summary fitted is said as such, with exit 0', async () => {
        const io = capture();
        expect(await main(['compact', TRAJECTORY, '--budget', '6000', '--target', '300'], io)).toBe(0);
        expect(io.err()).toContain('Hard trim because no summary fitted');
      });
    });
  });
});
