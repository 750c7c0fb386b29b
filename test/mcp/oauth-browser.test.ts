import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import { type Browser, chromium, type Page } from 'playwright-core';

import { startTestStack, type TestStack } from '../support/stack';
import { withTools } from '../support/tools';

/**
 * The OAuth pages in a real browser (docs/oauth.md, "Pages"): Debian's Chromium, driven by
 * playwright-core (no browser download), at a phone's size, by keyboard only: sign-in, consent,
 * the code delivered to the client's redirect URI, connected apps, revoke. A screenshot of each
 * page is kept in test-artifacts/oauth/ for review. A page that runs any script, or is framed by
 * another site, fails.
 */

const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
const { test: browserTest } = withTools('the OAuth pages in Chromium', {
  name: 'chromium',
  install: 'apt-get install -y chromium',
  missing: () => (fs.existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is not there`),
});
const ARTIFACTS = path.resolve(__dirname, '../../test-artifacts/oauth');

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
  fs.mkdirSync(ARTIFACTS, { recursive: true });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  callback?.close();
  await t?.stop();
});

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

browserTest(
  'sign-in, consent, connected apps and revoke, by keyboard only, at a phone’s size',
  async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(String(e)));
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
    });

    const reg = await fetch(`${t.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Desk Assistant', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }),
    });
    const clientId = (await reg.json()).client_id as string;
    const verifier = randomBytes(32).toString('base64url');
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      scope: 'mcp:write',
      resource: `${t.url}/mcp`,
      state: 's1',
    });

    // Sign-in: the key field has the focus; typing and Enter submit the form.
    await page.goto(`${t.url}/oauth/authorize?${q}`);
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
    let focused = '';
    for (let i = 0; i < 12 && focused !== 'Allow'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => (document.activeElement as HTMLElement | null)?.innerText ?? '');
    }
    expect(focused).toBe('Allow');
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    expect(codes).toHaveLength(1);
    const tok = await fetch(`${t.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: codes[0]!,
        code_verifier: verifier,
        client_id: clientId,
        redirect_uri: redirectUri,
      }),
    });
    expect(tok.status).toBe(200);

    // Connected apps: the person is still signed in to the pages; Revoke by keyboard.
    await page.goto(`${t.url}/oauth/apps`);
    await page.waitForSelector('text=Desk Assistant');
    expect(await page.textContent('body')).toContain('Last use');
    await shot(page, '3-connected-apps');
    focused = '';
    for (let i = 0; i < 12 && !focused.startsWith('Revoke'); i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => (document.activeElement as HTMLElement | null)?.innerText ?? '');
    }
    expect(focused).toBe('Revoke');
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
