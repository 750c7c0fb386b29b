import http from 'node:http';
import net, { type AddressInfo } from 'node:net';

import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';

import { allowByKeyboard, chromiumTest, launchChromium, phone, screenshots, tabTo, watchProblems } from '../support/chromium';
import { authorizationUrl, exchangeCode, pkce, registerClient } from '../support/oauth';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * Passkeys on the OAuth pages (docs/oauth.md, "Passkeys"), in Debian's Chromium with its virtual
 * authenticator (CDP WebAuthn: CTAP2, internal, resident keys, user verification): a person
 * signed in with an API key adds a passkey, signs out, signs in with the passkey alone and
 * approves an app; removes it. Refused: an answer replayed, or to an expired challenge; another
 * person's passkey naming someone else; an answer made on another origin; a removed passkey.
 * Passkeys need a host name (an IP address cannot be a WebAuthn RP ID): the stack's public URL
 * is http://svc.localhost:<port> (a loopback name, RFC 6761, and a secure context in browsers),
 * and the other origin a site below it, http://evil.svc.localhost:<port>, which may ask for the
 * passkeys of the RP ID svc.localhost (as any subdomain of an RP may).
 */

const test = chromiumTest('passkeys in Chromium');
const shot = screenshots('oauth');

let t: TestStack;
let base: string;
let mia: { key: string; id: string };
let olu: { key: string; id: string };
let browser: Browser | undefined;
let callback: http.Server;
let redirectUri: string;
let elsewhere: http.Server;
let evil: string;
const codes: string[] = [];

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

const listen = async (server: http.Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

beforeAll(async () => {
  const port = await freePort();
  base = `http://svc.localhost:${port}`;
  t = await startTestStack({ PORT: String(port), SVC_PUBLIC_URL: base });
  const a = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Mia Rossi' })).body;
  mia = { key: a.key, id: a.account.id };
  const b = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Olu Ade' })).body;
  olu = { key: b.key, id: b.account.id };
  callback = http.createServer((req, res) => {
    const code = new URL(req.url ?? '/', 'http://x').searchParams.get('code');
    if (code) codes.push(code);
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end('<!doctype html><title>Connected</title><p>You can close this window.</p>');
  });
  redirectUri = `http://127.0.0.1:${await listen(callback)}/callback`;
  // Another site, which loads the same WebAuthn library and asks for a passkey of the stack's RP ID.
  elsewhere = http.createServer((_req, res) => {
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(`<!doctype html><title>Elsewhere</title><script src="${base}/oauth/static/webauthn.js"></script><p>Another site.</p>`);
  });
  evil = `http://evil.svc.localhost:${await listen(elsewhere)}`;
}, 60_000);
afterAll(async () => {
  await browser?.close();
  callback?.close();
  elsewhere?.close();
  await t?.stop();
});

/** A page with a virtual authenticator of its own (a phone's platform authenticator, user verified). */
async function authenticatorPage(context: BrowserContext): Promise<{ page: Page; cdp: CDPSession; authenticatorId: string }> {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  });
  return { page, cdp, authenticatorId };
}

/** CDP's base64 as WebAuthn's base64url. */
const b64url = (b64: string) => Buffer.from(b64, 'base64').toString('base64url');

const text = (page: Page) => page.textContent('body').then((s) => s ?? '');

/** Signs in with an API key on the passkeys page, and adds a passkey named `name` (by keyboard). */
async function addPasskey(page: Page, key: string, name: string): Promise<void> {
  await page.goto(`${base}/oauth/passkeys`);
  await page.waitForSelector('#api-key');
  await page.keyboard.type(key);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#passkey-add:not([hidden])');
  await page.focus('#passkey-name');
  await page.keyboard.type(name);
  expect(await tabTo(page, 'Add a passkey')).toBe('Add a passkey');
  await page.keyboard.press('Enter');
  await page.waitForSelector('text=The passkey was added');
}

async function signOut(page: Page): Promise<void> {
  await page.click('text=Sign out');
  await page.waitForSelector('#api-key');
}

const audit = async (who: { id: string; key: string }) =>
  (await t.ok('GET', `/accounts/${who.id}/audit?limit=200`, who.key)).body.events as Array<{ action: string; data: any }>;

test('a passkey added while signed in by key signs the person in alone, for an app’s consent too; removed, it is gone', async () => {
  browser = await launchChromium();
  const context = await phone(browser);
  const { page, cdp, authenticatorId } = await authenticatorPage(context);
  const problems = watchProblems(page);

  // The passkeys page asks to sign in first: by passkey (none yet) or by key.
  await page.goto(`${base}/oauth/passkeys`);
  await page.waitForSelector('#passkey-signin:not([hidden])');
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('api-key');
  await page.keyboard.type(mia.key);
  await page.keyboard.press('Enter');
  await page.waitForSelector('text=You have no passkey yet');
  expect(await page.isHidden('#passkey-unsupported')).toBe(true);
  expect(await page.getAttribute('label[for="passkey-name"]', 'for')).toBe('passkey-name');
  await shot(page, '5-passkeys-none');

  await page.focus('#passkey-name');
  await page.keyboard.type('Mia’s phone');
  expect(await tabTo(page, 'Add a passkey')).toBe('Add a passkey');
  await page.keyboard.press('Enter');
  await page.waitForSelector('text=The passkey was added');
  expect(await text(page)).toContain('Mia’s phone');
  await shot(page, '6-passkeys-one');
  // A discoverable credential for the RP ID svc.localhost, its user handle the person's id.
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  expect(credentials).toHaveLength(1);
  expect(credentials[0]).toMatchObject({ isResidentCredential: true, rpId: 'svc.localhost' });
  expect(Buffer.from(credentials[0]!.userHandle!, 'base64').toString()).toBe(mia.id);

  await signOut(page);

  // An app asks; the person signs in with the passkey alone, and approves.
  const clientId = await registerClient(t.url, 'Desk Assistant', redirectUri);
  const { verifier, challenge } = pkce();
  await page.goto(authorizationUrl(base, { clientId, challenge, redirectUri }));
  await page.waitForSelector('#passkey-signin:not([hidden])');
  expect(await text(page)).toContain('Desk Assistant');
  await shot(page, '7-sign-in-with-passkey');
  expect(await tabTo(page, 'Sign in with a passkey')).toBe('Sign in with a passkey');
  await page.keyboard.press('Enter');
  await page.waitForSelector('text=Allow Desk Assistant', { timeout: 15_000 }).catch(async (err: unknown) => {
    throw new Error(`${String(err)}\n${await text(page)}`);
  });
  expect(await text(page)).toContain('Mia Rossi');
  await allowByKeyboard(page, redirectUri);
  expect(codes).toHaveLength(1);
  const tok = await exchangeCode(t.url, { code: codes[0]!, verifier, clientId, redirectUri });
  expect(tok.status).toBe(200);

  // Signed in by the passkey, the person removes it (by keyboard).
  await page.goto(`${base}/oauth/passkeys`);
  await page.waitForSelector('text=Mia’s phone');
  expect(await text(page)).not.toMatch(/Last use\s*never/);
  expect(await tabTo(page, 'Remove')).toBe('Remove');
  await page.keyboard.press('Enter');
  await page.waitForSelector('text=The passkey was removed');
  expect(await text(page)).toContain('You have no passkey yet');
  await shot(page, '8-passkey-removed');

  const trail = (await audit(mia)).filter((e) => e.action.startsWith('passkey.'));
  const id = credentials[0]!.credentialId;
  expect(trail.map((e) => e.action).sort()).toEqual(['passkey.registered', 'passkey.removed', 'passkey.signed_in']);
  for (const e of trail) expect(e.data.passkeyId).toBe(b64url(id));
  expect(problems).toEqual([]);
}, 120_000);

/** The calls the pages' script makes, made from the page (its cookies, its origin) with a given answer. */
async function call(page: Page, path: string, body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  return page.evaluate(
    async ([p, b]) => {
      const csrf = (document.querySelector('[data-ceremony]') as HTMLElement).dataset.csrf;
      const res = await fetch(p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ csrf, ...b }) });
      return { status: res.status, body: await res.json() };
    },
    [path, body] as const,
  );
}

/** An assertion for `options` made on the page's own origin by its authenticator (through the library the page loaded). */
const assertion = (page: Page, options: unknown) =>
  page.evaluate((o) => (window as any).SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: o }), options as any);

test('refused: a replayed answer, an expired challenge, another person’s passkey naming someone else, an answer from another origin, a removed passkey', async () => {
  browser ??= await launchChromium();
  const context = await phone(browser);
  const { page, cdp, authenticatorId } = await authenticatorPage(context);
  // The refusals below are answered 401 (and Chromium says so on the console): those are expected.
  const problems = watchProblems(
    page,
    (status, what) => (status === 401 && what.includes('/oauth/passkeys/authentication')) || /status of 401/.test(what),
  );

  await addPasskey(page, olu.key, 'Olu’s key');
  await signOut(page);
  await addPasskey(page, mia.key, 'Mia’s laptop');
  await signOut(page);
  const creds = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
  const mine = creds.find((c) => Buffer.from(c.userHandle!, 'base64').toString() === mia.id)!;
  const theirs = creds.find((c) => Buffer.from(c.userHandle!, 'base64').toString() === olu.id)!;
  const only = (c: { credentialId: string }) => ({ allowCredentials: [{ id: b64url(c.credentialId), type: 'public-key' }] });

  // A good answer signs in once; the same answer again is refused (its challenge is spent).
  await page.goto(`${base}/oauth/apps`);
  await page.waitForSelector('#passkey-signin:not([hidden])');
  let { body: begun } = await call(page, '/oauth/passkeys/authentication/options', {});
  const answer = await assertion(page, { ...begun.options, ...only(mine) });
  const first = await call(page, '/oauth/passkeys/authentication', { response: answer, next: '/oauth/apps' });
  expect(first).toEqual({ status: 200, body: { next: '/oauth/apps' } });
  await context.clearCookies({ name: 'svc_web' });
  const replayed = await call(page, '/oauth/passkeys/authentication', { response: answer });
  expect([replayed.status, replayed.body.error.code]).toEqual([401, 'passkey_challenge_spent']);

  // An answer to a challenge that expired is refused.
  ({ body: begun } = await call(page, '/oauth/passkeys/authentication/options', {}));
  const late = await assertion(page, { ...begun.options, ...only(mine) });
  await (await t.stack.backends.sql()).query(`UPDATE accounts.passkey_challenges SET expires_at = now() - interval '1 second'`);
  const expired = await call(page, '/oauth/passkeys/authentication', { response: late });
  expect([expired.status, expired.body.error.code]).toEqual([401, 'passkey_challenge_spent']);

  // Olu's passkey (its own key: a valid signature) made to name Mia, on another device (an
  // authenticator holds one passkey per person and site): refused, nobody signed in.
  const other = await authenticatorPage(context);
  await other.cdp.send('WebAuthn.addCredential', {
    authenticatorId: other.authenticatorId,
    credential: {
      credentialId: theirs.credentialId,
      isResidentCredential: true,
      rpId: theirs.rpId,
      privateKey: theirs.privateKey,
      userHandle: Buffer.from(mia.id).toString('base64'),
      signCount: theirs.signCount + 10,
    },
  });
  const otherProblems = watchProblems(other.page, (status, what) => status === 401 || /status of 401/.test(what));
  await other.page.goto(`${base}/oauth/apps`);
  await other.page.waitForSelector('#passkey-signin:not([hidden])');
  ({ body: begun } = await call(other.page, '/oauth/passkeys/authentication/options', {}));
  const forged = await assertion(other.page, begun.options);
  expect(Buffer.from(forged.response.userHandle, 'base64url').toString()).toBe(mia.id);
  const notTheirs = await call(other.page, '/oauth/passkeys/authentication', { response: forged });
  expect([notTheirs.status, notTheirs.body.error.code]).toEqual([401, 'passkey_not_theirs']);
  expect(otherProblems).toEqual([]);
  await other.page.close();

  // Another origin under the RP ID (a phishing page) gets an answer from Mia's passkey; the server refuses it.
  ({ body: begun } = await call(page, '/oauth/passkeys/authentication/options', {}));
  await page.goto(`${evil}/`);
  await page.waitForFunction(() => 'SimpleWebAuthnBrowser' in window);
  const phished = await assertion(page, { ...begun.options, ...only(mine) });
  expect(JSON.parse(Buffer.from(phished.response.clientDataJSON, 'base64url').toString()).origin).toBe(evil);
  await page.goto(`${base}/oauth/apps`);
  await page.waitForSelector('#passkey-signin:not([hidden])');
  const otherOrigin = await call(page, '/oauth/passkeys/authentication', { response: phished });
  expect([otherOrigin.status, otherOrigin.body.error.code]).toEqual([401, 'passkey_invalid']);
  expect(otherOrigin.body.error.message).toMatch(/origin/i);

  // Still signed out after all of it.
  await page.goto(`${base}/oauth/apps`);
  expect(await page.isVisible('#api-key')).toBe(true);

  // Mia removes her passkey; it then signs nobody in.
  await page.goto(`${base}/oauth/passkeys`);
  await page.waitForSelector('#passkey-signin:not([hidden])');
  ({ body: begun } = await call(page, '/oauth/passkeys/authentication/options', {}));
  const again = await assertion(page, { ...begun.options, ...only(mine) });
  expect((await call(page, '/oauth/passkeys/authentication', { response: again, next: '/oauth/passkeys' })).status).toBe(200);
  await page.goto(`${base}/oauth/passkeys`);
  // Olu's passkey is not Mia's to remove: her page's own form, naming it, leaves it alone.
  const foreign = await page.evaluate(async (id) => {
    const form = document.querySelector('form[action="/oauth/passkeys/delete"]') as HTMLFormElement;
    const fields = new URLSearchParams(new FormData(form) as any);
    fields.set('passkey', id);
    const res = await fetch(form.action, { method: 'POST', body: fields });
    return { status: res.status, html: await res.text() };
  }, b64url(theirs.credentialId));
  expect(foreign.status).toBe(200);
  expect(foreign.html).toContain('That passkey was not yours');
  const kept = await (
    await t.stack.backends.sql()
  ).query<{ n: number }>(`SELECT count(*)::int AS n FROM accounts.passkeys WHERE user_id = $1`, [olu.id]);
  expect(kept[0]!.n).toBe(1);
  expect(await tabTo(page, 'Remove')).toBe('Remove');
  await page.keyboard.press('Enter');
  await page.waitForSelector('text=The passkey was removed');
  await context.clearCookies({ name: 'svc_web' });
  await page.goto(`${base}/oauth/apps`);
  await page.waitForSelector('#passkey-signin:not([hidden])');
  ({ body: begun } = await call(page, '/oauth/passkeys/authentication/options', {}));
  const removed = await assertion(page, { ...begun.options, ...only(mine) });
  const gone = await call(page, '/oauth/passkeys/authentication', { response: removed });
  expect([gone.status, gone.body.error.code]).toEqual([401, 'passkey_unknown']);

  expect(problems).toEqual([]);
}, 180_000);
