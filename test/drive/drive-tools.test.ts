import { newId } from '@svc/kit';

import { collectGarbage, importKey, req, t, uploadFile, useDriveStack } from '../support/drive';
import { ERROR_BODY } from '../support/stack';

// The drive's file tools through the public API: paths, trees, search, text and JSON edits.
// Versions, tags, archives and batches: drive-organize.test.ts.
useDriveStack();

const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  t.call(method as 'GET', path, { key: t.bootstrapKey, ...(body !== undefined ? { body } : {}), ...(headers ? { headers } : {}) });
const write = async (path: string, content: string) => {
  const r = await call('PUT', '/drive/text', { path, content });
  expect([200, 201]).toContain(r.status);
  return r.body as { id: string; etag: string; parentId: string | null };
};
const text = async (id: string) => (await req('GET', `/drive/${id}/content`)).bytes.toString('utf8');

describe('paths and trees', () => {
  test('write_text makes missing folders; stat finds the path; ancestors give the breadcrumbs', async () => {
    const f = await call('PUT', '/drive/text', { path: 'proj/docs/readme.md', content: '# Hi\n' });
    expect(f.status).toBe(201);
    expect(f.body).toMatchObject({ name: 'readme.md', contentType: 'text/markdown; charset=utf-8', size: 5 });
    expect(f.headers.get('etag')).toBe(f.body.etag);
    const again = await call('PUT', '/drive/text', { path: 'proj/docs/readme.md', content: '# Hello\n' });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(f.body.id);
    expect((await call('PUT', '/drive/text', { path: 'proj/docs/readme.md', content: 'x' }, { 'if-none-match': '*' })).status).toBe(412);
    expect((await call('PUT', '/drive/text', { path: 'proj/docs/readme.md', content: 'x' }, { 'if-match': f.body.etag })).status).toBe(412);

    const stat = await call('GET', '/drive/stat?path=proj/docs/readme.md');
    expect(stat.status).toBe(200);
    expect(stat.body).toMatchObject({ path: 'proj/docs/readme.md', depth: 3, item: { id: f.body.id } });
    const missing = await call('GET', '/drive/stat?path=proj/nothing.md');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual(ERROR_BODY);
    expect(missing.body.error.code).toBe('item_not_found');
    expect((await call('GET', '/drive/stat?path=a/../b')).status).toBe(400);

    const crumbs = await call('GET', `/drive/${f.body.id}/ancestors`);
    expect(crumbs.body.items.map((x: any) => x.path)).toEqual(['proj', 'proj/docs', 'proj/docs/readme.md']);
  });

  test('make_folders is mkdir -p (201 when it made one, 200 when all existed; a file in the way is 409)', async () => {
    const a = await call('POST', '/drive/folders/path', { path: 'mk/a/b/c' });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ name: 'c', kind: 'folder' });
    const b = await call('POST', '/drive/folders/path', { path: '/mk/a/b/c/' });
    expect(b.status).toBe(200);
    expect(b.body.id).toBe(a.body.id);
    await write('mk/file.txt', 'x');
    const c = await call('POST', '/drive/folders/path', { path: 'mk/file.txt/d' });
    expect(c.status).toBe(409);
    expect(c.body.error.code).toBe('not_a_folder');
  });

  test('tree, find, recent, size and usage', async () => {
    await write('tree/a.md', 'alpha\n');
    await write('tree/sub/b.md', 'beta beta\n');
    await write('tree/sub/deep/c.txt', 'gamma\n');
    const root = (await call('GET', '/drive/stat?path=tree')).body.item.id;
    const tree = await call('GET', `/drive/tree?folderId=${root}&maxDepth=2`);
    expect(tree.status).toBe(200);
    expect(tree.body.items.map((x: any) => [x.path, x.depth])).toEqual([
      ['tree/a.md', 1],
      ['tree/sub', 1],
      ['tree/sub/b.md', 2],
      ['tree/sub/deep', 2],
    ]);
    expect(tree.body.truncated).toBe(false);
    const limited = await call('GET', `/drive/tree?folderId=${root}&maxDepth=5&limit=2`);
    expect(limited.body).toMatchObject({ truncated: true });
    expect(limited.body.items).toHaveLength(2);

    const md = await call('GET', `/drive/find?name=*.md&folderId=${root}`);
    expect(md.body.items.map((x: any) => x.path).sort()).toEqual(['tree/a.md', 'tree/sub/b.md']);
    const sub = await call('GET', `/drive/find?name=DEE&kind=folder`);
    expect(sub.body.items.map((x: any) => x.path)).toEqual(['tree/sub/deep']);
    expect((await call('GET', '/drive/find?name=x&kind=link')).status).toBe(400);

    const recent = await call('GET', '/drive/recent?limit=2');
    expect(recent.body.items.map((x: any) => x.path)).toEqual(['tree/sub/deep/c.txt', 'tree/sub/b.md']);
    const next = await call('GET', `/drive/recent?limit=2&cursor=${recent.body.nextCursor}`);
    expect(next.body.items[0].path).toBe('tree/a.md');

    const size = await call('GET', `/drive/${root}/size`);
    expect(size.body).toEqual({ files: 3, folders: 2, bytes: 6 + 10 + 6 });
    const file = (await call('GET', '/drive/stat?path=tree/a.md')).body.item.id;
    expect((await call('GET', `/drive/${file}/size`)).status).toBe(400);
    const usage = await call('GET', '/drive/usage');
    expect(usage.body.files).toBeGreaterThanOrEqual(3);
    expect(usage.body.byType.some((x: any) => x.contentType.startsWith('text/markdown'))).toBe(true);
  });

  test('duplicates groups equal contents', async () => {
    await write('dup/one.txt', 'same content');
    await write('dup/two.txt', 'same content');
    const d = await call('GET', '/drive/duplicates');
    const g = d.body.groups.find((x: any) => x.files.some((f: any) => f.path === 'dup/one.txt'));
    expect(g.files.map((f: any) => f.path)).toEqual(['dup/one.txt', 'dup/two.txt']);
    expect(d.body.wastedBytes).toBeGreaterThanOrEqual(12);
  });
});

describe('reading text', () => {
  test('lines, stats, csv and grep', async () => {
    const f = await write('read/poem.txt', 'one\ntwo words\nthree\n');
    const lines = await call('GET', `/drive/${f.id}/lines?start=2&end=3`);
    expect(lines.body).toEqual({
      lines: [
        { number: 2, text: 'two words' },
        { number: 3, text: 'three' },
      ],
      totalLines: 3,
      etag: f.etag,
      truncated: false,
    });
    expect((await call('GET', `/drive/${f.id}/lines?start=0`)).status).toBe(400);
    const stats = await call('GET', `/drive/${f.id}/stats`);
    expect(stats.body).toMatchObject({ lines: 3, words: 4, characters: 20, bytes: 20, lineEndings: 'lf', endsWithNewline: true });
    const bin = await uploadFile(`bin-${Date.now()}.bin`, Buffer.from([0, 1, 2, 255]));
    const notText = await call('GET', `/drive/${bin.body.id}/stats`);
    expect(notText.status).toBe(400);
    expect(notText.body.error.code).toBe('not_text');

    const csv = await write('read/data.csv', 'name,note\nada,"says ""hi"", twice"\nbob,"multi\nline"\n');
    const rows = await call('GET', `/drive/${csv.id}/csv`);
    expect(rows.body).toMatchObject({
      columns: ['name', 'note'],
      rows: [
        ['ada', 'says "hi", twice'],
        ['bob', 'multi\nline'],
      ],
      totalRows: 2,
      delimiter: ',',
    });
    const page = await call('GET', `/drive/${csv.id}/csv?offset=1&limit=1&header=false`);
    expect(page.body.rows).toEqual([['ada', 'says "hi", twice']]);

    const dir = (await call('GET', '/drive/stat?path=read')).body.item.id;
    const g = await call('GET', `/drive/grep?pattern=WORDS&ignoreCase=true&folderId=${dir}`);
    expect(g.body.matches).toEqual([{ fileId: f.id, path: 'read/poem.txt', line: 2, column: 5, text: 'two words' }]);
    const re = await call('GET', `/drive/grep?pattern=${encodeURIComponent('^t\\w+$')}&regex=true&folderId=${dir}&nameGlob=*.txt`);
    expect(re.body.matches.map((m: any) => m.line)).toEqual([3]);
    const badRe = await call('GET', `/drive/grep?pattern=${encodeURIComponent('(')}&regex=true`);
    expect(badRe.status).toBe(400);
    expect(badRe.body.error.code).toBe('invalid_pattern');
  });

  test('diff of two files', async () => {
    const a = await write('diff/a.txt', 'a\nb\nc\nd\n');
    const b = await write('diff/b.txt', 'a\nB\nc\nd\ne\n');
    const d = await call('GET', `/drive/diff?from=${a.id}&to=${b.id}&context=1`);
    expect(d.body).toEqual({
      diff: '--- a/diff/a.txt\n+++ b/diff/b.txt\n@@ -1,4 +1,5 @@\n a\n-b\n+B\n c\n d\n+e\n',
      additions: 2,
      deletions: 1,
      identical: false,
    });
    expect((await call('GET', `/drive/diff?from=${a.id}&to=${a.id}`)).body).toMatchObject({ identical: true, diff: '' });
  });
});

describe('editing text', () => {
  test('append, edit (exact occurrences), replace and insert lines; each write keeps If-Match', async () => {
    const f = await write('edit/notes.txt', 'alpha\nbeta\n');
    const ap = await call('POST', `/drive/${f.id}/append`, { text: 'gamma', newline: true });
    expect(ap.status).toBe(200);
    expect(await text(f.id)).toBe('alpha\nbeta\ngamma');
    await call('POST', `/drive/${f.id}/append`, { text: '\ndelta\n' });
    const stale = await call('POST', `/drive/${f.id}/append`, { text: 'x' }, { 'if-match': f.etag });
    expect(stale.status).toBe(412);

    const ed = await call('POST', `/drive/${f.id}/edit`, { find: 'beta', replace: 'BETA' });
    expect(ed.body).toMatchObject({ replacements: 1, item: { id: f.id } });
    expect(await text(f.id)).toBe('alpha\nBETA\ngamma\ndelta\n');
    const many = await call('POST', `/drive/${f.id}/edit`, { find: 'a', replace: 'A' });
    expect(many.status).toBe(422);
    expect(many.body.error.code).toBe('occurrences_mismatch');
    const none = await call('POST', `/drive/${f.id}/edit`, { find: 'zzz', replace: 'y' });
    expect(none.body.error.code).toBe('text_not_found');
    const all = await call('POST', `/drive/${f.id}/edit`, { find: 'a', replace: 'A', replaceAll: true });
    expect(all.body.replacements).toBe(5);

    const rl = await call('PATCH', `/drive/${f.id}/lines`, { start: 2, end: 3, text: 'two\nthree' });
    expect(rl.status).toBe(200);
    expect(await text(f.id)).toBe('AlphA\ntwo\nthree\ndeltA\n');
    expect((await call('PATCH', `/drive/${f.id}/lines`, { start: 9, end: 9, text: '' })).status).toBe(422);
    expect((await call('PATCH', `/drive/${f.id}/lines`, { start: 3, end: 2, text: '' })).status).toBe(400);
    await call('POST', `/drive/${f.id}/lines`, { after: 0, text: 'top' });
    await call('POST', `/drive/${f.id}/lines`, { after: 5, text: 'end' });
    expect(await text(f.id)).toBe('top\nAlphA\ntwo\nthree\ndeltA\nend\n');
  });
});

describe('JSON files', () => {
  test('read a pointer, set, remove (idempotent) and merge-patch', async () => {
    const f = await write('json/conf.json', JSON.stringify({ name: 'svc', tags: ['a'], nested: { 'x/y': 1 } }));
    expect((await call('GET', `/drive/${f.id}/json?pointer=/nested/x~1y`)).body).toEqual({ value: 1, etag: f.etag });
    expect((await call('GET', `/drive/${f.id}/json`)).body.value.name).toBe('svc');
    const missing = await call('GET', `/drive/${f.id}/json?pointer=/nope`);
    expect(missing.status).toBe(422);
    expect(missing.body.error.code).toBe('pointer_not_found');
    expect((await call('GET', `/drive/${f.id}/json?pointer=nope`)).status).toBe(400);

    expect((await call('PUT', `/drive/${f.id}/json`, { pointer: '/tags/-', value: 'b' })).status).toBe(200);
    await call('PUT', `/drive/${f.id}/json`, { pointer: '/version', value: { major: 2 } });
    expect(JSON.parse(await text(f.id))).toEqual({ name: 'svc', tags: ['a', 'b'], nested: { 'x/y': 1 }, version: { major: 2 } });
    const del = await call('DELETE', `/drive/${f.id}/json?pointer=/nested`);
    expect(del.status).toBe(200);
    const again = await call('DELETE', `/drive/${f.id}/json?pointer=/nested`);
    expect(again.status).toBe(200);
    expect(again.body.etag).toBe(del.body.etag);
    await call('PATCH', `/drive/${f.id}/json`, { patch: { name: null, version: { minor: 1 } } });
    expect(JSON.parse(await text(f.id))).toEqual({ tags: ['a', 'b'], version: { major: 2, minor: 1 } });

    const notJson = await write('json/bad.json', '{nope');
    const bad = await call('PATCH', `/drive/${notJson.id}/json`, { patch: { a: 1 } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('invalid_json');
  });
});

test("another account's items are 404 to every file tool", async () => {
  const f = await write('tenancy/secret.txt', 'secret\n');
  const dir = (await call('GET', '/drive/stat?path=tenancy')).body.item.id;
  const other = newId('acct');
  const key = await importKey({ accountId: other, ownerKind: 'human', ownerId: other });
  const as = (method: string, path: string, body?: unknown) => t.call(method as 'GET', path, { key, ...(body ? { body } : {}) });
  for (const [m, p, b] of [
    ['GET', `/drive/${f.id}/lines`],
    ['GET', `/drive/${f.id}/stats`],
    ['GET', `/drive/${f.id}/ancestors`],
    ['GET', `/drive/${dir}/size`],
    ['GET', `/drive/tree?folderId=${dir}`],
    ['GET', `/drive/grep?pattern=secret&folderId=${dir}`],
    ['GET', `/drive/diff?from=${f.id}&to=${f.id}`],
    ['POST', `/drive/${f.id}/append`, { text: 'x' }],
    ['POST', `/drive/${f.id}/edit`, { find: 'secret', replace: 'x' }],
    ['PUT', `/drive/${f.id}/json`, { pointer: '/a', value: 1 }],
  ] as const) {
    const r = await as(m, p, b);
    expect([p, r.status]).toEqual([p, 404]);
  }
  expect((await as('GET', '/drive/stat?path=tenancy/secret.txt')).status).toBe(404);
  expect((await as('GET', '/drive/grep?pattern=secret')).body.matches).toEqual([]);
  expect(await text(f.id)).toBe('secret\n');
  await collectGarbage(3600);
});

test("find and grep take names literally: %, _ and ' match themselves", async () => {
  await write("lit/it's_100%.txt", 'x');
  await write('lit/itXs-1000.txt', 'x');
  const found = await call('GET', `/drive/find?name=${encodeURIComponent("it's_100%")}`);
  expect(found.body.items.map((x: any) => x.path)).toEqual(["lit/it's_100%.txt"]);
  const dir = (await call('GET', '/drive/stat?path=lit')).body.item.id;
  const g = await call('GET', `/drive/grep?pattern=x&folderId=${dir}&nameGlob=${encodeURIComponent("it's_100%.txt")}`);
  expect(g.body.matches.map((m: any) => m.path)).toEqual(["lit/it's_100%.txt"]);
});
