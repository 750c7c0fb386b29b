import pg from 'pg';

import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/** Input built to break the platform, sent from outside: each answers a clear 4xx, never a 500. */
let t: TestStack;
let accountId: string;
beforeAll(async () => {
  t = await startTestStack();
  accountId = (await t.call('GET', '/me', { key: t.bootstrapKey })).body.accountId;
});
afterAll(() => t?.stop());

const call = (method: string, p: string, body?: unknown, headers?: Record<string, string>) =>
  t.call(method, p, { key: t.bootstrapKey, body, headers });
const nested = (levels: number, leaf = '1') => '['.repeat(levels) + leaf + ']'.repeat(levels);

describe('deeply nested JSON', () => {
  test('a body nested ~3,750 levels answers 400 naming the limit, on every kind of JSON route', async () => {
    const body = nested(3750);
    for (const [method, p] of [
      ['POST', '/api/api-keys'],
      ['POST', '/v1/profiles'],
      ['PATCH', `/accounts/${accountId}/settings`],
    ] as const) {
      const res = await call(method, p, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual(ERROR_BODY);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.message).toMatch(/deeper than 64 levels/);
    }
    // Inside an object, too: the limit counts every level.
    const inField = await call('POST', '/v1/profiles', `{"name":"p","profileData":{"workingChanges":{"constraints":[${nested(100)}]}}}`);
    expect(inField.status).toBe(400);
    expect(inField.body.error.message).toMatch(/deeper than 64 levels/);
  });

  test('a profile constraint nested 3,000 deep cannot be created, and nesting within the limit still works', async () => {
    const deep = `{"name":"deep","profileData":{"workingChanges":{"constraints":[{"id":"c","answer":${nested(3000)}}],"exemplars":[],"comparisons":[]}}}`;
    const res = await call('POST', '/v1/profiles', deep);
    expect(res.status).toBe(400);
    const fine = await call(
      'POST',
      '/v1/profiles',
      `{"name":"ok","profileData":{"workingChanges":{"constraints":[{"id":"c","answer":${nested(50)}}],"exemplars":[],"comparisons":[]}}}`,
    );
    expect(fine.status).toBe(201);
  });
});

describe('out-of-range numbers', () => {
  test('PATCH settings with 1e400 answers 400 naming the field and leaves the setting as it was', async () => {
    const base = `/accounts/${accountId}/settings`;
    expect((await call('PATCH', base, { hosts: { callTimeoutMs: 6000 } })).status).toBe(200);
    for (const method of ['PATCH', 'PUT']) {
      const res = await call(method, base, '{"hosts":{"callTimeoutMs":1e400}}');
      expect(res.status).toBe(400);
      expect(res.body).toEqual(ERROR_BODY);
      expect(res.body.error.message).toMatch(/hosts\.callTimeoutMs: must be a finite number/);
    }
    expect((await call('GET', base)).body.hosts.callTimeoutMs).toBe(6000);
  });
});

describe('text that is not UTF-8', () => {
  const send = (method: string, p: string, body: Buffer | string, contentType: string) =>
    fetch(t.url + p, { method, headers: { authorization: `Bearer ${t.bootstrapKey}`, 'content-type': contentType }, body });

  test('raw FF FE bytes in a JSON string answer 400 invalid_encoding, and nothing is stored', async () => {
    const before = (await call('GET', '/api/api-keys')).body.keys.length;
    const body = Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('b"}')]);
    const res = await send('POST', '/api/api-keys', body, 'application/json');
    expect(res.status).toBe(400);
    const answer = await res.json();
    expect(answer).toEqual(ERROR_BODY);
    expect(answer.error.code).toBe('invalid_encoding');
    expect(answer.error.message).toMatch(/UTF-8/);
    expect((await call('GET', '/api/api-keys')).body.keys.length).toBe(before);
  });

  test('a JSON body declared in another charset (utf-7, utf-16) answers 415', async () => {
    for (const charset of ['utf-7', 'utf-16le']) {
      const res = await send('POST', '/api/api-keys', '{"name":"x"}', `application/json; charset=${charset}`);
      expect(res.status).toBe(415);
      const answer = await res.json();
      expect(answer.error.code).toBe('unsupported_media_type');
    }
    expect((await send('POST', '/api/api-keys', '{"name":"fine"}', 'application/json; charset=UTF-8')).status).toBe(201);
  });

  test('a query string or path parameter that percent-decodes to invalid UTF-8 answers 400', async () => {
    const upload = await send('POST', '/drive/upload?name=%FF%FE', 'bytes', 'application/octet-stream');
    expect(upload.status).toBe(400);
    expect((await upload.json()).error.code).toBe('invalid_encoding');
    const listed = await call('GET', '/api/api-keys?cursor=%C3%28');
    expect(listed.status).toBe(400);
    expect(listed.body.error.code).toBe('invalid_encoding');
    const path = await call('GET', '/agents/agt_%FF%FE/keys');
    expect(path.status).toBe(400);
    // Valid percent-encoded UTF-8 still works.
    expect((await send('POST', `/drive/upload?name=${encodeURIComponent('café ✓.txt')}`, 'bytes', 'application/octet-stream')).status).toBe(201);
  });
});

describe('no oracle for other tenants', () => {
  const person = async (name: string) => {
    const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name });
    return { id: res.body.account.id as string, key: res.body.key as string };
  };

  test("a grant to another tenant's agent or host answers exactly as one to an id that does not exist", async () => {
    const ada = await person('Ada');
    const mallory = await person('Mallory');
    const agentId = (await t.ok('POST', '/agents', ada.key, { name: 'scout' })).body.id as string;
    const hostId = (await t.ok('POST', `/accounts/${ada.id}/hosts`, ada.key, { name: 'laptop' })).body.host.id as string;
    const grant = (granteeId: string, key = mallory.key, account = mallory.id) =>
      t.call('POST', `/accounts/${account}/standing-grants`, { key, body: { granteeId, verbs: ['drive.read'] } });
    const shape = (r: Awaited<ReturnType<typeof grant>>) => [r.status, r.body.error?.code, r.body.error?.message];
    const missingAgent = shape(await grant(agentId.slice(0, -4) + 'zzzz'));
    const missingHost = shape(await grant(hostId.slice(0, -4) + 'zzzz'));
    expect(missingAgent[0]).toBe(404);
    expect(shape(await grant(agentId))).toEqual(missingAgent);
    expect(shape(await grant(hostId))).toEqual(missingHost);
    // Its own account sees them.
    expect((await grant(agentId, ada.key, ada.id)).status).toBe(201);
    expect((await grant(hostId, ada.key, ada.id)).status).toBe(201);
    // An account it shares an organization with sees them too.
    const orgId = (await t.ok('POST', '/accounts', ada.key, { kind: 'organization', name: 'Both' })).body.id as string;
    await t.ok('POST', `/accounts/${orgId}/members`, ada.key, { accountId: mallory.id, role: 'member' });
    expect((await grant(agentId)).status).toBe(201);
  });
});

describe('readiness without a key', () => {
  test('/ready answers only the status and ok booleans: no addresses, no error texts', async () => {
    const res = await t.call('GET', '/ready');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ready');
    for (const part of [res.body.backends, res.body.services]) {
      for (const v of Object.values(part)) expect(v).toEqual({ ok: true });
    }
    expect(JSON.stringify(res.body)).not.toMatch(/address|:\d{2,5}|\/tmp|\.sock|error/);
  });
});

describe('WebDAV Destination on another server', () => {
  test("MOVE and COPY to another authority answer 502 and change nothing; this server's own authority works", async () => {
    const auth = { authorization: `Basic ${Buffer.from(`x:${t.bootstrapKey}`).toString('base64')}` };
    const dav = (method: string, p: string, headers: Record<string, string> = {}, body?: string) =>
      fetch(t.url + p, { method, headers: { ...auth, ...headers }, body });
    const name = `hostile-${Date.now()}`;
    expect((await dav('PUT', `/dav/${name}.txt`, {}, 'payload')).status).toBe(201);
    const host = new URL(t.url).host;
    for (const method of ['MOVE', 'COPY']) {
      for (const destination of [
        `http://evil.example/dav/${name}-2.txt`,
        `//evil.example/dav/${name}-2.txt`,
        `http://evil.example:${new URL(t.url).port}/dav/${name}-2.txt`,
      ]) {
        expect((await dav(method, `/dav/${name}.txt`, { destination })).status).toBe(502);
      }
    }
    expect((await dav('GET', `/dav/${name}-2.txt`)).status).toBe(404);
    expect(await (await dav('GET', `/dav/${name}.txt`)).text()).toBe('payload');
    expect((await dav('MOVE', `/dav/${name}.txt`, { destination: `http://${host.toUpperCase()}/dav/${name}-2.txt` })).status).toBe(201);
    expect((await dav('COPY', `/dav/${name}-2.txt`, { destination: `/dav/${name}-3.txt` })).status).toBe(201);
  });
});

describe('a PostgreSQL outage', () => {
  test('SQL-backed requests answer 503 database_unavailable with Retry-After, and work again after', async () => {
    const dbUrl = t.env.DATABASE_URL;
    if (!dbUrl) return; // embedded PGlite: no server to take away
    const name = new URL(dbUrl).pathname.slice(1);
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    // Warm: a key of a person is authenticated once while the database is up.
    const person = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Outage' });
    const key = person.body.key as string;
    expect((await t.call('GET', '/api/api-keys', { key })).status).toBe(200);
    try {
      // New connections refused, the open ones terminated: the database is gone for the stack.
      await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
      for (const [method, p, body] of [
        ['GET', '/api/api-keys', undefined],
        ['POST', '/v1/profiles', { name: 'x' }],
        ['GET', `/accounts/${person.body.account.id}/settings`, undefined],
      ] as const) {
        const res = await t.call(method, p, { key, body });
        expect([p, res.status]).toEqual([p, 503]);
        expect(res.body).toEqual(ERROR_BODY);
        expect(res.body.error.code).toBe('database_unavailable');
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    } finally {
      await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS true`);
      await admin.end();
    }
    expect((await t.call('GET', '/api/api-keys', { key })).status).toBe(200);
  });
});
