// The Temporal UI shows a finished agentRun's compactions: headless Debian Chromium (playwright-core,
// never a downloaded browser) opens the dev server's UI, finds the compaction table in the run's
// current details and a summarize activity's summary in its event history, and saves screenshots
// under test-results/. Needs the UI on (the global setup turns it on unless TEMPORAL_TEST_UI=0)
// and /usr/bin/chromium (`apt-get install chromium`; .ci/run installs it).
import { existsSync, mkdirSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { COMPACTION_TABLE_HEADER } from '../../src/index.js';
import { openingOf, replayActivities, runAgent } from '../support/agent.js';
import { bundleWorkflows, testConnection, uniqueId, withWorker } from '../support/temporal.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const uiUrl = inject('temporalUiUrl');

describe.skipIf(uiUrl === null)('the Temporal UI of a finished agentRun', () => {
  let browser: Browser | undefined;
  afterAll(async () => {
    await browser?.close();
  });

  it('shows the compaction table and the summarize activities', { timeout: 180_000 }, async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`).toBe(true);
    const t = await testConnection();
    const bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
    // A generated long run (corpus/generate.ts) whose last summary comes 3 rounds before the end at
    // this window, so its summarize activity is on the first page of the newest-first event history.
    const name = 'generated_long-run-100x1500';
    const workflowId = uniqueId('agent-ui');
    mkdirSync('test-results', { recursive: true });
    // The worker keeps polling while the browser looks: the UI reads current details through a query.
    await withWorker(t, { workflowBundle: bundle, activities: replayActivities() }, async () => {
      const outcome = await runAgent(t, { messages: openingOf(name), model: { provider: 'replay', trajectory: name, contextWindow: 14_000, maxOutputTokens: 1000 }, compaction: { keepRecent: 4 }, maxRounds: 1000 }, workflowId);
      expect(outcome.status).toBe('completed');
      const summarized = outcome.compactions.filter((record) => record.kind === 'summary');
      expect(summarized.length).toBeGreaterThan(0);
      const { runId } = await t.client.workflow.getHandle(workflowId).describe();
      const base = `${uiUrl}/namespaces/${t.namespace}/workflows/${workflowId}/${runId}`;

      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
      const page = await browser.newPage({ viewport: { width: 1400, height: 1200 } });

      // Current details: the Markdown table of compactions, rendered by the UI (in a sandboxed frame).
      await page.goto(`${base}/user-metadata`);
      const details = page.frameLocator('iframe').first();
      const headerCells = COMPACTION_TABLE_HEADER.split('|').map((cell) => cell.trim()).filter((cell) => cell !== '');
      await expect.poll(async () => details.locator('th').allInnerTexts(), { timeout: 30_000 }).toEqual(headerCells);
      const rows = details.locator('tbody tr');
      expect(await rows.count()).toBe(outcome.compactions.length);
      const firstSummary = summarized[0];
      const summaryRow = outcome.compactions.indexOf(firstSummary ?? outcome.compactions[0]!);
      expect(await rows.nth(summaryRow).locator('td').allInnerTexts()).toEqual(
        expect.arrayContaining([String(summaryRow + 1), String(firstSummary?.round), String(firstSummary?.dropped), expect.stringMatching(/^summary \(/)]),
      );
      await page.screenshot({ path: 'test-results/agent-run-ui-current-details.png', fullPage: true });

      // Event history (newest first, one page): the latest summarize activity carries its summary metadata.
      await page.goto(`${base}/history`);
      const lastSummary = summarized.at(-1);
      const activitySummary = page.getByText(`summarize ${lastSummary?.dropped} messages (`).first();
      await activitySummary.waitFor({ timeout: 30_000 });
      expect(await activitySummary.isVisible()).toBe(true);
      await page.screenshot({ path: 'test-results/agent-run-ui-event-history.png', fullPage: true });
    });
  });
});
