import http from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Browser } from 'playwright-core';

import { allowByKeyboard, chromiumTest, launchChromium, phone, screenshots, tabTo, watchProblems } from '../support/chromium';
import { authorizationUrl, exchangeCode, pkce, registerClient } from '../support/oauth';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * The OAuth pages in a real browser (docs/oauth.md, "Pages"): Debian's Chromium, driven by
 * playwright-core (no browser download), at a phone's size, by keyboard only: sign-in, consent,
 * the code delivered to the client's redirect URI, connected apps, revoke. A screenshot of each
 * page is kept in test-artifacts/oauth/ for review. A console error, a failed load, or a page
 * framed by another site fails it.
 */

const browserTest = chromiumTest('the OAuth pages in Chromium');
const shot = screenshots('oauth');

let t: TestStack;
let key: string;
let browser: Browser | undefined;
let callback: http.Server;
let redirectUri: string;
const codes: string[] = [];

beforeAll(async () => {
  t = await startTestStack();
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Mia Rossi' })).body.key;
  // The client's side: its redirect URI, where the browser lands with the code.
  callback = http.createServer((req, res) => {
    const code = new URL(req.url ?? '/', 'http://x').searchParams.get('code');
    if (code) codes.push(code);
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end('<!doctype html><title>Connected</title><p>You can close this window.</p>');
  });
  await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
  redirectUri = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
}, 60_000);
afterAll(async () => {
  await browser?.close();
  callback?.close();
  await t?.stop();
});

browserTest(
  'sign-in, consent, connected apps and revoke, by keyboard only, at a phone’s size',
  async () => {
    browser = await launchChromium();
    const context = await phone(browser);
    const page = await context.newPage();
    const problems = watchProblems(page);

    const clientId = await registerClient(t.url, 'Desk Assistant', redirectUri);
    const { verifier, challenge } = pkce();

    // Sign-in: the key field has the focus; typing and Enter submit the form.
    await page.goto(authorizationUrl(t.url, { clientId, challenge, redirectUri, scope: 'mcp:write' }));
    await page.waitForSelector('#api-key');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('api-key');
    expect(await page.getAttribute('label[for="api-key"]', 'for')).toBe('api-key');
    await shot(page, '1-sign-in');
    await page.keyboard.type(key);
    await page.keyboard.press('Enter');

    // Consent: it names the client, the resource, the scope and the person.
    await page.waitForSelector('text=Allow Desk Assistant', { timeout: 10_000 }).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\n${await page.content()}`);
    });
    const consent = await page.content();
    expect(consent).toContain(`${t.url}/mcp`);
    expect(consent).toContain('mcp:write');
    expect(consent).toContain('Mia Rossi');
    await shot(page, '2-consent');
    // Tab reaches the access choice (the checked radio), then Allow; Enter presses it.
    await allowByKeyboard(page, redirectUri);
    expect(codes).toHaveLength(1);
    const tok = await exchangeCode(t.url, { code: codes[0]!, verifier, clientId, redirectUri });
    expect(tok.status).toBe(200);

    // Connected apps: the person is still signed in to the pages; Revoke by keyboard.
    await page.goto(`${t.url}/oauth/apps`);
    await page.waitForSelector('text=Desk Assistant');
    expect(await page.textContent('body')).toContain('Last use');
    await shot(page, '3-connected-apps');
    expect(await tabTo(page, 'Revoke')).toBe('Revoke');
    await page.keyboard.press('Enter');
    await page.waitForSelector('text=disconnected');
    await shot(page, '4-revoked');
    expect(await page.textContent('body')).toContain('No app is connected');

    // Another site cannot frame the pages (frame-ancestors 'none').
    const framed = await context.newPage();
    const refusal = framed.waitForEvent('console', { predicate: (m) => /frame-ancestors|X-Frame-Options/i.test(m.text()), timeout: 15_000 });
    await framed.setContent(`<iframe src="${t.url}/oauth/apps" width="300" height="300"></iframe>`);
    expect((await refusal).text()).toMatch(/Refused|refused|blocked/);
    const frame = framed.frames().find((f) => f.url().includes('/oauth/apps'));
    expect(frame ? await frame.content().catch(() => '') : '').not.toContain('Connected apps');

    expect(problems).toEqual([]);
  },
  120_000,
);
