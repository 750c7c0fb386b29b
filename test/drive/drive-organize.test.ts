import { gzipSync } from 'node:zlib';

import { unzipSync, zipSync } from 'fflate';

import { newId } from '@svc/kit';

import { collectGarbage, importKey, req, sha, t, uploadFile, useDriveStack } from '../support/drive';

// The drive's organising tools through the public API: copies, versions, tags, archives, batches.
useDriveStack();

const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  t.call(method as 'GET', path, { key: t.bootstrapKey, ...(body !== undefined ? { body } : {}), ...(headers ? { headers } : {}) });
const write = async (path: string, content: string) =>
  (await call('PUT', '/drive/text', { path, content })).body as { id: string; etag: string; parentId: string };
const text = async (id: string) => (await req('GET', `/drive/${id}/content`)).bytes.toString('utf8');
const idAt = async (path: string) => (await call('GET', `/drive/stat?path=${encodeURIComponent(path)}`)).body.item.id as string;

test('copy: a file beside itself as "Copy of", a folder with its members elsewhere; a taken name is 412', async () => {
  const f = await write('cp/src/a.txt', 'A');
  await write('cp/src/sub/b.txt', 'B');
  const beside = await call('POST', `/drive/${f.id}/copy`, {});
  expect(beside.status).toBe(201);
  expect(beside.body).toMatchObject({ name: 'Copy of a.txt', parentId: f.parentId, sha256: sha('A') });
  const dest = (await call('POST', '/drive/folders/path', { path: 'cp/dest' })).body.id;
  const src = await idAt('cp/src');
  const tree = await call('POST', `/drive/${src}/copy`, { parentId: dest });
  expect(tree.body).toMatchObject({ name: 'src', parentId: dest, kind: 'folder' });
  expect(await text(await idAt('cp/dest/src/sub/b.txt'))).toBe('B');
  const taken = await call('POST', `/drive/${f.id}/copy`, { parentId: dest, name: 'src' });
  expect(taken.status).toBe(412);
  expect(taken.body.error.code).toBe('name_taken');
  expect((await call('POST', `/drive/${f.id}/copy`, { name: '' })).status).toBe(400);
});

test('versions: each replacement keeps the content before; read, restore (a new version) and delete one', async () => {
  const f = await write('ver/doc.txt', 'v1');
  await write('ver/doc.txt', 'v2');
  await call('POST', `/drive/${f.id}/append`, { text: '+' });
  const list = await call('GET', `/drive/${f.id}/versions`);
  expect(list.status).toBe(200);
  expect(list.body.versions.map((v: any) => v.sha256)).toEqual([sha('v2'), sha('v1')]);
  expect(list.body.versions[0]).toMatchObject({ fileId: f.id, size: 2, writtenBy: { kind: 'human' } });
  const v1 = list.body.versions[1];
  const read = await call('GET', `/drive/${f.id}/versions/${v1.id}`);
  expect(read.body).toMatchObject({ content: 'v1', encoding: 'utf8', version: { id: v1.id } });

  await collectGarbage(0);
  const restored = await call('POST', `/drive/${f.id}/versions/${v1.id}/restore`, {});
  expect(restored.status).toBe(200);
  expect(await text(f.id)).toBe('v1');
  const after = await call('GET', `/drive/${f.id}/versions`);
  expect(after.body.versions.map((v: any) => v.sha256)).toEqual([sha('v2+'), sha('v2'), sha('v1')]);
  const stale = await call('POST', `/drive/${f.id}/versions/${v1.id}/restore`, {}, { 'if-match': `"${sha('v2')}"` });
  expect(stale.status).toBe(412);

  expect((await call('DELETE', `/drive/${f.id}/versions/${v1.id}`)).status).toBe(200);
  expect((await call('DELETE', `/drive/${f.id}/versions/${v1.id}`)).status).toBe(200);
  const gone = await call('GET', `/drive/${f.id}/versions/${v1.id}`);
  expect(gone.status).toBe(404);
  expect(gone.body.error.code).toBe('version_not_found');
  expect((await call('GET', `/drive/${f.id}/versions/nope`)).status).toBe(400);
});

test('tags: set, add, remove, list with counts, items by tag', async () => {
  const a = await write('tags/a.txt', 'a');
  const b = await write('tags/b.txt', 'b');
  expect((await call('PUT', `/drive/${a.id}/tags`, { tags: ['Invoice', 'q3'] })).body).toEqual({ id: a.id, tags: ['invoice', 'q3'] });
  expect((await call('POST', `/drive/${b.id}/tags`, { tags: ['invoice'] })).body.tags).toEqual(['invoice']);
  expect((await call('POST', `/drive/${b.id}/tags`, { tags: ['draft'] })).body.tags).toEqual(['draft', 'invoice']);
  expect((await call('GET', `/drive/${b.id}/tags`)).body.tags).toEqual(['draft', 'invoice']);
  const counts = await call('GET', '/drive/tags');
  expect(counts.body.tags).toEqual(
    expect.arrayContaining([
      { tag: 'invoice', items: 2 },
      { tag: 'q3', items: 1 },
    ]),
  );
  const items = await call('GET', '/drive/tags/invoice/items');
  expect(items.body.items.map((x: any) => x.path).sort()).toEqual(['tags/a.txt', 'tags/b.txt']);
  expect((await call('DELETE', `/drive/${b.id}/tags/draft`)).body.tags).toEqual(['invoice']);
  expect((await call('DELETE', `/drive/${b.id}/tags/draft`)).status).toBe(200);
  const bad = await call('PUT', `/drive/${a.id}/tags`, { tags: ['-bad'] });
  expect(bad.status).toBe(400);
  expect(bad.body.error.code).toBe('invalid_tag');
  // Stored in NFC, as names are: "Café" decomposed (e + U+0301) is the composed tag, and found by either spelling.
  expect((await call('PUT', `/drive/${a.id}/tags`, { tags: ['Cafe\u0301'] })).body.tags).toEqual(['caf\u00e9']);
  expect((await call('GET', `/drive/tags/${encodeURIComponent('cafe\u0301')}/items`)).body.items.map((x: any) => x.path)).toEqual(['tags/a.txt']);
  expect((await call('DELETE', `/drive/${a.id}/tags/${encodeURIComponent('cafe\u0301')}`)).body.tags).toEqual([]);
  // Bidirectional controls and other invisible characters are no part of a tag.
  expect((await call('PUT', `/drive/${a.id}/tags`, { tags: ['in\u202Evoice'] })).body.error.code).toBe('invalid_tag');
  expect((await call('PUT', `/drive/${a.id}/tags`, { tags: [] })).body.tags).toEqual([]);
});

test('zip a folder and extract zip and tar archives (a path leaving its folder fails before anything is written)', async () => {
  await write('zip/src/one.txt', 'one');
  await write('zip/src/sub/two.txt', 'two');
  const src = await idAt('zip/src');
  const z = await call('POST', `/drive/${src}/zip`, {});
  expect(z.status).toBe(201);
  expect(z.body).toMatchObject({ name: 'src.zip', contentType: 'application/zip' });
  const entries = unzipSync(new Uint8Array((await req('GET', `/drive/${z.body.id}/content`)).bytes));
  expect(Buffer.from(entries['sub/two.txt']!).toString()).toBe('two');
  expect((await call('POST', `/drive/${src}/zip`, {})).status).toBe(412);

  const ex = await call('POST', `/drive/${z.body.id}/extract`, {});
  expect(ex.status).toBe(201);
  // "src" is taken (the folder zipped): the archive's folder is the next free name.
  expect(ex.body).toMatchObject({ folder: { name: 'src (2)', kind: 'folder' }, files: 2, folders: 1 });
  expect(await text(await idAt('zip/src (2)/sub/two.txt'))).toBe('two');

  const dest = (await call('POST', '/drive/folders/path', { path: 'zip/tar-out' })).body.id;
  const tar = tarOf({ 'x/y.txt': 'why' });
  const up = await uploadFile('t.tar.gz', gzipSync(tar), { parentId: dest });
  const tx = await call('POST', `/drive/${up.body.id}/extract`, { parentId: dest });
  expect(tx.body).toMatchObject({ files: 1, folders: 1 });
  expect(await text(await idAt('zip/tar-out/x/y.txt'))).toBe('why');

  const evil = await uploadFile('evil.zip', Buffer.from(zipSync({ '../escape.txt': new Uint8Array([1]) })), { parentId: dest });
  const refused = await call('POST', `/drive/${evil.body.id}/extract`, { parentId: dest });
  expect(refused.status).toBe(400);
  expect(refused.body.error.code).toBe('invalid_archive');
  const notArchive = await write('zip/plain.txt', 'x');
  expect((await call('POST', `/drive/${notArchive.id}/extract`, {})).status).toBe(400);
});

test('an extract writes its files a few at a time, each whole; a path named twice is written in order; a taken name fails it', async () => {
  const many: Array<[string, string]> = Array.from({ length: 30 }, (_, i) => [`many/sub${i % 3}/f${i}.txt`, `content ${i}`]);
  const dest = (await call('POST', '/drive/folders/path', { path: 'extract-many' })).body.id;
  const twice = await uploadFile('twice.tar', tarOf([...many, ['many/same.txt', 'first'], ['many/same.txt', 'second']]), { parentId: dest });
  const ex = await call('POST', `/drive/${twice.body.id}/extract`, { parentId: dest, overwrite: true });
  expect(ex.status).toBe(201);
  expect(ex.body).toMatchObject({ files: 32, folders: 4 });
  for (const [path, content] of many) expect(await text(await idAt(`extract-many/${path}`))).toBe(content);
  // The later entry of a path named twice is what the file holds.
  expect(await text(await idAt('extract-many/many/same.txt'))).toBe('second');
  // Without overwrite, the second entry of that path finds its name taken.
  const again = await call('POST', `/drive/${twice.body.id}/extract`, {
    parentId: (await call('POST', '/drive/folders/path', { path: 'extract-again' })).body.id,
  });
  expect(again.status).toBe(409);
  expect(again.body.error.code).toBe('name_taken');
  expect(await text(await idAt('extract-again/many/same.txt'))).toBe('first');

  // Files written a few at a time: one whose name is taken fails the extract, and the file that held the name is left as it was.
  const into = (await call('POST', '/drive/folders/path', { path: 'extract-taken' })).body.id;
  const distinct = await uploadFile('distinct.tar', tarOf(many), { parentId: into });
  await write('extract-taken/many/sub1/f7.txt', 'mine');
  const taken = await call('POST', `/drive/${distinct.body.id}/extract`, { parentId: into });
  expect(taken.status).toBe(409);
  expect(taken.body.error.code).toBe('name_taken');
  expect(await text(await idAt('extract-taken/many/sub1/f7.txt'))).toBe('mine');
});

test('batch delete and move: each item on its own', async () => {
  const a = await write('batch/a.txt', 'a');
  const b = await write('batch/b.txt', 'b');
  const to = (await call('POST', '/drive/folders/path', { path: 'batch/to' })).body.id;
  const missing = `file_${'0'.repeat(26)}`;
  const mv = await call('POST', '/drive/batch/move', { ids: [a.id, missing], parentId: to });
  expect(mv.body).toEqual({
    results: [
      { id: a.id, ok: true, error: null },
      { id: missing, ok: false, error: { code: 'item_not_found', message: expect.any(String) } },
    ],
    succeeded: 1,
    failed: 1,
  });
  expect((await call('GET', `/drive/${a.id}`)).body.parentId).toBe(to);
  const del = await call('POST', '/drive/batch/delete', { ids: [b.id, to] });
  expect(del.body.results.map((r: any) => [r.ok, r.error?.code ?? null])).toEqual([
    [true, null],
    [false, 'folder_not_empty'],
  ]);
  const rec = await call('POST', '/drive/batch/delete', { ids: [to], recursive: true });
  expect(rec.body.results[0]).toMatchObject({ ok: true, deleted: 2 });
  expect((await call('POST', '/drive/batch/delete', { ids: [] })).status).toBe(400);
  expect((await call('POST', '/drive/batch/delete', { ids: [b.id, b.id] })).status).toBe(400);
});

test("another account's items are 404 to the organising tools", async () => {
  const f = await write('tenancy2/a.txt', 'a');
  const other = newId('acct');
  const key = await importKey({ accountId: other, ownerKind: 'human', ownerId: other });
  const as = (method: string, path: string, body?: unknown) => t.call(method as 'GET', path, { key, ...(body ? { body } : {}) });
  expect((await as('POST', `/drive/${f.id}/copy`, {})).status).toBe(404);
  expect((await as('GET', `/drive/${f.id}/versions`)).status).toBe(404);
  expect((await as('PUT', `/drive/${f.id}/tags`, { tags: ['x'] })).status).toBe(404);
  expect((await as('GET', '/drive/tags/x/items')).body.items).toEqual([]);
  expect((await as('POST', '/drive/batch/delete', { ids: [f.id] })).body.results[0].error.code).toBe('item_not_found');
  expect(await text(f.id)).toBe('a');
});

/** A ustar archive of the files given. */
/** A tar of these files, in order (a list may name a path twice). */
function tarOf(files: Record<string, string> | Array<[string, string]>): Buffer {
  const blocks: Buffer[] = [];
  for (const [name, content] of Array.isArray(files) ? files : Object.entries(files)) {
    const h = Buffer.alloc(512);
    h.write(name, 0);
    h.write('0000644\0', 100);
    h.write('0000000\0', 108);
    h.write('0000000\0', 116);
    h.write(`${content.length.toString(8).padStart(11, '0')}\0`, 124);
    h.write('00000000000\0', 136);
    h.write('        ', 148);
    h.write('0', 156);
    h.write('ustar\0', 257);
    h.write('00', 263);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    blocks.push(h, Buffer.concat([Buffer.from(content), Buffer.alloc((512 - (content.length % 512)) % 512)]));
  }
  return Buffer.concat([...blocks, Buffer.alloc(1024)]);
}

test('batch tag and read many: each item on its own', async () => {
  const a = await write('many/a.txt', 'alpha');
  const b = await write('many/b.json', '{"b":1}');
  const missing = `file_${'0'.repeat(26)}`;
  const tagged = await call('POST', '/drive/batch/tag', { ids: [a.id, b.id, missing], add: ['batch'], remove: ['old'] });
  expect(tagged.body).toMatchObject({ succeeded: 2, failed: 1 });
  expect(tagged.body.results[2]).toMatchObject({ id: missing, ok: false, error: { code: 'item_not_found' } });
  expect((await call('GET', '/drive/tags/batch/items')).body.items.map((x: any) => x.path).sort()).toEqual(['many/a.txt', 'many/b.json']);
  expect((await call('POST', '/drive/batch/tag', { ids: [a.id], remove: ['batch'] })).body.succeeded).toBe(1);
  expect((await call('GET', `/drive/${a.id}/tags`)).body.tags).toEqual([]);
  expect((await call('POST', '/drive/batch/tag', { ids: [a.id] })).status).toBe(400);

  const bin = await uploadFile('many-bin.bin', Buffer.from([0, 255]));
  const read = await call('POST', '/drive/batch/read', { ids: [a.id, b.id, bin.body.id, missing] });
  expect(read.body.files).toEqual([
    { id: a.id, ok: true, path: 'many/a.txt', etag: `"${sha('alpha')}"`, content: 'alpha', encoding: 'utf8', error: null },
    { id: b.id, ok: true, path: 'many/b.json', etag: expect.any(String), content: '{"b":1}', encoding: 'utf8', error: null },
    { id: bin.body.id, ok: true, path: 'many-bin.bin', etag: expect.any(String), content: 'AP8=', encoding: 'base64', error: null },
    { id: missing, ok: false, path: null, etag: null, content: null, encoding: null, error: { code: 'item_not_found', message: expect.any(String) } },
  ]);
  expect((await call('POST', '/drive/batch/read', { ids: [] })).status).toBe(400);
  const other = newId('acct');
  const key = await importKey({ accountId: other, ownerKind: 'human', ownerId: other });
  const stolen = await t.call('POST', '/drive/batch/read', { key, body: { ids: [a.id] } });
  expect(stolen.body.files[0]).toMatchObject({ ok: false, error: { code: 'item_not_found' } });
});
