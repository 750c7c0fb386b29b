import { startTestStack, type TestStack } from '../support/stack';

// WebDAV's input rules, the API's own (docs/drive.md, WebDAV): control characters in a path are a
// 400 with the contract's error body; names follow the shared rule (NFC, no bidirectional or
// invisible format characters); x-svc-account acts in an organization, with the API's membership rules.

let t: TestStack;
let ada: { key: string; id: string };
let bob: { key: string; id: string };
let org: string;
beforeAll(async () => {
  t = await startTestStack();
  const person = async (name: string) => {
    const made = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name })).body;
    return { key: made.key as string, id: made.account.id as string };
  };
  ada = await person('Ada');
  bob = await person('Bob');
  org = (await t.ok('POST', '/accounts', ada.key, { kind: 'organization', name: 'Ada Org' })).body.id;
}, 60_000);
afterAll(() => t?.stop());

const basic = (key: string) => `Basic ${Buffer.from(`anyone:${key}`).toString('base64')}`;

async function dav(method: string, p: string, key: string, opts: { body?: string; headers?: Record<string, string> } = {}) {
  const res = await fetch(t.url + p, { method, headers: { authorization: basic(key), ...opts.headers }, body: opts.body });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

const names = async (key: string, headers: Record<string, string> = {}) =>
  ((await t.call('GET', '/drive', { key, headers })).body.items as Array<{ name: string }>).map((i) => i.name);

test('NUL and other control characters in a path answer 400 with the error body, as the API does', async () => {
  for (const [method, p] of [
    ['GET', '/dav/x%00y'],
    ['PUT', '/dav/x%00y'],
    ['MKCOL', '/dav/x%01y'],
    ['PROPFIND', '/dav/x%0ay'],
    ['DELETE', '/dav/x%7fy'],
    ['GET', '/v1/dav/a/x%00y'],
  ] as const) {
    const res = await dav(method, p, ada.key, method === 'PUT' ? { body: 'x' } : {});
    expect([method, p, res.status, res.type]).toEqual([method, p, 400, expect.stringContaining('application/json')]);
    const body = JSON.parse(res.text);
    expect(body).toEqual({ error: { code: 'invalid_path', message: expect.any(String), requestId: expect.any(String) } });
  }
  // ... and in a Destination.
  await dav('PUT', '/dav/src.txt', ada.key, { body: 'src' });
  const move = await dav('MOVE', '/dav/src.txt', ada.key, { headers: { destination: `${t.url}/dav/d%00st.txt` } });
  expect([move.status, JSON.parse(move.text).error.code]).toEqual([400, 'invalid_path']);
  expect((await t.call('GET', '/drive/x%00y', { key: ada.key })).status).toBe(400);
});

test('names: bidirectional controls and invisible format characters are refused; names are stored in NFC and found either way', async () => {
  for (const bad of ['evil%E2%80%AEtxt.exe', 'zero%E2%80%8Bwidth.txt', '%EF%BB%BFbom.txt', 'iso%E2%81%A6late.txt', 'mark%E2%80%8F.txt']) {
    const put = await dav('PUT', `/dav/${bad}`, ada.key, { body: 'x' });
    expect([bad, put.status, JSON.parse(put.text).error.code]).toEqual([bad, 400, 'invalid_name']);
    expect((await dav('MKCOL', `/dav/${bad}`, ada.key)).status).toBe(400);
  }
  await dav('PUT', '/dav/plain.txt', ada.key, { body: 'p' });
  const moved = await dav('MOVE', '/dav/plain.txt', ada.key, { headers: { destination: '/dav/pl%E2%80%AEain.txt' } });
  expect(moved.status).toBe(400);
  // "Café" decomposed (e + U+0301) is stored composed (U+00E9), and both spellings find it.
  expect((await dav('PUT', '/dav/Cafe%CC%81.txt', ada.key, { body: 'coffee' })).status).toBe(201);
  expect(await names(ada.key)).toContain('Caf\u00e9.txt');
  expect(await names(ada.key)).not.toContain('Cafe\u0301.txt');
  expect((await dav('GET', '/dav/Caf%C3%A9.txt', ada.key)).text).toBe('coffee');
  expect((await dav('GET', '/dav/Cafe%CC%81.txt', ada.key)).text).toBe('coffee');
  // A second PUT under the other spelling replaces the same file (no twin).
  expect((await dav('PUT', '/dav/Caf%C3%A9.txt', ada.key, { body: 'tea' })).status).toBe(204);
  expect((await names(ada.key)).filter((n) => n.startsWith('Caf'))).toEqual(['Caf\u00e9.txt']);
});

test('x-svc-account acts in an organization the caller is a member of, as on the API', async () => {
  const headers = { 'x-svc-account': org };
  expect((await dav('PUT', '/dav/org-plan.txt', ada.key, { body: 'plan', headers })).status).toBe(201);
  expect(await names(ada.key, headers)).toContain('org-plan.txt');
  expect(await names(ada.key)).not.toContain('org-plan.txt');
  expect((await dav('GET', '/dav/org-plan.txt', ada.key, { headers })).text).toBe('plan');
  expect((await dav('GET', '/dav/org-plan.txt', ada.key)).status).toBe(404);
  // Not a member: refused as the API refuses it (same status), and nothing is written.
  const api = await t.call('GET', '/drive', { key: bob.key, headers });
  const refused = await dav('PUT', '/dav/bob-was-here.txt', bob.key, { body: 'x', headers });
  expect(api.status).toBeGreaterThanOrEqual(400);
  expect(refused.status).toBe(api.status);
  expect(await names(ada.key, headers)).not.toContain('bob-was-here.txt');
  expect((await dav('GET', '/dav/org-plan.txt', bob.key, { headers })).status).toBe(api.status);
});
