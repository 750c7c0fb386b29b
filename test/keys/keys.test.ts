import { createHash } from 'node:crypto';

import { type Stack, startStack } from '@svc/stack';

import { REAL } from '../support/backends';
import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

const logs: string[] = [];
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ LOG_LEVEL: 'trace' }, { logDestination: { write: (l: string) => void logs.push(l) } });
});
afterAll(() => t?.stop());

const KEY_FIELDS = ['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'prefix', 'projectId', 'usageCount'];

async function createKey(body: Record<string, unknown>, key = t.bootstrapKey, base = '/api/api-keys') {
  const res = await t.call('POST', base, { key, body });
  expect(res.status).toBe(201);
  return res.body as { key: string; id: string; prefix: string; projectId?: string; expiresAt: string | null };
}

async function sql<R>(text: string, params: unknown[] = []): Promise<R[]> {
  return (await t.stack.backends.sql()).query<R>(text, params);
}

describe('API keys', () => {
  test('create answers the exact shape, with a 64-hex key shown once', async () => {
    for (const base of ['/api/api-keys', '/v1/api/api-keys', '/me/api-keys', '/v1/me/api-keys']) {
      const res = await t.call('POST', base, { key: t.bootstrapKey, body: { name: `k ${base}` } });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(['createdAt', 'expiresAt', 'id', 'key', 'name', 'prefix', 'warning']);
      expect(res.body.key).toMatch(/^svc_[0-9a-f]{64}$/);
      expect(res.body.prefix).toBe(res.body.key.slice(0, 12));
      expect(res.body.id).toMatch(/^key_[0-9a-z]{26}$/);
      expect(res.body.expiresAt).toBeNull();
      expect(res.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(res.body.warning).toMatch(/once/);
      // The answer holds a secret: no cache may keep it.
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
    const scoped = await createKey({ name: 'scoped', projectId: 'proj-a', expiresInDays: 30 });
    expect(scoped.projectId).toBe('proj-a');
    const days = (Date.parse(scoped.expiresAt!) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
  });

  test('expiresInDays takes fractions down to one minute (a key, and an agent’s key)', async () => {
    const life = (k: { createdAt: string; expiresAt: string }) => Date.parse(k.expiresAt) - Date.parse(k.createdAt);
    const minute = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey, body: { name: 'a minute', expiresInDays: 1 / 1440 } });
    expect(minute.status).toBe(201);
    // Its expiry was set before the row's createdAt: a minute at most, and far from a day.
    expect(life(minute.body)).toBeLessThanOrEqual(60_000);
    expect(life(minute.body)).toBeGreaterThan(0);
    const agent = await t.call('POST', '/agents', { key: t.bootstrapKey, body: { name: 'short keys' } });
    expect(agent.status).toBe(201);
    const quarter = await t.call('POST', `/agents/${agent.body.id}/keys`, { key: t.bootstrapKey, body: { name: 'six hours', expiresInDays: 0.25 } });
    expect(quarter.status).toBe(201);
    expect(life(quarter.body)).toBeLessThanOrEqual(6 * 3_600_000);
    expect(life(quarter.body)).toBeGreaterThan(6 * 3_600_000 - 60_000);
    for (const expiresInDays of [0, 0.0005, -1, 3651]) {
      const refused = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey, body: { name: 'no', expiresInDays } });
      expect([expiresInDays, refused.status, refused.body.error.code]).toEqual([expiresInDays, 400, 'invalid_request']);
    }
  });

  test('list shows active keys with the exact fields, never the key; works with and without /v1', async () => {
    const made = await createKey({ name: 'listed' });
    for (const base of ['/api/api-keys', '/v1/api/api-keys', '/me/api-keys', '/v1/me/api-keys']) {
      const res = await t.call('GET', base, { key: t.bootstrapKey });
      expect(res.status).toBe(200);
      expect(res.body.nextCursor).toBeNull();
      const mine = res.body.keys.find((k: { id: string }) => k.id === made.id);
      expect(Object.keys(mine).sort()).toEqual(KEY_FIELDS);
      expect(mine.prefix).toBe(made.prefix);
      expect(JSON.stringify(res.body)).not.toContain(made.key);
    }
  });

  test('projectId filters the listing', async () => {
    const a = await createKey({ name: 'pa', projectId: 'filter-a' });
    const b = await createKey({ name: 'pb', projectId: 'filter-b' });
    const res = await t.call('GET', '/api/api-keys?projectId=filter-a', { key: t.bootstrapKey });
    const ids = res.body.keys.map((k: { id: string }) => k.id);
    expect(ids).toContain(a.id);
    expect(ids).not.toContain(b.id);
    expect(res.body.keys.every((k: { projectId: string }) => k.projectId === 'filter-a')).toBe(true);
  });

  test('pagination walks every key once', async () => {
    for (let i = 0; i < 3; i++) await createKey({ name: `page ${i}` });
    const all = (await t.call('GET', '/api/api-keys?limit=200', { key: t.bootstrapKey })).body.keys.map((k: any) => k.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = `/api/api-keys?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page: any = (await t.call('GET', q, { key: t.bootstrapKey })).body;
      seen.push(...page.keys.map((k: any) => k.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all);
    expect((await t.call('GET', '/api/api-keys?cursor=garbage', { key: t.bootstrapKey })).status).toBe(400);
  });

  test('a new key authenticates, can create keys, and its children record their lineage', async () => {
    const parent = await createKey({ name: 'parent' });
    const child = await createKey({ name: 'child' }, parent.key);
    const rows = await sql<{ created_by_key_id: string }>('SELECT created_by_key_id FROM keys.api_keys WHERE id = $1', [child.id]);
    expect(rows[0]!.created_by_key_id).toBe(parent.id);
    const me = await t.call('GET', '/me', { key: child.key });
    expect(me.status).toBe(200);
    expect(me.body.keyId).toBe(child.id);
  });

  test('revocation is immediate, including for a key whose verification is cached', async () => {
    for (const how of ['query', 'path', 'path-v1'] as const) {
      const k = await createKey({ name: `revoke ${how}` });
      expect((await t.call('GET', '/me', { key: k.key })).status).toBe(200); // now cached
      const res =
        how === 'query'
          ? await t.call('DELETE', `/api/api-keys?id=${k.id}`, { key: t.bootstrapKey })
          : await t.call('DELETE', `${how === 'path' ? '' : '/v1'}/me/api-keys/${k.id}`, { key: t.bootstrapKey });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      const after = await t.call('GET', '/me', { key: k.key });
      expect(after.status).toBe(401);
      expect(after.body).toEqual(ERROR_BODY);
      const list = await t.call('GET', '/api/api-keys', { key: t.bootstrapKey });
      expect(list.body.keys.map((x: { id: string }) => x.id)).not.toContain(k.id);
      // A retried revocation succeeds again; the key stays revoked.
      expect((await t.call('DELETE', `/api/api-keys?id=${k.id}`, { key: t.bootstrapKey })).status).toBe(200);
    }
  });

  test("a revocation event clears the shared verification cache even if the revoking call's delete was lost", async () => {
    const k = await createKey({ name: 'stale cache' });
    expect((await t.call('GET', '/me', { key: k.key })).status).toBe(200);
    expect((await t.call('DELETE', `/api/api-keys?id=${k.id}`, { key: t.bootstrapKey })).status).toBe(200);
    const cache = await t.stack.backends.cache();
    const entry = `keys:verify:${createHash('sha256').update(k.key).digest('hex')}`;
    // Plant the entry the revoking call deleted, as if that delete had failed, and announce again.
    await cache.set(entry, '{"stale":true}', 60_000);
    const bus = await t.stack.backends.bus();
    await bus.publish('keys.key.revoked', {
      id: `evt_${Date.now().toString(36)}replay`,
      type: 'keys.key.revoked',
      occurredAt: new Date().toISOString(),
      accountId: 'acct_test',
      data: { id: k.id },
    });
    const started = Date.now();
    while ((await cache.get(entry)) !== null && Date.now() - started < 5000) await new Promise((r) => setTimeout(r, 25));
    expect(await cache.get(entry)).toBeNull();
  });

  test('a key may revoke itself', async () => {
    const k = await createKey({ name: 'self' });
    expect((await t.call('DELETE', `/me/api-keys/${k.id}`, { key: k.key })).status).toBe(200);
    expect((await t.call('GET', '/me', { key: k.key })).status).toBe(401);
    // /me/api-keys also takes the key by ?id=, as /api/api-keys does.
    const q = await createKey({ name: 'by query' });
    const res = await t.call('DELETE', `/V1/me/api-keys?id=${q.id}`, { key: t.bootstrapKey });
    expect([res.status, res.body]).toEqual([200, { success: true }]);
    expect((await t.call('GET', '/me', { key: q.key })).status).toBe(401);
  });

  test('revoking an unknown key answers 404; a malformed id answers 400', async () => {
    const res = await t.call('DELETE', '/api/api-keys?id=key_01m7zzzzzzzzzzzzzzzzzzzzzz', { key: t.bootstrapKey });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('key_not_found');
    expect((await t.call('DELETE', '/api/api-keys?id=nope', { key: t.bootstrapKey })).status).toBe(400);
    expect((await t.call('DELETE', '/api/api-keys', { key: t.bootstrapKey })).status).toBe(400);
  });

  test('an expired key is refused even while its verification is cached', async () => {
    const k = await createKey({ name: 'short-lived', expiresInDays: 1 });
    await sql(`UPDATE keys.api_keys SET expires_at = now() + interval '1500 milliseconds' WHERE id = $1`, [k.id]);
    await (await t.stack.backends.cache()).del(`keys:verify:${createHash('sha256').update(k.key).digest('hex')}`);
    expect((await t.call('GET', '/me', { key: k.key })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1700));
    const res = await t.call('GET', '/me', { key: k.key });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_api_key');
    const list = await t.call('GET', '/api/api-keys', { key: t.bootstrapKey });
    expect(list.body.keys.map((x: { id: string }) => x.id)).not.toContain(k.id);
  });

  test('missing, malformed, unknown keys and host credentials answer 401 with the error body', async () => {
    const cases: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer ' },
      { authorization: 'Bearer svc_123' },
      { authorization: `Bearer svc_${'A'.repeat(64)}` },
      { authorization: `Bearer svc_${'0'.repeat(64)}` },
      { authorization: `Bearer svch_${'a'.repeat(64)}` },
      { authorization: `Basic ${Buffer.from(`x:${t.bootstrapKey}`).toString('base64')}` },
    ];
    for (const headers of cases) {
      const res = await t.call('GET', '/api/api-keys', { headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual(ERROR_BODY);
      // With the authorization server on, the challenge also names the API's resource metadata (docs/oauth.md).
      expect(res.headers.get('www-authenticate')).toMatch(
        /^Bearer realm="svc", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/v1"/,
      );
    }
  });

  test('requests without any credential do not count towards the failed-authentication limit', async () => {
    for (let i = 0; i < 35; i++) {
      const res = await t.call('GET', '/me');
      expect([i, res.status, res.body.error.code]).toEqual([i, 401, 'missing_api_key']);
    }
    expect((await t.call('GET', '/me', { key: t.bootstrapKey })).status).toBe(200);
  });

  test('a string holding U+0000 answers 400 and creates nothing', async () => {
    const before = (await t.call('GET', '/api/api-keys?limit=200', { key: t.bootstrapKey })).body.keys.length;
    const res = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey, body: '{"name":"a\\u0000b"}' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(ERROR_BODY);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('body.name') });
    const query = await t.call('GET', '/api/api-keys?projectId=a%00b', { key: t.bootstrapKey });
    expect([query.status, query.body.error.code]).toEqual([400, 'invalid_request']);
    expect((await t.call('GET', '/api/api-keys?limit=200', { key: t.bootstrapKey })).body.keys.length).toBe(before);
  });

  test('a project-scoped key sees only its project and cannot leave it', async () => {
    const scoped = await createKey({ name: 'proj key', projectId: 'only-here' });
    const elsewhere = await createKey({ name: 'other proj', projectId: 'elsewhere' });
    const list = await t.call('GET', '/api/api-keys', { key: scoped.key });
    expect(list.status).toBe(200);
    expect(list.body.keys.length).toBeGreaterThan(0);
    expect(list.body.keys.every((k: { projectId: string }) => k.projectId === 'only-here')).toBe(true);
    expect((await t.call('GET', '/api/api-keys?projectId=elsewhere', { key: scoped.key })).status).toBe(403);
    const child = await t.call('POST', '/api/api-keys', { key: scoped.key, body: { name: 'c' } });
    expect(child.body.projectId).toBe('only-here');
    const out = await t.call('POST', '/api/api-keys', { key: scoped.key, body: { name: 'c', projectId: 'elsewhere' } });
    expect(out.status).toBe(403);
    expect(out.body.error.code).toBe('project_scope');
    expect((await t.call('DELETE', `/api/api-keys?id=${elsewhere.id}`, { key: scoped.key })).status).toBe(404);
    // Its project is one of its own account's: the key cannot carry it into an organization.
    const org = await t.call('POST', '/accounts', { key: t.bootstrapKey, body: { kind: 'organization', name: 'Scoped Org' } });
    expect(org.status).toBe(201);
    for (const [method, path] of [
      ['GET', '/me'],
      ['POST', '/api/api-keys'],
      ['GET', '/agents'],
    ] as const) {
      const res = await t.call(method, path, {
        key: scoped.key,
        headers: { 'x-svc-account': org.body.id },
        body: method === 'POST' ? { name: 'x' } : undefined,
      });
      expect([path, res.status, res.body.error.code]).toEqual([path, 403, 'project_scope']);
    }
    // The key's creator, a person without a project scope, acts in it.
    expect((await t.call('GET', '/me', { key: t.bootstrapKey, headers: { 'x-svc-account': org.body.id } })).status).toBe(200);
  });

  test('GET /me describes the caller', async () => {
    const res = await t.call('GET', '/v1/me', { key: t.bootstrapKey });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ kind: 'human', projectId: null, agentId: null, organizations: [] });
    expect(res.body.accountId).toMatch(/^acct_/);
    expect(res.body.userId).toBe(res.body.accountId);
    expect(res.body.account).toMatchObject({ id: res.body.accountId, kind: 'user', name: 'operator' });
  });

  test('x-svc-account for an account the caller does not belong to answers 404', async () => {
    for (const account of ['acct_01m7zzzzzzzzzzzzzzzzzzzzzz', 'garbage']) {
      const res = await t.call('GET', '/me', { key: t.bootstrapKey, headers: { 'x-svc-account': account } });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('account_not_found');
    }
  });

  test('usage is counted in batches and shows within a few seconds', async () => {
    const k = await createKey({ name: 'used' });
    for (let i = 0; i < 5; i++) expect((await t.call('GET', '/me', { key: k.key })).status).toBe(200);
    const started = Date.now();
    let seen: { usageCount: number; lastUsedAt: string | null } | undefined;
    while (Date.now() - started < 8000) {
      const list = await t.call('GET', '/api/api-keys?limit=200', { key: t.bootstrapKey });
      seen = list.body.keys.find((x: { id: string }) => x.id === k.id);
      if (seen && seen.usageCount >= 5) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(seen!.usageCount).toBe(5);
    expect(Date.parse(seen!.lastUsedAt!)).toBeGreaterThan(started - 10_000);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test("the key's plaintext appears nowhere: not in the database, not in the logs", async () => {
    const k = await createKey({ name: 'secret' });
    await t.call('GET', '/me', { key: k.key });
    await t.call('GET', '/nope', { key: k.key });
    await t.call('DELETE', `/api/api-keys?id=${k.id}`, { key: k.key });
    await t.call('GET', '/me', { key: k.key }); // refused, logged
    await new Promise((r) => setTimeout(r, 600)); // the outbox relay publishes
    const tables = await sql<{ schema: string; name: string }>(
      `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
        WHERE table_schema IN ('keys', 'accounts')`,
    );
    let dump = '';
    for (const tb of tables) {
      const rows = await sql(`SELECT row_to_json(x)::text AS j FROM ${tb.schema}.${tb.name} x`);
      dump += rows.map((r: any) => r.j).join('\n');
    }
    expect(dump).toContain(k.id); // the dump is real
    expect(dump).not.toContain(k.key);
    expect(dump).not.toContain(k.key.slice(4)); // nor its hex part
    const logText = logs.join('');
    expect(logText.length).toBeGreaterThan(0);
    expect(logText).not.toContain(k.key.slice(4));
    expect(logText).not.toContain(t.bootstrapKey.slice(4));
  });

  (REAL.nats ? test : test.skip)('a revoked key is refused by another gateway replica within one second (NATS)', async () => {
    const k = await createKey({ name: 'replicated' });
    const replica: Stack = await startStack({
      ...t.env,
      SVC_SERVICE: 'gateway',
      PORT: '0',
      SVC_KEYS_ADDR: t.stack.registry.address('keys')!,
      SVC_ACCOUNTS_ADDR: t.stack.registry.address('accounts')!,
    });
    try {
      const other = `http://127.0.0.1:${replica.port}`;
      const me = () => fetch(`${other}/me`, { headers: { authorization: `Bearer ${k.key}` } }).then((r) => r.status);
      expect(await me()).toBe(200); // cached on the replica
      await t.call('DELETE', `/api/api-keys?id=${k.id}`, { key: t.bootstrapKey });
      const revokedAt = Date.now();
      let status = 200;
      while (status === 200 && Date.now() - revokedAt < 3000) {
        status = await me();
        if (status === 200) await new Promise((r) => setTimeout(r, 20));
      }
      expect(status).toBe(401);
      expect(Date.now() - revokedAt).toBeLessThan(1000);
    } finally {
      await replica.stop();
    }
  });

  test('creating keys is rate-limited per account', async () => {
    let limited: { status: number; body: any } | undefined;
    for (let i = 0; i < 70 && !limited; i++) {
      const res = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey, body: { name: `burst ${i}` } });
      if (res.status === 429) limited = res;
      else expect(res.status).toBe(201);
    }
    expect(limited?.body).toEqual(ERROR_BODY);
    expect(limited?.body.error.code).toBe('rate_limited');
    expect(limited?.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  test('a flood of failed authentications from one client answers its bad keys 429, never a good key', async () => {
    let last = 0;
    for (let i = 0; i < 40; i++) {
      last = (await t.call('GET', '/me', { key: `svc_${'1'.repeat(64)}` })).status;
      if (last === 429) break;
    }
    expect(last).toBe(429);
    const res = await t.call('GET', '/me', { key: `svc_${'1'.repeat(64)}` });
    expect(res.status).toBe(429);
    expect(res.body).toEqual(ERROR_BODY);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    // A key that verifies is served whatever the address's failures (test/keys/auth-limits.test.ts).
    expect((await t.call('GET', '/me', { key: t.bootstrapKey })).status).toBe(200);
  });
});
