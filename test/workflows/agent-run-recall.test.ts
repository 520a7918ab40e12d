// Recall on the dev server (docs/design.md#recall): with `compaction.recall: true` the run declares
// `recall`, an elided tool result's stub names its transcript id, and a scripted model that calls
// `recall` with that id after the elision reads the tool output back (from the run's history);
// the ids a model controls are bounded — empty, 10,000 characters, a path, an unknown number —
// and each is answered with an error the model reads, never a failure of the run. Every compaction
// names its ids: a summary, a hard trim (its marker) and a reviewer's edited summary; and with the
// payload store on, recall resolves the claims the history holds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { agentRun, agentRunQueries, agentRunUpdates, FailureType, type ChatMessage } from '../../src/index.js';
import type { AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import { replaySession } from '../../src/core/agent/session.js';
import { readSessionLines } from '../../src/client/session-reader.js';
import { loadConfig } from '../../src/config.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import { MAX_RECALL_CHARS } from '../../src/core/agent/recall.js';
import { assistantReply, type ScriptedResponse } from '../support/fake-openai.js';
import { fakeModelAndToolRoot, replayTokens } from '../support/agent.js';
import { bundleWorkflows, testConnection, uniqueId, withFileWorker } from '../support/temporal.js';
import { maybeRecordHistory } from './harness.js';

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
});

const model = { provider: 'openai' as const, model: 'fake-agent', contextWindow: 16_000, maxOutputTokens: 500 };

/** A file of varied lines (BPE does not squeeze it): what the first read returns, and what recall must return. */
const LOG = Array.from({ length: 120 }, (_, line) => `line ${line + 1}: checksum ${(line * 7919) % 10007} ok`).join(
  '\n',
);

/** A file whose output is longer than recall returns: the answer is cut at MAX_RECALL_CHARS. */
const BIG = Array.from(
  { length: 600 },
  (_, line) => `entry ${line + 1}: value ${(line * 7919) % 10007}, nothing else to report`,
).join('\n');

/** What fs_read answers for a whole file: its lines numbered as `cat -n` does. */
const readOutput = (text: string): string =>
  text
    .split('\n')
    .map((line, index) => `${String(index + 1).padStart(6)}\t${line}`)
    .join('\n');

/** A reply billed about what its request holds, so the run's counters stay calibrated. */
const reply =
  (message: Record<string, unknown>): ScriptedResponse =>
  (request) => {
    const { messages } = request.body as { messages: ChatMessage[] };
    const prompt = replayTokens(messages);
    return assistantReply(message, { prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 });
  };

const call = (id: string, name: string, args: unknown) => ({
  id,
  type: 'function',
  function: { name, arguments: JSON.stringify(args) },
});

/** The ids the model tries besides the good one: each must come back as an error it reads. */
const BAD_IDS = ['', 'x'.repeat(10_000), '../m1', 'm999999'];

describe('recall', { timeout: 120_000 }, () => {
  const world = fakeModelAndToolRoot('agent-recall-', { 'log.txt': LOG, 'big.log': BIG });
  /** The bodies of the requests the fake model received, in order. */
  const sentRequests = (): { messages: ChatMessage[]; tools?: unknown[] }[] =>
    world.server.requests.map((request) => request.body as { messages: ChatMessage[]; tools?: unknown[] });
  const input = (recall: boolean): AgentRunWorkflowInput => ({
    messages: [
      { role: 'system', content: 'You are a careful agent.' },
      { role: 'user', content: 'Check log.txt, then tell me the checksum of line 3.' },
    ],
    model,
    tools: ['fs_read'],
    // The second round's note pushes the conversation over the trigger; eliding the read gets it under.
    compaction: {
      // A trigger of 1,200 tokens: the second round's note takes the conversation over it, and eliding
      // the first read takes it under; the last round, over it again, keeps its turn whole.
      contextBudget: 8_000,
      triggerRatio: 0.15,
      targetRatio: 0.1,
      elisionEndsPass: 'under-trigger',
      recentWindowGivesWay: false,
      truncateOversized: false,
      keepRecent: 2,
      ageMinChars: 1_000,
      ageReclaimMin: 500,
      ageObservations: true,
      recall,
    },
  });

  it('a stub names the id, recall returns the elided output, bad ids are errors the model reads', async () => {
    const note = `I read the log. ${'The checksums look fine so far, and I will look at the next part. '.repeat(20)}`;
    world.server.script(
      reply({ content: null, tool_calls: [call('call_1', 'fs_read', { path: 'log.txt' })] }),
      reply({ content: note, tool_calls: [call('call_2', 'fs_read', { path: 'log.txt', offset: 1, limit: 1 })] }),
      reply({
        content: null,
        tool_calls: [
          call('call_3', 'recall', { id: 'm4' }),
          ...BAD_IDS.map((id, index) => call(`call_bad_${index}`, 'recall', { id })),
          call('call_extra', 'recall', { id: 'm4', path: '/etc/passwd' }),
        ],
      }),
      reply({ content: 'Line 3 has checksum 15838.' }),
    );
    const t = await testConnection();
    await withFileWorker(
      t,
      {
        workflowBundle: bundle,
        activities: world.activities(),
      },
      async (t) => {
        const handle = await t.client.workflow.start(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-recall'),
          args: [input(true)],
        });
        const result = await handle.result();
        expect(result.stopReason).toBe('completed');
        const requests = sentRequests();
        expect(requests).toHaveLength(4);
        // The tool is declared to the model.
        expect(JSON.stringify(requests[0]?.tools)).toContain('"name":"recall"');
        // The third request carried the read elided, its stub naming the transcript id.
        const third = requests[2]?.messages ?? [];
        expect(third[3]).toMatchObject({ role: 'tool', tool_call_id: 'call_1' });
        expect(third[3]?.content).toMatch(/^\[elided by the harness: \d+-char fs_read result; .*\] \[recall id: m4\]$/);
        // What the model read back: the output, as the tool first gave it.
        const answers = (requests[3]?.messages ?? []).filter((message) => message.role === 'tool').slice(-7);
        const byCall = new Map(answers.map((message) => [message.tool_call_id, String(message.content)]));
        const recalled = byCall.get('call_3') ?? '';
        expect(recalled.startsWith('[tool result (call_1)]\n')).toBe(true);
        expect(recalled).toContain('line 120: checksum');
        expect(recalled.length).toBeLessThanOrEqual(MAX_RECALL_CHARS + 100);
        expect(byCall.get('call_bad_0')).toMatch(/^Error: recall: no message with id "": ids are "m" and a number/);
        expect(byCall.get('call_bad_1')).toBe('Error: recall: arguments.id is 10000 characters; an id has at most 64');
        expect(byCall.get('call_bad_2')).toMatch(/^Error: recall: no message with id "\.\.\/m1"/);
        expect(byCall.get('call_bad_3')).toBe(`Error: recall: no message with id "m999999" in this run's transcript`);
        expect(byCall.get('call_extra')).toBe('Error: recall: unknown argument "path" (it takes only id)');
        // The transcript replays to the run's conversation.
        expect(replaySession(await readSessionLines(t.client, result.session))).toEqual(result.messages);
        await maybeRecordHistory(handle, 'agent-run-recall');
      },
    );
  });

  it('a summary names the ids it replaced, and recall reads them back from the run it continued from', async () => {
    const note = `I read the log. ${'The checksums look fine so far, and I will look at the next part. '.repeat(20)}`;
    world.server.script(
      reply({ content: null, tool_calls: [call('call_1', 'fs_read', { path: 'log.txt' })] }),
      reply({ content: note, tool_calls: [call('call_2', 'fs_read', { path: 'log.txt', offset: 1, limit: 1 })] }),
      reply({
        content: null,
        tool_calls: [call('call_3', 'recall', { id: 'm4' }), call('call_4', 'recall', { id: 'm3' })],
      }),
      reply({ content: 'Line 3 has checksum 15838.' }),
    );
    const t = await testConnection();
    await withFileWorker(
      t,
      {
        workflowBundle: bundle,
        activities: world.activities(),
      },
      async (t) => {
        // Without ageObservations the pass over the trigger summarizes; the run continues as new
        // after two rounds, so the messages recalled are in the first run's history.
        const base = input(true);
        const { ageObservations: _off, ...compaction } = base.compaction;
        const result = await t.client.workflow.execute(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-recall-summary'),
          args: [{ ...base, compaction, continueAsNewAfterRounds: 2 }],
        });
        expect(result.stopReason).toBe('completed');
        expect(result.continuedAsNew).toBe(1);
        const requests = sentRequests();
        const summary = String(requests[2]?.messages[2]?.content);
        expect(summary).toMatch(/^\[Summary by the harness of 2 earlier messages\]/);
        expect(summary.endsWith('\n\n[recall ids: m3..m4]')).toBe(true);
        const answers = new Map(
          (requests[3]?.messages ?? [])
            .filter((message) => message.role === 'tool')
            .map((message) => [message.tool_call_id, String(message.content)]),
        );
        expect(answers.get('call_3')).toBe(`[tool result (call_1)]\n${readOutput(LOG)}`);
        expect(answers.get('call_4')).toBe('[assistant]\n-> call fs_read (call_1) {"path":"log.txt"}');
        expect(replaySession(await readSessionLines(t.client, result.session))).toEqual(result.messages);
      },
    );
  });

  it('a hard trim leaves a marker naming what it dropped, and recall reads it back', async () => {
    const note = `I read the log. ${'The checksums look fine so far, and I will look at the next part. '.repeat(20)}`;
    world.server.script(
      reply({ content: null, tool_calls: [call('call_1', 'fs_read', { path: 'log.txt' })] }),
      reply({ content: note, tool_calls: [call('call_2', 'fs_read', { path: 'log.txt', offset: 1, limit: 1 })] }),
      reply({ content: null, tool_calls: [call('call_3', 'recall', { id: 'm4' })] }),
      reply({ content: 'Line 3 has checksum 15838.' }),
    );
    const t = await testConnection();
    // The summarizer refuses: the compaction falls back to the hard trim.
    const rejected = async (): Promise<never> => {
      throw ApplicationFailure.nonRetryable('the summarizer is down', FailureType.Summarizer.Rejected);
    };
    await withFileWorker(
      t,
      { workflowBundle: bundle, activities: { ...world.activities(), summarize: rejected } },
      async (t) => {
        const base = input(true);
        const { ageObservations: _off, ...compaction } = base.compaction;
        const handle = await t.client.workflow.start(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-recall-trim'),
          args: [{ ...base, compaction }],
        });
        const result = await handle.result();
        expect(result.stopReason).toBe('completed');
        expect(result.compactions.recent[0]).toMatchObject({ kind: 'trim', fallback: true, dropped: 2 });
        const requests = sentRequests();
        // Where the read stood, the marker: what the trim dropped, by id.
        expect(requests[2]?.messages[2]).toEqual({
          role: 'user',
          content: '[2 earlier messages dropped by the harness to fit the context]\n\n[recall ids: m3..m4]',
        });
        const answer = (requests[3]?.messages ?? []).find((message) => message.tool_call_id === 'call_3');
        expect(answer?.content).toBe(`[tool result (call_1)]\n${readOutput(LOG)}`);
        const lines = await readSessionLines(t.client, result.session);
        expect(lines.find((line) => line.type === 'compaction')).toMatchObject({
          summary: null,
          fallback: true,
          trimMarker: '[2 earlier messages dropped by the harness to fit the context]\n\n[recall ids: m3..m4]',
        });
        expect(replaySession(lines)).toEqual(result.messages);
      },
    );
  });

  it("a reviewer's edited summary names the ids the proposal named", async () => {
    const note = `I read the log. ${'The checksums look fine so far, and I will look at the next part. '.repeat(20)}`;
    world.server.script(
      reply({ content: null, tool_calls: [call('call_1', 'fs_read', { path: 'log.txt' })] }),
      reply({ content: note, tool_calls: [call('call_2', 'fs_read', { path: 'log.txt', offset: 1, limit: 1 })] }),
      reply({ content: 'Line 3 has checksum 15838.' }),
    );
    const t = await testConnection();
    await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
      const base = input(true);
      const { ageObservations: _off, ...compaction } = base.compaction;
      const handle = await t.client.workflow.start(agentRun, {
        taskQueue: t.taskQueue,
        workflowId: uniqueId('agent-recall-edit'),
        args: [{ ...base, compaction: { ...compaction, review: 'approve' } }],
      });
      let proposal = await handle.query(agentRunQueries.pendingCompaction);
      for (let attempt = 0; proposal === null && attempt < 200; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        proposal = await handle.query(agentRunQueries.pendingCompaction);
      }
      expect(proposal?.summary).toMatch(
        /^\[Summary by the harness of 2 earlier messages\]\n\n[^]*\n\n\[recall ids: m3\.\.m4\]$/,
      );
      await handle.executeUpdate(agentRunUpdates.reviewCompaction, {
        args: [{ decision: 'edit', summary: 'The log was read: 120 lines, checksums fine.\n\n[recall ids: m1..m99]' }],
      });
      const result = await handle.result();
      expect(result.compactions.recent[0]).toMatchObject({ kind: 'summary', review: 'edited' });
      const requests = sentRequests();
      // The person's text; the ids are the compaction's, their own line gave way.
      expect(requests[2]?.messages[2]).toEqual({
        role: 'user',
        content:
          '[Summary by the harness of 2 earlier messages]\n\nThe log was read: 120 lines, checksums fine.\n\n[recall ids: m3..m4]',
      });
      expect(replaySession(await readSessionLines(t.client, result.session))).toEqual(result.messages);
    });
  });

  it('with the payload store on, recall resolves the claims the history holds and returns the elided output, capped', async () => {
    const storeDir = mkdtempSync(join(tmpdir(), 'agent-recall-store-'));
    try {
      const payloads = payloadConverterFromConfig(loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: `file:${storeDir}` } }));
      const note = `I read the log. ${'The checksums look fine so far, and I will look at the next part. '.repeat(20)}`;
      world.server.script(
        reply({ content: null, tool_calls: [call('call_1', 'fs_read', { path: 'big.log' })] }),
        reply({ content: note, tool_calls: [call('call_2', 'fs_read', { path: 'log.txt', offset: 1, limit: 1 })] }),
        reply({ content: null, tool_calls: [call('call_3', 'recall', { id: 'm4' })] }),
        reply({ content: 'Entry 3 is fine.' }),
      );
      const t = await testConnection({ dataConverter: payloads.dataConverter });
      await withFileWorker(t, { workflowBundle: bundle, activities: world.activities() }, async (t) => {
        const handle = await t.client.workflow.start(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-recall-store'),
          // A window the whole read fits in: the compaction elides it once it leaves the recent window.
          args: [{ ...input(true), model: { ...model, contextWindow: 64_000 } }],
        });
        const result = await handle.result();
        expect(result.stopReason).toBe('completed');
        // The transcript's batches are claims in history: the output is in the store, not inline.
        const batches = ((await handle.fetchHistory()).events ?? []).flatMap((event) => {
          const scheduled = event.activityTaskScheduledEventAttributes;
          return scheduled?.activityType?.name === 'recordSession' ? (scheduled.input?.payloads ?? []) : [];
        });
        expect(batches.length).toBeGreaterThan(0);
        expect(batches.every((payload) => isReferencePayload(payload))).toBe(true);
        for (const payload of batches)
          expect(Buffer.from(payload.data ?? []).toString('utf8')).not.toContain('entry 3:');
        const requests = sentRequests();
        expect(requests[2]?.messages[3]?.content).toMatch(/\[recall id: m4\]$/);
        const answer = (requests[3]?.messages ?? []).find((message) => message.tool_call_id === 'call_3');
        const whole = `[tool result (call_1)]\n${readOutput(BIG)}`;
        expect(whole.length).toBeGreaterThan(MAX_RECALL_CHARS);
        expect(answer?.content).toBe(
          `${whole.slice(0, MAX_RECALL_CHARS)}» [truncated by the harness: ${whole.length - MAX_RECALL_CHARS} more characters]`,
        );
      });
    } finally {
      rmSync(storeDir, { recursive: true, force: true });
    }
  });

  it('off by default: no recall tool, stubs as before', async () => {
    world.server.script(
      reply({ content: null, tool_calls: [call('call_1', 'fs_read', { path: 'log.txt' })] }),
      reply({
        content: `I read the log. ${'The checksums look fine so far. '.repeat(40)}`,
        tool_calls: [call('call_2', 'recall', { id: 'm4' })],
      }),
      reply({ content: 'Done.' }),
    );
    const t = await testConnection();
    await withFileWorker(
      t,
      {
        workflowBundle: bundle,
        activities: world.activities(),
      },
      async (t) => {
        const result = await t.client.workflow.execute(agentRun, {
          taskQueue: t.taskQueue,
          workflowId: uniqueId('agent-recall-off'),
          args: [input(false)],
        });
        const requests = sentRequests();
        expect(JSON.stringify(requests[0]?.tools)).not.toContain('recall');
        const third = requests[2]?.messages ?? [];
        expect(third[3]?.content).toMatch(
          /^\[elided by the harness: \d+-char fs_read result; re-run the call if you need it again\]$/,
        );
        expect(third.at(-1)?.content).toBe('Error: there is no tool named "recall"; the tools are: fs_read');
        expect(result.stopReason).toBe('completed');
      },
    );
  });
});
