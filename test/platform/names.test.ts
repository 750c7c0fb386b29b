import { zipSync } from 'fflate';

import { startTestStack, type TestStack } from '../support/stack';

// The rule of user-given names (docs/architecture.md, the contract; packages/kit/src/names.ts):
// bidirectional controls and other invisible format characters are a 400, and names are stored in NFC.

let t: TestStack;
let key: string;
let userId: string;
beforeAll(async () => {
  t = await startTestStack();
  const made = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Nia' })).body;
  key = made.key;
  userId = made.account.id;
}, 60_000);
afterAll(() => t?.stop());

const call = (method: string, p: string, body?: unknown, headers?: Record<string, string>) => t.call(method, p, { key, body, headers });
async function upload(name: string, bytes: Uint8Array) {
  const res = await fetch(`${t.url}/drive/upload?name=${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
    body: bytes,
  });
  return { status: res.status, body: await res.json() };
}

/** U+202E RIGHT-TO-LEFT OVERRIDE, U+2067 RIGHT-TO-LEFT ISOLATE, U+200E LEFT-TO-RIGHT MARK, U+200B ZERO WIDTH SPACE, U+FEFF. */
const HIDDEN = ['\u202e', '\u2067', '\u200e', '\u200b', '\ufeff'];
const DECOMPOSED = 'Cafe\u0301';
const COMPOSED = 'Caf\u00e9';

async function refuses(label: string, send: (name: string) => Promise<{ status: number; body: any }>) {
  for (const c of HIDDEN) {
    const res = await send(`bad${c}name`);
    const cp = `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
    expect([label, cp, res.status, res.body?.error?.message]).toEqual([label, cp, 400, expect.stringContaining(cp)]);
  }
}

test('user-given names everywhere: hidden characters refused, names stored in NFC', async () => {
  const agent = (await t.ok('POST', '/agents', key, { name: DECOMPOSED })).body;
  expect(agent.name).toBe(COMPOSED);
  await refuses('agent', (name) => call('POST', '/agents', { name }));
  await refuses('agent rename', (name) => call('PATCH', `/agents/${agent.id}`, { name }));

  const thread = (await t.ok('POST', '/threads', key, { agentId: agent.id, title: DECOMPOSED })).body;
  expect(thread.title).toBe(COMPOSED);
  await refuses('thread', (title) => call('POST', '/threads', { agentId: agent.id, title }));
  await refuses('thread rename', (title) => call('PATCH', `/threads/${thread.id}`, { title }));

  const list = (await t.ok('POST', '/task-lists', key, { name: DECOMPOSED })).body;
  expect(list.name).toBe(COMPOSED);
  await refuses('task list', (name) => call('POST', '/task-lists', { name }));
  const task = (await t.ok('POST', '/tasks', key, { listId: list.id, title: DECOMPOSED })).body;
  expect(task.title).toBe(COMPOSED);
  await refuses('task', (title) => call('POST', '/tasks', { listId: list.id, title }));
  await refuses('task rename', (title) => call('PATCH', `/tasks/${task.id}`, { title }));
  await refuses('schedule', (name) => call('POST', '/schedules', { name, message: 'hi', threadId: thread.id, intervalSeconds: 60 }));

  const profile = (await t.ok('POST', '/profiles', key, { name: DECOMPOSED })).body;
  expect(profile.name).toBe(COMPOSED);
  await refuses('profile', (name) => call('POST', '/profiles', { name }));
  await refuses('profile branch', (name) => call('POST', `/profiles/${profile.id}/branches`, { name }));

  const site = (await t.ok('POST', '/sites', key, { slug: 'names-site', title: DECOMPOSED })).body;
  expect(site.title).toBe(COMPOSED);
  await refuses('site title', (title) => call('PATCH', `/sites/${site.id}`, { title }));

  const apiKey = (await t.ok('POST', '/me/api-keys', key, { name: DECOMPOSED })).body;
  expect(apiKey.name).toBe(COMPOSED);
  await refuses('api key', (name) => call('POST', '/me/api-keys', { name }));
  await refuses('api key rename', (name) => call('PATCH', `/me/api-keys/${apiKey.id}`, { name }));

  const entry = (await t.ok('POST', '/trading/journal', key, { title: DECOMPOSED, body: 'a note' })).body;
  expect(entry.title).toBe(COMPOSED);
  await refuses('journal entry', (title) => call('POST', '/trading/journal', { title, body: 'a note' }));
  await refuses('journal entry rename', (title) => call('PATCH', `/trading/journal/${entry.id}`, { title }));
  const watchlist = (await t.ok('POST', '/trading/watchlists', key, { name: DECOMPOSED })).body;
  expect(watchlist.name).toBe(COMPOSED);
  await refuses('watchlist', (name) => call('POST', '/trading/watchlists', { name }));
  await refuses('watchlist rename', (name) => call('PATCH', `/trading/watchlists/${watchlist.id}`, { name }));

  const org = (await t.ok('POST', '/accounts', key, { kind: 'organization', name: DECOMPOSED })).body;
  expect(org.name).toBe(COMPOSED);
  await refuses('organization', (name) => call('POST', '/accounts', { kind: 'organization', name }));
  expect(userId).toMatch(/^acct_/);
});

test('drive: folders, uploads, renames, moves, copies and archive entries follow the rule', async () => {
  const folder = (await t.ok('POST', '/drive/folders', key, { name: DECOMPOSED })).body;
  expect(folder.name).toBe(COMPOSED);
  await refuses('folder', (name) => call('POST', '/drive/folders', { name }));
  const up = await t.call('POST', `/drive/upload?name=${encodeURIComponent(`${DECOMPOSED}.txt`)}`, {
    key,
    body: 'x',
    headers: { 'content-type': 'application/octet-stream' },
  });
  expect([up.status, up.body.name]).toEqual([201, `${COMPOSED}.txt`]);
  await refuses('upload', (name) =>
    t.call('POST', `/drive/upload?name=${encodeURIComponent(name)}`, { key, body: 'x', headers: { 'content-type': 'application/octet-stream' } }),
  );
  await refuses('rename', (name) => call('PATCH', `/drive/${up.body.id}`, { name }));
  await refuses('copy', (name) => call('POST', `/drive/${up.body.id}/copy`, { name }));
  await refuses('text by path', (name) => call('PUT', '/drive/text', { path: `docs/${name}`, content: 'x' }));
  // A path finds the NFC name however it is composed.
  const byPath = await call('GET', `/drive/stat?path=${encodeURIComponent(`${DECOMPOSED}/`)}`);
  expect([byPath.status, byPath.body.item?.id]).toEqual([200, folder.id]);

  const archive = await upload('a.zip', zipSync({ [`${DECOMPOSED}/ok.txt`]: new Uint8Array([1]), ['evil\u202etxt.exe']: new Uint8Array([2]) }));
  const extracted = await call('POST', `/drive/${archive.body.id}/extract`, {});
  expect([extracted.status, extracted.body.error?.message]).toEqual([400, expect.stringContaining('U+202E')]);
  const good = await upload('b.zip', zipSync({ [`${DECOMPOSED}/ok.txt`]: new Uint8Array([1]) }));
  const out = await call('POST', `/drive/${good.body.id}/extract`, {});
  expect(out.status).toBe(201);
  const inside = await call('GET', `/drive/stat?path=${encodeURIComponent(`b/${COMPOSED}/ok.txt`)}`);
  expect(inside.status).toBe(200);
});
