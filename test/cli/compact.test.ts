// `temporal-compactor compact <file>`: the report on stderr, the compacted conversation as JSON on
// stdout (or in --out), the same messages in this process and through compactConversation on the
// dev server (with a worker the CLI starts, or the workers already polling), and clear errors.
import {
  chmodSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { main, type CliIo } from '../../src/cli/main.js';
import { COMPACT_TABLE_HEADER } from '../../src/cli/compact-run.js';
import { parseConversation, writeFileWhole } from '../../src/cli/conversation-file.js';
import { Compactor } from '../../src/compactor.js';
import { COMPACTION_DEFAULTS } from '../../src/core/compaction/defaults.js';
import { groupDigits } from '../../src/core/agent/compaction-history.js';
import { recordCompaction, replaySession, type SessionLine } from '../../src/core/agent/session.js';
import { defaultCounter } from '../../src/core/counting/tokens.js';
import type { ChatMessage, CompactionResult } from '../../src/core/types.js';
import { createExtractiveSummarizer } from '../../src/summarizers/extractive.js';
import { closedPort } from '../support/closed-port.js';
import { toJsonl } from '../support/messages.js';
import { bundleWorkflows, testConnection, uniqueId, withWorker, type TestConnection } from '../support/temporal.js';

const TRAJECTORY = fileURLToPath(
  new URL('../../examples/trajectories/taubench_gpt4o_airline_task2_trial1.json', import.meta.url),
);
const trajectory = (): ChatMessage[] => JSON.parse(readFileSync(TRAJECTORY, 'utf8'));

function capture(env: Record<string, string | undefined> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (text) => (out += text), stderr: (text) => (err += text), env, out: () => out, err: () => err };
}

/** What the engine itself gives, with the command's defaults: the offline summarizer and the character estimator. */
function engine(messages: ChatMessage[], contextBudget: number): Promise<CompactionResult> {
  return new Compactor({
    summarizer: createExtractiveSummarizer(),
    contextBudget,
    keepTask: COMPACTION_DEFAULTS.keepTask,
  }).compact(messages);
}

/** The table row the report prints for `result`. */
function tableRow(result: CompactionResult, messagesBefore: number): string {
  return `| ${groupDigits(result.tokensBefore)} → ${groupDigits(result.tokensAfter)} | ${groupDigits(result.tokensBefore - result.tokensAfter)} | ${messagesBefore} → ${result.messages.length} | ${result.dropped} | ${result.elisions.length} |`;
}

let directory: string;
beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), 'cli-compact-'));
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function fileWith(name: string, text: string): string {
  const path = join(directory, name);
  writeFileSync(path, text);
  return path;
}

describe('temporal-compactor compact', () => {
  describe('in this process', () => {
    it('compacts a bundled trajectory to what the engine gives, budget = its own size: JSON on stdout, the table on stderr', async () => {
      const messages = trajectory();
      const io = capture();
      expect(await main(['compact', TRAJECTORY], io)).toBe(0);
      const budget = defaultCounter.count(messages);
      const expected = await engine(messages, budget);
      expect(JSON.parse(io.out())).toEqual(expected.messages);
      expect(expected.summary).not.toBeNull();
      const report = io.err();
      expect(report).toContain(
        `${messages.length} messages (JSON array), ${groupDigits(budget)} tokens (character estimator)`,
      );
      expect(report).toContain(`Budget ${groupDigits(budget)} tokens (the conversation's own size`);
      expect(report).toContain('Summarizer: built-in offline extractive summarizer');
      expect(report).toContain('Ran in this process');
      expect(report).toContain(COMPACT_TABLE_HEADER);
      expect(report).toContain(
        `${tableRow(expected, messages.length)} summary (${groupDigits(expected.summary?.length ?? 0)} chars) | no | no |`,
      );
    });

    it('--instructions TEXT: summaryInstructions for the summarizer, the report names them', async () => {
      const messages = trajectory();
      const budget = defaultCounter.count(messages);
      const instructions = 'Keep the payment methods, the reservation ids and the baggage counts.';
      const io = capture();
      expect(await main(['compact', TRAJECTORY, '--instructions', instructions], io)).toBe(0);
      const expected = await new Compactor({
        summarizer: createExtractiveSummarizer(),
        contextBudget: budget,
        summaryInstructions: instructions,
        keepTask: COMPACTION_DEFAULTS.keepTask,
      }).compact(messages);
      expect(JSON.parse(io.out())).toEqual(expected.messages);
      // The offline summarizer kept other lines for them than it keeps without.
      expect(expected.summary).not.toBe((await engine(messages, budget)).summary);
      expect(io.err()).toContain(`Options: --instructions ${JSON.stringify(instructions)}.`);
      const tooLong = capture();
      expect(await main(['compact', TRAJECTORY, '--instructions', 'x'.repeat(10_001)], tooLong)).toBe(2);
      expect(tooLong.err()).toContain('--instructions: must be at most 10000 characters');
    });

    it('--keep-user-messages: the user messages kept verbatim, the report says how many', async () => {
      const messages = trajectory();
      const budget = defaultCounter.count(messages);
      const io = capture();
      expect(await main(['compact', TRAJECTORY, '--keep-user-messages', '--keep-recent', '2'], io)).toBe(0);
      const expected = await new Compactor({
        summarizer: createExtractiveSummarizer(),
        contextBudget: budget,
        keepRecent: 2,
        keepUserMessages: true,
        // The CLI keeps the task (docs/compaction.md#defaults): it is sticky, not one of the user messages kept.
        keepTask: true,
      }).compact(messages);
      const words = expected.userMessages;
      expect(words?.kept).toBeGreaterThan(0);
      expect(JSON.parse(io.out())).toEqual(expected.messages);
      for (const index of words?.keptAt ?? []) expect(JSON.parse(io.out())).toContainEqual(messages[index]);
      expect(io.err()).toContain(
        `User messages: ${words?.kept} kept verbatim, ${words?.summarized} summarized (--keep-user-messages).`,
      );
      const bad = capture();
      expect(await main(['compact', TRAJECTORY, '--keep-user-messages-share', '2'], bad)).toBe(2);
      expect(bad.err()).toContain('--keep-user-messages-share takes a ratio over 0 and at most 1');
    });

    describe('--budget', () => {
      it('sets the context budget; a conversation under its trigger is compacted anyway, and the report says so', async () => {
        const messages = trajectory();
        const budget = 3 * defaultCounter.count(messages);
        const io = capture();
        expect(await main(['compact', TRAJECTORY, '--budget', String(budget)], io)).toBe(0);
        expect(JSON.parse(io.out())).toEqual((await engine(messages, budget)).messages);
        expect(io.err()).toContain(`Budget ${groupDigits(budget)} tokens (--budget)`);
        expect(io.err()).toContain('Under the trigger: an agent loop would not compact this conversation yet');
      });

      it('a small one forces the hard trim when the summary cannot fit, and says exhausted when nothing fits', async () => {
        const messages = trajectory();
        const io = capture();
        expect(await main(['compact', TRAJECTORY, '--budget', '300'], io)).toBe(0);
        const expected = await engine(messages, 300);
        expect(JSON.parse(io.out())).toEqual(expected.messages);
        expect(expected.exhausted).toBe(true);
        expect(io.err()).toContain(`${tableRow(expected, messages.length)} `);
        expect(io.err()).toMatch(/\| yes \|\n/);
      });

      it('COMPACTOR_CONTEXT_BUDGET is the default when the flag is absent', async () => {
        const io = capture({ COMPACTOR_CONTEXT_BUDGET: '5000' });
        expect(await main(['compact', TRAJECTORY], io)).toBe(0);
        expect(io.err()).toContain('Budget 5,000 tokens (COMPACTOR_CONTEXT_BUDGET / --context-budget)');
        expect(JSON.parse(io.out())).toEqual((await engine(trajectory(), 5000)).messages);
      });
    });

    it('COMPACTOR_SUMMARIZER_CONTEXT_WINDOW: the summary in pieces, as the engine with summarizerContextWindow gives it', async () => {
      const messages = trajectory();
      const io = capture({ COMPACTOR_SUMMARIZER_CONTEXT_WINDOW: '1024' });
      expect(await main(['compact', TRAJECTORY], io)).toBe(0);
      const contextBudget = defaultCounter.count(messages);
      const expected = await new Compactor({
        summarizer: createExtractiveSummarizer(),
        contextBudget,
        summarizerContextWindow: 1024,
        keepTask: COMPACTION_DEFAULTS.keepTask,
      }).compact(messages);
      expect(expected.summaryPieces).toBeGreaterThan(1);
      expect(JSON.parse(io.out())).toEqual(expected.messages);
      // A progress line per piece on stderr, before the report.
      const of = expected.summaryPieces ?? 0;
      const lines = io.err().split('\n');
      for (let index = 1; index <= of; index += 1)
        expect(lines).toContainEqual(
          expect.stringMatching(new RegExp(`^summarize piece ${index} of ${of}: [\\d,]+ tokens, \\d+\\.\\d s$`)),
        );
      expect(lines.findIndex((line) => line.startsWith(`summarize piece ${of} of`))).toBeLessThan(
        lines.indexOf(COMPACT_TABLE_HEADER),
      );
      expect(JSON.parse(io.out())).not.toEqual((await engine(messages, contextBudget)).messages);
    });

    it("--out writes the file in the input's shape ({ messages } keeps its other fields) and leaves stdout empty", async () => {
      const messages = trajectory();
      const input = fileWith('wrapped.json', JSON.stringify({ id: 'run-7', messages, note: { kept: true } }));
      const out = join(directory, 'out.json');
      const io = capture();
      expect(await main(['compact', input, '--budget', '6000', '--out', out], io)).toBe(0);
      expect(io.out()).toBe('');
      const written: unknown = JSON.parse(readFileSync(out, 'utf8'));
      expect(written).toEqual({ id: 'run-7', messages: (await engine(messages, 6000)).messages, note: { kept: true } });
      expect(io.err()).toContain('({ "messages": [...] })');
      expect(io.err()).toMatch(/Wrote \d+ messages to .*out\.json\./);
    });

    describe('--out and the file it replaces', () => {
      const permissions = (path: string): number => statSync(path).mode & 0o777;

      it('a new file is private (0600): a conversation holds whatever the agent read', async () => {
        const out = join(directory, 'new-private.json');
        expect(await main(['compact', TRAJECTORY, '--budget', '6000', '--out', out], capture())).toBe(0);
        expect(permissions(out).toString(8)).toBe('600');
      });

      it('an existing file keeps its mode (0640 stays 0640, whatever the umask)', async () => {
        const out = fileWith('existing-0640.json', '[]\n');
        chmodSync(out, 0o640);
        expect(await main(['compact', TRAJECTORY, '--budget', '6000', '--out', out], capture())).toBe(0);
        expect(permissions(out).toString(8)).toBe('640');
        expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual((await engine(trajectory(), 6000)).messages);
      });

      it('writeFileWhole leaves nothing beside the file, and refuses a link itself', () => {
        const own = mkdtempSync(join(directory, 'whole-'));
        const path = join(own, 'out.json');
        writeFileWhole(path, 'first\n');
        writeFileWhole(path, 'second\n');
        const target = join(own, 'target.txt');
        writeFileSync(target, 'kept\n');
        symlinkSync(target, join(own, 'link.json'));
        expect(() => writeFileWhole(join(own, 'link.json'), 'x')).toThrow(
          `cannot write ${join(own, 'link.json')}: it is a symbolic link`,
        );
        expect(readdirSync(own).sort()).toEqual(['link.json', 'out.json', 'target.txt']);
        expect([readFileSync(path, 'utf8'), readFileSync(target, 'utf8')]).toEqual(['second\n', 'kept\n']);
      });

      it('a symlink is refused before compacting, and neither the link nor the file it names is touched', async () => {
        const target = fileWith('link-target.json', 'left alone\n');
        chmodSync(target, 0o600);
        const link = join(directory, 'out-link.json');
        symlinkSync(target, link);
        const io = capture();
        expect(await main(['compact', TRAJECTORY, '--budget', '6000', '--out', link], io)).toBe(2);
        expect(io.err()).toContain(
          `--out ${link}: is a symbolic link; the result is never written through one: name the file itself`,
        );
        expect(io.err()).not.toContain('Wrote');
        expect([lstatSync(link).isSymbolicLink(), readlinkSync(link)]).toEqual([true, target]);
        expect([readFileSync(target, 'utf8'), permissions(target).toString(8)]).toEqual(['left alone\n', '600']);
      });
    });

    it('reads the session JSON lines of `session --jsonl` and compacts the conversation they replay to', async () => {
      const messages = trajectory();
      const entries = messages.map((message, index) => ({ id: `m${index + 1}`, message }));
      // The run's own compaction, as a transcript records one: the task kept by a sticky flag or not at all (keepTask off).
      const first = await new Compactor({ summarizer: createExtractiveSummarizer(), contextBudget: 4000 }).compact(
        messages.slice(0, 30),
      );
      const { lines: compactionLines } = recordCompaction(entries.slice(0, 30), first);
      const lines: SessionLine[] = [
        ...entries.slice(0, 30).map(({ id, message }) => ({ type: 'message' as const, id, message })),
        ...compactionLines,
        ...entries.slice(30).map(({ id, message }) => ({ type: 'message' as const, id, message })),
      ];
      const live = replaySession(lines);
      expect(live.length).toBeLessThan(messages.length);
      const io = capture();
      expect(await main(['compact', fileWith('run.jsonl', toJsonl(lines)), '--budget', '6000'], io)).toBe(0);
      expect(io.err()).toContain(`${live.length} messages (session transcript)`);
      expect(JSON.parse(io.out())).toEqual((await engine(live, 6000)).messages);
    });
  });

  describe('errors', () => {
    it('bad JSON names the file, the line and the column', async () => {
      const path = fileWith(
        'broken.json',
        '[\n  {"role": "user", "content": "hi"},\n  {"role": "assistant" "content": "x"}\n]\n',
      );
      const io = capture();
      expect(await main(['compact', path], io)).toBe(1);
      expect(io.err()).toContain(`temporal-compactor compact: ${path}: not valid JSON at line 3, column 24`);
      const cut = fileWith('cut.json', '[{"role": "user", "content": "h');
      const cutIo = capture();
      expect(await main(['compact', cut], cutIo)).toBe(1);
      expect(cutIo.err()).toContain(`${cut}: not valid JSON at `);
    });

    it('a bad message names the file, its index and the field', async () => {
      const messages: unknown[] = [...trajectory().slice(0, 3), { role: 'tool', content: 'orphan result' }];
      const path = fileWith('bad-message.json', JSON.stringify(messages));
      const io = capture();
      expect(await main(['compact', path], io)).toBe(1);
      expect(io.err()).toBe(
        `temporal-compactor compact: ${path}: messages[3].tool_call_id: required for role "tool"\n`,
      );
      expect(() =>
        parseConversation(JSON.stringify({ messages: [{ role: 'robot', content: 'x' }] }), 'f.json'),
      ).toThrow(
        expect.objectContaining({
          field: 'messages[0].role',
          index: 0,
          message: 'f.json: messages[0].role: must be one of system, developer, user, assistant, tool',
        }),
      );
      const shape = capture();
      expect(await main(['compact', fileWith('shape.json', '{"conversation": []}')], shape)).toBe(1);
      expect(shape.err()).toContain('expected a JSON array of messages, an object { "messages": [...] }');
      const empty = capture();
      expect(await main(['compact', fileWith('empty.json', '[]')], empty)).toBe(1);
      expect(empty.err()).toContain('messages: is empty: there is nothing to compact');
    });

    it('usage mistakes exit 2 with the usage line: a missing file, no file, a bad --budget, an unknown flag, --out into no directory', async () => {
      const usage = 'usage: temporal-compactor compact <file.json | -> [--budget N] [--out FILE] [options]';
      const cases: Array<[string[], string]> = [
        [['compact', join(directory, 'nope.json')], `${join(directory, 'nope.json')}: no such file`],
        [['compact'], 'the conversation file is required'],
        [['compact', TRAJECTORY, 'extra.json'], 'unexpected argument "extra.json"'],
        [['compact', TRAJECTORY, '--budget', '0'], '--budget takes a positive whole number of tokens, got "0"'],
        [['compact', TRAJECTORY, '--budget=-5'], '--budget takes a positive whole number of tokens, got "-5"'],
        [['compact', TRAJECTORY, '--budget', '12k'], '--budget takes a positive whole number of tokens, got "12k"'],
        [['compact', TRAJECTORY, '--budget', '1.5'], '--budget takes a positive whole number of tokens, got "1.5"'],
        [['compact', TRAJECTORY, '--bugdet', '10'], 'unknown option --bugdet; did you mean --budget?'],
        [['compact', TRAJECTORY, '--budget'], '--budget needs a value'],
        [['compact', TRAJECTORY, '--via-workflow=yes'], '--via-workflow takes no value'],
        [['compact', TRAJECTORY, '--keep-recent', 'four'], '--keep-recent takes a whole number, got "four"'],
        [
          ['compact', TRAJECTORY, '--trigger-ratio', '1.5'],
          '--trigger-ratio takes a ratio over 0 and at most 1, e.g. 0.5, got "1.5"',
        ],
        [
          ['compact', TRAJECTORY, '--target-ratio', '0.9'],
          '--target-ratio: must not exceed --trigger-ratio (0.8), got 0.9',
        ],
        [['compact', TRAJECTORY, '--max-attempts', '0'], '--max-attempts: Too small: expected number to be >=1'],
        [['compact', TRAJECTORY, '--retry-backoff', 'soon'], '--retry-backoff: must be milliseconds or a duration'],
        [['compact', TRAJECTORY, '--target', '0'], '--target takes a positive whole number of tokens, got "0"'],
        [
          ['compact', TRAJECTORY, '--out', join(directory, 'no-such-dir', 'out.json')],
          `the directory ${join(directory, 'no-such-dir')} does not exist`,
        ],
      ];
      for (const [argv, message] of cases) {
        const io = capture();
        expect(await main(argv, io), argv.join(' ')).toBe(2);
        expect(io.err()).toContain(message);
        expect(io.err()).toContain(usage);
        expect(io.out()).toBe('');
      }
    });
  });

  describe('--via-workflow on the dev server', { timeout: 180_000 }, () => {
    let t: TestConnection;
    let bundle: WorkflowBundleWithSourceMap;
    let bundlePath: string;
    beforeAll(async () => {
      t = await testConnection();
      bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
      // The same bundle for the worker the CLI starts (COMPACTOR_WORKFLOW_BUNDLE): one bundling per file.
      bundlePath = fileWith('workflow-bundle.js', bundle.code);
    });
    const serverEnv = (taskQueue: string) => ({
      TEMPORAL_ADDRESS: t.address,
      TEMPORAL_NAMESPACE: t.namespace,
      COMPACTOR_TASK_QUEUE: taskQueue,
      COMPACTOR_WORKFLOW_BUNDLE: bundlePath,
    });

    it('with no worker polling, starts one in this process and gives the same messages as in-process', async () => {
      const local = capture();
      expect(await main(['compact', TRAJECTORY, '--budget', '6000'], local)).toBe(0);
      const io = capture(serverEnv(uniqueId('compact-cli')));
      expect(await main(['compact', TRAJECTORY, '--budget', '6000', '--via-workflow'], io)).toBe(0);
      expect(JSON.parse(io.out())).toEqual(JSON.parse(local.out()));
      expect(io.out()).toBe(local.out());
      const workflowId =
        /Started workflow (compact-taubench_gpt4o_airline_task2_trial1-\S+) on task queue "([^"]+)"/.exec(io.err());
      expect(workflowId, io.err()).not.toBeNull();
      expect(io.err()).toContain('starting one in this process');
      expect(io.err()).toContain('run by a worker in this process');
      expect(io.err()).toContain(
        `Inspect it: temporal workflow show --address ${t.address} --namespace ${t.namespace} --workflow-id ${workflowId?.[1]}`,
      );
      // The same table row: the run's result is the engine's.
      const row = local
        .err()
        .split('\n')
        .find((line) => /^\| [\d,]+ → /.test(line));
      expect(row).toBeDefined();
      expect(io.err()).toContain(row);
      const description = await t.client.workflow.getHandle(workflowId?.[1] ?? '').describe();
      expect(description.type).toBe('compactConversation');
      expect(description.status.name).toBe('COMPLETED');
      expect(description.taskQueue).toBe(workflowId?.[2]);
    });

    it('with workers polling the configured task queue, they run it', async () => {
      const local = capture();
      expect(await main(['compact', TRAJECTORY], local)).toBe(0);
      const io = capture(serverEnv(t.taskQueue));
      const code = await withWorker(
        t,
        { workflowBundle: bundle, activities: createActivities({ summarizer: createExtractiveSummarizer() }) },
        async () => {
          // The CLI looks for pollers: wait until the server has seen this worker's first poll.
          for (let tries = 0; tries < 100; tries += 1) {
            const { pollers } = await t.client.workflowService.describeTaskQueue({
              namespace: t.namespace,
              taskQueue: { name: t.taskQueue },
              taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            });
            if ((pollers ?? []).length > 0) break;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          return main(['compact', TRAJECTORY, '--via-workflow'], io);
        },
      );
      expect(code, io.err()).toBe(0);
      expect(io.err()).toContain(`Workers poll task queue "${t.taskQueue}"`);
      expect(io.err()).toContain('run by the workers polling it');
      expect(io.out()).toBe(local.out());
    });

    it('a summarizer that fails in the workflow is named from its history, and the exit code is 3', async () => {
      const port = await closedPort();
      const local = capture({ OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` });
      expect(
        await main(
          ['compact', TRAJECTORY, '--budget', '6000', '--max-attempts', '2', '--retry-backoff', '10ms'],
          local,
        ),
      ).toBe(3);
      const io = capture({
        ...serverEnv(uniqueId('compact-cli-down')),
        OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
      });
      expect(
        await main(
          [
            'compact',
            TRAJECTORY,
            '--budget',
            '6000',
            '--max-attempts',
            '2',
            '--retry-backoff',
            '10ms',
            '--via-workflow',
          ],
          io,
        ),
      ).toBe(3);
      expect(io.out()).toBe(local.out());
      expect(io.err()).toMatch(
        /Hard trim because the summarizer failed: .*ECONNREFUSED 127\.0\.0\.1:\d+.* \(2 attempts failed\)\n/,
      );
    });

    it('a server that cannot be reached fails with exit 1 and says where it tried', async () => {
      const io = capture({ TEMPORAL_ADDRESS: '127.0.0.1:1' });
      expect(await main(['compact', TRAJECTORY, '--via-workflow'], io)).toBe(1);
      expect(io.err()).toMatch(
        /^temporal-compactor compact: cannot connect to the Temporal server at 127\.0\.0\.1:1 \(TEMPORAL_ADDRESS\): .*or compact without --via-workflow\)\n$/,
      );
      expect(io.out()).toBe('');
    });
  });
});
