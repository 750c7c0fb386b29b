import { createDatabase, REAL } from '../support/backends';
import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';
import { TcpProxy as Proxy } from '../support/tcp-proxy';

/**
 * A database outage from the stack's side, without touching the machine's PostgreSQL: the stack
 * reaches its database through a TCP proxy this test starts, then closes (connections refused, open
 * ones cut) and then turns into a black hole (connections accepted, never answered). Every request
 * that needs SQL answers 503 `database_unavailable` with Retry-After, never 500, and the stack
 * works again once the proxy does. An Idempotency-Key sent during the outage is not spent.
 */
const suite = REAL.pg ? describe : describe.skip;
let t: TestStack;
let proxy: Proxy;
let db: { url: string; drop(): Promise<void> };
let key: string;
beforeAll(async () => {
  if (!REAL.pg) return;
  db = await createDatabase(REAL.pg);
  const real = new URL(db.url);
  proxy = new Proxy({ host: real.hostname, port: Number(real.port || 5432) });
  await proxy.listen();
  const viaProxy = new URL(db.url);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  t = await startTestStack({ DATABASE_URL: viaProxy.toString() });
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Outage' })).body.key as string;
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await proxy?.close();
  await db?.drop();
});

const expectUnavailable = (p: string, res: { status: number; body: any; headers: Headers }) => {
  expect([p, res.status]).toEqual([p, 503]);
  expect(res.body).toEqual(ERROR_BODY);
  expect(res.body.error.code).toBe('database_unavailable');
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
};

suite('PostgreSQL behind a proxy that goes away', () => {
  test('refused and cut connections, then a black hole: 503 with Retry-After; then it works again, and the Idempotency-Key was not spent', async () => {
    expect((await t.call('GET', '/api/api-keys', { key })).status).toBe(200);
    const idem = `outage-${Date.now()}`;

    await proxy.close();
    for (const [method, p, body, headers] of [
      ['GET', '/api/api-keys', undefined, {}],
      ['POST', '/profiles', { name: 'x' }, {}],
      ['GET', '/agents', undefined, {}],
      ['POST', '/agents', { name: 'during' }, { 'idempotency-key': idem }],
    ] as const) {
      expectUnavailable(p, await t.call(method, p, { key, body, headers }));
    }

    // Connections accepted and never answered: the pool's connect timeout (5 s) ends the wait.
    proxy.mode = 'blackhole';
    await proxy.listen();
    const started = Date.now();
    expectUnavailable('/api/api-keys', await t.call('GET', '/api/api-keys', { key }));
    expect(Date.now() - started).toBeLessThan(9000);

    await proxy.close();
    proxy.mode = 'up';
    await proxy.listen();
    expect((await t.call('GET', '/api/api-keys', { key })).status).toBe(200);
    const after = await t.call('POST', '/agents', { key, body: { name: 'during' }, headers: { 'idempotency-key': idem } });
    expect(after.status).toBe(201);
    expect(after.headers.get('idempotent-replayed')).toBeNull();
  }, 60_000);
});
