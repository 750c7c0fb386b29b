import http from 'node:http';

import { REAL } from '../support/backends';
import { DnsServer } from '../support/dns-server';
import { startTestStack, type TestStack } from '../support/stack';
import { until } from '../support/wait';

/**
 * The drive's sweep of custom domains (docs/sites.md, "Re-checks"), on the real backends and a DNS
 * server of the test's own (test/support/dns-server.ts), with the intervals cut to fractions of a
 * second: a verified domain's record looked up again; one gone kept through the grace period, then
 * pending, off the gateway and free for another account; a failed lookup changing nothing; a
 * record back within the period forgetting its absence; a pending claim expiring.
 */

const RECHECK_MS = 200;
const GRACE_MS = 1500;
const PENDING_TTL_MS = 3000;

let t: TestStack;
let dns: DnsServer;
let alice: string;
let bob: string;
let aliceSite: { id: string };
let bobSite: { id: string };
const events: Array<{ subject: string; data: any }> = [];

/** The page a browser on that host gets (the text, and whether it is a site's: sandboxed). */
function get(host: string, path = '/'): Promise<{ status: number; text: string; site: boolean }> {
  const port = Number(new URL(t.url).port);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          text: Buffer.concat(chunks).toString('utf8'),
          site: /^sandbox /.test(String(res.headers['content-security-policy'] ?? '')),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const record = (domain: string) => `_svc-challenge.${domain}`;

/** A domain of a site as its list shows it (undefined: not there). */
async function domainOf(key: string, siteId: string, domain: string): Promise<any> {
  return (await t.ok('GET', `/sites/${siteId}/domains`, key)).body.domains.find((d: any) => d.domain === domain);
}

/** Adds a domain, publishes its record and verifies it; the domain as verified. */
async function verified(key: string, siteId: string, domain: string): Promise<any> {
  const added = (await t.ok('POST', `/sites/${siteId}/domains`, key, { domain })).body;
  dns.setTxt(record(domain), [added.verification.value]);
  const d = (await t.ok('POST', `/sites/${siteId}/domains/${domain}/verify`, key)).body;
  expect(d.status).toBe('verified');
  return d;
}

const later = (a: string | null, b: string | null) => a !== null && (b === null || Date.parse(a) > Date.parse(b));

beforeAll(async () => {
  dns = await DnsServer.start();
  t = await startTestStack({
    SVC_SITES_DNS_SERVERS: dns.address,
    SVC_SITES_DNS_TIMEOUT_MS: '300',
    SVC_DRIVE_SITE_DOMAIN_RECHECK_MS: String(RECHECK_MS),
    SVC_DRIVE_SITE_DOMAIN_GRACE_MS: String(GRACE_MS),
    SVC_DRIVE_SITE_DOMAIN_PENDING_TTL_MS: String(PENDING_TTL_MS),
    SVC_DRIVE_SITE_DOMAIN_SWEEP_BATCH: '5',
  });
  alice = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Alice' })).body.key;
  bob = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Bob' })).body.key;
  const bus = await t.stack.backends.bus();
  await bus.subscribe('drive.site.>', async (event, meta) => void events.push({ subject: meta.subject, data: event.data }));
  aliceSite = (await t.ok('POST', '/sites', alice, { slug: 'alices' })).body;
  await t.ok('POST', `/sites/${aliceSite.id}/deployments`, alice, { files: [{ path: 'index.html', content: '<h1>alice</h1>' }] });
  bobSite = (await t.ok('POST', '/sites', bob, { slug: 'bobs' })).body;
  await t.ok('POST', `/sites/${bobSite.id}/deployments`, bob, { files: [{ path: 'index.html', content: '<h1>bob</h1>' }] });
}, 90_000);
afterAll(async () => {
  await t?.stop();
  await dns?.close();
});

describe('re-checking custom domains', () => {
  test('a verified domain is looked up again with no call: lastCheckedAt moves on, the record found', async () => {
    const domain = 'checked.alice-example.com';
    const first = await verified(alice, aliceSite.id, domain);
    const asked = dns.questions.filter((q) => q === `${record(domain)} 16`).length;
    let d: any;
    expect(await until(async () => later((d = await domainOf(alice, aliceSite.id, domain)).lastCheckedAt, first.lastCheckedAt))).toBe(true);
    expect(d).toMatchObject({ status: 'verified', verifiedAt: first.verifiedAt, lastCheckError: null, missingSince: null });
    expect(dns.questions.filter((q) => q === `${record(domain)} 16`).length).toBeGreaterThan(asked);
  });

  test('a pending claim expires after the TTL, never looked up meanwhile; an event says it went', async () => {
    const domain = 'idle.alice-example.com';
    const addedAt = Date.now();
    const added = (await t.ok('POST', `/sites/${aliceSite.id}/domains`, alice, { domain })).body;
    expect(added).toMatchObject({ status: 'pending', lastCheckedAt: null, missingSince: null });
    expect(await domainOf(alice, aliceSite.id, domain)).toMatchObject({ status: 'pending', lastCheckedAt: null });
    expect(await until(async () => !(await domainOf(alice, aliceSite.id, domain)), PENDING_TTL_MS + 10_000)).toBe(true);
    expect(Date.now() - addedAt).toBeGreaterThanOrEqual(PENDING_TTL_MS);
    expect(dns.questions.some((q) => q.startsWith(`${record(domain)} `))).toBe(false);
    expect(
      await until(() =>
        events.some(
          (e) => e.subject.endsWith('drive.site.domain_removed') && e.data.domain === domain && e.data.expired === true && e.data.id === aliceSite.id,
        ),
      ),
    ).toBe(true);
    // Verified ones are not pending claims: the first test's domain is still there.
    expect((await domainOf(alice, aliceSite.id, 'checked.alice-example.com')).status).toBe('verified');
  });

  test('a record gone: served through the grace period, then pending, off the gateway, and the name free for another account', async () => {
    const domain = 'www.lapse-example.com';
    const before = await verified(alice, aliceSite.id, domain);
    expect(await until(async () => (await get(domain)).text === '<h1>alice</h1>')).toBe(true);
    // The claim is older than the pending TTL by the time it lapses: its expiry must count from the lapse.
    expect(await until(() => Date.now() - Date.parse(before.createdAt) > PENDING_TTL_MS)).toBe(true);

    const removedAt = Date.now();
    dns.remove(record(domain));
    let d: any;
    expect(await until(async () => (d = await domainOf(alice, aliceSite.id, domain)).missingSince !== null)).toBe(true);
    // The first lookup that found it gone started the grace period: still verified, still served.
    expect(d).toMatchObject({ status: 'verified', verifiedAt: before.verifiedAt, lastCheckError: expect.stringContaining('no TXT record') });
    expect(await get(domain)).toMatchObject({ status: 200, text: '<h1>alice</h1>', site: true });

    expect(await until(async () => (d = await domainOf(alice, aliceSite.id, domain)).status === 'pending', GRACE_MS + 10_000)).toBe(true);
    expect(Date.now() - removedAt).toBeGreaterThanOrEqual(GRACE_MS);
    expect(d).toMatchObject({ verifiedAt: null, missingSince: null, lastCheckError: expect.stringContaining('no longer served') });
    // Not served: the host is the API's again (its 404), on the very next request.
    const page = await get(domain);
    expect([page.status, page.site]).toEqual([404, false]);
    expect(
      await until(() =>
        events.some((e) => e.subject.endsWith('drive.site.domain_unverified') && e.data.domain === domain && e.data.id === aliceSite.id),
      ),
    ).toBe(true);

    // Bob proves control of the name with his own token: his site shows there.
    const b = (await t.ok('POST', `/sites/${bobSite.id}/domains`, bob, { domain })).body;
    expect(b.verification.value).not.toBe(before.verification.value);
    dns.setTxt(record(domain), [b.verification.value]);
    expect((await t.ok('POST', `/sites/${bobSite.id}/domains/${domain}/verify`, bob)).body.status).toBe('verified');
    expect(await until(async () => (await get(domain)).text === '<h1>bob</h1>')).toBe(true);

    // Alice's claim is pending now, and expires a TTL after it lapsed (not after it was created).
    const lapsedAt = Date.parse(d.lastCheckedAt);
    expect(await until(async () => !(await domainOf(alice, aliceSite.id, domain)), PENDING_TTL_MS + 10_000)).toBe(true);
    expect(Date.now() - lapsedAt).toBeGreaterThanOrEqual(PENDING_TTL_MS);
    expect((await domainOf(bob, bobSite.id, domain)).status).toBe('verified');
  });

  test('a lookup that fails is no evidence: a domain whose DNS times out or fails stays verified and served past the grace period', async () => {
    const domain = 'quiet.alice-example.com';
    await verified(alice, aliceSite.id, domain);
    for (const [how, code] of [
      ['silent', 'ETIMEOUT'],
      ['servfail', 'ESERVFAIL'],
    ] as const) {
      dns.fail(record(domain), how);
      const from = Date.now();
      let d: any;
      // Re-checked, and failing, for longer than the grace period.
      const past = async () => {
        d = await domainOf(alice, aliceSite.id, domain);
        return String(d.lastCheckError).includes(code) && Date.parse(d.lastCheckedAt) > from + GRACE_MS + RECHECK_MS;
      };
      expect(await until(past, GRACE_MS + 10_000)).toBe(true);
      expect(d).toMatchObject({ status: 'verified', missingSince: null });
      expect(await get(domain)).toMatchObject({ status: 200, text: '<h1>alice</h1>' });
    }
    dns.fail(record(domain), null);
  });

  test('failed lookups neither end nor reset an absence: the record gone, then the DNS silent past the grace period', async () => {
    const domain = 'flaky.alice-example.com';
    const before = await verified(alice, aliceSite.id, domain);
    dns.remove(record(domain));
    let d: any;
    expect(await until(async () => (d = await domainOf(alice, aliceSite.id, domain)).missingSince !== null)).toBe(true);
    const since = d.missingSince;
    dns.fail(record(domain), 'silent');
    const past = async () => {
      d = await domainOf(alice, aliceSite.id, domain);
      return String(d.lastCheckError).includes('ETIMEOUT') && Date.parse(d.lastCheckedAt) > Date.parse(since) + GRACE_MS + RECHECK_MS;
    };
    expect(await until(past, GRACE_MS + 10_000)).toBe(true);
    expect(d).toMatchObject({ status: 'verified', missingSince: since });
    // The DNS answers again, still without the record: the grace period is long over, so the next answer ends it.
    dns.fail(record(domain), null);
    expect(await until(async () => (await domainOf(alice, aliceSite.id, domain)).status === 'pending')).toBe(true);
    // Added back and verified again, it is served again.
    dns.setTxt(record(domain), [before.verification.value]);
    expect((await t.ok('POST', `/sites/${aliceSite.id}/domains/${domain}/verify`, alice)).body.status).toBe('verified');
  });

  test('a record back within the grace period: the absence is forgotten and the domain stays verified', async () => {
    const domain = 'back.alice-example.com';
    const before = await verified(alice, aliceSite.id, domain);
    dns.remove(record(domain));
    let d: any;
    expect(await until(async () => (d = await domainOf(alice, aliceSite.id, domain)).missingSince !== null)).toBe(true);
    const since = d.missingSince;
    dns.setTxt(record(domain), [before.verification.value]);
    expect(await until(async () => (d = await domainOf(alice, aliceSite.id, domain)).missingSince === null)).toBe(true);
    expect(d).toMatchObject({ status: 'verified', lastCheckError: null });
    // Still verified after the grace period would have ended, re-checked all along.
    expect(
      await until(
        async () => Date.parse((d = await domainOf(alice, aliceSite.id, domain)).lastCheckedAt) > Date.parse(since) + GRACE_MS + RECHECK_MS,
      ),
    ).toBe(true);
    expect(d).toMatchObject({ status: 'verified', verifiedAt: before.verifiedAt, missingSince: null });
    expect((await get(domain)).text).toBe('<h1>alice</h1>');
  });

  // PGlite has one connection: a transaction held open there holds every query, so this needs PostgreSQL.
  (REAL.pg ? test : test.skip)('replicas share the sweep: a domain another transaction holds is skipped, not waited for', async () => {
    const held = 'held.alice-example.com';
    const other = 'checked.alice-example.com';
    await verified(alice, aliceSite.id, held);
    const sql = await t.stack.backends.sql();
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = sql.tx(async (q) => {
      // What another replica's sweep does while it claims the row.
      await q.query(`SELECT 1 FROM drive.site_domains WHERE domain = $1 FOR UPDATE`, [held]);
      locked();
      await new Promise<void>((r) => (release = r));
    });
    await isLocked;
    try {
      const heldAt = (await domainOf(alice, aliceSite.id, held)).lastCheckedAt;
      const otherAt = (await domainOf(alice, aliceSite.id, other)).lastCheckedAt;
      // The sweep goes on with the others, several times over, and leaves the held one alone.
      expect(
        await until(async () => Date.parse((await domainOf(alice, aliceSite.id, other)).lastCheckedAt) > Date.parse(otherAt) + 3 * RECHECK_MS),
      ).toBe(true);
      expect((await domainOf(alice, aliceSite.id, held)).lastCheckedAt).toBe(heldAt);
    } finally {
      release();
      await holder;
    }
    const after = (await domainOf(alice, aliceSite.id, held)).lastCheckedAt;
    expect(await until(async () => later((await domainOf(alice, aliceSite.id, held)).lastCheckedAt, after))).toBe(true);
  });
});
