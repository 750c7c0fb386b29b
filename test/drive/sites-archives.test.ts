import { gzipSync } from 'node:zlib';

import { startTestStack, type TestStack } from '../support/stack';

// A site deployed from a tar or a tar.gz archive (as from a zip): the files at their paths,
// folders skipped; a broken archive is 400 invalid_archive and the site keeps what it served.

let t: TestStack;
let key: string;

beforeAll(async () => {
  t = await startTestStack();
  key = (await t.ok('POST', '/accounts', t.bootstrapKey, { kind: 'user', name: 'Tar' })).body.key as string;
}, 90_000);
afterAll(() => t?.stop());

/** A ustar archive of the entries (a path ending in / is a folder). */
function tar(entries: Array<[string, string?]>): Buffer {
  const blocks: Buffer[] = [];
  for (const [path, content] of entries) {
    const body = Buffer.from(content ?? '');
    const h = Buffer.alloc(512);
    h.write(path, 0, 100, 'utf8');
    h.write('0000644\0', 100);
    h.write('0000000\0', 108);
    h.write('0000000\0', 116);
    h.write(`${body.length.toString(8).padStart(11, '0')}\0`, 124);
    h.write('00000000000\0', 136);
    h.write(path.endsWith('/') ? '5' : '0', 156);
    h.write('ustar\0' + '00', 257);
    h.fill(' ', 148, 156);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    blocks.push(h, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

const page = async (slug: string, path: string) => {
  const res = await fetch(`${t.url}/sites/${slug}/${path}`);
  return [res.status, await res.text()];
};

test('tar and tar.gz archives deploy their files; a broken one is refused and the site keeps serving', async () => {
  const archive = tar([['www/'], ['index.html', '<h1>from tar</h1>'], ['www/app.js', 'let x = 1;']]);
  for (const [slug, format, bytes] of [
    ['tar-plain', 'tar', archive],
    ['tar-gzip', 'tar.gz', gzipSync(archive)],
  ] as const) {
    const site = (await t.ok('POST', '/sites', key, { slug })).body;
    const d = await t.ok('POST', `/sites/${site.id}/deployments`, key, { archive: { format, content: bytes.toString('base64') } });
    expect(d.body).toMatchObject({ source: 'archive', fileCount: 2 });
    expect(await page(slug, '')).toEqual([200, '<h1>from tar</h1>']);
    expect(await page(slug, 'www/app.js')).toEqual([200, 'let x = 1;']);
    const broken = await t.call('POST', `/sites/${site.id}/deployments`, {
      key,
      // Cut inside the first file's bytes (tar), or inside the compressed stream (tar.gz).
      body: { archive: { format, content: bytes.subarray(0, format === 'tar' ? 1024 + 5 : Math.floor(bytes.length / 2)).toString('base64') } },
    });
    expect([broken.status, broken.body.error.code]).toEqual([400, 'invalid_archive']);
    expect(await page(slug, '')).toEqual([200, '<h1>from tar</h1>']);
  }
  const wrong = await t.call('POST', '/sites', { key, body: { slug: 'tar-wrong' } });
  const bad = await t.call('POST', `/sites/${wrong.body.id}/deployments`, { key, body: { archive: { format: 'rar', content: 'AAAA' } } });
  expect(bad.status).toBe(400);
});
