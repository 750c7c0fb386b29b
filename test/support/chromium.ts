import fs from 'node:fs';
import path from 'node:path';

import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

import { withTools } from './tools';

/**
 * Debian's Chromium driven by playwright-core (no browser download), as the pages' browser tests
 * use it: at a phone's size, every console error, page error and failed load of a page collected
 * (a test expects none), and a screenshot of each page kept in test-artifacts/<dir>/ for review.
 */

export const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';

/** The `test` of tests that need Chromium (a failure in CI where it is missing). */
export function chromiumTest(what: string) {
  return withTools(what, {
    name: 'chromium',
    install: 'apt-get install -y chromium',
    missing: () => (fs.existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is not there`),
  }).test;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
}

/** A context at a phone's size. */
export function phone(browser: Browser): Promise<BrowserContext> {
  return browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1, isMobile: true, hasTouch: true });
}

/** Collects what goes wrong on `page`: console errors, uncaught errors, answers of 400 or more (but those `expected` says are). */
export function watchProblems(page: Page, expected: (status: number, url: string) => boolean = () => false): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !expected(0, m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
  page.on('response', (r) => {
    if (r.status() >= 400 && !expected(r.status(), r.url())) problems.push(`${r.status()} ${r.url()}`);
  });
  return problems;
}

/** The screenshots of a test, in test-artifacts/`dir`/ (not committed). */
export function screenshots(dir: string): (page: Page, name: string) => Promise<void> {
  const into = path.resolve(__dirname, '../../test-artifacts', dir);
  fs.mkdirSync(into, { recursive: true });
  return async (page, name) => {
    await page.screenshot({ path: path.join(into, `${name}.png`), fullPage: true });
  };
}

/** Presses Tab until the focused element's text is `text` (at most `tries` times); answers what has the focus. */
export async function tabTo(page: Page, text: string, tries = 12): Promise<string> {
  let focused = '';
  for (let i = 0; i < tries && focused !== text; i++) {
    await page.keyboard.press('Tab');
    focused = await page.evaluate(() => (document.activeElement as HTMLElement | null)?.innerText ?? '');
  }
  return focused;
}

/** On a consent page: Tab to Allow and Enter; then the browser reaches the client's `redirectUri`. */
export async function allowByKeyboard(page: Page, redirectUri: string): Promise<void> {
  expect(await tabTo(page, 'Allow')).toBe('Allow');
  await page.keyboard.press('Enter');
  await page.waitForURL((u) => u.href.startsWith(redirectUri));
}
