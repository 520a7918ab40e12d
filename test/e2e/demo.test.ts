// The quick start's main job: `npm run demo` as a user runs it (a real process of
// dev/demo-command.ts), against the suite's dev server (TEMPORAL_ADDRESS), with the built-in offline
// summarizer. The demo is dev tooling: the published `temporal-compactor` command has no `demo`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { runDemo } from '../../dev/demo.js';
import { agentRunQueries } from '../../src/workflows/agent-run.js';
import type { CompactionHistory } from '../../src/core/agent/compaction-history.js';
import { DEMO_ENTRY, runCli } from '../support/cli-process.js';
import { quietRuntime } from '../support/temporal.js';
import { writeProductionBundle } from '../support/worker-process.js';

describe('npm run demo', () => {
  it(
    'replays the bundled trajectory, compacts several times, prints the table and exits 0',
    { timeout: 180_000 },
    async () => {
      const env = {
        TEMPORAL_ADDRESS: inject('temporalAddress') ?? 'the suite has no dev server (see its start error)',
        COMPACTOR_TASK_QUEUE: `demo-test-${process.pid}`,
        OPENAI_API_KEY: '',
        OPENAI_BASE_URL: '',
      };
      const { code, stdout, stderr } = await runCli([], env, '', DEMO_ENTRY);
      expect(code, stderr).toBe(0);
      expect(stderr).toContain('built-in offline extractive summarizer');
      // The demo turns the file store on: chat inputs leave history as claims.
      expect(stderr).toMatch(
        /^Payloads: payload store file:.*\.payload-store \(payloads of 256 B and more; smaller ones stay inline, too small to compress\), no compression, no encryption$/m,
      );
      const done = /Done: completed after (\d+) rounds with (\d+) compactions\./.exec(stdout);
      expect(done, stdout).not.toBeNull();
      expect(Number(done?.[2])).toBeGreaterThanOrEqual(1);
      // progress: one line per round, from the run's event history
      expect(stdout.match(/^ {2}round +\d+ · chat$/gm)?.length).toBe(Number(done?.[1]));
      expect(stdout).toMatch(/^ {2}round +\d+ · summarize \(compacting before the chat\)$/m);
      expect(stdout).toContain('| # | round | tokens before → after |');
      // A summary's cell, with what it kept of the identifiers it had to keep (docs/design.md#coverage).
      expect(stdout).toMatch(/\| summary \(\d[\d,]* chars\)(, ids \d+ of \d+( \(\d+ carried\))?)? \|/);
      expect(stdout).toContain('temporal-compactor history demo-');
      // Ready to paste: the commands with the settings that reach the run and its payload store.
      for (const command of ['history', 'session'])
        expect(stdout).toMatch(
          new RegExp(
            `^ {2}TEMPORAL_ADDRESS=${env.TEMPORAL_ADDRESS} TEMPORAL_NAMESPACE=default COMPACTOR_PAYLOAD_STORE=file:\\S*\\.payload-store npx temporal-compactor ${command} demo-\\S+$`,
            'm',
          ),
        );
    },
  );

  it(
    '--keep-server keeps the worker polling after the run: its queries answer until the demo is stopped',
    { timeout: 180_000 },
    async () => {
      quietRuntime();
      const store = mkdtempSync(join(tmpdir(), 'demo-keep-'));
      // The run's shared bundle: the test above has the demo bundle the workflows as a user's does.
      const bundle = await writeProductionBundle('demo-keep-bundle-');
      let stdout = '';
      let answered: CompactionHistory | undefined;
      try {
        const outcome = await runDemo({
          env: {
            TEMPORAL_ADDRESS: inject('temporalAddress') ?? 'the suite has no dev server (see its start error)',
            COMPACTOR_TASK_QUEUE: `demo-keep-${process.pid}`,
            COMPACTOR_PAYLOAD_STORE: `file:${store}`,
            COMPACTOR_WORKFLOW_BUNDLE: bundle.bundlePath,
            OPENAI_API_KEY: '',
            OPENAI_BASE_URL: '',
          },
          keepServer: true,
          stdout: (text) => (stdout += text),
          stderr: () => undefined,
          // The run has closed; a query needs a worker polling its queue.
          untilStopped: async ({ client, workflowId }) => {
            answered = await client.workflow.getHandle(workflowId).query(agentRunQueries.compactions);
          },
        });
        expect(outcome.status).toBe('completed');
        expect(answered?.totals).toEqual(outcome.compactions.totals);
        expect(stdout).toMatch(
          /^The worker keeps running \(--keep-server\): the run's queries and Current Details work; press Ctrl-C to stop\.$/m,
        );
      } finally {
        rmSync(store, { recursive: true, force: true });
        bundle.remove();
      }
    },
  );

  it('a bad setting stops start-up naming it', async () => {
    const { code, stderr } = await runCli([], { COMPACTOR_CONTEXT_BUDGET: 'lots' }, '', DEMO_ENTRY);
    expect(code).toBe(2);
    expect(stderr).toContain('COMPACTOR_CONTEXT_BUDGET');
  });

  it('--help prints the usage under npm run demo; the published command has no demo', async () => {
    const help = await runCli(['--help'], {}, '', DEMO_ENTRY);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run demo -- \[--keep-server\]$/m);
    const published = await runCli(['demo'], {});
    expect(published.code).toBe(2);
    expect(published.stderr).toContain('unknown command "demo"');
  });
});
