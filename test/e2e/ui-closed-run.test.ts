/// <reference lib="dom" />
// A closed agentRun's compactions in the Temporal UI with no worker running: headless Chromium
// (playwright-core driving the one test/support/chromium.ts finds) opens the run's Memo tab after
// its worker has stopped, and finds the compaction table there — every row the memo lists, padded to
// its columns — and the labels of its compactions' activities in the event history. Once as the SDK
// writes payloads, once with the payload store on (no key): there too the memo is in the history as
// written, so the UI shows it with no codec server, and a client without the store describes the run.
// Screenshots go to test-results/ (docs/ui-closed-run-memo.png is one of them). Needs the UI on and
// Chromium, as test/e2e/ui.test.ts does.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import { agentRunStaticMetadata } from '../../dev/static-metadata.js';
import { COMPACTION_MEMO_KEY, renderCompactionMemo } from '../../src/core/agent/compaction-memo.js';
import { loadConfig } from '../../src/config.js';
import { payloadProtoSize } from '../../src/payloads/codec.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import { UI_PAYLOAD_METADATA_KEY } from '../../src/shared/ui-payload.js';
import { openingOf, replayActivities, runAgent } from '../support/agent.js';
import { CHROMIUM_ARGS, chromiumForTests, runTab } from '../support/chromium.js';
import { claimOf, historyPayloads, metadataOf } from '../support/history-payloads.js';
import { bundleWorkflows, testConnection, uniqueId, withWorker, type TestConnection } from '../support/temporal.js';

const uiUrl = inject('temporalUiUrl');
const CHROMIUM =
  uiUrl === null ? undefined : chromiumForTests('the closed-run UI test (test/e2e/ui-closed-run.test.ts)');

describe.skipIf(uiUrl === null || CHROMIUM === undefined)(
  'the Temporal UI of a closed agentRun, no worker running',
  () => {
    let browser: Browser | undefined;
    const directories: string[] = [];
    afterAll(async () => {
      await browser?.close();
      for (const directory of directories) rmSync(directory, { recursive: true, force: true });
    });

    const cases = [
      { name: 'payloads as the SDK writes them', store: false, screenshots: 'ui-closed-run' },
      { name: 'the payload store on, no codec server', store: true, screenshots: 'ui-closed-run-store' },
    ];
    it.each(cases)(
      '$name: the memo shows the compaction table, the activities their labels',
      { timeout: 240_000 },
      async ({ store, screenshots }) => {
        let t: TestConnection;
        if (store) {
          const directory = mkdtempSync(join(tmpdir(), 'compactor-ui-store-'));
          directories.push(directory);
          // The default threshold (256 B): the memo, up to 2,000 bytes, is well over it.
          t = await testConnection({
            dataConverter: payloadConverterFromConfig(
              loadConfig({ env: { COMPACTOR_PAYLOAD_STORE: `file:${directory}` } }),
            ).dataConverter,
          });
        } else t = await testConnection();
        const bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
        const name = 'openhands_gpt4o_Project-MONAI__MONAI-3715';
        const workflowId = uniqueId('agent-closed-ui');
        mkdirSync('test-results', { recursive: true });
        const input: AgentRunWorkflowInput = {
          messages: openingOf(name),
          model: { provider: 'replay', trajectory: name, contextWindow: 9_000, maxOutputTokens: 1_000 },
          compaction: { ageObservations: true, ageMinChars: 1000, ageReclaimMin: 4000 },
          maxRounds: 1000,
        };
        // The worker stops once the run has closed: nothing polls its task queue while the browser looks.
        const outcome = await withWorker(t, { workflowBundle: bundle, activities: replayActivities() }, () =>
          runAgent(t, input, workflowId, agentRunStaticMetadata(input)),
        );
        expect(outcome.status).toBe('completed');
        expect(outcome.compactions.length).toBeGreaterThan(1);
        // A client with no store and no codec: the memo is there as written.
        const plainClient = new Client({ connection: t.connection, namespace: t.namespace });
        const description = await plainClient.workflow.getHandle(workflowId).describe();
        const { runId, memo } = description;
        // The static summary and details too: small enough to stay in history.
        const metadata = agentRunStaticMetadata(input);
        expect(await description.staticSummary()).toBe(metadata.staticSummary);
        expect(await description.staticDetails()).toBe(metadata.staticDetails);
        // What the run wrote as it closed: its history, cost and how it ended.
        const expected = renderCompactionMemo(outcome.history, {
          stopReason: 'completed',
          rounds: outcome.rounds ?? 0,
        });
        expect(memo?.[COMPACTION_MEMO_KEY]).toBe(expected);
        if (store) {
          // Every memo write in the history is the table itself, none a claim; the arguments are claims.
          // The history as the server keeps it: nothing resolved or decoded.
          const { history } = await t.connection.workflowService.getWorkflowExecutionHistory({
            namespace: t.namespace,
            execution: { workflowId },
            maximumPageSize: 10_000,
          });
          const found = historyPayloads(history?.events ?? [], payloadProtoSize);
          const memos = found.filter((entry) => entry.path.includes('upsertedMemo'));
          expect(memos.length).toBeGreaterThan(1);
          for (const entry of memos) {
            expect(claimOf(entry.payload), entry.path).toBeUndefined();
            expect(metadataOf(entry.payload, 'encoding'), entry.path).toBe('json/plain');
            expect(metadataOf(entry.payload, UI_PAYLOAD_METADATA_KEY), entry.path).toBe('1');
          }
          expect(found.filter((entry) => claimOf(entry.payload) !== undefined).length).toBeGreaterThan(memos.length);
        }
        const base = `${uiUrl}/namespaces/${t.namespace}/workflows/${workflowId}/${runId}`;

        browser ??= await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS] });
        const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });

        // The Memo tab: the memo as JSON, the table's lines one under the other in a monospaced block.
        await page.goto(`${base}/memo`);
        const header = page.getByText('| # | round | tokens before → after |').first();
        await header.waitFor({ timeout: 30_000 });
        await page.screenshot({ path: `test-results/${screenshots}-memo.png` });
        // Each row of the table on a line of its own (the last one followed by the JSON string's closing quote).
        const lines = (await page.locator('body').innerText())
          .replace(/\u00a0/g, ' ')
          .split('\n')
          .map((line) => line.replace(/"$/, ''));
        const rows = expected.split('\n').filter((line) => line.startsWith('|'));
        expect(rows.length).toBe(outcome.compactions.length + 2);
        for (const row of rows) expect(lines).toContain(row);
        expect(lines).toContain(`Run: completed after ${outcome.rounds} rounds.`);
        // In a monospaced font: rows of the same length line up.
        const font = await header.evaluate((element) => getComputedStyle(element).fontFamily);
        expect(font).toMatch(/mono/i);

        // The event history: each compaction's summarize activity says which compaction it is and why.
        await runTab(page, runId, 'history').click();
        const label = page.getByText(/^#\d+ trigger · \d+ msgs \(/).first();
        await label.waitFor({ timeout: 30_000 });
        expect(await label.isVisible()).toBe(true);
        await page.screenshot({ path: `test-results/${screenshots}-history.png`, fullPage: true });
        // The Timeline draws a label beside each activity's bar (`summarize • #3 trigger · …`), on the page.
        await runTab(page, runId, 'timeline').click();
        const drawn = page.getByText(/summarize • #\d+ trigger · \d+ msgs \([\d,]+ chars\)$/).first();
        await drawn.waitFor({ timeout: 30_000 });
        await drawn.scrollIntoViewIfNeeded();
        const box = await drawn.boundingBox();
        expect(box?.x).toBeGreaterThanOrEqual(0);
        expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(1280);
        await page.screenshot({ path: `test-results/${screenshots}-timeline.png` });
        await page.close();
      },
    );
  },
);
