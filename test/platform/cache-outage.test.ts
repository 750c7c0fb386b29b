import { REAL } from '../support/backends';
import { startTestStack, type TestStack } from '../support/stack';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * Redis going away under a running stack (through a proxy this test closes, not the machine's
 * Redis): the API keeps answering, since a key's verification falls back to the database, the truth
 * (no 500, no wait on a queue of commands for a Redis that is not there), and revocation stays
 * fail-closed: a key cached before the outage and revoked during it is refused during it and after
 * Redis is back, although the revocation could not delete the cached entry.
 */
const suite = REAL.redis ? describe : describe.skip;
let t: TestStack;
let proxy: TcpProxy;
let key: string;
beforeAll(async () => {
  if (!REAL.redis) return;
  const real = new URL(REAL.redis);
  proxy = new TcpProxy({ host: real.hostname, port: Number(real.port || 6379) });
  await proxy.listen();
  const viaProxy = new URL(REAL.redis);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  t = await startTestStack({ REDIS_URL: viaProxy.toString() });
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Cache outage' })).body.key as string;
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await proxy?.close();
});

suite('Redis behind a proxy that goes away', () => {
  test('keys verify from the database, writes go on, and a key revoked during the outage stays refused after it', async () => {
    const cached = (await t.ok('POST', '/api/api-keys', key, { name: 'cached' })).body as { id: string; key: string };
    expect((await t.call('GET', '/me', { key: cached.key })).status).toBe(200); // now in the caches

    await proxy.close();
    // A key never seen before is verified from the database; creating one skips the limit it cannot count.
    const fresh = await t.call('POST', '/api/api-keys', { key, body: { name: 'made in the outage' } });
    expect(fresh.status).toBe(201);
    expect((await t.call('GET', '/me', { key: fresh.body.key })).status).toBe(200);
    expect((await t.call('POST', '/agents', { key, body: { name: 'made in the outage' } })).status).toBe(201);
    // Revoked during the outage: refused at once.
    expect((await t.call('DELETE', `/api/api-keys?id=${cached.id}`, { key })).status).toBe(200);
    expect((await t.call('GET', '/me', { key: cached.key })).status).toBe(401);

    // Redis is back, still holding the entry the revocation could not delete: still refused.
    await proxy.listen();
    await new Promise((r) => setTimeout(r, 1500));
    expect((await t.call('GET', '/me', { key: cached.key })).status).toBe(401);
    expect((await t.call('GET', '/me', { key: fresh.body.key })).status).toBe(200);
  });
});
