// The quick start's main job: `temporal-compactor demo` as a user runs it (a real process), against
// the suite's dev server (TEMPORAL_ADDRESS), with the built-in offline summarizer.
import { describe, expect, inject, it } from 'vitest';
import { runCli } from '../support/cli-process.js';

describe('temporal-compactor demo', () => {
  it('replays the bundled trajectory, compacts several times, prints the table and exits 0', { timeout: 180_000 }, async () => {
    const { code, stdout, stderr } = await runCli(['demo'], {
      TEMPORAL_ADDRESS: inject('temporalAddress') ?? 'the suite has no dev server (see its start error)',
      COMPACTOR_TASK_QUEUE: `demo-test-${process.pid}`,
      OPENAI_API_KEY: '',
      OPENAI_BASE_URL: '',
    });
    expect(code, stderr).toBe(0);
    expect(stderr).toContain('built-in offline extractive summarizer');
    // The demo turns the file store on: chat inputs leave history as claims.
    expect(stderr).toMatch(/^Payloads: payload store file:.*\.payload-store \(payloads of 256 B and more; smaller ones stay inline, too small to compress\), no compression, no encryption$/m);
    const done = /Done: completed after (\d+) rounds with (\d+) compactions\./.exec(stdout);
    expect(done, stdout).not.toBeNull();
    expect(Number(done?.[2])).toBeGreaterThanOrEqual(1);
    // progress: one line per round, from the run's event history
    expect(stdout.match(/^ {2}round +\d+ · chat$/gm)?.length).toBe(Number(done?.[1]));
    expect(stdout).toMatch(/^ {2}round +\d+ · summarize \(compacting before the chat\)$/m);
    expect(stdout).toContain('| # | round | tokens before → after |');
    expect(stdout).toMatch(/\| summary \(\d[\d,]* chars\) \|/);
    expect(stdout).toContain('temporal-compactor history demo-');
  });

  it('a bad setting stops start-up naming it', async () => {
    const { code, stderr } = await runCli(['demo'], { COMPACTOR_CONTEXT_BUDGET: 'lots' });
    expect(code).toBe(2);
    expect(stderr).toContain('COMPACTOR_CONTEXT_BUDGET');
  });
});
