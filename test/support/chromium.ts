// Node (test support): where the browser tests (test/e2e/ui.test.ts, test/e2e/codec-ui.test.ts) find
// Chromium. `npm test` on a machine without it skips them with one line saying what to install;
// with REQUIRE_CHROMIUM=1 (.ci/run, which installs it) its absence fails them instead.
import { accessSync, constants, statSync } from 'node:fs';
import { chromium, type Locator, type Page } from 'playwright-core';

/** How the browser tests launch it: headless, no sandbox (CI runs as root), nothing fetched in the background. */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Where users keep Chromium (or Chrome), in the order they are tried after `CHROMIUM_PATH`. */
export const CHROMIUM_LOCATIONS: readonly string[] = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
];

type Environment = Readonly<Record<string, string | undefined>>;

export interface ChromiumLookup {
  /** The first executable found, or undefined. */
  executablePath: string | undefined;
  /** Every path tried, in order. */
  tried: string[];
}

/** The browser playwright-core installed (`npx playwright-core install chromium`), when it knows where that goes. */
function playwrightChromium(): string[] {
  try {
    return [chromium.executablePath()];
  } catch {
    return [];
  }
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Finds Chromium: `CHROMIUM_PATH` alone when it is set (so `CHROMIUM_PATH=/nonexistent` means "none
 * here"), else the usual locations and then playwright-core's own install.
 */
export function findChromium(
  env: Environment = process.env,
  defaults: readonly string[] = [...CHROMIUM_LOCATIONS, ...playwrightChromium()],
): ChromiumLookup {
  const chosen = env.CHROMIUM_PATH;
  const tried = chosen !== undefined && chosen !== '' ? [chosen] : [...defaults];
  return { executablePath: tried.find(isExecutableFile), tried };
}

/** The one line a skipped browser test prints, or the message it fails with when Chromium is required. */
export function missingChromiumMessage(lookup: ChromiumLookup): string {
  return `no Chromium at ${lookup.tried.join(', ')}: install it (apt-get install chromium, or npx playwright-core install chromium) or point CHROMIUM_PATH at it`;
}

/**
 * The Chromium a browser test runs, or undefined after printing one line saying what to install
 * (the test then skips). Throws when `REQUIRE_CHROMIUM=1`: where Chromium was installed for the
 * tests (CI), its absence is a failure, not a skip.
 */
export function chromiumForTests(
  what: string,
  env: Environment = process.env,
  defaults?: readonly string[],
): string | undefined {
  const lookup = defaults === undefined ? findChromium(env) : findChromium(env, defaults);
  if (lookup.executablePath !== undefined) return lookup.executablePath;
  if (env.REQUIRE_CHROMIUM === '1') throw new Error(`REQUIRE_CHROMIUM=1 but ${missingChromiumMessage(lookup)}`);
  console.warn(`skipping ${what}: ${missingChromiumMessage(lookup)}`);
  return undefined;
}

/**
 * The Temporal UI's tab `route` (`history`, `timeline`, …) of the run `runId` on `page`: clicking it
 * moves there as a user does, without loading the app again (each load is seconds of CPU).
 */
export function runTab(page: Page, runId: string, route: string): Locator {
  return page.locator(`a[role="tab"][href*="/${runId}/${route}"]`).first();
}
