import http from 'node:http';

import { newId } from '@svc/kit';

import { accountId, events, folder, importKey, quoted, req, sha, t, uploadFile, useDriveStack } from '../support/drive';
import { ERROR_BODY } from '../support/stack';
import { until } from '../support/wait';

// The drive through the public API: content and ETags, concurrency, folders, tenancy, events
// (what is never lost on failure: drive-durability.test.ts).
useDriveStack();

describe('content and ETags', () => {
  test('an upload answers 201 with the item; its ETag is the quoted SHA-256 of the bytes, and so is every read', async () => {
    const content = Buffer.from('hello drive\n');
    const up = await uploadFile(`hello-${Date.now()}.txt`, content, { headers: { 'content-type': 'text/plain' } });
    expect(up.status).toBe(201);
    expect(up.headers.get('etag')).toBe(quoted(content));
    expect(up.headers.get('location')).toBe(`/v1/drive/${up.body.id}`);
    expect(up.body).toMatchObject({
      kind: 'file',
      size: content.length,
      sha256: sha(content),
      etag: quoted(content),
      contentType: 'text/plain',
      parentId: null,
    });
    expect(up.body.id).toMatch(/^file_[0-9a-z]{26}$/);
    expect(up.body.updatedBy).toMatchObject({ kind: 'human', id: accountId });
    expect(up.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const read = await req('GET', `/v1/drive/${up.body.id}/content`);
    expect(read.status).toBe(200);
    expect(read.bytes.equals(content)).toBe(true);
    expect(read.headers.get('etag')).toBe(quoted(content));
    expect(read.headers.get('content-type')).toBe('text/plain');
    expect(read.headers.get('content-length')).toBe(String(content.length));
    expect(read.headers.get('x-content-type-options')).toBe('nosniff');

    const meta = await req('GET', `/drive/${up.body.id}`);
    expect(meta.headers.get('etag')).toBe(quoted(content));
    expect(meta.body.sha256).toBe(sha(content));

    const head = await req('HEAD', `/drive/${up.body.id}/content`);
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBe(quoted(content));
    expect(head.bytes.length).toBe(0);
  });

  test("an item's JSON answer carries its ETag and is always sent whole (a rename keeps a file's ETag)", async () => {
    const { body } = await uploadFile(`meta-${Date.now()}.txt`, 'metadata');
    const first = await req('GET', `/v1/drive/${body.id}`);
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag')!;
    expect(etag).toBe(quoted('metadata'));
    const renamed = await t.call('PATCH', `/drive/${body.id}`, {
      key: t.bootstrapKey,
      body: { name: `renamed-${Date.now()}.txt` },
      headers: { 'if-match': etag },
    });
    expect(renamed.status).toBe(200);
    // A client without fetch's Cache-Control: no-cache (curl, the SDKs): no 304 with the old name.
    const again = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      http
        .get(`${t.url}/v1/drive/${body.id}`, { headers: { authorization: `Bearer ${t.bootstrapKey}`, 'if-none-match': etag } }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        })
        .on('error', reject);
    });
    expect(again.status).toBe(200);
    expect(JSON.parse(again.body).name).toBe(renamed.body.name);
  });

  test('If-None-Match answers 304; Range answers 206 (and 416 outside the file)', async () => {
    const content = Buffer.from('0123456789abcdef');
    const { body } = await uploadFile(`range-${Date.now()}.bin`, content);
    const url = `/drive/${body.id}/content`;
    expect((await req('GET', url, { headers: { 'if-none-match': quoted(content) } })).status).toBe(304);
    expect((await req('GET', url, { headers: { 'if-none-match': '"other"' } })).status).toBe(200);
    const part = await req('GET', url, { headers: { range: 'bytes=2-5' } });
    expect(part.status).toBe(206);
    expect(part.bytes.toString()).toBe('2345');
    expect(part.headers.get('content-range')).toBe('bytes 2-5/16');
    expect(part.headers.get('etag')).toBe(quoted(content));
    const suffix = await req('GET', url, { headers: { range: 'bytes=-3' } });
    expect(suffix.bytes.toString()).toBe('def');
    const open = await req('GET', url, { headers: { range: 'bytes=14-' } });
    expect(open.bytes.toString()).toBe('ef');
    const outside = await req('GET', url, { headers: { range: 'bytes=99-' } });
    expect(outside.status).toBe(416);
    expect(outside.headers.get('content-range')).toBe('bytes */16');
    // If-Range with another version: the whole file.
    const stale = await req('GET', url, { headers: { range: 'bytes=0-1', 'if-range': '"old"' } });
    expect(stale.status).toBe(200);
    expect(stale.bytes.equals(content)).toBe(true);
  });

  test('a JSON file is stored as sent, not parsed; curl’s default form type leaves the type to the name', async () => {
    const json = Buffer.from(JSON.stringify({ a: [1, 2, 3] }, null, 2));
    const up = await uploadFile(`data-${Date.now()}.json`, json, { headers: { 'content-type': 'application/json' } });
    expect(up.status).toBe(201);
    expect(up.body.contentType).toBe('application/json');
    expect((await req('GET', `/drive/${up.body.id}/content`)).bytes.equals(json)).toBe(true);
    const form = await uploadFile(`notes-${Date.now()}.md`, 'x', { headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.body.contentType).toBe('text/markdown; charset=utf-8');
  });

  test('multipart/form-data: the file part, with name and parentId fields', async () => {
    const f = await folder(`forms-${Date.now()}`);
    const fd = new FormData();
    fd.append('parentId', f.id);
    fd.append('file', new Blob(['from a form\r\n--not-a-boundary\r\n'], { type: 'text/plain' }), 'form.txt');
    const res = await fetch(`${t.url}/drive/upload`, { method: 'POST', headers: { authorization: `Bearer ${t.bootstrapKey}` }, body: fd });
    const body = (await res.json()) as any;
    expect(res.status).toBe(201);
    expect(body).toMatchObject({ name: 'form.txt', parentId: f.id, contentType: 'text/plain', size: 31 });
    expect(body.etag).toBe(quoted('from a form\r\n--not-a-boundary\r\n'));
    const none = new FormData();
    none.append('name', 'x');
    const missing = await fetch(`${t.url}/drive/upload`, { method: 'POST', headers: { authorization: `Bearer ${t.bootstrapKey}` }, body: none });
    expect(missing.status).toBe(400);
  });
});

describe('concurrency', () => {
  test('a content write without a precondition answers 428 and changes nothing', async () => {
    const { body } = await uploadFile(`pre-${Date.now()}.txt`, 'v1');
    const res = await req('PUT', `/drive/${body.id}/content`, { body: 'v2' });
    expect(res.status).toBe(428);
    expect(res.body).toMatchObject(ERROR_BODY);
    expect(res.body.error.code).toBe('precondition_required');
    expect(res.body.error.message).toMatch(/If-Match/);
    expect((await req('GET', `/drive/${body.id}/content`)).bytes.toString()).toBe('v1');
  });

  test('a stale If-Match answers 412 with the current ETag and writer; the content is unchanged', async () => {
    const { body } = await uploadFile(`stale-${Date.now()}.txt`, 'v1');
    const ok = await req('PUT', `/drive/${body.id}/content`, { body: 'v2', headers: { 'if-match': quoted('v1') } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('etag')).toBe(quoted('v2'));
    expect(ok.body.etag).toBe(quoted('v2'));
    const stale = await req('PUT', `/drive/${body.id}/content`, { body: 'v3', headers: { 'if-match': quoted('v1') } });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject(ERROR_BODY);
    expect(stale.body.error.code).toBe('precondition_failed');
    expect(stale.body.error.details).toMatchObject({ etag: quoted('v2'), updatedBy: { kind: 'human', id: accountId } });
    expect(stale.headers.get('etag')).toBe(quoted('v2'));
    const now = await req('GET', `/drive/${body.id}/content`);
    expect(now.bytes.toString()).toBe('v2');
    expect(now.headers.get('etag')).toBe(quoted('v2'));
    // Rebase in one round trip: the ETag from the 412 works.
    const rebased = await req('PUT', `/drive/${body.id}/content`, { body: 'v3', headers: { 'if-match': stale.body.error.details.etag } });
    expect(rebased.status).toBe(200);
  });

  test('If-None-Match: * on a taken name answers 412 (with the existing ETag); without a precondition 409', async () => {
    const name = `taken-${Date.now()}.txt`;
    expect((await uploadFile(name, 'first', { headers: { 'if-none-match': '*' } })).status).toBe(201);
    const again = await uploadFile(name, 'second', { headers: { 'if-none-match': '*' } });
    expect(again.status).toBe(412);
    expect(again.body.error.details.etag).toBe(quoted('first'));
    const plain = await uploadFile(name, 'second');
    expect(plain.status).toBe(409);
    expect(plain.body.error.code).toBe('name_taken');
    // POST with If-Match replaces the file of that name when it is still that version.
    const replaced = await uploadFile(name, 'second', { headers: { 'if-match': quoted('first') } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.etag).toBe(quoted('second'));
    const list = await req('GET', '/drive?limit=200');
    expect(list.body.items.filter((i: any) => i.name === name)).toHaveLength(1);
  });

  test('two racing writers with the same If-Match: exactly one wins, the other gets 412', async () => {
    for (let round = 0; round < 3; round++) {
      const { body } = await uploadFile(`race-${round}-${Date.now()}.txt`, 'base');
      const writers = ['a', 'b', 'c', 'd'].map((w) => `${w}-${round}-`.repeat(5000));
      const results = await Promise.all(
        writers.map((w) => req('PUT', `/drive/${body.id}/content`, { body: w, headers: { 'if-match': quoted('base') } })),
      );
      const winners = results.filter((r) => r.status === 200);
      expect(winners).toHaveLength(1);
      expect(results.filter((r) => r.status === 412)).toHaveLength(writers.length - 1);
      const won = writers[results.indexOf(winners[0]!)]!;
      const now = await req('GET', `/drive/${body.id}/content`);
      expect(now.bytes.toString()).toBe(won);
      expect(now.headers.get('etag')).toBe(quoted(won));
    }
  });

  test('racing creates of one name with If-None-Match: * make one file', async () => {
    const name = `create-race-${Date.now()}.txt`;
    const results = await Promise.all(['1', '2', '3'].map((c) => uploadFile(name, c.repeat(10000), { headers: { 'if-none-match': '*' } })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 412)).toHaveLength(2);
  });

  test('PATCH and DELETE honour If-Match', async () => {
    const { body } = await uploadFile(`pd-${Date.now()}.txt`, 'x');
    const stale = await t.call('PATCH', `/drive/${body.id}`, { key: t.bootstrapKey, body: { name: 'y.txt' }, headers: { 'if-match': '"nope"' } });
    expect(stale.status).toBe(412);
    expect(stale.body.error.details.etag).toBe(quoted('x'));
    const renamed = await t.call('PATCH', `/drive/${body.id}`, {
      key: t.bootstrapKey,
      body: { name: `pd-${Date.now()}-renamed.txt` },
      headers: { 'if-match': quoted('x') },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.headers.get('etag')).toBe(quoted('x'));
    expect((await req('DELETE', `/drive/${body.id}`, { headers: { 'if-match': '"nope"' } })).status).toBe(412);
    expect((await req('DELETE', `/drive/${body.id}`, { headers: { 'if-match': quoted('x') } })).status).toBe(200);
    expect((await req('GET', `/drive/${body.id}`)).status).toBe(404);
  });
});

describe('folders, names and listing', () => {
  test('names are validated', async () => {
    for (const name of ['a/b', '', ' ', '.', '..', 'x'.repeat(256), 'tab\there']) {
      const res = await t.call('POST', '/drive/folders', { key: t.bootstrapKey, body: { name } });
      expect(res.status).toBe(400);
    }
    expect((await uploadFile('é'.repeat(128), 'x')).status).toBe(400); // 256 bytes of UTF-8
    expect((await uploadFile('ok name (1).txt', 'x')).status).toBe(201);
  });

  test('list a folder with cursor pagination: folders first, then names; every item once', async () => {
    const f = await folder(`page-${Date.now()}`);
    await folder('sub-b', f.id);
    await folder('sub-a', f.id);
    for (const n of ['c.txt', 'a.txt', 'b.txt']) await uploadFile(n, n, { parentId: f.id });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Reply = await req('GET', `/drive?parentId=${f.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((i: any) => i.name));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(['sub-a', 'sub-b', 'a.txt', 'b.txt', 'c.txt']);
    const item = (await req('GET', `/drive?parentId=${f.id}&limit=1`)).body.items[0];
    expect(Object.keys(item).sort()).toEqual(
      [
        'contentType',
        'createdAt',
        'createdBy',
        'etag',
        'id',
        'kind',
        'name',
        'parentId',
        'projectId',
        'sha256',
        'size',
        'updatedAt',
        'updatedBy',
      ].sort(),
    );
    expect((await req('GET', '/drive?cursor=garbage')).status).toBe(400);
  });

  test('rename and move; a folder cannot move into itself; a taken name is a conflict', async () => {
    const a = await folder(`mv-a-${Date.now()}`);
    const b = await folder('b', a.id);
    const c = await folder('c', b.id);
    const into = await t.call('PATCH', `/drive/${a.id}`, { key: t.bootstrapKey, body: { parentId: c.id } });
    expect(into.status).toBe(409);
    expect(into.body.error.code).toBe('move_into_itself');
    expect((await t.call('PATCH', `/drive/${a.id}`, { key: t.bootstrapKey, body: { parentId: a.id } })).status).toBe(409);
    const file = await uploadFile('f.txt', 'f', { parentId: c.id });
    const moved = await t.call('PATCH', `/drive/${file.body.id}`, { key: t.bootstrapKey, body: { parentId: a.id, name: 'g.txt' } });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ parentId: a.id, name: 'g.txt', etag: quoted('f') });
    await uploadFile('h.txt', 'h', { parentId: a.id });
    const clash = await t.call('PATCH', `/drive/${file.body.id}`, { key: t.bootstrapKey, body: { name: 'h.txt' } });
    expect(clash.status).toBe(409);
    const toRoot = await t.call('PATCH', `/drive/${c.id}`, { key: t.bootstrapKey, body: { parentId: null, name: `mv-c-${Date.now()}` } });
    expect(toRoot.status).toBe(200);
    expect(toRoot.body.parentId).toBeNull();
  });

  test('deleting a non-empty folder needs ?recursive=true; its files become unreadable', async () => {
    const f = await folder(`del-${Date.now()}`);
    const sub = await folder('sub', f.id);
    const file = await uploadFile('x.txt', 'x', { parentId: sub.id });
    const refused = await req('DELETE', `/drive/${f.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('folder_not_empty');
    const done = await req('DELETE', `/drive/${f.id}?recursive=true`);
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ success: true, deleted: 3 });
    expect((await req('GET', `/drive/${file.body.id}/content`)).status).toBe(404);
  });
});

describe('tenancy and principals', () => {
  test("another account's files answer 404 everywhere, and never show in its listing", async () => {
    const mine = await uploadFile(`private-${Date.now()}.txt`, 'secret');
    const myFolder = await folder(`private-folder-${Date.now()}`);
    const other = newId('acct');
    const otherKey = await importKey({ accountId: other, ownerKind: 'human', ownerId: other });
    const id = mine.body.id;
    const as = { key: otherKey };
    expect((await req('GET', `/drive/${id}`, as)).status).toBe(404);
    expect((await req('GET', `/drive/${id}/content`, as)).status).toBe(404);
    expect((await req('PUT', `/drive/${id}/content`, { ...as, body: 'x', headers: { 'if-match': quoted('secret') } })).status).toBe(404);
    expect((await req('DELETE', `/drive/${id}`, as)).status).toBe(404);
    expect((await t.call('PATCH', `/drive/${id}`, { key: otherKey, body: { name: 'stolen' } })).status).toBe(404);
    expect((await req('GET', `/drive?parentId=${myFolder.id}`, as)).status).toBe(404);
    expect((await uploadFile('x.txt', 'x', { ...as, parentId: myFolder.id })).status).toBe(404);
    const theirs = await req('GET', '/drive', as);
    expect(theirs.status).toBe(200);
    expect(theirs.body.items).toEqual([]);
    // Their own drive works, and mine does not see it.
    const own = await uploadFile('theirs.txt', 'theirs', as);
    expect(own.status).toBe(201);
    expect((await req('GET', `/drive/${own.body.id}`)).status).toBe(404);
    expect((await req('GET', `/drive/${id}/content`)).bytes.toString()).toBe('secret');
  });

  test('a project-scoped key sees only its project’s drive', async () => {
    const created = await t.call('POST', '/api/api-keys', { key: t.bootstrapKey, body: { name: 'proj', projectId: 'proj-drive' } });
    const projectKey = created.body.key as string;
    const accountFile = await uploadFile(`account-${Date.now()}.txt`, 'account');
    const projFile = await uploadFile('project.txt', 'project', { key: projectKey });
    expect(projFile.status).toBe(201);
    expect(projFile.body.projectId).toBe('proj-drive');
    expect((await req('GET', `/drive/${accountFile.body.id}`, { key: projectKey })).status).toBe(404);
    const projList = await req('GET', '/drive', { key: projectKey });
    expect(projList.body.items.map((i: any) => i.name)).toEqual(['project.txt']);
    expect((await req('GET', '/drive?projectId=other', { key: projectKey })).status).toBe(403);
    // The unscoped key sees its own drive at the root, and the project's by projectId or id.
    const rootList = await req('GET', '/drive?limit=200');
    expect(rootList.body.items.map((i: any) => i.name)).not.toContain('project.txt');
    const viaProject = await req('GET', '/drive?projectId=proj-drive');
    expect(viaProject.body.items.map((i: any) => i.name)).toEqual(['project.txt']);
    expect((await req('GET', `/drive/${projFile.body.id}/content`)).bytes.toString()).toBe('project');
  });

  test('an agent key uses the drive, and the file says the agent wrote it', async () => {
    const agentId = newId('agt');
    const agentKey = await importKey({ accountId, ownerKind: 'agent', ownerId: agentId });
    const { body } = await uploadFile(`by-agent-${Date.now()}.txt`, 'by agent', { key: agentKey });
    expect(body.updatedBy).toMatchObject({ kind: 'agent', id: agentId });
    const human = await req('PUT', `/drive/${body.id}/content`, { body: 'by human', headers: { 'if-match': body.etag } });
    expect(human.body.updatedBy).toMatchObject({ kind: 'human', id: accountId });
    expect(human.body.createdBy).toMatchObject({ kind: 'agent', id: agentId });
    const stale = await req('PUT', `/drive/${body.id}/content`, { key: agentKey, body: 'again', headers: { 'if-match': body.etag } });
    expect(stale.status).toBe(412);
    expect(stale.body.error.details.updatedBy).toMatchObject({ kind: 'human', id: accountId });
  });
});

test('each change publishes a drive event through the outbox', async () => {
  const f = await folder(`events-${Date.now()}`);
  const up = await uploadFile('e.txt', 'e1', { parentId: f.id });
  await req('PUT', `/drive/${up.body.id}/content`, { body: 'e2', headers: { 'if-match': quoted('e1') } });
  await t.call('PATCH', `/drive/${up.body.id}`, { key: t.bootstrapKey, body: { name: 'e2.txt' } });
  await req('DELETE', `/drive/${f.id}?recursive=true`);
  const ns = t.env.SVC_NAMESPACE;
  const expected = ['drive.folder.created', 'drive.file.created', 'drive.file.updated', 'drive.file.moved', 'drive.folder.deleted'];
  await until(() => expected.every((s) => events.some((e) => e.subject === `${ns}.${s}` && [f.id, up.body.id].includes((e.event.data as any).id))));
  const updated = events.find((e) => e.subject === `${ns}.drive.file.updated` && (e.event.data as any).id === up.body.id)!;
  expect(updated.event).toMatchObject({
    type: 'drive.file.updated',
    accountId,
    data: { etag: quoted('e2'), previousEtag: quoted('e1'), sha256: sha('e2') },
  });
  expect(updated.event.id).toMatch(/^evt_/);
});
