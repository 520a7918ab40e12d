// Where the browser tests find Chromium (test/support/chromium.ts): CHROMIUM_PATH alone when set,
// else the usual places; absent, one line saying what to install, or a failure with REQUIRE_CHROMIUM=1.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { chromiumForTests, findChromium } from '../support/chromium.js';

const dir = mkdtempSync(join(tmpdir(), 'compactor-chromium-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, mode: number): string {
  const path = join(dir, name);
  writeFileSync(path, '#!/bin/sh\n');
  chmodSync(path, mode);
  return path;
}

const browser = file('chromium', 0o755);
const notExecutable = file('chromium-browser', 0o644);
const missing = join(dir, 'google-chrome');

describe('findChromium', () => {
  it('CHROMIUM_PATH alone when it is set: the defaults are not searched', () => {
    expect(findChromium({ CHROMIUM_PATH: browser }, [missing])).toEqual({ executablePath: browser, tried: [browser] });
    expect(findChromium({ CHROMIUM_PATH: '/nonexistent' }, [browser])).toEqual({
      executablePath: undefined,
      tried: ['/nonexistent'],
    });
  });

  it('else the first executable file of the usual places, in order', () => {
    expect(findChromium({}, [missing, notExecutable, dir, browser])).toEqual({
      executablePath: browser,
      tried: [missing, notExecutable, dir, browser],
    });
    expect(findChromium({ CHROMIUM_PATH: '' }, [missing, notExecutable]).executablePath).toBeUndefined();
  });

  it('the usual places include /usr/bin/chromium and Chrome', () => {
    expect(findChromium({}).tried).toEqual(
      expect.arrayContaining(['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome']),
    );
  });
});

describe('chromiumForTests', () => {
  it('found: its path, and nothing printed', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      expect(chromiumForTests('the test', { REQUIRE_CHROMIUM: '1' }, [browser])).toBe(browser);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it('absent: undefined (the test skips) after one line saying what to install', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      expect(chromiumForTests('the UI test', { CHROMIUM_PATH: '/nonexistent' })).toBeUndefined();
      expect(warn).toHaveBeenCalledTimes(1);
      const line = String(warn.mock.calls[0]?.[0]);
      expect(line).toBe(
        'skipping the UI test: no Chromium at /nonexistent: install it (apt-get install chromium, or npx playwright-core install chromium) or point CHROMIUM_PATH at it',
      );
      expect(line).not.toContain('\n');
    } finally {
      warn.mockRestore();
    }
  });

  it('absent with REQUIRE_CHROMIUM=1: a failure', () => {
    expect(() => chromiumForTests('the UI test', { CHROMIUM_PATH: '/nonexistent', REQUIRE_CHROMIUM: '1' })).toThrow(
      /^REQUIRE_CHROMIUM=1 but no Chromium at \/nonexistent: install it/,
    );
  });
});
