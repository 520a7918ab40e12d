/// <reference lib="dom" />
// The Temporal UI shows a finished agentRun's compactions: headless Chromium (playwright-core
// driving the one test/support/chromium.ts finds) opens the dev server's UI at its default size, finds the run's static
// summary, the compaction table in its current details — fitting the panel, not wrapped into
// one-word lines — and a summarize activity's summary in its event history, and saves screenshots
// under test-results/. Needs the UI on (the global setup turns it on unless TEMPORAL_TEST_UI=0)
// and Chromium: without it the test skips with one line saying what to install, unless
// REQUIRE_CHROMIUM=1 (.ci/run, which installs it) makes that a failure.
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type Frame } from 'playwright-core';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { AgentRunWorkflowInput } from '../../src/shared/agent-run.js';
import { compactionLine } from '../../src/core/agent/compaction-history.js';
import { agentRunStaticMetadata } from '../../dev/static-metadata.js';
import { openingOf, replayActivities, runAgent } from '../support/agent.js';
import { CHROMIUM_ARGS, chromiumForTests, runTab } from '../support/chromium.js';
import { bundleWorkflows, testConnection, uniqueId, withFileWorker } from '../support/temporal.js';

const uiUrl = inject('temporalUiUrl');
const CHROMIUM = uiUrl === null ? undefined : chromiumForTests('the Temporal UI test (test/e2e/ui.test.ts)');

describe.skipIf(uiUrl === null || CHROMIUM === undefined)('the Temporal UI of a finished agentRun', () => {
  let browser: Browser | undefined;
  afterAll(async () => {
    await browser?.close();
  });

  it('shows the compaction table and the summarize activities', { timeout: 180_000 }, async () => {
    const t = await testConnection();
    const bundle = await bundleWorkflows(new URL('../../src/workflows/index.ts', import.meta.url));
    // A generated long run (corpus/generate.ts) whose last summary comes 3 rounds before the end at
    // this window, so its summarize activity is on the first page of the newest-first event history.
    const name = 'generated_long-run-100x1500';
    const workflowId = uniqueId('agent-ui');
    mkdirSync('test-results', { recursive: true });
    // The worker keeps polling while the browser looks: the UI reads current details through a query.
    await withFileWorker(t, { workflowBundle: bundle, activities: replayActivities() }, async (t) => {
      const input: AgentRunWorkflowInput = {
        messages: openingOf(name),
        model: { provider: 'replay', trajectory: name, contextWindow: 14_000, maxOutputTokens: 1000 },
        compaction: { keepRecent: 4 },
        maxRounds: 1000,
      };
      const metadata = agentRunStaticMetadata(input);
      // Started as the demo starts its run: with a static summary and details for the UI.
      const outcome = await runAgent(t, input, workflowId, metadata);
      expect(outcome.status).toBe('completed');
      const summarized = outcome.compactions.filter((record) => record.kind === 'summary');
      expect(summarized.length).toBeGreaterThan(0);
      const { runId } = await t.client.workflow.getHandle(workflowId).describe();
      const base = `${uiUrl}/namespaces/${t.namespace}/workflows/${workflowId}/${runId}`;

      browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS] });
      // The UI's default: a laptop-sized window, where the details panel is narrow.
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });

      // User Metadata: the static summary and details the run was started with, and its current
      // details: the totals, the cost so far, and a four-column table of the recent compactions,
      // rendered by the UI (in a sandboxed frame) in a panel half the page wide.
      await page.goto(`${base}/user-metadata`);
      // Each Markdown block is rendered in a frame of its own: find them by what they say.
      const frameSaying = async (text: string): Promise<Frame> => {
        const deadline = Date.now() + 30_000;
        for (;;) {
          for (const frame of page.frames())
            if (
              (
                await frame
                  .locator('body')
                  .innerText()
                  .catch(() => '')
              ).includes(text)
            )
              return frame;
          if (Date.now() > deadline) throw new Error(`no frame of the page says ${JSON.stringify(text)}`);
          await page.waitForTimeout(250);
        }
      };
      await frameSaying(metadata.staticSummary);
      const details = await frameSaying('Cost so far:');
      await expect
        .poll(async () => details.locator('body').innerText(), { timeout: 30_000 })
        .toContain(`${outcome.compactions.length} compactions`);
      expect(await details.locator('body').innerText()).toMatch(
        /Cost so far: [\d,]+ prompt tokens in \d+ requests, \d+% from the cache/,
      );
      // What the summaries kept of the identifiers they had to keep (docs/design.md#coverage), in one line.
      expect(await details.locator('body').innerText()).toMatch(
        /Summaries below kept [\d,]+ of the [\d,]+ identifiers they had to keep \([\d,]+ by a carried-facts line\)\./,
      );
      // One list item per recent compaction, each the line `compactionLine` writes.
      const items = details.locator('li');
      expect(await items.allInnerTexts()).toEqual(
        outcome.compactions
          .slice(-20)
          .map((record, index) =>
            compactionLine(record, outcome.compactions.length - Math.min(outcome.compactions.length, 20) + index + 1),
          ),
      );
      const firstSummary = summarized[0];
      expect(await items.allInnerTexts()).toContainEqual(
        expect.stringMatching(
          new RegExp(`round ${firstSummary?.round} · [\\d,]+ → [\\d,]+ · summary of ${firstSummary?.dropped}$`),
        ),
      );
      // Readable in this panel: nothing overflows it sideways, and an item fits on one line.
      const fits = await details.locator('ul').evaluate((list) => {
        const lineHeight =
          parseFloat(getComputedStyle(list).lineHeight) || 1.25 * parseFloat(getComputedStyle(list).fontSize);
        const tallest = Math.max(
          ...Array.from(list.querySelectorAll('li')).map((item) => item.getBoundingClientRect().height),
        );
        return { overflow: list.scrollWidth - list.clientWidth, tallest, lineHeight };
      });
      expect(fits.overflow).toBeLessThanOrEqual(0);
      expect(fits.tallest).toBeLessThan(1.5 * fits.lineHeight);
      await page.screenshot({ path: 'test-results/agent-run-ui-current-details.png', fullPage: true });
      // The panel itself, scrolled into view: what a user reads.
      const panelFrame = await details.frameElement();
      await panelFrame.scrollIntoViewIfNeeded();
      await panelFrame.screenshot({ path: 'test-results/agent-run-ui-current-details-panel.png' });

      // Event history (newest first, one page): the latest summarize activity carries its summary
      // metadata: which compaction it served and why, then how many messages it summarized.
      await runTab(page, runId, 'history').click();
      const lastSummary = summarized.at(-1);
      const number = lastSummary === undefined ? 0 : outcome.compactions.indexOf(lastSummary) + 1;
      const activitySummary = page
        .getByText(new RegExp(`^#${number} (trigger|to fit) · ${lastSummary?.dropped} msgs \\(`))
        .first();
      await activitySummary.waitFor({ timeout: 30_000 });
      expect(await activitySummary.isVisible()).toBe(true);
      // Where a fresh load of the tab would be: the panel above was scrolled into view.
      await page.evaluate(() => {
        for (const element of [document.scrollingElement, ...Array.from(document.querySelectorAll('*'))])
          if (element !== null && (element.scrollTop !== 0 || element.scrollLeft !== 0)) element.scrollTo(0, 0);
      });
      await page.mouse.move(0, 0);
      await page.screenshot({ path: 'test-results/agent-run-ui-event-history.png', fullPage: true });
    });
  });
});
