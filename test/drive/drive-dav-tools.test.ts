import { newId } from '@svc/kit';

import { importKey, req, sha, t, useDriveStack } from '../support/drive';

// The drive's tools over what WebDAV clients leave on items (locks, custom properties), CSV writes
// and a version's diff, through the public API.
useDriveStack();

const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>, key = t.bootstrapKey) =>
  t.call(method as 'GET', path, { key, ...(body !== undefined ? { body } : {}), ...(headers ? { headers } : {}) });
const dav = (method: string, path: string, body?: string, headers: Record<string, string> = {}) =>
  req(method, path, { body, headers: { authorization: `Basic ${Buffer.from(`x:${t.bootstrapKey}`).toString('base64')}`, ...headers } });
const LOCKINFO =
  '<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope>' +
  '<D:locktype><D:write/></D:locktype><D:owner><D:href>mailto:test@example.com</D:href></D:owner></D:lockinfo>';

test('locks: a WebDAV lock is listed (with its token) and blocks API writes; its holder releases it through the API', async () => {
  const f = (await call('PUT', '/drive/text', { path: 'davtools/locked.txt', content: 'x' })).body;
  const locked = await dav('LOCK', '/dav/davtools/locked.txt', LOCKINFO, { 'content-type': 'application/xml', timeout: 'Second-600' });
  expect(locked.status).toBe(200);
  const list = await call('GET', `/drive/${f.id}/locks`);
  expect(list.body.locks).toEqual([
    {
      token: expect.stringMatching(/^urn:uuid:/),
      rootId: f.id,
      rootPath: 'davtools/locked.txt',
      scope: 'exclusive',
      deep: false,
      expiresAt: expect.any(String),
      holder: { kind: 'human', id: expect.any(String) },
    },
  ]);
  const token = list.body.locks[0].token;
  const blocked = await call('POST', `/drive/${f.id}/append`, { text: 'y' });
  expect(blocked.status).toBe(409);
  expect(blocked.body.error.code).toBe('locked');
  const wrong = await call('DELETE', `/drive/${f.id}/locks?token=urn:uuid:00000000-0000-0000-0000-000000000000`);
  expect(wrong.status).toBe(409);
  expect(wrong.body.error.code).toBe('lock_token_mismatch');
  expect((await call('DELETE', `/drive/${f.id}/locks?token=${encodeURIComponent(token)}`)).status).toBe(200);
  expect((await call('GET', `/drive/${f.id}/locks`)).body.locks).toEqual([]);
  expect((await call('POST', `/drive/${f.id}/append`, { text: 'y' })).status).toBe(200);
});

test('properties: set (seen by PROPFIND), list with text values, delete (idempotent)', async () => {
  const f = (await call('PUT', '/drive/text', { path: 'davtools/props.txt', content: 'x' })).body;
  const set = await call('PUT', `/drive/${f.id}/properties`, { name: 'reviewed', value: 'yes & <done>' });
  expect(set.status).toBe(200);
  expect(set.body.properties).toEqual([
    { namespace: 'urn:svc:properties', name: 'reviewed', value: 'yes & <done>', xml: expect.stringContaining('yes &amp; &lt;done&gt;') },
  ]);
  await call('PUT', `/drive/${f.id}/properties`, { namespace: 'urn:x', name: 'owner', value: 'ada' });
  const found = await dav('PROPFIND', '/dav/davtools/props.txt', undefined, { depth: '0' });
  expect(found.bytes.toString()).toContain('yes &amp; &lt;done&gt;');
  expect((await call('GET', `/drive/${f.id}/properties`)).body.properties.map((p: any) => [p.name, p.value])).toEqual([
    ['reviewed', 'yes & <done>'],
    ['owner', 'ada'],
  ]);
  expect((await call('DELETE', `/drive/${f.id}/properties?name=reviewed`)).body.properties.map((p: any) => p.name)).toEqual(['owner']);
  expect((await call('DELETE', `/drive/${f.id}/properties?name=reviewed`)).status).toBe(200);
  const bad = await call('PUT', `/drive/${f.id}/properties`, { name: '1 bad', value: 'x' });
  expect(bad.status).toBe(400);
});

test('CSV writes: a file from rows with quoting, rows appended; a version diff says what changed', async () => {
  const w = await call('PUT', '/drive/csv', {
    path: 'davtools/t.csv',
    columns: ['name', 'note'],
    rows: [
      ['ada', 'says "hi", twice'],
      ['bob', null],
    ],
  });
  expect(w.status).toBe(201);
  expect(w.body.contentType).toBe('text/csv; charset=utf-8');
  const text = async () => (await req('GET', `/drive/${w.body.id}/content`)).bytes.toString();
  expect(await text()).toBe('name,note\nada,"says ""hi"", twice"\nbob,\n');
  expect((await call('POST', `/drive/${w.body.id}/csv`, { rows: [['cy', 3, true]] })).status).toBe(200);
  expect(await text()).toBe('name,note\nada,"says ""hi"", twice"\nbob,\ncy,3,true\n');
  expect((await call('GET', `/drive/${w.body.id}/csv`)).body.rows).toEqual([
    ['ada', 'says "hi", twice'],
    ['bob', ''],
    ['cy', '3', 'true'],
  ]);
  expect((await call('POST', `/drive/${w.body.id}/csv`, { rows: [] })).status).toBe(400);

  const [v] = (await call('GET', `/drive/${w.body.id}/versions`)).body.versions;
  expect(v.sha256).toBe(sha('name,note\nada,"says ""hi"", twice"\nbob,\n'));
  const d = await call('GET', `/drive/${w.body.id}/versions/${v.id}/diff`);
  expect(d.body).toMatchObject({ additions: 1, deletions: 0, identical: false });
  expect(d.body.diff).toContain('+cy,3,true');
  expect((await call('GET', `/drive/${w.body.id}/versions/ver_${'0'.repeat(26)}/diff`)).status).toBe(404);
});

test("another account's items are 404 to these tools", async () => {
  const f = (await call('PUT', '/drive/text', { path: 'davtools/mine.csv', content: 'a\n' })).body;
  const other = newId('acct');
  const key = await importKey({ accountId: other, ownerKind: 'human', ownerId: other });
  expect((await call('GET', `/drive/${f.id}/locks`, undefined, undefined, key)).status).toBe(404);
  expect((await call('GET', `/drive/${f.id}/properties`, undefined, undefined, key)).status).toBe(404);
  expect((await call('PUT', `/drive/${f.id}/properties`, { name: 'x', value: 'y' }, undefined, key)).status).toBe(404);
  expect((await call('POST', `/drive/${f.id}/csv`, { rows: [['b']] }, undefined, key)).status).toBe(404);
});
