import http from 'node:http';

import { DnsServer } from '../support/dns-server';
import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

/**
 * Custom domains of hosted sites (docs/sites.md, "Custom domains"), on the real backends and a
 * DNS server of the test's own on 127.0.0.1 (real DNS over UDP, test/support/dns-server.ts): adding
 * (validation, IDNA, limits), verifying by the TXT record, serving at the root with the other
 * fronts' rules and headers, pending and unknown hosts going on to the API, claims by another
 * account, removal and site deletion stopping at once, and the gateway's host cache dropped by events.
 */

let t: TestStack;
let dns: DnsServer;
let alice: string;
let bob: string;
const events: Array<{ subject: string; data: any }> = [];

const MAX_DOMAINS = 3;

beforeAll(async () => {
  dns = await DnsServer.start();
  t = await startTestStack({
    S3_ENDPOINT: 'start',
    SVC_SITES_DNS_SERVERS: dns.address,
    SVC_SITES_DNS_TIMEOUT_MS: '400',
    SVC_SITES_HOST: 'sites.svc-example.net',
    SVC_SITES_RESERVED_HOSTS: 'api.svc-example.net',
    SVC_DRIVE_SITE_MAX_DOMAINS: String(MAX_DOMAINS),
  });
  alice = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Alice' })).body.key;
  bob = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Bob' })).body.key;
  const bus = await t.stack.backends.bus();
  await bus.subscribe('drive.site.>', async (event, meta) => void events.push({ subject: meta.subject, data: event.data }));
}, 90_000);
afterAll(async () => {
  await t?.stop();
  await dns?.close();
});

interface Page {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** A request with the Host header a browser on that domain would send. */
function get(host: string, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Page> {
  const port = Number(new URL(t.url).port);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers: { host, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function siteWith(slug: string, key: string, files: Record<string, string>) {
  const site = (await t.ok('POST', '/sites', key, { slug })).body;
  await t.ok('POST', `/sites/${site.id}/deployments`, key, { files: Object.entries(files).map(([path, content]) => ({ path, content })) });
  return site;
}

const isSite = (p: Page) => /^sandbox /.test(String(p.headers['content-security-policy'] ?? ''));

let shop: any;
let blog: any;

describe('custom domains', () => {
  beforeAll(async () => {
    shop = await siteWith('shop', alice, {
      'index.html': '<h1>shop home</h1>',
      'docs/index.html': '<h1>docs</h1>',
      'app.js': 'console.log(1)',
      '404.html': '<h1>shop 404</h1>',
      'big.txt': 'x'.repeat(1000),
    });
    blog = await siteWith('bobs-blog', bob, { 'index.html': '<h1>bob</h1>' });
  });

  test('added pending with its TXT record; not served while pending: the host goes on to the API', async () => {
    const added = await t.call('POST', `/sites/${shop.id}/domains`, { key: alice, body: { domain: 'WWW.Shop-Example.com.' } });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({
      domain: 'www.shop-example.com',
      siteId: shop.id,
      status: 'pending',
      verification: { type: 'TXT', name: '_svc-challenge.www.shop-example.com', value: expect.stringMatching(/^svc-verify=[a-z2-7]{32}$/) },
      verifiedAt: null,
      lastCheckedAt: null,
    });
    // Again: the same domain, as it is (200), with the same token.
    const again = await t.call('POST', `/sites/${shop.id}/domains`, { key: alice, body: { domain: 'www.shop-example.com' } });
    expect([again.status, again.body.verification.value]).toEqual([200, added.body.verification.value]);
    expect((await t.ok('GET', `/sites/${shop.id}/domains`, alice)).body.domains.map((d: any) => [d.domain, d.status])).toEqual([
      ['www.shop-example.com', 'pending'],
    ]);

    // Pending: never served. The API answers on that host as on any other.
    const page = await get('www.shop-example.com', '/');
    expect(isSite(page)).toBe(false);
    expect(page.status).toBe(404);
    expect(JSON.parse(page.text)).toEqual(ERROR_BODY);
    const me = await get('www.shop-example.com', '/me', { authorization: `Bearer ${alice}` });
    expect([me.status, isSite(me)]).toEqual([200, false]);
    expect(events.some((e) => e.subject.endsWith('drive.site.domain_added') && e.data.domain === 'www.shop-example.com')).toBe(true);
  });

  test('verify: no record, a record of another token, then the right one; served at the root from then on', async () => {
    const path = `/sites/${shop.id}/domains/www.shop-example.com/verify`;
    const none = await t.ok('POST', path, alice);
    expect(none).toBeTruthy();
    expect(none.body).toMatchObject({
      status: 'pending',
      lastCheckedAt: expect.any(String),
      lastCheckError: expect.stringContaining('no TXT record'),
    });

    dns.setTxt('_svc-challenge.www.shop-example.com', ['v=spf1 -all', `svc-verify=${'a'.repeat(32)}`]);
    const other = (await t.ok('POST', path, alice)).body;
    expect(other).toMatchObject({ status: 'pending', lastCheckError: expect.stringContaining('another token') });
    expect(isSite(await get('www.shop-example.com', '/'))).toBe(false);

    const { value } = other.verification;
    dns.setTxt('_svc-challenge.www.shop-example.com', ['v=spf1 -all', value]);
    const ok = (await t.ok('POST', path, alice)).body;
    expect(ok).toMatchObject({ status: 'verified', verifiedAt: expect.any(String), lastCheckError: null });
    expect(dns.questions).toContain('_svc-challenge.www.shop-example.com 16');
    // The earlier "not ours" answer for this host was dropped by the verification's event (its
    // time limit is a minute): the site shows within moments.
    expect(await until(async () => (await get('www.shop-example.com', '/')).text === '<h1>shop home</h1>', 3000)).toBe(true);
    // Verified already: looked up again, as the periodic re-check does. The record gone: still
    // verified and served (the grace period starts); the record back: its absence forgotten.
    const asked = dns.questions.length;
    expect((await t.ok('POST', path, alice)).body).toMatchObject({ status: 'verified', missingSince: null });
    expect(dns.questions.length).toBe(asked + 1);
    dns.remove('_svc-challenge.www.shop-example.com');
    const gone = (await t.ok('POST', path, alice)).body;
    expect(gone).toMatchObject({ status: 'verified', verifiedAt: ok.verifiedAt, missingSince: expect.any(String) });
    expect((await get('www.shop-example.com', '/')).text).toBe('<h1>shop home</h1>');
    dns.setTxt('_svc-challenge.www.shop-example.com', [value]);
    expect((await t.ok('POST', path, alice)).body).toMatchObject({ status: 'verified', verifiedAt: ok.verifiedAt, missingSince: null });
  });

  test('a verified domain serves the site with the fronts’ rules: types, ETags, folders, 404.html, ranges, sandboxing', async () => {
    const host = 'www.shop-example.com';
    const home = await get(host, '/');
    expect(home.status).toBe(200);
    expect(home.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(home.headers['content-security-policy']).toMatch(/^sandbox allow-scripts/);
    expect(home.headers['x-content-type-options']).toBe('nosniff');
    expect(home.headers['referrer-policy']).toBe('strict-origin-when-cross-origin');
    const etag = home.headers.etag!;
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect((await get(host, '/', { 'if-none-match': etag })).status).toBe(304);
    // The host as browsers send it: a port, other case, a trailing dot.
    expect((await get('WWW.Shop-Example.com:8443', '/')).text).toBe('<h1>shop home</h1>');
    expect((await get('www.shop-example.com.', '/')).text).toBe('<h1>shop home</h1>');
    expect((await get(host, '/app.js')).headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect((await get(host, '/docs')).headers.location).toBe('/docs/');
    expect((await get(host, '/docs/')).text).toBe('<h1>docs</h1>');
    const missing = await get(host, '/nope.html');
    expect([missing.status, missing.text]).toEqual([404, '<h1>shop 404</h1>']);
    // The whole host is the site's: the API's paths are the site's paths there.
    expect((await get(host, '/me', { authorization: `Bearer ${alice}` })).text).toBe('<h1>shop 404</h1>');
    expect((await get(host, '/sites/shop/')).status).toBe(404);
    const part = await get(host, '/big.txt', { range: 'bytes=10-19' });
    expect([part.status, part.headers['content-range'], part.text]).toEqual([206, 'bytes 10-19/1000', 'x'.repeat(10)]);
    const post = await get(host, '/', {}, 'POST');
    expect([post.status, post.headers.allow]).toEqual([405, 'GET, HEAD']);
    const head = await get(host, '/', {}, 'HEAD');
    expect([head.status, head.text, head.headers['content-length']]).toEqual([200, '', String('<h1>shop home</h1>'.length)]);
  });

  test('another account: a domain served elsewhere is 409 without saying whose; a pending claim blocks nobody', async () => {
    const taken = await t.call('POST', `/sites/${blog.id}/domains`, { key: bob, body: { domain: 'www.shop-example.com' } });
    expect(taken.status).toBe(409);
    expect(taken.body).toEqual(ERROR_BODY);
    expect(taken.body.error.code).toBe('domain_taken');
    expect(JSON.stringify(taken.body)).not.toMatch(new RegExp(`${shop.id}|shop|alice`, 'i'));
    // Alice's site's domains are not Bob's to see, verify or remove.
    for (const [method, path] of [
      ['GET', `/sites/${shop.id}/domains`],
      ['POST', `/sites/${shop.id}/domains/www.shop-example.com/verify`],
      ['DELETE', `/sites/${shop.id}/domains/www.shop-example.com`],
    ] as const) {
      const res = await t.call(method, path, { key: bob });
      expect([path, res.status, res.body.error?.code]).toEqual([path, 404, 'site_not_found']);
    }
    expect((await get('www.shop-example.com', '/')).text).toBe('<h1>shop home</h1>');

    // Alice adds a name she does not verify: Bob may still add it (each account's claim is its
    // own, with its own token), and the one who proves control gets it.
    const a = (await t.ok('POST', `/sites/${shop.id}/domains`, alice, { domain: 'contested.example.org' })).body;
    const b = await t.call('POST', `/sites/${blog.id}/domains`, { key: bob, body: { domain: 'contested.example.org' } });
    expect(b.status).toBe(201);
    expect(b.body.verification.value).not.toBe(a.verification.value);
    dns.setTxt('_svc-challenge.contested.example.org', [b.body.verification.value]);
    expect((await t.ok('POST', `/sites/${blog.id}/domains/contested.example.org/verify`, bob)).body.status).toBe('verified');
    // Alice's record would now prove nothing more: the name is served by another site.
    dns.setTxt('_svc-challenge.contested.example.org', [a.verification.value]);
    const late = await t.call('POST', `/sites/${shop.id}/domains/contested.example.org/verify`, { key: alice });
    expect([late.status, late.body.error?.code]).toEqual([409, 'domain_taken']);
    expect(await until(async () => (await get('contested.example.org', '/')).text === '<h1>bob</h1>')).toBe(true);
    // A name of another of Alice's own sites: named so.
    const mine = (await t.ok('POST', '/sites', alice, { slug: 'shop-two' })).body;
    const dup = await t.call('POST', `/sites/${mine.id}/domains`, { key: alice, body: { domain: 'contested.example.org' } });
    expect([dup.status, dup.body.error?.code]).toEqual([409, 'domain_exists']);
  });

  test('bad domains are 400; an internationalized name is stored as its punycode; a limit per site', async () => {
    const site = (await t.ok('POST', '/sites', alice, { slug: 'limits' })).body;
    for (const domain of [
      'localhost',
      'shop',
      '127.0.0.1',
      '10.1.2.3.',
      '[::1]',
      '::1',
      'example.com:8080',
      'https://example.com',
      'example.com/path',
      'a_b.example.com',
      '*.example.com',
      '-a.example.com',
      'exa mple.com',
      'printer.local',
      'x.internal',
      'alpha.sites.svc-example.net',
      'sites.svc-example.net',
      'api.svc-example.net',
      'v1.api.svc-example.net',
      '%41.example.com',
      `${'a'.repeat(64)}.example.com`,
      `${'abcdefghi.'.repeat(26)}com`,
      'xn--zz.example.com',
    ]) {
      const res = await t.call('POST', `/sites/${site.id}/domains`, { key: alice, body: { domain } });
      // The API's schema refuses what has no dot or has spaces (invalid_request); the drive the rest.
      const code = ['localhost', 'shop', '[::1]', '::1', 'exa mple.com'].includes(domain) ? 'invalid_request' : 'invalid_domain';
      expect([domain, res.status, res.body.error?.code]).toEqual([domain, 400, code]);
      expect(res.body).toEqual(ERROR_BODY);
    }
    const idn = (await t.ok('POST', `/sites/${site.id}/domains`, alice, { domain: 'Bücher.Example.com' })).body;
    expect(idn.domain).toBe('xn--bcher-kva.example.com');
    expect(idn.verification.name).toBe('_svc-challenge.xn--bcher-kva.example.com');
    await t.ok('POST', `/sites/${site.id}/domains`, alice, { domain: 'two.example.com' });
    await t.ok('POST', `/sites/${site.id}/domains`, alice, { domain: 'three.example.com' });
    const over = await t.call('POST', `/sites/${site.id}/domains`, { key: alice, body: { domain: 'four.example.com' } });
    expect([over.status, over.body.error?.code]).toEqual([400, 'too_many_domains']);
    // A DNS server that does not answer: still pending, and the reason says so.
    dns.silent = true;
    try {
      const slow = (await t.ok('POST', `/sites/${site.id}/domains/two.example.com/verify`, alice)).body;
      expect(slow).toMatchObject({ status: 'pending', lastCheckError: expect.stringMatching(/failed \(ETIMEOUT\)/) });
    } finally {
      dns.silent = false;
    }
    // Not a domain of the site: 404 (a name of the same form as one, or not).
    const nope = await t.call('POST', `/sites/${site.id}/domains/nope.example.com/verify`, { key: alice });
    expect([nope.status, nope.body.error?.code]).toEqual([404, 'domain_not_found']);
  });

  test('removal stops serving at once; the name is free again and the host cache follows the move', async () => {
    expect((await get('www.shop-example.com', '/')).text).toBe('<h1>shop home</h1>');
    await t.ok('DELETE', `/sites/${shop.id}/domains/www.shop-example.com`, alice);
    // At once: the very next request is the API's (the drive decides on every request).
    const after = await get('www.shop-example.com', '/');
    expect(isSite(after)).toBe(false);
    expect(after.status).toBe(404);
    expect((await t.ok('GET', `/sites/${shop.id}/domains`, alice)).body.domains.map((d: any) => d.domain)).toEqual(['contested.example.org']);
    // Gone already: 200.
    expect((await t.call('DELETE', `/sites/${shop.id}/domains/www.shop-example.com`, { key: alice })).status).toBe(200);
    expect(
      await until(async () => events.some((e) => e.subject.endsWith('drive.site.domain_removed') && e.data.domain === 'www.shop-example.com')),
    ).toBe(true);

    // Bob proves control of the name now: his site shows there (the "not served" the gateway kept
    // after the removal was dropped by the verification's event).
    const b = (await t.ok('POST', `/sites/${blog.id}/domains`, bob, { domain: 'www.shop-example.com' })).body;
    dns.setTxt('_svc-challenge.www.shop-example.com', [b.verification.value]);
    expect((await t.ok('POST', `/sites/${blog.id}/domains/www.shop-example.com/verify`, bob)).body.status).toBe('verified');
    expect(await until(async () => (await get('www.shop-example.com', '/')).text === '<h1>bob</h1>', 3000)).toBe(true);
  });

  test('deleting a site removes its domains: they stop at once and may be claimed again', async () => {
    const site = await siteWith('short-lived', alice, { 'index.html': '<h1>short</h1>' });
    const d = (await t.ok('POST', `/sites/${site.id}/domains`, alice, { domain: 'short.example.net' })).body;
    dns.setTxt('_svc-challenge.short.example.net', [d.verification.value]);
    await t.ok('POST', `/sites/${site.id}/domains/short.example.net/verify`, alice);
    expect(await until(async () => (await get('short.example.net', '/')).text === '<h1>short</h1>', 3000)).toBe(true);
    await t.ok('DELETE', `/sites/${site.id}`, alice);
    expect(isSite(await get('short.example.net', '/'))).toBe(false);
    expect(
      await until(async () =>
        events.some((e) => e.subject.endsWith('drive.site.deleted') && e.data.id === site.id && e.data.domains[0] === 'short.example.net'),
      ),
    ).toBe(true);
    expect((await t.call('POST', `/sites/${blog.id}/domains`, { key: bob, body: { domain: 'short.example.net' } })).status).toBe(201);
  });
});
