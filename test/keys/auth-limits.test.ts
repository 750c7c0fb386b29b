import { rawPost } from '../support/mcp';
import { ERROR_BODY, startTestStack, type TestStack } from '../support/stack';

/**
 * The failed-authentication limit (docs/keys.md): a flood of bad keys from one address (here
 * 127.0.0.1, as every client behind an ingress without SVC_TRUST_PROXY) answers those bad keys
 * 429, and never turns away a key that verifies, of any tenant, on any front: the API, WebDAV,
 * MCP and Git.
 */
let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
});
afterAll(() => t?.stop());

let n = 0;
async function person() {
  const res = await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: `tenant ${++n}` });
  return res.body.key as string;
}
const madeUp = () => `svc_${Array.from({ length: 64 }, () => '0123456789abcdef'[Math.floor(Math.random() * 16)]).join('')}`;
const basic = (key: string) => `Basic ${Buffer.from(`anyone:${key}`).toString('base64')}`;

test('a flood of bad keys from an address: bad keys get 429, good keys of every tenant are served on every front', async () => {
  // Two tenants' keys, never presented before the flood (not cached at the gateway).
  const ada = await person();
  const bob = await person();
  const flood = `svc_${'1'.repeat(64)}`;
  let last = 0;
  const statuses: number[] = [];
  for (let i = 0; i < 40 && last !== 429; i++) statuses.push((last = (await t.call('GET', '/me', { key: flood })).status));
  expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true);
  expect(last).toBe(429);

  // The API: both tenants' keys verify and are served; the flooding key and a new made-up one get 429.
  for (const key of [ada, bob, t.bootstrapKey]) expect((await t.call('GET', '/me', { key })).status).toBe(200);
  for (const key of [flood, madeUp()]) {
    // X-Forwarded-For names no other client here: no proxy is trusted.
    const refused = await t.call('GET', '/me', { key, headers: { 'x-forwarded-for': '198.51.100.77' } });
    expect([refused.status, refused.body.error.code]).toEqual([429, 'too_many_failed_authentications']);
    expect(refused.body).toEqual(ERROR_BODY);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  }
  // No credential at all is still 401 (the WebDAV client's first request), not a failure.
  expect((await t.call('GET', '/me')).status).toBe(401);

  // WebDAV (Basic): the good key lists the drive; a bad one is 429.
  const propfind = (key: string) =>
    fetch(`${t.url}/dav/`, { method: 'PROPFIND', headers: { authorization: basic(key), depth: '0' } }).then((r) => r.status);
  expect(await propfind(bob)).toBe(207);
  expect(await propfind(flood)).toBe(429);

  // MCP: the good key is served; a bad one is 429.
  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
  const mcpOk = await rawPost(t.url, list, { key: ada });
  expect(mcpOk.status).toBe(200);
  expect((await rawPost(t.url, list, { key: madeUp() })).status).toBe(429);

  // Git (Basic): the good key gets as far as the repository (404: no such profile), a bad one 429.
  const refs = (key: string) =>
    fetch(`${t.url}/git/profiles/prof_00000000000000000000000000.git/info/refs?service=git-upload-pack`, {
      headers: { authorization: basic(key) },
    }).then((r) => r.status);
  expect(await refs(ada)).toBe(404);
  expect(await refs(flood)).toBe(429);
});
