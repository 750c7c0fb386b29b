import pg from 'pg';

import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/**
 * Idempotency-Key on POST operations, through the gateway: a replay answers the recorded answer
 * (status, body, headers) and runs nothing; another request with the key is 422, the same one
 * while the first runs 409; keys are per account and API key; the sweeper forgets expired ones.
 */
let t: TestStack;
let ada: { id: string; key: string };
let bob: { id: string; key: string };
beforeAll(async () => {
  t = await startTestStack({ SVC_KEYS_IDEMPOTENCY_SWEEP_MS: '200' });
  const person = async (name: string) => {
    const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name });
    return { id: res.body.account.id as string, key: res.body.key as string };
  };
  ada = await person('Ada');
  bob = await person('Bob');
});
afterAll(() => t?.stop());

let seq = 0;
const newKey = () => `idem-${Date.now()}-${++seq}`;
const post = (p: string, key: string, body: unknown, idem?: string, headers: Record<string, string> = {}) =>
  t.call('POST', p, { key, body, headers: idem === undefined ? headers : { ...headers, 'idempotency-key': idem } });
const raw = (p: string, key: string, body: string, idem: string) =>
  fetch(t.url + p, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idem },
    body,
  });
const agentNames = async (key: string) => ((await t.ok('GET', '/agents', key)).body.agents as Array<{ name: string }>).map((a) => a.name);
const RELEVANT = ['content-type', 'location', 'etag', 'cache-control', 'retry-after'];
const headersOf = (h: Headers) => Object.fromEntries(RELEVANT.map((n) => [n, h.get(n)]));

describe('a replay', () => {
  test('POST /agents twice with one key: the same status, body and headers, and one agent', async () => {
    const idem = newKey();
    const first = await raw('/agents', ada.key, '{"name":"replayed"}', idem);
    const firstText = await first.text();
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const second = await raw('/v1/agents', ada.key, '{"name":"replayed"}', idem);
    expect(second.status).toBe(201);
    expect(await second.text()).toBe(firstText);
    expect(headersOf(second.headers)).toEqual(headersOf(first.headers));
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    expect((await agentNames(ada.key)).filter((n) => n === 'replayed')).toHaveLength(1);
    // Without a key the same request runs again.
    await t.ok('POST', '/agents', ada.key, { name: 'replayed' });
    expect((await agentNames(ada.key)).filter((n) => n === 'replayed')).toHaveLength(2);
  });

  test('an error answer is replayed as it was, with its original request id', async () => {
    const idem = newKey();
    const first = await post('/agents', ada.key, { name: '' }, idem);
    expect(first.status).toBe(400);
    expect(first.body).toEqual(ERROR_BODY);
    const second = await post('/agents', ada.key, { name: '' }, idem);
    expect(second.status).toBe(400);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
  });

  test('the same JSON written otherwise (spacing, key order) is the same request', async () => {
    const idem = newKey();
    const first = await raw('/agents', ada.key, '{"name":"spelled","description":"d"}', idem);
    expect(first.status).toBe(201);
    const again = await raw('/agents', ada.key, '{ "description" : "d",\n  "name" : "spelled" }', idem);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await again.json()).id).toBe((await first.json()).id);
    expect((await agentNames(ada.key)).filter((n) => n === 'spelled')).toHaveLength(1);
  });

  test('code runs once: the replay carries the first run’s result', async () => {
    const idem = newKey();
    const body = { code: 'export default Math.random()' };
    const first = await post('/code/run', ada.key, body, idem);
    expect(first.status).toBe(200);
    const second = await post('/code/run', ada.key, body, idem);
    expect(second.body).toEqual(first.body);
    // The same code without the key draws another number.
    expect((await post('/code/run', ada.key, body)).body).not.toEqual(first.body);
  });
});

describe('another request with the key', () => {
  test('a different body, query or operation answers 422 idempotency_key_reused and runs nothing', async () => {
    const idem = newKey();
    expect((await post('/agents', ada.key, { name: 'one' }, idem)).status).toBe(201);
    for (const [p, body] of [
      ['/agents', { name: 'two' }],
      ['/agents?x=1', { name: 'one' }],
      ['/profiles', { name: 'one' }],
    ] as const) {
      const res = await post(p, ada.key, body, idem);
      expect([p, res.status]).toEqual([p, 422]);
      expect(res.body).toEqual(ERROR_BODY);
      expect(res.body.error.code).toBe('idempotency_key_reused');
    }
    expect(await agentNames(ada.key)).not.toContain('two');
  });

  test('the same request while the first still runs answers 409 idempotency_key_in_use with Retry-After', async () => {
    const idem = newKey();
    const body = { code: 'const end = Date.now() + 1500; while (Date.now() < end) {} export default "done"' };
    const first = post('/code/run', ada.key, body, idem);
    await new Promise((r) => setTimeout(r, 400));
    const second = await post('/code/run', ada.key, body, idem);
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('idempotency_key_in_use');
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
    const done = await first;
    expect(done.status).toBe(200);
    const third = await post('/code/run', ada.key, body, idem);
    expect(third.status).toBe(200);
    expect(third.body).toEqual(done.body);
    expect(third.headers.get('idempotent-replayed')).toBe('true');
  });
});

describe('scope', () => {
  test("another account's request with the same key is its own; so is another API key's of the same account", async () => {
    const idem = newKey();
    const a = await post('/agents', ada.key, { name: 'scoped' }, idem);
    const b = await post('/agents', bob.key, { name: 'scoped' }, idem);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.body.id).not.toBe(a.body.id);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    // A second key of Ada's: its own scope (a different body is no reuse).
    const second = (await t.ok('POST', '/api/api-keys', ada.key, { name: 'second' })).body.key as string;
    const c = await post('/agents', second, { name: 'scoped-2' }, idem);
    expect(c.status).toBe(201);
    expect((await agentNames(bob.key)).filter((n) => n === 'scoped')).toHaveLength(1);
  });
});

describe('the header itself', () => {
  test('a malformed key answers 400; GET ignores the header', async () => {
    for (const bad of ['x'.repeat(256), 'has space']) {
      const res = await post('/agents', ada.key, { name: 'bad-key' }, bad);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_idempotency_key');
    }
    expect(await agentNames(ada.key)).not.toContain('bad-key');
    const get = await t.call('GET', '/me', { key: ada.key, headers: { 'idempotency-key': 'x'.repeat(300) } });
    expect(get.status).toBe(200);
  });
});

describe('streamed content (POST /drive/upload)', () => {
  const upload = (name: string, body: BodyInit, idem: string, headers: Record<string, string> = {}) =>
    fetch(`${t.url}/drive/upload${name ? `?name=${name}` : ''}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ada.key}`, 'idempotency-key': idem, ...headers },
      body,
    });
  const form = (text: string, name: string) => {
    const f = new FormData();
    f.set('name', name);
    f.set('file', new Blob([text], { type: 'text/plain' }), 'local.txt');
    return f;
  };

  test('raw bytes: replayed when the bytes are the same, 422 when they differ', async () => {
    const idem = newKey();
    const name = `${idem}.txt`;
    const first = await upload(name, 'hello', idem, { 'content-type': 'text/plain' });
    const text = await first.text();
    expect(first.status).toBe(201);
    const again = await upload(name, 'hello', idem, { 'content-type': 'text/plain' });
    expect(again.status).toBe(201);
    expect(await again.text()).toBe(text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
    const other = await upload(name, 'hellO', idem, { 'content-type': 'text/plain' });
    expect(other.status).toBe(422);
    expect((await other.json()).error.code).toBe('idempotency_key_reused');
    // The same bytes as another content type are another request.
    expect((await upload(name, 'hello', idem, { 'content-type': 'application/octet-stream' })).status).toBe(422);
  });

  test('a multipart form: a new boundary is the same request; another file is not', async () => {
    const idem = newKey();
    const first = await upload('', form('one', `${idem}.txt`), idem);
    expect(first.status).toBe(201);
    const id = (await first.json()).id;
    const again = await upload('', form('one', `${idem}.txt`), idem);
    expect(again.status).toBe(201);
    expect((await again.json()).id).toBe(id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await upload('', form('two', `${idem}.txt`), idem)).status).toBe(422);
  });

  test('an upload refused before its bytes (If-None-Match: * on a taken name) is not recorded', async () => {
    const name = `${newKey()}.txt`;
    expect((await upload(name, 'x', newKey())).status).toBe(201);
    const idem = newKey();
    for (let i = 0; i < 2; i++) {
      const res = await upload(name, 'y', idem, { 'if-none-match': '*' });
      expect(res.status).toBe(412);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
    }
  });
});

describe('expiry', () => {
  test('the sweeper deletes an expired record; the key then takes a new request', async () => {
    const idem = newKey();
    expect((await post('/agents', ada.key, { name: 'before-expiry' }, idem)).status).toBe(201);
    expect((await post('/agents', ada.key, { name: 'after-expiry' }, idem)).status).toBe(422);
    const dbUrl = t.env.DATABASE_URL;
    if (!dbUrl) return; // embedded PGlite lives inside the stack: the real-backend run covers this
    const db = new pg.Client({ connectionString: dbUrl });
    await db.connect();
    try {
      const count = async () => Number((await db.query('SELECT count(*) AS n FROM keys.idempotency WHERE idem_key = $1', [idem])).rows[0].n);
      expect(await count()).toBe(1);
      // Its 24 hours are over (the clock moved on, as far as the record is concerned).
      await db.query(`UPDATE keys.idempotency SET expires_at = now() - interval '1 second' WHERE idem_key = $1`, [idem]);
      const deadline = Date.now() + 5000;
      while ((await count()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await count()).toBe(0);
    } finally {
      await db.end();
    }
    const fresh = await post('/agents', ada.key, { name: 'after-expiry' }, idem);
    expect(fresh.status).toBe(201);
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
  });
});
