import { createMemoryCache } from '@svc/kit';

import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/**
 * Rate limits through the gateway: a token bucket per API key and one per account, per class of
 * operation; 429 with Retry-After and the IETF draft's RateLimit / RateLimit-Policy headers.
 */
let t: TestStack;
let ada: { id: string; key: string };
let bob: { id: string; key: string };
beforeAll(async () => {
  t = await startTestStack({
    SVC_RATE_LIMITS: 'read=5/10,write=50/30,compute=1/30',
    SVC_RATE_LIMITS_ACCOUNT: 'read=8/10',
  });
  // The accounts are made with the bootstrap key: its own buckets.
  const person = async (name: string) => {
    const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name });
    return { id: res.body.account.id as string, key: res.body.key as string };
  };
  ada = await person('Ada');
  bob = await person('Bob');
});
afterAll(() => t?.stop());

const get = (key: string, p = '/me') => t.call('GET', p, { key });

describe('token buckets', () => {
  test('a key gets its bucket, then 429 rate_limited with Retry-After and the RateLimit headers', async () => {
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await get(ada.key);
      expect(res.status).toBe(200);
      seen.push(res.headers.get('ratelimit')!);
      expect(res.headers.get('ratelimit-policy')).toBe('"key-read";q=5;w=10, "account-read";q=8;w=10');
    }
    expect(seen[0]).toMatch(/^"key-read";r=4;t=\d+, "account-read";r=7;t=\d+$/);
    expect(seen[4]).toMatch(/^"key-read";r=0;t=\d+, /);
    const refused = await get(ada.key);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual(ERROR_BODY);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(refused.body.error.message).toMatch(/API key/);
    const wait = Number(refused.headers.get('retry-after'));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(2); // a token every 2 s
    expect(refused.headers.get('ratelimit')).toMatch(/^"key-read";r=0;/);
    // Writes have a bucket of their own.
    expect((await t.call('POST', '/agents', { key: ada.key, body: { name: 'still' } })).status).toBe(201);
  });

  test("the account's bucket holds every key of the account; another account is untouched", async () => {
    const second = (await t.ok('POST', '/api/api-keys', bob.key, { name: 'second' })).body.key as string;
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await get(bob.key)).status);
    for (let i = 0; i < 4; i++) statuses.push((await get(second)).status);
    // Five from the first key, three more from the second: the account's eight; then 429.
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 429]);
    const refused = await get(second);
    expect(refused.body.error.message).toMatch(/account/);
    // Ada's reads refill on their own clock, Bob's account is Bob's.
    const other = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Cy' })).body.key as string;
    expect((await get(other)).status).toBe(200);
  });

  test('code runs are the compute class: one per 30 s here', async () => {
    const key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Dee' })).body.key as string;
    expect((await t.call('POST', '/code/run', { key, body: { code: '1' } })).status).toBe(200);
    const again = await t.call('POST', '/code/run', { key, body: { code: '1' } });
    expect(again.status).toBe(429);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(20);
    expect(again.headers.get('ratelimit-policy')).toMatch(/^"key-compute";q=1;w=30/);
  });

  test('a bucket refills: a token comes back after its share of the window', async () => {
    const key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Eve' })).body.key as string;
    for (let i = 0; i < 5; i++) expect((await get(key)).status).toBe(200);
    const refused = await get(key);
    expect(refused.status).toBe(429);
    await new Promise((r) => setTimeout(r, Number(refused.headers.get('retry-after')) * 1000 + 100));
    expect((await get(key)).status).toBe(200);
  });
});

describe('the protocol fronts draw on the same buckets', () => {
  const person = async (name: string) => (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body.key as string;
  const mcp = (key: string, message: object) =>
    t.call('POST', '/mcp', {
      key,
      body: { jsonrpc: '2.0', id: 1, ...message },
      headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    });

  test('WebDAV: reading methods take read tokens; the sixth PROPFIND of a key is 429 with Retry-After', async () => {
    const key = await person('Fay');
    const auth = { authorization: `Basic ${Buffer.from(`x:${key}`).toString('base64')}`, depth: '0' };
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await fetch(`${t.url}/dav/`, { method: 'PROPFIND', headers: auth })).status);
    expect(statuses).toEqual([207, 207, 207, 207, 207, 429]);
    const refused = await fetch(`${t.url}/dav/`, { method: 'PROPFIND', headers: auth });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // A write is another bucket: MKCOL still passes, with its own RateLimit headers.
    const made = await fetch(`${t.url}/dav/made`, { method: 'MKCOL', headers: auth });
    expect(made.status).toBe(201);
    expect(made.headers.get('ratelimit-policy')).toMatch(/^"key-write";q=50;w=30/);
    // The API's reads are the same bucket: empty too.
    expect((await get(key)).status).toBe(429);
  });

  test('Git: a fetch takes read tokens, a push write ones; past the bucket 429 with Retry-After', async () => {
    const key = await person('Hal');
    const auth = { authorization: `Basic ${Buffer.from(`x:${key}`).toString('base64')}` };
    const refs = (service: string) => fetch(`${t.url}/git/sites/nothing-here.git/info/refs?service=${service}`, { headers: auth });
    // Admitted (the site does not exist: 404), with the read bucket's headers.
    const first = await refs('git-upload-pack');
    expect(first.status).toBe(404);
    expect(first.headers.get('ratelimit')).toMatch(/^"key-read";r=4;/);
    for (let i = 0; i < 4; i++) expect((await get(key)).status).toBe(200);
    const refused = await refs('git-upload-pack');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // A push's advertisement is a write: its own bucket.
    const push = await refs('git-receive-pack');
    expect(push.status).toBe(404);
    expect(push.headers.get('ratelimit-policy')).toMatch(/^"key-write";q=50;w=30/);
  });

  test("MCP: a tool call takes its operation's class (run_code, directly or through call_tool, is compute); listing is a read", async () => {
    const key = await person('Gus');
    const listed = await mcp(key, { method: 'tools/list', params: {} });
    expect(listed.status).toBe(200);
    expect(listed.headers.get('ratelimit-policy')).toMatch(/^"key-read";q=5;w=10/);
    const ran = await mcp(key, { method: 'tools/call', params: { name: 'run_code', arguments: { code: '1 + 1' } } });
    expect(ran.status).toBe(200);
    expect(ran.headers.get('ratelimit-policy')).toMatch(/^"key-compute";q=1;w=30/);
    const again = await mcp(key, { method: 'tools/call', params: { name: 'call_tool', arguments: { name: 'run_code', arguments: { code: '2' } } } });
    expect(again.status).toBe(429);
    expect(again.body).toEqual(ERROR_BODY);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(20);
    // The API's compute bucket is the same one.
    expect((await t.call('POST', '/code/run', { key, body: { code: '1' } })).status).toBe(429);
  });
});

describe('the embedded (memory) buckets', () => {
  test('take whole tokens up to what is there, and refill evenly', async () => {
    const cache = createMemoryCache();
    const b = { key: 'k', capacity: 10, windowMs: 10_000, want: 4 }; // a token a second
    expect(await cache.takeTokens([b])).toEqual([{ granted: 4, left: 6 }]);
    const [second] = await cache.takeTokens([b]);
    expect(second!.granted).toBe(4);
    expect(second!.left).toBeCloseTo(2, 1);
    const [third, other] = await cache.takeTokens([b, { ...b, key: 'other' }]);
    expect(third!.granted).toBe(2);
    expect(third!.left).toBeLessThan(1);
    expect(other!.granted).toBe(4); // another bucket, full
    expect((await cache.takeTokens([b]))[0]!.granted).toBe(0);
    await new Promise((r) => setTimeout(r, 1100)); // one token comes back
    const [after] = await cache.takeTokens([{ ...b, want: 10 }]);
    expect(after!.granted).toBeGreaterThanOrEqual(1);
    expect(after!.granted).toBeLessThanOrEqual(2);
    await cache.close();
  });
});
