// The Temporal UI reads a chat activity's input through the codec server: the demo, with the
// payload store and encryption on, starts its own dev server whose UI points at the codec server
// it started; headless Chromium (playwright-core driving the one test/support/chromium.ts finds) opens the
// event of a chat activity and finds the conversation as text, and the run's static details (a claim
// too, over the threshold) as text on its User Metadata tab. The control is the chat event's page
// with the codec server out of reach: the text is not there. Screenshots go to test-results/.
// Without Chromium the test skips with one line saying what to install, unless REQUIRE_CHROMIUM=1.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { runDemo } from '../../dev/demo.js';
import { CHUNK_STORE_DRIVER_NAME } from '../../src/payloads/chunk-store.js';
import { payloadConverterFromConfig } from '../../src/payloads/index.js';
import { historyEvents } from '../../src/client/session-reader.js';
import { CHROMIUM_ARGS, chromiumForTests } from '../support/chromium.js';
import { claimOf, decodeHistoryPayload, metadataOf } from '../support/history-payloads.js';
import { quietRuntime } from '../support/temporal.js';
import { writeProductionBundle } from '../support/worker-process.js';

const uiOff = process.env.TEMPORAL_TEST_UI === '0';
const CHROMIUM = uiOff ? undefined : chromiumForTests('the codec server UI test (test/e2e/codec-ui.test.ts)');
const directories: string[] = [];
let browser: Browser | undefined;

// The demo runs its worker in this process: its logs at WARN, as the CLI has them.
beforeAll(() => quietRuntime());
afterAll(async () => {
  await browser?.close();
  directories.forEach((directory) => rmSync(directory, { recursive: true, force: true }));
});

/** A run of at least 30 plain characters (no quotes, backslashes or line breaks, which the UI shows escaped) from `text`. */
function plainSnippet(text: string): string {
  const match = /[A-Za-z0-9 _.,:()-]{30,}/.exec(text);
  if (match === null) throw new Error(`no plain run of 30 characters in ${JSON.stringify(text.slice(0, 200))}`);
  return match[0].trim().slice(0, 60);
}

/** The text of a page and of its frames (the UI renders Markdown details in a sandboxed frame). */
async function textOfFrames(page: Page): Promise<string> {
  const texts = await Promise.all(
    page.frames().map(
      async (frame) =>
        await frame
          .locator('body')
          .innerText()
          .catch(() => ''),
    ),
  );
  return texts.join('\n');
}

describe.skipIf(uiOff || CHROMIUM === undefined)(
  'the Temporal UI through the codec server (payload store and encryption on)',
  () => {
    it('shows a chat activity input as text, and does not without the codec server', { timeout: 300_000 }, async () => {
      const store = mkdtempSync(join(tmpdir(), 'compactor-codec-ui-'));
      directories.push(store);
      mkdirSync('test-results', { recursive: true });
      // The demo's worker starts from the run's shared bundle: what it bundles is not what this test looks at.
      const bundle = await writeProductionBundle('compactor-codec-ui-bundle-');
      directories.push(dirname(bundle.bundlePath));
      const env: Record<string, string | undefined> = {
        ...process.env,
        // Unset (blank) so the demo starts its own dev server, with the UI pointed at its codec server.
        TEMPORAL_ADDRESS: '',
        OPENAI_API_KEY: '',
        OPENAI_BASE_URL: '',
        COMPACTOR_PAYLOAD_STORE: `file:${store}`,
        COMPACTOR_CODEC_KEY: randomBytes(32).toString('base64'),
        COMPACTOR_CODEC_KEY_ID: 'ui-test',
        COMPACTOR_WORKFLOW_BUNDLE: bundle.bundlePath,
      };
      const payloads = payloadConverterFromConfig(loadConfig({ env }));
      let stdout = '';
      let stderr = '';
      let codecServerUrl: string | undefined;
      const seen: { snippet: string; manifest: string; eventUrl: string; controlBanner: boolean } = {
        snippet: '',
        manifest: '',
        eventUrl: '',
        controlBanner: false,
      };

      const outcome = await runDemo({
        env,
        keepServer: true,
        stdout: (text) => (stdout += text),
        stderr: (text) => (stderr += text),
        // While the dev server and the codec server are still up: find a chat activity, then look at it in the UI.
        untilStopped: async () => {
          const address = /^Temporal dev server at (\S+), UI at (\S+)$/m.exec(stderr);
          codecServerUrl = /^Codec server at (http:\/\/\S+) /m.exec(stderr)?.[1];
          const workflowId = /workflow (demo-\S+)$/m.exec(stdout)?.[1];
          if (address === null || codecServerUrl === undefined || workflowId === undefined)
            throw new Error(`the demo did not print its addresses:\n${stderr}\n${stdout}`);
          const [, frontend = '', uiUrl = ''] = address;

          // The third chat activity of the run, as the server holds it: a claim, stored encrypted.
          const connection = await Connection.connect({ address: frontend });
          let chatInput: Payload | undefined;
          let startDetails: Payload | undefined;
          let eventId = '';
          let runId = '';
          try {
            const client = new Client({ connection, dataConverter: payloads.dataConverter });
            runId = (await client.workflow.getHandle(workflowId).describe()).runId;
            let chats = 0;
            for await (const event of historyEvents(client, workflowId, runId)) {
              if (event.workflowExecutionStartedEventAttributes)
                startDetails = event.userMetadata?.details ?? undefined;
              const scheduled = event.activityTaskScheduledEventAttributes;
              if (scheduled?.activityType?.name !== 'chat' || ++chats < 3) continue;
              chatInput = scheduled.input?.payloads?.[0] ?? undefined;
              eventId = String(event.eventId);
              break;
            }
          } finally {
            await connection.close();
          }
          if (chatInput === undefined) throw new Error('no third chat activity in the run');
          expect(metadataOf(chatInput, 'messageType')).toBe('temporal.api.sdk.v1.ExternalStorageReference');
          expect(claimOf(chatInput)?.claimData).toEqual({
            m: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
            k: 'ui-test',
          });
          // The manifest id as the claim spells it (base64url), which is what the UI shows without the codec server.
          seen.manifest = claimOf(chatInput)?.claimData.m ?? '';
          const decoded = await decodeHistoryPayload(chatInput, { driver: payloads.driver, codec: payloads.codec });
          const input: unknown = JSON.parse(Buffer.from(decoded.data ?? []).toString('utf8'));
          const messages: unknown =
            typeof input === 'object' && input !== null ? Reflect.get(input, 'messages') : undefined;
          const task: unknown = Array.isArray(messages) ? Reflect.get(messages[1] ?? {}, 'content') : undefined;
          if (typeof task !== 'string') throw new Error('the chat input has no task message');
          seen.snippet = plainSnippet(task);
          seen.eventUrl = `${uiUrl}/namespaces/default/workflows/${workflowId}/${runId}/history/events/${eventId}`;

          browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS] });
          const page = await browser.newPage({ viewport: { width: 1400, height: 1400 } });
          await page.goto(seen.eventUrl);
          await expect
            .poll(async () => (await page.locator('main').innerText()).includes(seen.snippet), { timeout: 60_000 })
            .toBe(true);
          const decodedView = await page.locator('main').innerText();
          expect(decodedView).not.toContain(CHUNK_STORE_DRIVER_NAME);
          expect(decodedView).not.toContain(seen.manifest);
          await page.screenshot({ path: 'test-results/codec-server-ui-chat-input.png', fullPage: true });
          // The run's static details (Markdown, over the threshold): a claim too, which the UI's
          // User Metadata tab shows as text through the codec server.
          expect(startDetails === undefined ? undefined : metadataOf(startDetails, 'messageType')).toBe(
            'temporal.api.sdk.v1.ExternalStorageReference',
          );
          // Its tab on the same page, as a user moves between them (each load of the app is seconds of
          // CPU); clicked again until its content shows.
          const metadataPage = page;
          await expect
            .poll(
              async () => {
                await metadataPage.getByText('User Metadata').first().click();
                return (await textOfFrames(metadataPage)).includes('Backends:');
              },
              { timeout: 60_000, interval: 2_000 },
            )
            .toBe(true);
          await metadataPage.screenshot({ path: 'test-results/codec-server-ui-user-metadata.png', fullPage: true });
          expect(await textOfFrames(metadataPage)).not.toContain(CHUNK_STORE_DRIVER_NAME);

          // Control: the same page with every request to the codec server refused.
          const control = await browser.newPage({ viewport: { width: 1400, height: 1400 } });
          const codecOrigin = codecServerUrl;
          await control.route(
            (url) => url.href.startsWith(codecOrigin),
            (route) => route.abort('connectionrefused'),
          );
          await control.goto(seen.eventUrl);
          const banner = control.locator('#content').getByText('Codec Server could not connect');
          await banner.waitFor({ timeout: 60_000 });
          seen.controlBanner = await banner.isVisible();
          // What the UI has without it: the claim as the history holds it (driver name, manifest id, key id).
          await expect
            .poll(async () => (await control.locator('main').innerText()).includes(seen.manifest), { timeout: 30_000 })
            .toBe(true);
          const rawView = await control.locator('main').innerText();
          expect(rawView).toContain(CHUNK_STORE_DRIVER_NAME);
          expect(rawView).not.toContain(seen.snippet);
          await control.screenshot({ path: 'test-results/codec-server-ui-control.png', fullPage: true });
        },
      });

      expect(outcome.status).toBe('completed');
      expect(outcome.codecServerUrl).toBe(codecServerUrl);
      expect(stderr).toMatch(
        /^Codec server at http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{32} \(the UI decodes payloads through it: claims resolved, decompressed, decrypted\)$/m,
      );
      expect(seen.snippet.length).toBeGreaterThanOrEqual(30);
      expect(seen.controlBanner).toBe(true);
      // The demo stopped its codec server with the dev server.
      await expect(fetch(`${outcome.codecServerUrl}/decode`, { method: 'POST', body: '{}' })).rejects.toThrow();
    });
  },
);
